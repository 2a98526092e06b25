/* The CPU reference of the small-GEMM lab's stream order (gemm_lab_ref_order, the order the
 * device's variants 1 and 2 must reproduce bit for bit) against the fp64 evaluation within the
 * bound gemm_lab_bound_order argues, on random inputs that are never zero (+-[0.05, 1) and a
 * spread of exponents), for both precisions, split counts 1..5 and odd sizes (cols not a multiple
 * of the chunk, one column, fewer chunks than lanes). Also: the order's value for R rows does not
 * depend on R (each row computed alone equals it in the batch), and the bounds are not vacuous. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/model_cuda/gemm_lab.h"
#include "src/model_cuda/mc_gemm_mma.h"
#include "src/model_cuda/mc_gemm_wide.h"

static uint64_t st = 0x5eedULL;
static double u01(void) {
  uint64_t z = (st += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}
/* +-[0.05, 1) times 2^e, e in [-spread, spread]: never zero */
static float rnd(int spread) {
  const double m = 0.05 + 0.95 * u01();
  const int e = spread ? (int)(u01() * (2 * spread + 1)) - spread : 0;
  return (float)(u01() < 0.5 ? -ldexp(m, e) : ldexp(m, e));
}

/* Fills W (fp32 or bf16 bits) and X, runs both references; returns the worst |y - y64| / bound. */
static double one_case(gemm_lab_prec p, int R, int64_t rows, int64_t cols, int nsplit, int spread) {
  const size_t nw = (size_t)rows * cols, nx = (size_t)R * cols, ny = (size_t)R * rows;
  void *W = malloc(nw * (size_t)gemm_lab_wbytes(p));
  float *X = malloc(nx * sizeof *X), *Y = malloc(ny * sizeof *Y), *Y1 = malloc(rows * sizeof *Y1);
  double *y64 = malloc(ny * sizeof *y64), *A = malloc(ny * sizeof *A);
  cr_assert(W && X && Y && Y1 && y64 && A);
  for (size_t i = 0; i < nw; i++) {
    const float v = rnd(spread);
    if (p == GEMM_LAB_BF16) ((uint16_t *)W)[i] = gemm_lab_bf16_rne(v);
    else ((float *)W)[i] = v;
  }
  for (size_t i = 0; i < nx; i++) X[i] = rnd(spread);
  gemm_lab_ref_order(p, W, X, Y, R, rows, cols, nsplit);
  gemm_lab_ref64(p, W, X, y64, A, R, rows, cols);
  const double b = gemm_lab_bound_order(p, cols, nsplit) + (double)cols * ldexp(1.0, -52);
  double worst = 0.0;
  for (size_t i = 0; i < ny; i++) {
    cr_assert(A[i] > 0.0);
    const double e = fabs((double)Y[i] - y64[i]) / (b * A[i]);
    cr_assert(e <= 1.0, "p=%d R=%d rows=%lld cols=%lld nsplit=%d out %zu: |y - y64| = %.3g, bound %.3g",
              (int)p, R, (long long)rows, (long long)cols, nsplit, i, fabs((double)Y[i] - y64[i]), b * A[i]);
    if (e > worst) worst = e;
  }
  for (int r = 0; r < R; r += R > 3 ? R / 3 : 1) { /* row r alone: the same bits */
    gemm_lab_ref_order(p, W, X + (size_t)r * cols, Y1, 1, rows, cols, nsplit);
    cr_assert(memcmp(Y1, Y + (size_t)r * rows, rows * sizeof *Y1) == 0, "row %d alone differs", r);
  }
  free(W), free(X), free(Y), free(Y1), free(y64), free(A);
  return worst;
}

Test(gemm_lab_ref, order_within_its_bound_of_fp64) {
  const int64_t shapes[][2] = {{7, 1}, {5, 3}, {9, 255}, {33, 256}, {16, 1001}, {3, 2560}, {2, 4099}, {1, 12544}};
  for (int pi = 0; pi < 2; pi++)
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int nsplit = 1; nsplit <= 5; nsplit += (shapes[s][1] > 600 ? 2 : 4)) {
        const double w = one_case((gemm_lab_prec)pi, 5, shapes[s][0], shapes[s][1], nsplit, 0);
        cr_assert(w <= 1.0);
      }
  /* exponents spread over 2^-20 .. 2^20: large and small terms mixed */
  for (int pi = 0; pi < 2; pi++) one_case((gemm_lab_prec)pi, 3, 11, 3001, 1, 20);
}

