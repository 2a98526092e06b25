/* cuBLASLt's ranked algorithms for the step's bf16 GEMMs (mc_gemm_lt.h): the handle, the plans
 * (descriptors and ranked algorithms per shape, cached) and the per-tile calls. */
#include <cublasLt.h>

#include "src/model_cuda/mc_gemm_lt.h"

namespace {

/* One shape's plan: the matmul's descriptors and the algorithms the heuristic ranks for it. */
struct lt_plan {
  int64_t rows, cols, ldy;
  int tile;
  cublasLtMatmulDesc_t op;  /* fp32 compute and scale, W transposed */
  cublasLtMatrixLayout_t w; /* bf16, cols x rows column-major (W's rows, ld = cols) */
  cublasLtMatrixLayout_t x; /* bf16, cols x tile column-major (a tile of xb, ld = cols) */
  cublasLtMatrixLayout_t y; /* fp32, rows x tile column-major (a tile of Y, ld = ldy) */
  cublasLtMatmulHeuristicResult_t ranked[MC_GEMM_LT_RANKS]; /* [nranked] best first */
  int nranked;
};
constexpr int LT_PLANS = 256; /* distinct shapes and tiles: the lab check has ~60, a model ~10 */

void plan_free(lt_plan *p) {
  if (p->op) cublasLtMatmulDescDestroy(p->op);
  if (p->w) cublasLtMatrixLayoutDestroy(p->w);
  if (p->x) cublasLtMatrixLayoutDestroy(p->x);
  if (p->y) cublasLtMatrixLayoutDestroy(p->y);
  *p = lt_plan{};
}

bool ok_status(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }

}  // namespace

struct mc_gemm_lt {
  cublasLtHandle_t handle;
  lt_plan plans[LT_PLANS]; /* [nplans] */
  int nplans;
};

namespace {

/* The cached plan of a shape, or NULL. */
const lt_plan *plan_find(const mc_gemm_lt *lt, int64_t rows, int64_t cols, int64_t ldy, int tile) {
  for (int i = 0; i < lt->nplans; i++) {
    const lt_plan &q = lt->plans[i];
    if (q.rows == rows && q.cols == cols && q.ldy == ldy && q.tile == tile) return &q;
  }
  return nullptr;
}

/* A new shape's plan, built and ranked into the cache (which has room); NULL on a cuBLASLt
 * error. */
const lt_plan *plan_build(mc_gemm_lt *lt, int64_t rows, int64_t cols, int64_t ldy, int tile) {
  lt_plan *p = &lt->plans[lt->nplans];
  *p = lt_plan{};
  p->rows = rows, p->cols = cols, p->ldy = ldy, p->tile = tile;
  const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
  const uint64_t ws = MC_GEMM_LT_WORKSPACE;
  const uint32_t align = 16; /* the heuristic otherwise assumes 256-byte aligned operands */
  const cublasLtMatmulPreferenceAttributes_t aligns[] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  cublasLtMatmulPreference_t pref = nullptr;
  bool ok = ok_status(cublasLtMatmulDescCreate(&p->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  ok = ok &&
       ok_status(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof t));
  ok = ok &&
       ok_status(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof n));
  ok = ok && ok_status(cublasLtMatrixLayoutCreate(&p->w, CUDA_R_16BF, (uint64_t)cols,
                                                  (uint64_t)rows, cols));
  ok = ok && ok_status(cublasLtMatrixLayoutCreate(&p->x, CUDA_R_16BF, (uint64_t)cols,
                                                  (uint64_t)tile, cols));
  ok = ok && ok_status(cublasLtMatrixLayoutCreate(&p->y, CUDA_R_32F, (uint64_t)rows, (uint64_t)tile,
                                                  ldy));
  ok = ok && ok_status(cublasLtMatmulPreferenceCreate(&pref));
  ok = ok && ok_status(cublasLtMatmulPreferenceSetAttribute(
                 pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
  for (const auto a : aligns)
    ok = ok && ok_status(cublasLtMatmulPreferenceSetAttribute(pref, a, &align, sizeof align));
  ok = ok &&
       ok_status(cublasLtMatmulAlgoGetHeuristic(lt->handle, p->op, p->w, p->x, p->y, p->y, pref,
                                                MC_GEMM_LT_RANKS, p->ranked, &p->nranked));
  if (pref) cublasLtMatmulPreferenceDestroy(pref);
  if (!ok) {
    plan_free(p);
    return nullptr;
  }
  lt->nplans++;
  return p;
}

}  // namespace

extern "C" mc_gemm_lt *mc_gemm_lt_create(void) {
  mc_gemm_lt *lt = new mc_gemm_lt();
  if (!ok_status(cublasLtCreate(&lt->handle))) {
    delete lt;
    return nullptr;
  }
  return lt;
}

extern "C" void mc_gemm_lt_destroy(mc_gemm_lt *lt) {
  if (!lt) return;
  for (int i = 0; i < lt->nplans; i++) plan_free(&lt->plans[i]);
  cublasLtDestroy(lt->handle);
  delete lt;
}

extern "C" int mc_gemm_lt_run(mc_gemm_lt *lt, int rank, const void *W, const uint16_t *xb, float *Y,
                              int64_t ldy, int64_t Rpad, int64_t rows, int64_t cols, int tile,
                              void *ws, size_t ws_bytes, void *stream) {
  if (!lt || rank < 0 || rank >= MC_GEMM_LT_RANKS || rows < 1 || cols < 1 || ldy < rows ||
      tile < 1 || Rpad < tile || Rpad % tile || cols % 8 || ldy % 4 || (uintptr_t)W % 16 ||
      (uintptr_t)xb % 16 || (uintptr_t)Y % 16)
    return -2;
  const lt_plan *p = plan_find(lt, rows, cols, ldy, tile);
  if (!p && lt->nplans == LT_PLANS) return -2; /* the cache is full: cuBLAS takes the shape */
  if (!p && !(p = plan_build(lt, rows, cols, ldy, tile))) return -1;
  if (rank >= p->nranked || p->ranked[rank].state != CUBLAS_STATUS_SUCCESS ||
      p->ranked[rank].workspaceSize > ws_bytes)
    return -2;
  const float one = 1.0f, zero = 0.0f;
  for (int64_t r0 = 0; r0 < Rpad; r0 += tile)
    if (!ok_status(cublasLtMatmul(lt->handle, p->op, &one, W, p->w, xb + r0 * cols, p->x, &zero,
                                  Y + r0 * ldy, p->y, Y + r0 * ldy, p->y, &p->ranked[rank].algo, ws,
                                  ws_bytes, static_cast<cudaStream_t>(stream))))
      return -1;
  return 0;
}
