/* q_fake_cpu against the independent reference of tests/quant/qref.c (SPEC section 3 written out
 * with table searches), bit for bit, on random matrices of several shapes (including rows whose
 * last block is short) and block sizes, round-to-nearest and stochastic. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "quant/quant.h"
#include "tests/quant/qref.h"

typedef struct { int64_t rows, cols; } shape;
static const shape shapes[] = {{3, 200}, {7, 33}, {1, 1}, {64, 130}, {2, 16}, {5, 31}};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

/* Magnitude ranges of the random inputs: sign * 10^U(lo, hi), never zero. The first is the one
 * of the test plan; the others reach fp32 subnormals and the top of the fp32 range. */
static const double spreads[][2] = {{-6.0, 3.0}, {-44.0, -30.0}, {-3.0, 38.0}, {-1.0, 1.0}};
#define NSPREADS (sizeof spreads / sizeof spreads[0])

enum { NMAT = 2 };

/* Compare one format on every shape and spread; SR formats use per-matrix ids and events. */
static void check_format(const char *text) {
  qformat f = ref_format(text);
  uint64_t rng = 0xC0FFEEu;
  for (size_t si = 0; si < NSHAPES; si++) {
    int64_t rows = shapes[si].rows, cols = shapes[si].cols, per = rows * cols;
    qlayout L;
    cr_assert_eq(qlayout_of(&f, rows, cols, &L), 0, "%s %ldx%ld: layout", text, (long)rows, (long)cols);
    float *x = malloc((size_t)(NMAT * per) * sizeof *x);
    float *y = malloc((size_t)(NMAT * per) * sizeof *y);
    float *want = malloc((size_t)(NMAT * per) * sizeof *want);
    cr_assert(x && y && want);
    for (size_t sp = 0; sp < NSPREADS; sp++) {
      for (int64_t i = 0; i < NMAT * per; i++) x[i] = ref_rand_spread(&rng, spreads[sp][0], spreads[sp][1]);
      uint64_t ids[NMAT] = {qsr_matrix_id(3, 7, 11), qsr_matrix_id(4095, 65535, 0xFFFFFFFFu)};
      uint32_t events[NMAT] = {5u, 0xFFFFFFFFu};
      qsr_params sr = {0x0123456789ABCDEFull, ids, events, QSR_STREAM_LP};
      cr_assert_eq(q_fake_cpu(&f, &L, NMAT, x, y, &sr), 0);
      for (int m = 0; m < NMAT; m++)
        ref_fake_matrix(&f, rows, cols, x + m * per, want + m * per, sr.seed, ids[m], events[m], sr.stream);
      int64_t first;
      int64_t bad = ref_count_bit_mismatch(y, want, NMAT * per, &first);
      cr_assert_eq(bad, 0,
                   "%s %ldx%ld, spread 10^[%g,%g]: %ld of %ld elements differ; first [%ld] x=%a got %a "
                   "expected %a",
                   text, (long)rows, (long)cols, spreads[sp][0], spreads[sp][1], (long)bad,
                   (long)(NMAT * per), (long)first, (double)x[first], (double)y[first],
                   (double)want[first]);
      /* sanity of the reference itself: finite inputs give finite outputs in block formats */
      for (int64_t i = 0; f.block > 0 && i < NMAT * per; i++)
        cr_assert(isfinite(want[i]), "%s: reference produced %a", text, (double)want[i]);
    }
    free(x);
    free(y);
    free(want);
  }
}

Test(quant_reference, fp8) { check_format("fp8"); }
Test(quant_reference, fp8_e5m2) { check_format("fp8_e5m2"); }
Test(quant_reference, int8) { check_format("int8"); }
Test(quant_reference, nvfp4) { check_format("nvfp4"); }
Test(quant_reference, mxfp8) { check_format("mxfp8"); }
Test(quant_reference, mxfp4) { check_format("mxfp4"); }
Test(quant_reference, custom_blocks) {
  check_format("fp8@64");
  check_format("int8@32");
  check_format("nvfp4@32");
  check_format("mxfp8@16");
  check_format("fp8_e5m2@7");
  check_format("mxfp4@2");
  check_format("fp8@1");
}

Test(quant_reference, fp8_sr) { check_format("fp8/sr"); }
Test(quant_reference, fp8_e5m2_sr) { check_format("fp8_e5m2/sr"); }
Test(quant_reference, int8_sr) { check_format("int8/sr"); }
Test(quant_reference, nvfp4_sr) { check_format("nvfp4/sr"); }
Test(quant_reference, mxfp8_sr) { check_format("mxfp8/sr"); }
Test(quant_reference, mxfp4_sr) { check_format("mxfp4/sr"); }
Test(quant_reference, custom_blocks_sr) {
  check_format("fp8@64/sr");
  check_format("int8@32/sr");
  check_format("nvfp4@32/sr");
  check_format("mxfp8@16/sr");
}