/* One column: y = fmaf(x, w, 0), the product rounded once. Fewer chunks than lanes: the lanes
 * without a chunk add +0 in the tree, which changes nothing. */
Test(gemm_lab_ref, tiny_cases_exact) {
  float w = 0.7f, x = -0.3f, y;
  gemm_lab_ref_order(GEMM_LAB_FP32, &w, &x, &y, 1, 1, 1, 1);
  cr_assert_eq(y, (float)((double)x * (double)w));
  const float W[5] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f}, X[5] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
  gemm_lab_ref_order(GEMM_LAB_FP32, W, X, &y, 1, 1, 5, 1);
  cr_assert_eq(y, 15.0f);
  uint16_t Wb[5];
  for (int i = 0; i < 5; i++) Wb[i] = gemm_lab_bf16_rne(W[i]);
  gemm_lab_ref_order(GEMM_LAB_BF16, Wb, X, &y, 1, 1, 5, 3);
  cr_assert_eq(y, 15.0f);
}

/* The bounds: the stream order's is below 1 / cols of A (a dropped or repeated term of average
 * size, A / cols, exceeds it; the bit-exact comparison with the CPU catches anything smaller);
 * cuBLAS's worst case, gamma_cols with 2u, is ~cols u and cannot be that tight at large cols (it
 * is what the arithmetic guarantees for an unknown order: the bench prints the observed ratio). */
Test(gemm_lab_ref, bounds_are_meaningful) {
  const int64_t cols[] = {256, 2560, 9216, 12544};
  for (size_t i = 0; i < 4; i++) {
    const double bo = gemm_lab_bound_order(GEMM_LAB_FP32, cols[i], 1);
    const double bb = gemm_lab_bound_order(GEMM_LAB_BF16, cols[i], 1);
    const double bc = gemm_lab_bound_cublas(cols[i]);
    cr_assert(bo > 0 && bb > 0 && bc > 0);
    cr_assert(bo < 1.0 / (double)cols[i], "cols %lld: %.3g", (long long)cols[i], bo);
    cr_assert(bc < 1.5 * (double)cols[i] * ldexp(1.0, -23) && bc < 2e-3, "cols %lld: %.3g", (long long)cols[i], bc);
    cr_assert(bb <= bo); /* 8 values per chunk: the same chain length in values, no longer */
  }
  cr_assert(gemm_lab_bound_order(GEMM_LAB_FP32, 12544, 1) < gemm_lab_bound_cublas(12544));
  /* the tensor-core kernel's: cuBLAS's argument plus the kw - 1 additions of the warps' partial
     sums, so just above cuBLAS's at the same cols and growing with kw */
  for (size_t i = 0; i < 4; i++) {
    const double bc = gemm_lab_bound_cublas(cols[i]);
    const double b4 = gemm_lab_bound_mma(cols[i], 4), b8 = gemm_lab_bound_mma(cols[i], 8);
    cr_assert(bc < b4 && b4 < b8 && b8 < 1.01 * gemm_lab_bound_cublas(cols[i] + 8), "cols %lld", (long long)cols[i]);
  }
}

/* The tensor-core kernel's host-side choices (mc_gemm_mma.h): 4 warps a block only when the
 * 16-row blocks give every SM at least 4 (the 4B shapes' large weights), 16 when the blocks fit
 * the SMs one each and 8 warps would load W in two rounds (the Mamba-2 fixture's MLP down
 * projection, 320 x 1920), else 8 (the tiny models); the shapes it refuses (the runtime then
 * calls cuBLAS). */
