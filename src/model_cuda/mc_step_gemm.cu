/* The step's GEMMs (mc_model_internal.cuh): Y = W . X for a batch's token rows on the kernel the
 * model chose at upload (the tensor-core kernel, the wide kernel, cuBLASLt's ranked algorithms or
 * cuBLAS) on the model's fixed row tiles, and the L2 prefetch of a cuBLAS GEMM's weights (or an
 * SSM layer's state) on a side stream while the kernels before it run (mc_prefetch.h).
 * docs/gpu-runtime.md. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/env_switch.h"
#include "src/model_cuda/mc_gemm_lt.h"
#include "src/model_cuda/mc_gemm_mma.h"
#include "src/model_cuda/mc_gemm_wide.h"
#include "src/model_cuda/mc_model.h"
#include "src/model_cuda/mc_model_internal.cuh"
#include "src/model_cuda/mc_prefetch.h"
#include "src/ssm_cuda/cuda_pdl.h"
#include "src/ssm_cuda/ssm_cuda.h"

namespace {

/* The tensor-core kernel's warps a block for a weight (mc_gemm_mma_warps); RSSM_GEMM_MMA16=0
 * keeps 8 where the rule picks 16, as before session 34 (an A/B switch; other bits for those
 * GEMMs; read once, so every launch of a run and of its graphs is alike). */
int gemm_mma_warps(int64_t rows, int64_t cols, int sms) {
  static const char *const off_on[] = {"0", "1"};
  static const bool no16 = rssm_env_switch("RSSM_GEMM_MMA16", off_on, 2, 1) == 0;
  const int kw = mc_gemm_mma_warps(rows, cols, sms);
  return kw == 16 && no16 ? 8 : kw;
}

/* The L2 prefetch (mc_prefetch.h) of `rows` rows of row_bytes at P, `span` bytes of each: the
 * side stream waits for what the step's stream has launched so far, then prefetches; pf_join
 * (called by every GEMM and before every SSM step) makes the step's stream wait for it. */
int pf_launch(mc_batch *b, const void *P, int64_t rows, int64_t row_bytes, int64_t span) {
  if (cudaEventRecord(b->pf_fork_ev, b->stream) != cudaSuccess ||
      cudaStreamWaitEvent(b->pf_stream, b->pf_fork_ev, 0) != cudaSuccess ||
      mc_l2_prefetch(P, rows, row_bytes, span, b->pf_stream) != 0)
    return -1;
  b->pf_pending = 1;
  return 0;
}

/* bf16 models with the tensor-core kernel (mc_gemm_mma.h): Y = W . X for the batch's RT token
 * rows, on pieces of up to 64 rows (the kernel's bits do not depend on the rows in a call). The
 * padding rows RT..Rpad-1 are not computed: no kernel reads them from a GEMM's output (the
 * residual add, the glue and the metrics take the R or RT rows), and they keep the zeros of
 * their allocation, which is what cuBLAS writes there from the zero padding rows of X. (cuBLAS
 * computes them because its bits depend on its n, fixed at the row tile; this kernel's do not,
 * and at 16 token rows 64-row calls cost the fixture models' step GEMMs 174 / 147 us against 95
 * / 75 on the 16 rows: `bench gemm`, docs/gpu-results.md, "Session 30".) X: bf16 [Rpad][cols]
 * (x_f32 = 0) or fp32, rounded to bf16 as the kernel loads it (x_f32 = 1). Returns 0, -1 on a
 * launch error, -2 when the kernel does not take the shape (nothing launched: cuBLAS then). */
int gemm_mma(mc_batch *b, const void *W, int64_t rows, int64_t cols, const void *X, int x_f32,
             float *Y /* [Rpad][ldy] */, int64_t ldy) {
  const int kw = gemm_mma_warps(rows, cols, b->g->sms), R = b->RT;
  const size_t xsize = x_f32 ? sizeof(float) : sizeof(uint16_t);
  if (!mc_gemm_mma_supported(W, X, R < MC_GEMM_MMA_MAX_R ? R : MC_GEMM_MMA_MAX_R, rows, cols, ldy))
    return -2;
  for (int r0 = 0; r0 < R; r0 += MC_GEMM_MMA_MAX_R) {
    const int n = R - r0 < MC_GEMM_MMA_MAX_R ? R - r0 : MC_GEMM_MMA_MAX_R;
    const char *x = static_cast<const char *>(X) + (size_t)r0 * (size_t)cols * xsize;
    if (mc_gemm_mma(static_cast<const uint16_t *>(W), x, x_f32, Y + (int64_t)r0 * ldy, ldy, n, rows,
                    cols, kw, b->stream) != 0)
      return -1;
  }
  return 0;
}

/* bf16 models on the wide kernel (mc_gemm_wide.h): Y = W . xb for the batch's RT token rows, on
 * pieces of up to 64 rows (its bits do not depend on the rows in a call; the padding rows are
 * left as gemm_mma leaves them). Returns 0, -1 on a launch error, -2 when the kernel does not
 * take the shape (nothing launched: cuBLAS then). */
