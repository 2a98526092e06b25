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
 * 16 and 64; variants 4 and 5 (mma4, mma8: bf16, shapes with cols % 8 == 0, within
 * gemm_lab_bound_mma, row invariance printed); variants 1 and 3 (stream, stream4: the same order in two warp shapes); variant 2 at gemm_lab_splits' count for this device and at forced counts 3 (empty
 * trailing ranges allowed) and 7 (when the shape has 7 x 32 chunks).
 * Exit status 0 only when every case passes. Usage: gpu_check_gemm_lab (from the repository root). */
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
          {GEMM_LAB_SPLITK, 16, 7}, {GEMM_LAB_MMA4, 16, 1}, {GEMM_LAB_MMA8, 16, 1}};
      for (const auto &run : runs) {
        if (run.v == GEMM_LAB_SPLITK && run.nsplit == 7 && nchunks < 32LL * 7) continue;
        /* the tensor-core kernel: bf16 only, whole 16-byte rows (cols % 8 == 0) */
        if (!gemm_lab_has_prec(run.v, p) || (gemm_lab_mma_warps(run.v) && s.cols % 8))
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
        const bool ok = r.ran && r.ok;
        printf("%-22s %6lld x %-6lld %s %-7s tile %2d splits %2d: %s  max|gpu-fp64|/A %.2e (%.3f of bound), "
               "cpu-order diffs %lld, invariance diffs %lld%s, %lld outputs\n",
               s.what, s.rows, s.cols, gemm_lab_prec_name(p), gemm_lab_name(run.v), run.tile, r.nsplit,
               !r.ran ? "FAIL (refused)" : ok ? "ok  " : "FAIL", r.worst_rel, r.worst_ratio, (long long)r.cpu_diff,
               (long long)r.inv_diff, gemm_lab_is_order(run.v) ? "" : " (not required)", (long long)r.checked);
        if (!ok) fails++;
      }
    }
  printf("%s: %d of %d cases failed\n", fails ? "FAIL" : "PASS", fails, cases);
  return fails ? 1 : 0;
}