Test(gemm_mma, warps_and_supported_shapes) {
  cr_assert_eq(mc_gemm_mma_warps(18432, 2560, 132), 4);    /* 1152 blocks >= 528 */
  cr_assert_eq(mc_gemm_mma_warps(16 * 528, 9728, 132), 4); /* exactly 4 per SM, long rows */
  cr_assert_eq(mc_gemm_mma_warps(16 * 528 - 16, 320, 132), 8);
  cr_assert_eq(mc_gemm_mma_warps(2560, 320, 132), 8); /* 160 blocks */
  cr_assert_eq(mc_gemm_mma_warps(256, 320, 132), 8);
  cr_assert_eq(mc_gemm_mma_warps(18432, 320, 0), 8); /* no device figure: the wider block */
  /* one round of W with 8 warps up to 32 steps of 32 k; past that 16 warps where the blocks fit */
  cr_assert_eq(mc_gemm_mma_warps(320, 32 * 8 * MC_GEMM_MMA_PREFETCH, 132), 8);
  cr_assert_eq(mc_gemm_mma_warps(320, 32 * 8 * MC_GEMM_MMA_PREFETCH + 8, 132), 16);
  cr_assert_eq(mc_gemm_mma_warps(320, 1920, 132), 16);   /* the Mamba-2 fixture's down projection */
  cr_assert_eq(mc_gemm_mma_warps(256, 768, 132), 8);     /* the GDN fixture's: one round */
  cr_assert_eq(mc_gemm_mma_warps(16 * 132, 1920, 132), 16);
  cr_assert_eq(mc_gemm_mma_warps(16 * 133, 1920, 132), 8); /* more blocks than SMs */
  cr_assert_eq(mc_gemm_mma_warps(320, 1920, 0), 8);
  /* which bf16 models use it: the fixture models (~15 MB of GEMM weights), not the 4B shapes */
  cr_assert(mc_gemm_mma_for_model(14600000));
  cr_assert(mc_gemm_mma_for_model(MC_GEMM_MMA_MODEL_BYTES));
  cr_assert(!mc_gemm_mma_for_model(MC_GEMM_MMA_MODEL_BYTES + 1));
  cr_assert(!mc_gemm_mma_for_model(8410000000LL));
  cr_assert(!mc_gemm_mma_for_model(0));
  _Alignas(16) static uint16_t w[64];
  _Alignas(16) static float x[64];
  cr_assert(mc_gemm_mma_supported(w, x, 1, 16, 2560, 16));
  cr_assert(mc_gemm_mma_supported(w, x, 64, 248320, 2560, 248320));
  cr_assert(!mc_gemm_mma_supported(w, x, 0, 16, 2560, 16)); /* R outside 1..64 */
  cr_assert(!mc_gemm_mma_supported(w, x, 65, 16, 2560, 16));
  cr_assert(!mc_gemm_mma_supported(w, x, 8, 16, 2564, 16));     /* cols % 8 != 0 */
  cr_assert(!mc_gemm_mma_supported(w, x, 8, 16, 2560, 15));     /* ldy < rows */
  cr_assert(!mc_gemm_mma_supported(w + 1, x, 8, 16, 2560, 16)); /* W not 16-byte aligned */
  cr_assert(!mc_gemm_mma_supported(w, x + 2, 8, 16, 2560, 16)); /* X not 16-byte aligned */
  cr_assert(!mc_gemm_mma_supported(w, x, 8, (int64_t)1 << 31, 2560, (int64_t)1 << 31));
  /* mc_gemm_mma_act: the output's width is rows (ReLU^2) or rows / 2 (SwiGLU, rows even) */
  cr_assert(mc_gemm_mma_act_supported(w, x, 16, 1920, 320, 1920, MC_GEMM_MMA_ACT_RELU2));
  cr_assert(!mc_gemm_mma_act_supported(w, x, 16, 1920, 320, 1919, MC_GEMM_MMA_ACT_RELU2));
  cr_assert(mc_gemm_mma_act_supported(w, x, 16, 1536, 256, 768, MC_GEMM_MMA_ACT_SWIGLU));
  cr_assert(!mc_gemm_mma_act_supported(w, x, 16, 1536, 256, 767, MC_GEMM_MMA_ACT_SWIGLU));
  cr_assert(!mc_gemm_mma_act_supported(w, x, 16, 1537, 256, 768, MC_GEMM_MMA_ACT_SWIGLU));
  cr_assert(!mc_gemm_mma_act_supported(w, x, 16, 1536, 256, 768, 0)); /* no such activation */
  cr_assert(!mc_gemm_mma_act_supported(w, x, 65, 1536, 256, 768, MC_GEMM_MMA_ACT_SWIGLU));
  cr_assert(!mc_gemm_mma_act_supported(w, x, 16, 1536, 260, 768, MC_GEMM_MMA_ACT_SWIGLU));
  /* the row tiles: 8 rows each, 1, 2, 4 or 8 of them */
  cr_assert_eq(mc_gemm_mma_row_tiles(1), 1);
  cr_assert_eq(mc_gemm_mma_row_tiles(8), 1);
  cr_assert_eq(mc_gemm_mma_row_tiles(9), 2);
  cr_assert_eq(mc_gemm_mma_row_tiles(16), 2);
  cr_assert_eq(mc_gemm_mma_row_tiles(17), 4);
  cr_assert_eq(mc_gemm_mma_row_tiles(33), 8);
  cr_assert_eq(mc_gemm_mma_row_tiles(64), 8);
}

