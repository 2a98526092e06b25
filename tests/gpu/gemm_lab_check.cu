/* GPU check (device machine, not CI): every small-GEMM-lab variant (src/model_cuda/gemm_lab.h)
 * on random inputs (never zero) against an fp64 evaluation within the bound argued in
 * src/bench_gemm/bench_gemm_check.c (gamma_d of the stream order's chains; gamma_cols with 2u
 * for cuBLAS), the stream variants (1, 2) also bit for bit against the CPU reference of their
 * order (gemm_lab_ref_order) and row-invariant (rows alone and the reversed batch give the
 * batch's bits); cuBLAS's row invariance is printed, not required.
 * Shapes: the distinct GEMM shapes of one step of the tiny models and the 4B shapes, read from
 * their config.json as `bench gemm` reads them (bg_step_of; run from the repository root), plus
 * odd ones: cols not a multiple of 8 (nor of 4), one column, fewer chunks than lanes, rows not a
 * multiple of a block's 8 weight rows, a single weight row. Row counts: every R = 1..64 for the
 * small shapes; 1, 7, 16, 17, 33, 63, 64 for the 4B ones. Both precisions; variant 0 on tiles of
 * 16 and 64; variants 4, 5 and 6 (mma4, mma8, mma16: bf16, shapes with cols % 8 == 0, within
 * gemm_lab_bound_mma, row invariance printed); variant 7 (wide: bf16, cols % 8 == 0, within
 * gemm_lab_bound_mma at its split count, row invariance printed); variants 1 and 3 (stream, stream4: the same order in two warp shapes);
 * variant 2 at gemm_lab_splits' count for this device and at forced counts 3 (empty trailing ranges allowed) and 7
 * (when the shape has 7 x 32 chunks). Then mc_gemm_mma_act (an MLP's input projection with its SwiGLU or ReLU^2 and the
 * bf16 rounding in one launch) bit for bit against mc_gemm_mma followed by mc_swiglu_bf16 / mc_relu2_bf16. Exit status
 * 0 only when every case passes. Usage: gpu_check_gemm_lab (from the repository root). */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

extern "C" { /* C headers without their own guards */
#include "src/bench_gemm/bench_gemm.h"
#include "src/model/model_config.h"
}
#include "src/bench_gemm/bench_gemm_check.h"
#include "src/model_cuda/gemm_lab.h"
#include "src/model_cuda/mc_fused.h"
#include "src/model_cuda/mc_gemm_mma.h"

struct Shape {
  char what[48];
  long long rows, cols;
  bool big; /* over 64 M weights: fewer row counts */
};

/* The distinct (rows, cols) of every model's step, then the odd shapes; false on a config error. */
static bool shapes_of(std::vector<Shape> &out) {
  int nm = 0;
  const bg_model *m = bg_models(&nm);
  for (int i = 0; i < nm; i++) {
    model_config c;
    char err[512];
    if (model_config_load(m[i].dir, &c, err, sizeof err) != 0) {
      printf("FAIL: %s: %s (run from the repository root)\n", m[i].key, err);
      return false;
    }
    bg_step s;
    const int rc = bg_step_of(&c, &s);
    model_config_free(&c);
    if (rc != 0) return false;
    for (int g = 0; g < s.n; g++) {
      bool seen = false;
      for (const Shape &x : out) seen = seen || (x.rows == s.g[g].rows && x.cols == s.g[g].cols);
      if (seen) continue;
      Shape x;
      snprintf(x.what, sizeof x.what, "%s %s", m[i].key, s.g[g].name);
      x.rows = s.g[g].rows, x.cols = s.g[g].cols, x.big = x.rows * x.cols > (64LL << 20) / 8;
      out.push_back(x);
    }
  }
  const long long odd[][2] = {{1003, 1001}, {37, 250}, {129, 4099}, {8, 7}, {1, 1}, {2049, 300}, {5, 12345},
                              {300, 2052}, {9, 33}};
  for (const auto &o : odd) {
    Shape x;
    snprintf(x.what, sizeof x.what, "odd %lld x %lld", o[0], o[1]);
    x.rows = o[0], x.cols = o[1], x.big = false;
    out.push_back(x);
  }
  return true;
}