int gemm_wide(mc_batch *b, const void *W, int64_t rows, int64_t cols, const __nv_bfloat16 *xb,
              float *Y /* [Rpad][ldy] */, int64_t ldy) {
  const int R = b->RT, nsplit = mc_gemm_wide_splits(rows, cols, b->g->sms);
  if (b->g->gemm_wide == 2 && nsplit < 2) return -2; /* wide-split: cuBLAS for this one */
  if (!mc_gemm_wide_supported(W, xb, R < MC_GEMM_WIDE_MAX_R ? R : MC_GEMM_WIDE_MAX_R, rows, cols,
                              ldy))
    return -2;
  for (int r0 = 0; r0 < R; r0 += MC_GEMM_WIDE_MAX_R) {
    const int n = R - r0 < MC_GEMM_WIDE_MAX_R ? R - r0 : MC_GEMM_WIDE_MAX_R;
    if (mc_gemm_wide(static_cast<const uint16_t *>(W),
                     reinterpret_cast<const uint16_t *>(xb + (int64_t)r0 * cols),
                     Y + (int64_t)r0 * ldy, ldy, n, rows, cols, nsplit, b->wide_scratch,
                     b->stream) != 0)
      return -1;
  }
  return 0;
}

}  // namespace

namespace mcm {

/* RSSM_GEMM_LT (mc_gemm_lt.h): which bf16 GEMMs go to cuBLASLt's ranked algorithms instead of
 * cublasGemmEx; read once, so that every batch and graph of a run launch alike. */
mc_gemm_lt_rule gemm_lt_rule() {
  static const mc_gemm_lt_rule rule = mc_gemm_lt_rule_from_env();
  return rule;
}

/* dst[i] = bf16(src[i]), round to nearest even (NaN stays NaN, overflow goes to infinity) */
__global__ void f32_to_bf16_kernel(const float *__restrict__ src /* [n] */,
                                   __nv_bfloat16 *__restrict__ dst /* [n] */, int64_t n) {
  pdl_enter();
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = __float2bfloat16_rn(src[i]);
}

int f32_to_bf16(const float *src /* [n] */, __nv_bfloat16 *dst /* [n] */, int64_t n,
                cudaStream_t s) {
  if (n <= 0) return 0;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  pdl_launch(f32_to_bf16_kernel, (unsigned)blocks, 256, 0, s, src, dst, n);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

/* The bf16 weights W [rows][cols] of the GEMM after the next kernel(s): the first
 * mc_l2_prefetch_span bytes of each row. Nothing when the batch has no budget, one is pending,
 * or the span is too small. */
int pf_fork(mc_batch *b, const void *W, int64_t rows, int64_t cols) {
  if (b->pf_budget <= 0 || !W || b->pf_pending) return 0;
  const int64_t row_bytes = cols * (int64_t)sizeof(uint16_t);
  const int64_t span = mc_l2_prefetch_span(rows, row_bytes, b->pf_budget);
  return span == 0 ? 0 : pf_launch(b, W, rows, row_bytes, span);
}

/* The first bytes of an SSM layer's stored state (ssm_cuda_state's main checkpoint,
 * [B][H][matrix bytes]: the rows its step's first blocks read), whole chunks of PF_STATE_CHUNK. */
constexpr int64_t PF_STATE_CHUNK = 64 << 10;
int pf_fork_state(mc_batch *b, const ssm_cuda_state *st) {
  if (b->pf_state_budget <= 0 || b->pf_pending || !st->main.blob) return 0;
  const int64_t total = (int64_t)st->B * st->dims.H * (int64_t)st->main.lay.bytes_per_matrix;
  const int64_t chunks = (total < b->pf_state_budget ? total : b->pf_state_budget) / PF_STATE_CHUNK;
  return chunks < 1 ? 0 : pf_launch(b, st->main.blob, chunks, PF_STATE_CHUNK, PF_STATE_CHUNK);
}

int pf_join(mc_batch *b) {
  if (!b->pf_pending) return 0;
  b->pf_pending = 0;
  return cudaEventRecord(b->pf_join_ev, b->pf_stream) != cudaSuccess ||
                 cudaStreamWaitEvent(b->stream, b->pf_join_ev, 0) != cudaSuccess
             ? -1
             : 0;
}

/* A SwiGLU or ReLU^2 MLP block of a model on the tensor-core kernel: its input projection and
 * activation in one launch (mc_gemm_mma_act), from xb into xb_act, the bf16 input of its output
 * projection: the bits of gemm_xb and mc_swiglu_bf16 / mc_relu2_bf16 (one launch less a block).
 * Returns 0, -1 on a launch error, -2 when not taken (nothing launched: the two-launch path then):
 * another model, a shape the kernel refuses, or an output projection the kernel would not take
 * (cuBLAS would read xb_act's padding rows, which this does not write). */
int gemm_mlp_act(mc_batch *b, const mc_block *w, int64_t H) {
  const int act = w->kind == BK_SWIGLU  ? MC_GEMM_MMA_ACT_SWIGLU
                  : w->kind == BK_RELU2 ? MC_GEMM_MMA_ACT_RELU2
                                        : 0;
  const int R = b->RT;
  if (!act || !b->g->gemm_mma || !b->xb_act || !w->w_in || !w->w_out ||
      w->out_cols > b->gemm_cols ||
      !mc_gemm_mma_act_supported(w->w_in, b->xb, R, w->in_rows, H, w->out_cols, act) ||
      !mc_gemm_mma_supported(w->w_out, b->xb_act, R, H, w->out_cols, H))
    return -2;
  return mc_gemm_mma_act(static_cast<const uint16_t *>(w->w_in), b->xb, 0,
                         reinterpret_cast<uint16_t *>(b->xb_act), w->out_cols, R, w->in_rows, H,
                         act, gemm_mma_warps(w->in_rows, H, b->g->sms), b->stream) != 0
             ? -1
             : 0;
}

/* bf16 models: Y = W . xb on the row tiles, xb [Rpad][cols] already holding the bf16 input (made
 * by gemm below, or by the fused kernel that produced X: mc_fused.h). */
int gemm_xb(mc_batch *b, const void *W, int64_t rows, int64_t cols, float *Y /* [Rpad][ldy] */,
            int64_t ldy, const __nv_bfloat16 *xb /* [Rpad][cols]; NULL: b->xb */) {
  const float one = 1.0f, zero = 0.0f;
  const int tile = b->g->row_tile;
  if (!xb) xb = b->xb;
  if (b->g->prec != MC_GEMM_BF16 || cols > b->gemm_cols || pf_join(b) != 0) return -1;
  if (b->g->gemm_mma) {
    const int rc = gemm_mma(b, W, rows, cols, xb, 0, Y, ldy);
    if (rc != -2) return rc;
  }
  if (b->g->gemm_wide) {
    const int rc = gemm_wide(b, W, rows, cols, xb, Y, ldy);
    if (rc != -2) return rc;
  }
  if (b->lt && mc_gemm_lt_takes(b->lt_rule, rows, cols)) { /* RSSM_GEMM_LT */
    const int rc =
        mc_gemm_lt_run(b->lt, b->lt_rule.rank, W, reinterpret_cast<const uint16_t *>(xb), Y, ldy,
                       b->Rpad, rows, cols, tile, b->blas_ws, MC_GEMM_LT_WORKSPACE, b->stream);
    if (rc != -2) return rc; /* -2: a shape or rank it does not take, cuBLAS then */
  }
  for (int r0 = 0; r0 < b->Rpad; r0 += tile)
    if (cublasGemmEx(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, tile, (int)cols, &one, W,
                     CUDA_R_16BF, (int)cols, xb + (int64_t)r0 * cols, CUDA_R_16BF, (int)cols, &zero,
                     Y + (int64_t)r0 * ldy, CUDA_R_32F, (int)ldy, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
      return -1;
  return 0;
}

/* Y[r][0..rows) = W[rows][cols] . X[r] for every row of the padded batch, tile by tile (n = the
 * model's row_tile in every call, whatever the batch: Rpad is a multiple of it).
 * fp32 models: cublasSgemm (fp32 in, fp32 math without TF32, fp32 out). bf16 models: X rounded
 * to bf16 (round to nearest even) into xb, then cublasGemmEx with bf16 W and X, fp32 accumulation
 * (CUBLAS_COMPUTE_32F) and fp32 Y, on the same tiles. */
int gemm(mc_batch *b, const void *W, int64_t rows, int64_t cols, const float *X /* [Rpad][cols] */,
         float *Y /* [Rpad][ldy] */, int64_t ldy) {
  const float one = 1.0f, zero = 0.0f;
  const int tile = b->g->row_tile;
  if (pf_join(b) != 0) return -1;
  if (b->g->prec == MC_GEMM_BF16) {
    if (b->g->gemm_mma) { /* X read as fp32 and rounded in the kernel: no f32_to_bf16 launch */
      const int rc = gemm_mma(b, W, rows, cols, X, 1, Y, ldy);
      if (rc != -2) return rc;
    }
    if (cols > b->gemm_cols || f32_to_bf16(X, b->xb, (int64_t)b->Rpad * cols, b->stream) != 0)
      return -1;
    return gemm_xb(b, W, rows, cols, Y, ldy);
  }
  const float *Wf = (const float *)W; /* [rows][cols] */
  for (int r0 = 0; r0 < b->Rpad; r0 += tile)
    if (cublasSgemm(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, tile, (int)cols, &one, Wf,
                    (int)cols, X + (int64_t)r0 * cols, (int)cols, &zero, Y + (int64_t)r0 * ldy,
                    (int)ldy) != CUBLAS_STATUS_SUCCESS)
      return -1;
  return 0;
}

}  // namespace mcm