/* The unscaled formats through the same batched path (fp16/bf16 overflow is in range of the
 * third spread). */
Test(quant_reference, unscaled) {
  check_format("fp16");
  check_format("bf16");
  check_format("fp16/sr");
  check_format("bf16/sr");
  check_format("fp32");
}

/* A NULL qsr_params means seed 0, matrix id = position in the batch, event 0, stream 0. */
Test(quant_reference, sr_defaults) {
  qformat f = ref_format("fp8@16/sr");
  qlayout L;
  cr_assert_eq(qlayout_of(&f, 4, 40, &L), 0);
  enum { N = 3 * 160 };
  float x[N], y[N], want[N];
  uint64_t rng = 99;
  for (int i = 0; i < N; i++) x[i] = ref_rand_spread(&rng, -3.0, 2.0);
  cr_assert_eq(q_fake_cpu(&f, &L, 3, x, y, NULL), 0);
  for (int m = 0; m < 3; m++) ref_fake_matrix(&f, 4, 40, x + m * 160, want + m * 160, 0, (uint64_t)m, 0, 0);
  int64_t first;
  cr_assert_eq(ref_count_bit_mismatch(y, want, N, &first), 0, "first mismatch at %ld", (long)first);
}

/* SPEC: the NVFP4 block scale is e4m3(min(amax_b * (S_enc/6), 448)), S_enc/6 first. Written as
 * (amax_b * S_enc)/6 the fp32 product can land on the other side of an E4M3 rounding boundary.
 * Random matrices almost never hit that, so find such blocks near E4M3 midpoints and check them. */
Test(quant_reference, nvfp4_block_scale_order) {
  enum { WANT = 32 };
  float amax[WANT], amax_b[WANT];
  int found = 0;
  uint64_t rng = 2024;
  const ref_grid *g = ref_grid_get(RSSM_EL_E4M3);
  for (int trial = 0; trial < 20000 && found < WANT; trial++) {
    float A = (float)(1.0 + 999.0 * ref_rng_uniform(&rng));
    float s_enc = (448.0f * 6.0f) / A;
    int i = 8 + (int)(ref_rng_next(&rng) % (uint64_t)(g->n - 9)); /* a normal E4M3 midpoint */
    float mid = (float)(0.5 * (g->val[i] + g->val[i + 1]));
    float b = mid / (s_enc / 6.0f);
    for (int step = 0; step < 40; step++) b = nextafterf(b, 0.0f);
    for (int step = 0; step < 80; step++, b = nextafterf(b, INFINITY)) {
      float m1 = b * (s_enc / 6.0f), m2 = (b * s_enc) / 6.0f;
      if (b <= A && ref_round(RSSM_EL_E4M3, m1, 0, 0u) != ref_round(RSSM_EL_E4M3, m2, 0, 0u)) {
        amax[found] = A;
        amax_b[found++] = b;
        break;
      }
    }
  }
  cr_assert(found >= 8, "test bug: only %d blocks found where the order of the scale product matters", found);
  /* one 2x16 matrix per case: row 0 holds the matrix amax, row 1 the block with amax_b */
  qformat f = ref_format("nvfp4");
  qlayout L;
  cr_assert_eq(qlayout_of(&f, 2, 16, &L), 0);
  float *x = malloc((size_t)found * 32 * sizeof *x), *y = malloc((size_t)found * 32 * sizeof *y);
  float *want = malloc((size_t)found * 32 * sizeof *want);
  cr_assert(x && y && want);
  for (int m = 0; m < found; m++) {
    for (int c = 0; c < 16; c++) {
      x[m * 32 + c] = amax[m] * (float)(0.01 + 0.98 * ref_rng_uniform(&rng));
      x[m * 32 + 16 + c] = amax_b[m] * (float)(0.01 + 0.98 * ref_rng_uniform(&rng));
    }
    x[m * 32 + 5] = -amax[m];
    x[m * 32 + 16 + 9] = amax_b[m];
    ref_fake_matrix(&f, 2, 16, x + m * 32, want + m * 32, 0, 0, 0, 0);
  }
  cr_assert_eq(q_fake_cpu(&f, &L, found, x, y, NULL), 0);
  int64_t first;
  int64_t bad = ref_count_bit_mismatch(y, want, (int64_t)found * 32, &first);
  cr_assert_eq(bad, 0, "%ld elements differ; first [%ld]: x=%a got %a expected %a", (long)bad, (long)first,
               (double)x[first], (double)y[first], (double)want[first]);
  free(x);
  free(y);
  free(want);
}