/* The wide tensor-core kernel's split rule (mc_gemm_wide.h) on the 4B shapes (132 SMs, 264
 * slots): the 2560-row projections (20 tiles of 128) split into as many >= 8-tile ranges as fit
 * one wave, the 12352-row GDN input projection in 2, the 18432-row MLP input projection and the
 * lm_head not at all; every split non-empty; the scratch and counter bounds hold for every split
 * weight; the shapes it refuses. */
Test(gemm_wide, splits_and_bounds) {
  cr_assert_eq(mc_gemm_wide_splits(2560, 4096, 132), 8);   /* 64 k-tiles: 8 of 8 */
  cr_assert_eq(mc_gemm_wide_splits(2560, 9216, 132), 12);  /* 144: 264 / 20 = 13 -> 12 of 12 */
  cr_assert_eq(mc_gemm_wide_splits(12352, 2560, 132), 2);  /* 97 tiles, 40 k-tiles */
  cr_assert_eq(mc_gemm_wide_splits(18432, 2560, 132), 1);  /* 144 tiles: one each */
  cr_assert_eq(mc_gemm_wide_splits(248320, 2560, 132), 1); /* the lm_head: many waves */
  cr_assert_eq(mc_gemm_wide_splits(256, 256, 132), 1);     /* 4 k-tiles: no split of 8 */
  cr_assert_eq(mc_gemm_wide_splits(2560, 4096, 0), 1);     /* no device figure */
  cr_assert_eq(mc_gemm_wide_tiles_per_split(9216, 12), 12);
  cr_assert_eq(mc_gemm_wide_tiles_per_split(4096, 8), 8);
  const int sms[] = {1, 78, 114, 132};
  for (int si = 0; si < 4; si++)
    for (int64_t rows = 1; rows <= 40000; rows = rows * 3 + 7)
      for (int64_t cols = 8; cols <= 20000; cols = cols * 2 + 8) {
        const int n = mc_gemm_wide_splits(rows, cols, sms[si]);
        const int64_t nkt = (cols + 63) / 64, per = mc_gemm_wide_tiles_per_split(cols, n);
        const int64_t tiles = (rows + 127) / 128;
        cr_assert(n >= 1 && n <= MC_GEMM_WIDE_MAX_SPLITS, "rows %lld cols %lld", (long long)rows,
                  (long long)cols);
        cr_assert((n - 1) * per < nkt, "an empty split: rows %lld cols %lld n %d", (long long)rows,
                  (long long)cols, n);
        if (n > 1) {
          cr_assert(per >= MC_GEMM_WIDE_MIN_TILES);
          cr_assert(tiles * n <= (int64_t)MC_GEMM_WIDE_SM_BLOCKS * sms[si]);
          cr_assert(mc_gemm_wide_scratch_floats(MC_GEMM_WIDE_MAX_R, rows, n) <=
                    mc_gemm_wide_scratch_max(sms[si]));
        }
      }
  cr_assert_eq(mc_gemm_wide_scratch_floats(64, 2560, 1), 0);
  cr_assert_eq(mc_gemm_wide_scratch_floats(64, 2560, 8), (size_t)8 * 64 * 2560);
  _Alignas(16) static uint16_t wb[64];
  cr_assert(mc_gemm_wide_supported(wb, wb, 64, 2560, 4096, 2560));
  cr_assert(!mc_gemm_wide_supported(wb, wb, 65, 2560, 4096, 2560)); /* more than 64 rows of X */
  cr_assert(!mc_gemm_wide_supported(wb, wb, 0, 2560, 4096, 2560));
  cr_assert(!mc_gemm_wide_supported(wb, wb, 16, 2560, 4100, 2560)); /* cols % 8 */
  cr_assert(!mc_gemm_wide_supported(wb, wb, 16, 2560, 4096, 2559)); /* ldy < rows */
  cr_assert(!mc_gemm_wide_supported(wb + 1, wb, 16, 2560, 4096, 2560)); /* unaligned W */
}