/* bf16 bits of x, round to nearest even (finite x) */
static uint16_t bf16_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* mc_gemm_mma_act against the two launches it replaces in the runtime: mc_gemm_mma into fp32 Y,
 * then mc_relu2_bf16 / mc_swiglu_bf16 (act_bf16_kernel): bit for bit (the same loads, mma and
 * warp order for each sum, the same activation and rounding; a SWIGLU block only holds its gate
 * and up rows in other fragment rows). Random W and X (never zero, both signs), both X entries
 * (bf16, fp32 rounded in the kernel), both warp counts, R from 1 to 64. Returns the failures. */
static int check_act(const char *what, int act, long long outs, long long cols, int *cases) {
  const long long rows = act == MC_GEMM_MMA_ACT_SWIGLU ? 2 * outs : outs; /* W rows */
  const int Rmax = MC_GEMM_MMA_MAX_R, Rs[] = {1, 5, 8, 9, 16, 17, 33, 64};
  std::vector<uint16_t> hw((size_t)(rows * cols)), hxb((size_t)(Rmax * cols));
  std::vector<float> hx((size_t)(Rmax * cols));
  unsigned long long st = 0x9e3779b97f4a7c15ULL ^ (unsigned long long)(rows * 131 + cols);
  auto uni = [&]() { /* +-[0.05, 1): never zero */
                     st = st * 6364136223846793005ULL + 1442695040888963407ULL;
                     const double u = (double)(st >> 11) / 9007199254740992.0;
                     return (float)((0.05 + 0.95 * u) * ((st >> 7) & 1 ? 1.0 : -1.0));
  };
  const float ws = 2.0f / sqrtf((float)cols); /* |Y| of order 1: the activation's full range */
  for (auto &w : hw) w = bf16_bits(uni() * ws);
  for (size_t i = 0; i < hx.size(); i++) hx[i] = uni(), hxb[i] = bf16_bits(hx[i]);
  uint16_t *W = nullptr, *Xb = nullptr, *A = nullptr, *Aref = nullptr;
  float *X = nullptr, *Y = nullptr, *act32 = nullptr;
  int fails = 0;
  bool ok = cudaMalloc(&W, hw.size() * 2) == cudaSuccess && cudaMalloc(&Xb, hxb.size() * 2) == cudaSuccess &&
            cudaMalloc(&X, hx.size() * 4) == cudaSuccess && cudaMalloc(&Y, (size_t)(Rmax * rows) * 4) == cudaSuccess &&
            cudaMalloc(&act32, (size_t)(Rmax * outs) * 4) == cudaSuccess &&
            cudaMalloc(&A, (size_t)(Rmax * outs) * 2) == cudaSuccess &&
            cudaMalloc(&Aref, (size_t)(Rmax * outs) * 2) == cudaSuccess &&
            cudaMemcpy(W, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMemcpy(Xb, hxb.data(), hxb.size() * 2, cudaMemcpyHostToDevice) == cudaSuccess &&
            cudaMemcpy(X, hx.data(), hx.size() * 4, cudaMemcpyHostToDevice) == cudaSuccess;
  std::vector<uint16_t> got((size_t)(Rmax * outs)), want((size_t)(Rmax * outs));
  for (int kw = 4; ok && kw <= 16; kw *= 2)
    for (int xf = 0; ok && xf < 2; xf++) {
      uint64_t bits = GEMM_CHECK_FNV_BASIS; /* every R's outputs, for builds to compare */
      for (int R : Rs) {
        const void *x = xf ? (const void *)X : (const void *)Xb;
        (*cases)++;
        cudaMemset(A, 0xff, (size_t)(Rmax * outs) * 2); /* NaN bits: an output not written shows */
        cudaMemset(Aref, 0, (size_t)(Rmax * outs) * 2);
        const int rc_ref = mc_gemm_mma(W, x, xf, Y, rows, R, rows, cols, kw, nullptr) != 0 ||
                           (act == MC_GEMM_MMA_ACT_SWIGLU ? mc_swiglu_bf16(Y, act32, Aref, R, R, outs, nullptr)
                                                          : mc_relu2_bf16(Y, act32, Aref, R, R, outs, nullptr)) != 0;
        const int rc = mc_gemm_mma_act(W, x, xf, A, outs, R, rows, cols, act, kw, nullptr);
        ok = cudaDeviceSynchronize() == cudaSuccess &&
             cudaMemcpy(got.data(), A, (size_t)(R * outs) * 2, cudaMemcpyDeviceToHost) == cudaSuccess &&
             cudaMemcpy(want.data(), Aref, (size_t)(R * outs) * 2, cudaMemcpyDeviceToHost) == cudaSuccess;
        long long diff = 0, nonzero = 0;
        bits = gemm_check_fnv1a(bits, got.data(), (size_t)(R * outs) * 2);
        for (long long i = 0; ok && i < R * outs; i++) {
          diff += got[(size_t)i] != want[(size_t)i];
          nonzero += (want[(size_t)i] & 0x7fff) != 0;
        }
        /* relu2 zeroes the negative half; at least a quarter of the outputs must be nonzero */
        const bool pass = ok && rc == 0 && rc_ref == 0 && diff == 0 && 4 * nonzero >= R * outs;
        if (!pass || R == 64)
          printf("%-22s %6lld x %-6lld bf16 %-7s kw %d x %s R %2d: %s  bit diffs %lld of %lld, nonzero %lld%s", what,
                 rows, cols, act == MC_GEMM_MMA_ACT_SWIGLU ? "swiglu" : "relu2", kw, xf ? "fp32" : "bf16", R,
                 pass ? "ok  " : "FAIL", diff, R * outs, nonzero, R == 64 ? "" : "\n");
        if (R == 64) printf(", bits of R 1..64 %016llx\n", (unsigned long long)bits);
        fails += !pass;
      }
    }
  if (!ok) {
    printf("%-22s: FAIL (CUDA: %s)\n", what, cudaGetErrorString(cudaGetLastError()));
    fails++;
  }
  cudaFree(W), cudaFree(Xb), cudaFree(X), cudaFree(Y), cudaFree(act32), cudaFree(A), cudaFree(Aref);
  return fails;
}

int main() {
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    printf("FAIL: no CUDA device\n");
    return 1;
  }
  std::vector<Shape> shapes;
  if (!shapes_of(shapes)) return 1;
  std::vector<int> all_r, big_r = {1, 7, 16, 17, 33, 63, 64};
  for (int r = 1; r <= GEMM_LAB_MAX_R; r++) all_r.push_back(r);
  int fails = 0, cases = 0;
  for (const Shape &s : shapes)
    for (int pi = 0; pi < 2; pi++) {
      const gemm_lab_prec p = (gemm_lab_prec)pi;
      const std::vector<int> &Rs = s.big ? big_r : all_r;
      const long long nchunks = (s.cols + gemm_lab_chunk(p) - 1) / gemm_lab_chunk(p);
      struct { int v, tile, nsplit; } runs[] = {
          {GEMM_LAB_CUBLAS, 16, 1}, {GEMM_LAB_CUBLAS, 64, 1}, {GEMM_LAB_STREAM, 16, 1}, {GEMM_LAB_STREAM4, 16, 1},
          {GEMM_LAB_SPLITK, 16, gemm_lab_splits(s.rows, s.cols, p, sms)}, {GEMM_LAB_SPLITK, 16, 3},
          {GEMM_LAB_SPLITK, 16, 7}, {GEMM_LAB_MMA4, 16, 1}, {GEMM_LAB_MMA8, 16, 1},
          {GEMM_LAB_MMA16, 16, 1}, {GEMM_LAB_WIDE, 16, 1}, {GEMM_LAB_LT0, 64, 1},
          {GEMM_LAB_LT0 + 1, 64, 1}, {GEMM_LAB_LT0 + 2, 16, 1}, {GEMM_LAB_LT0 + 3, 64, 1}};
      for (const auto &run : runs) {
        if (run.v == GEMM_LAB_SPLITK && run.nsplit == 7 && nchunks < 32LL * 7) continue;
        /* the tensor-core kernel: bf16 only, whole 16-byte rows (cols % 8 == 0) */
        if (!gemm_lab_has_prec(run.v, p) ||
            ((gemm_lab_mma_warps(run.v) || run.v == GEMM_LAB_WIDE) && s.cols % 8) ||
            (gemm_lab_lt_rank(run.v) >= 0 && (s.cols % 8 || s.rows % 4)))
          continue;
        gemm_check_result r;
        char err[256] = "";
        cases++;
        if (gemm_check_variant(run.v, p, s.rows, s.cols, Rs.data(), (int)Rs.size(), run.tile, run.nsplit, &r, err,
                               sizeof err) != 0) {
          printf("%-22s %6lld x %-6lld %s %-7s tile %2d splits %2d: FAIL (CUDA: %s)\n", s.what, s.rows, s.cols,
                 gemm_lab_prec_name(p), gemm_lab_name(run.v), run.tile, run.nsplit, err);
          fails++;
          continue;
        }
        if (!r.ran && gemm_lab_lt_rank(run.v) > 0) { /* a rank the heuristic may not reach */
          printf("%-22s %6lld x %-6lld %s %-7s tile %2d: n/a (cuBLASLt ranks fewer algorithms)\n",
                 s.what, s.rows, s.cols, gemm_lab_prec_name(p), gemm_lab_name(run.v), run.tile);
          cases--;
          continue;
        }
        const bool ok = r.ran && r.ok;
        printf(
            "%-22s %6lld x %-6lld %s %-7s tile %2d splits %2d: %s  max|gpu-fp64|/A %.2e (%.3f of bound), "
            "cpu-order diffs %lld, invariance diffs %lld%s, %lld outputs, bits %016llx\n",
            s.what, s.rows, s.cols, gemm_lab_prec_name(p), gemm_lab_name(run.v), run.tile, r.nsplit,
            !r.ran ? "FAIL (refused)"
            : ok   ? "ok  "
                   : "FAIL",
            r.worst_rel, r.worst_ratio, (long long)r.cpu_diff, (long long)r.inv_diff,
            gemm_lab_is_order(run.v) ? "" : " (not required)", (long long)r.checked, (unsigned long long)r.bits);
        if (!ok) fails++;
      }
    }
  /* the MLP input projection with its activation (mc_gemm_mma_act): the fixture models' MLPs
     (qwen35-gdn-tiny SwiGLU I = 768 of H = 256, nemotronh-m2-tiny ReLU^2 1920 of 320), partial
     blocks, and a 4B MLP (Qwen3.5-4B: I = 9216 of 2560, where the warp count is 4) */
  fails += check_act("act qwen-tiny mlp", MC_GEMM_MMA_ACT_SWIGLU, 768, 256, &cases);
  fails += check_act("act nemo-tiny mlp", MC_GEMM_MMA_ACT_RELU2, 1920, 320, &cases);
  fails += check_act("act odd swiglu", MC_GEMM_MMA_ACT_SWIGLU, 37, 264, &cases);
  fails += check_act("act odd relu2", MC_GEMM_MMA_ACT_RELU2, 37, 264, &cases);
  fails += check_act("act qwen4b mlp", MC_GEMM_MMA_ACT_SWIGLU, 9216, 2560, &cases);
  printf("%s: %d of %d cases failed\n", fails ? "FAIL" : "PASS", fails, cases);
  return fails ? 1 : 0;
}
