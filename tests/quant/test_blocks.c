/* Scale blocks and storage (SPEC section 3, quant/format.h): zero blocks and matrices, outliers,
 * short last blocks, fp32 subnormals, non-finite input, byte layouts, independent decoding of the
 * stored bytes, and deterministic blobs. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "tests/quant/qref.h"

/* The block formats with the relative error that their element grid allows for a value near the
 * top of its block (half a step at the top binade: 2^-(mbits+1); int8: half a step at 64..127). */
typedef struct { const char *name; double tol; } blockfmt;
static const blockfmt block_formats[] = {
    {"fp8", 0x1p-4},    {"fp8_e5m2", 0x1p-3}, {"int8", 0x1p-7}, {"nvfp4", 0x1p-2},
    {"mxfp8", 0x1p-4},  {"mxfp4", 0x1p-2},    {"fp8/sr", 0x1p-3}, {"int8/sr", 0x1p-6},
    {"nvfp4/sr", 0x1p-1}, {"mxfp8/sr", 0x1p-3}, {"mxfp4/sr", 0x1p-1},
};
#define NBLOCKFMT (sizeof block_formats / sizeof block_formats[0])
/* (SR moves a value by up to a whole step, so its tolerances are doubled.) */

static double rel_err(float got, float want) { return fabs((double)got - (double)want) / fabs((double)want); }

static qlayout layout(const qformat *f, int64_t rows, int64_t cols) {
  qlayout L;
  cr_assert_eq(qlayout_of(f, rows, cols, &L), 0, "layout %ldx%ld", (long)rows, (long)cols);
  return L;
}

/* Values whose MX scale leaves them clear of the element maximum: in [1, 1.45) the MX scale is
 * 2^(0 - emax), so x / s < 1.45 * 2^emax, below 448 (E4M3) and 6 (E2M1). */
static float moderate(uint64_t *rng) {
  float v = (float)(1.0 + 0.45 * ref_rng_uniform(rng));
  return (ref_rng_next(rng) & 1u) ? -v : v;
}

/* A block of zeros in the middle of a row decodes to exact zeros; its neighbours are unaffected. */
Test(quant_blocks, zero_block) {
  for (size_t k = 0; k < NBLOCKFMT; k++) {
    qformat f = ref_format(block_formats[k].name);
    int64_t B = f.block, cols = 3 * B, rows = 2;
    qlayout L = layout(&f, rows, cols);
    float *x = malloc((size_t)(rows * cols) * sizeof *x), *y = malloc((size_t)(rows * cols) * sizeof *y);
    cr_assert(x && y);
    uint64_t rng = 1;
    for (int64_t i = 0; i < rows * cols; i++) x[i] = moderate(&rng);
    for (int64_t c = B; c < 2 * B; c++) x[c] = 0.0f; /* row 0, block 1 */
    cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
    for (int64_t i = 0; i < rows * cols; i++) {
      if (i >= B && i < 2 * B) {
        cr_assert_eq(ref_f32_bits(y[i]), 0u, "%s: zero block element %ld decodes to %a", block_formats[k].name,
                     (long)i, (double)y[i]);
      } else {
        cr_assert(isfinite(y[i]) && rel_err(y[i], x[i]) <= block_formats[k].tol,
                  "%s: element %ld %a -> %a", block_formats[k].name, (long)i, (double)x[i], (double)y[i]);
      }
    }
    free(x);
    free(y);
  }
}

/* A whole matrix of zeros (+0 and -0) stays zeros in every format, RNE and SR. */
Test(quant_blocks, zero_matrix) {
  static const char *all[] = {"fp32", "bf16", "fp16", "fp8", "fp8_e5m2", "int8", "nvfp4", "mxfp8",
                              "mxfp4", "bf16/sr", "fp16/sr", "fp8/sr", "int8/sr", "nvfp4/sr", "mxfp4/sr"};
  enum { R = 5, C = 37 };
  float x[R * C], y[R * C];
  for (int i = 0; i < R * C; i++) x[i] = (i % 3 == 0) ? -0.0f : 0.0f;
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++) {
    qformat f = ref_format(all[k]);
    qlayout L = layout(&f, R, C);
    cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
    for (int i = 0; i < R * C; i++)
      cr_assert(y[i] == 0.0f, "%s: zero matrix element %d decodes to %a", all[k], i, (double)y[i]);
  }
}

/* One huge element in a block: it is reproduced to the format's relative step, the small ones of
 * its block lose precision (but stay finite), and the other blocks of the row keep theirs. */
Test(quant_blocks, outlier) {
  for (size_t k = 0; k < NBLOCKFMT; k++) {
    qformat f = ref_format(block_formats[k].name);
    double tol = block_formats[k].tol;
    int64_t B = f.block, cols = 2 * B;
    qlayout L = layout(&f, 1, cols);
    float *x = malloc((size_t)cols * sizeof *x), *y = malloc((size_t)cols * sizeof *y);
    cr_assert(x && y);
    uint64_t rng = 2;
    for (int64_t i = 0; i < cols; i++) x[i] = moderate(&rng);
    /* 3e5 = 1.14 * 2^18: clear of the MX saturation band, so the top element is not clamped */
    int64_t at = B / 2;
    x[at] = -3e5f;
    cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
    cr_assert(rel_err(y[at], x[at]) <= tol, "%s: outlier %a -> %a", block_formats[k].name, (double)x[at],
              (double)y[at]);
    double worst = 0.0;
    for (int64_t i = 0; i < B; i++) {
      cr_assert(isfinite(y[i]), "%s: element %ld of the outlier's block is %a", block_formats[k].name,
                (long)i, (double)y[i]);
      if (i != at) worst = fmax(worst, rel_err(y[i], x[i]));
    }
    if (f.kind == QF_FP8_E5M2) /* its 30 binades span the 2e5 ratio: nothing is lost */
      cr_assert(worst <= tol, "e5m2: worst error %g in the outlier's block", worst);
    else
      cr_assert(worst > tol, "%s: the outlier's block should lose precision (worst error %g)",
                block_formats[k].name, worst);
    for (int64_t i = B; i < cols; i++) {
      cr_assert(isfinite(y[i]), "%s: %a", block_formats[k].name, (double)y[i]);
      /* nvfp4 shares the per-matrix S_enc with the outlier, so its other blocks' E4M3 scales
       * are small and coarse: only finiteness is promised there */
      if (f.kind != QF_NVFP4)
        cr_assert(rel_err(y[i], x[i]) <= tol, "%s: element %ld of the next block %a -> %a",
                  block_formats[k].name, (long)i, (double)x[i], (double)y[i]);
    }
    free(x);
    free(y);
  }
}

/* A row whose last block is short: that block has its own scale (one more slot per row), it is
 * quantised from its own elements only, and 4-bit rows with an odd length pack correctly. */
Test(quant_blocks, partial_last_block) {
  for (size_t k = 0; k < NBLOCKFMT; k++) {
    qformat f = ref_format(block_formats[k].name);
    double tol = block_formats[k].tol;
    if (f.kind == QF_NVFP4 && tol < 0.3) tol = 0.3; /* the E4M3 block scale rounds too */
    int64_t B = f.block, cols = 2 * B + 3, rows = 3;
    qlayout L = layout(&f, rows, cols);
    cr_assert_eq(L.blocks_per_row, 3, "%s: %ld blocks per row", block_formats[k].name, (long)L.blocks_per_row);
    int64_t n = rows * cols;
    float *x = malloc((size_t)n * sizeof *x), *x2 = malloc((size_t)n * sizeof *x2);
    float *y = malloc((size_t)n * sizeof *y), *y2 = malloc((size_t)n * sizeof *y2);
    cr_assert(x && x2 && y && y2);
    uint64_t rng = 3;
    for (int64_t i = 0; i < n; i++) x[i] = moderate(&rng);
    for (int64_t r = 0; r < rows; r++) x[r * cols + 1] = 30.0f; /* a large first block */
    cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
    for (int64_t r = 0; r < rows; r++) {
      for (int64_t c = 2 * B; c < cols; c++) {
        int64_t i = r * cols + c;
        cr_assert(isfinite(y[i]) && rel_err(y[i], x[i]) <= tol, "%s: short block [%ld][%ld] %a -> %a",
                  block_formats[k].name, (long)r, (long)c, (double)x[i], (double)y[i]);
      }
    }
    /* block-local scales: changing the full blocks leaves the short block's bits alone (nvfp4's
     * per-matrix amax is kept the same by leaving the 30s in place) */
    memcpy(x2, x, (size_t)n * sizeof *x);
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 2; c < 2 * B; c++) x2[r * cols + c] *= 7.0f;
    cr_assert_eq(q_fake_cpu(&f, &L, 1, x2, y2, NULL), 0);
    for (int64_t r = 0; r < rows; r++)
      for (int64_t c = 2 * B; c < cols; c++)
        cr_assert_eq(ref_f32_bits(y[r * cols + c]), ref_f32_bits(y2[r * cols + c]),
                     "%s: short block [%ld][%ld] depends on other blocks", block_formats[k].name, (long)r,
                     (long)c);
    free(x);
    free(x2);
    free(y);
    free(y2);
  }
}

/* Inputs in the fp32 subnormal range never produce NaN or inf, keep their sign (or become zero),
 * and stay within the block's magnitude. */
Test(quant_blocks, fp32_subnormals) {
  for (size_t k = 0; k < NBLOCKFMT; k++) {
    qformat f = ref_format(block_formats[k].name);
    int64_t rows = 4, cols = 2 * f.block + 5, n = rows * cols;
    qlayout L = layout(&f, rows, cols);
    float *x = malloc((size_t)n * sizeof *x), *y = malloc((size_t)n * sizeof *y);
    cr_assert(x && y);
    uint64_t rng = 4;
    for (int64_t i = 0; i < n; i++) x[i] = ref_rand_spread(&rng, -44.8, -37.9); /* down to 2^-149 */
    x[0] = FLT_TRUE_MIN;
    x[1] = -FLT_MIN; /* the largest normal boundary and the smallest subnormal in one block */
    cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
    for (int64_t i = 0; i < n; i++) {
      cr_assert(isfinite(y[i]), "%s: subnormal %a -> %a", block_formats[k].name, (double)x[i], (double)y[i]);
      cr_assert(y[i] == 0.0f || signbit(y[i]) == signbit(x[i]), "%s: sign flip %a -> %a",
                block_formats[k].name, (double)x[i], (double)y[i]);
      cr_assert(fabsf(y[i]) <= 2.0f * FLT_MIN, "%s: %a -> %a", block_formats[k].name, (double)x[i],
                (double)y[i]);
    }
    free(x);
    free(y);
  }
}

/* Blocks whose amax/max underflows to zero (amax below about 2^-141): numerics.h uses s = 1 there
 * (docs/formats.md), so the block decodes to zeros rather than 0/0 = NaN. */
Test(quant_blocks, scale_underflow_gives_zeros) {
  static const char *fmts[] = {"fp8", "fp8_e5m2", "int8", "fp8/sr", "int8/sr", "mxfp8", "mxfp4"};
  float x[4] = {FLT_TRUE_MIN, -2.0f * FLT_TRUE_MIN, 3.0f * FLT_TRUE_MIN, 0.0f}, y[4];
  for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
    qformat f = ref_format(fmts[k]);
    qlayout L = layout(&f, 1, 4);
    cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
    for (int i = 0; i < 4; i++)
      cr_assert(y[i] == 0.0f, "%s: %a -> %a (expected 0)", fmts[k], (double)x[i], (double)y[i]);
  }
}

/* NVFP4: a matrix whose amax is below about 7.9e-36 has S_enc = 2688/amax = inf, so S_dec = 0 and
 * it decodes to zeros (docs/formats.md); slightly larger matrices still carry information. */
Test(quant_blocks, nvfp4_tiny_matrix) {
  qformat f = ref_format("nvfp4");
  qlayout L = layout(&f, 2, 20);
  float x[40], y[40];
  uint64_t rng = 5;
  for (int i = 0; i < 40; i++) x[i] = ref_rand_spread(&rng, -40.0, -36.0);
  for (int i = 20; i < 36; i++) x[i] = 0.0f; /* a zero block: amax_b * S_enc = 0 * inf = NaN */
  cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
  for (int i = 0; i < 40; i++) cr_assert(y[i] == 0.0f, "nvfp4 tiny: %a -> %a", (double)x[i], (double)y[i]);

  for (int i = 0; i < 40; i++) x[i] = ref_rand_spread(&rng, -31.0, -30.0);
  x[7] = 3e-30f;
  cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
  cr_assert(rel_err(y[7], x[7]) <= 0x1p-2, "nvfp4 amax 3e-30: %a -> %a", (double)x[7], (double)y[7]);
  for (int i = 0; i < 40; i++) cr_assert(isfinite(y[i]));
}

/* NaN or inf anywhere in a block makes that block decode to NaN (its scale slot holds the format's
 * NaN and its codes are zero); the other blocks, in the same row too, are as if the non-finite
 * element were zero. */
Test(quant_blocks, nonfinite_poisons_its_block_only) {
  for (size_t k = 0; k < NBLOCKFMT; k++) {
    qformat f = ref_format(block_formats[k].name);
    int64_t B = f.block, rows = 3, cols = 2 * B + 3, n = rows * cols;
    qlayout L = layout(&f, rows, cols);
    float *x = malloc((size_t)n * sizeof *x), *xz = malloc((size_t)n * sizeof *xz);
    float *y = malloc((size_t)n * sizeof *y), *yz = malloc((size_t)n * sizeof *yz);
    uint8_t *blob = malloc((size_t)L.bytes_per_matrix);
    cr_assert(x && xz && y && yz && blob);
    uint64_t rng = 6;
    for (int64_t i = 0; i < n; i++) x[i] = ref_rand_spread(&rng, -3.0, 2.0);
    /* (row, column, value): NaN in row 0 block 0, +inf in row 1 block 1, -inf in row 2's short block */
    const int64_t bad_r[3] = {0, 1, 2}, bad_c[3] = {3, B + 1, 2 * B + 2};
    const float bad_v[3] = {NAN, INFINITY, -INFINITY};
    memcpy(xz, x, (size_t)n * sizeof *x);
    for (int j = 0; j < 3; j++) {
      x[bad_r[j] * cols + bad_c[j]] = bad_v[j];
      xz[bad_r[j] * cols + bad_c[j]] = 0.0f;
    }
    qsr_params sr = {42, NULL, NULL, 0};
    q_encode_cpu(&f, &L, 1, x, blob, &sr);
    q_decode_cpu(&f, &L, 1, blob, y);
    cr_assert_eq(q_fake_cpu(&f, &L, 1, xz, yz, &sr), 0);
    for (int64_t r = 0; r < rows; r++) {
      for (int64_t c = 0; c < cols; c++) {
        int64_t b = c / B, i = r * cols + c;
        int poisoned = b == bad_c[r] / B; /* row r holds bad element r */
        if (poisoned) {
          cr_assert(isnan(y[i]), "%s: [%ld][%ld] in a block with %a decodes to %a", block_formats[k].name,
                    (long)r, (long)c, (double)bad_v[r], (double)y[i]);
        } else {
          cr_assert(isfinite(y[i]), "%s: [%ld][%ld] outside the bad block is %a", block_formats[k].name,
                    (long)r, (long)c, (double)y[i]);
          cr_assert_eq(ref_f32_bits(y[i]), ref_f32_bits(yz[i]),
                       "%s: [%ld][%ld] %a differs from the all-finite matrix (%a)", block_formats[k].name,
                       (long)r, (long)c, (double)y[i], (double)yz[i]);
        }
      }
      /* the stored NaN scale of the bad block */
      const uint8_t *slot = blob + L.scales_off + (r * L.blocks_per_row + bad_c[r] / B) * L.scale_elem_bytes;
      if (f.kind == QF_NVFP4) {
        cr_assert_eq(slot[0], 0x7F, "nvfp4: NaN block scale 0x%02x, expected 0x7F", slot[0]);
      } else if (f.kind == QF_MXFP8 || f.kind == QF_MXFP4) {
        cr_assert_eq(slot[0], 0xFF, "mx: NaN block scale 0x%02x, expected 0xFF", slot[0]);
      } else {
        float s;
        memcpy(&s, slot, sizeof s);
        cr_assert(isnan(s), "%s: block scale %a, expected NaN", block_formats[k].name, (double)s);
      }
    }
    free(x);
    free(xz);
    free(y);
    free(yz);
    free(blob);
  }
}

/* ------------------------------------------------------------------------------------------------
 * Storage layout
 * --------------------------------------------------------------------------------------------- */
typedef struct {
  const char *fmt;
  int64_t rows, cols;
  int64_t code_bytes_per_row, blocks_per_row, scale_elem_bytes;
  int64_t codes_off, scales_off, tscale_off, payload_bytes, bytes_per_matrix;
} layout_case;

static const layout_case layout_cases[] = {
    /* fmt        rows cols cbpr bpr seb codes scales tscale payload bpm */
    {"fp32",      4, 200, 800, 0, 0, 0, -1, -1, 3200, 3200},
    {"bf16",      4, 200, 400, 0, 0, 0, -1, -1, 1600, 1600},
    {"fp16",      4, 200, 400, 0, 0, 0, -1, -1, 1600, 1600},
    {"fp8",       4, 200, 200, 2, 4, 0, 800, -1, 832, 832},
    {"fp8_e5m2",  4, 200, 200, 2, 4, 0, 800, -1, 832, 832},
    {"int8",      4, 200, 200, 2, 4, 0, 800, -1, 832, 832},
    {"fp8@64",    4, 200, 200, 4, 4, 0, 800, -1, 864, 864},
    {"nvfp4",     4, 200, 100, 13, 1, 0, 400, 464, 456, 480}, /* 4*100 codes, 4*13 scales, S_dec */
    {"mxfp8",     4, 200, 200, 7, 1, 0, 800, -1, 828, 832},
    {"mxfp4",     4, 200, 100, 7, 1, 0, 400, -1, 428, 432},
    {"nvfp4",     7, 33, 17, 3, 1, 0, 128, 160, 144, 176},    /* odd rows of nibbles: 17 bytes each */
    {"fp8",       7, 33, 33, 1, 4, 0, 240, -1, 259, 272},
    {"int8@32",   7, 33, 33, 2, 4, 0, 240, -1, 287, 304},
    {"fp16",      1, 1, 2, 0, 0, 0, -1, -1, 2, 16},
    {"nvfp4",     1, 1, 1, 1, 1, 0, 16, 32, 6, 48},
    {"mxfp4",     1, 1, 1, 1, 1, 0, 16, -1, 2, 32},
};

Test(quant_blocks, layout_byte_counts) {
  for (size_t k = 0; k < sizeof layout_cases / sizeof layout_cases[0]; k++) {
    const layout_case *t = &layout_cases[k];
    qformat f = ref_format(t->fmt);
    qlayout L = layout(&f, t->rows, t->cols);
#define CHECK(field)                                                                                   \
  cr_assert_eq(L.field, t->field, "%s %ldx%ld: " #field " = %ld, expected %ld", t->fmt, (long)t->rows, \
               (long)t->cols, (long)L.field, (long)t->field)
    CHECK(rows);
    CHECK(cols);
    CHECK(code_bytes_per_row);
    CHECK(blocks_per_row);
    CHECK(scale_elem_bytes);
    CHECK(codes_off);
    CHECK(scales_off);
    CHECK(tscale_off);
    CHECK(payload_bytes);
    CHECK(bytes_per_matrix);
#undef CHECK
  }
}

/* General invariants over many shapes: regions in order, 16-byte aligned, not overlapping, and the
 * stride covers the payload with less than 16 bytes of padding per region. */
Test(quant_blocks, layout_invariants) {
  static const char *fmts[] = {"fp32", "bf16", "fp16", "fp8", "fp8_e5m2", "int8", "nvfp4",
                               "mxfp8", "mxfp4", "fp8@1", "nvfp4@2", "mxfp4@64", "int8@1000"};
  for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
    qformat f = ref_format(fmts[k]);
    for (int64_t rows = 1; rows <= 9; rows += 4) {
      for (int64_t cols = 1; cols <= 300; cols += 37) {
        qlayout L = layout(&f, rows, cols);
        int64_t bits = f.kind == QF_FP32 ? 32 : (f.kind == QF_BF16 || f.kind == QF_FP16) ? 16
                       : (f.kind == QF_NVFP4 || f.kind == QF_MXFP4) ? 4 : 8;
        cr_assert_eq(L.code_bytes_per_row, (cols * bits + 7) / 8, "%s", fmts[k]);
        int64_t nb = f.block ? (cols + f.block - 1) / f.block : 0;
        cr_assert_eq(L.blocks_per_row, nb, "%s cols %ld", fmts[k], (long)cols);
        int64_t code_bytes = rows * L.code_bytes_per_row, scale_bytes = rows * nb * L.scale_elem_bytes;
        int64_t tbytes = f.kind == QF_NVFP4 ? 4 : 0;
        cr_assert_eq(L.payload_bytes, code_bytes + scale_bytes + tbytes, "%s", fmts[k]);
        cr_assert_eq(L.bytes_per_matrix % 16, 0, "%s", fmts[k]);
        cr_assert_eq(L.codes_off, 0);
        int64_t end = code_bytes;
        if (scale_bytes) {
          cr_assert(L.scales_off >= end && L.scales_off % 16 == 0 && L.scales_off - end < 16, "%s", fmts[k]);
          end = L.scales_off + scale_bytes;
        } else {
          cr_assert_eq(L.scales_off, -1, "%s", fmts[k]);
        }
        if (tbytes) {
          cr_assert(L.tscale_off >= end && L.tscale_off % 16 == 0 && L.tscale_off - end < 16, "%s", fmts[k]);
          end = L.tscale_off + tbytes;
        } else {
          cr_assert_eq(L.tscale_off, -1, "%s", fmts[k]);
        }
        cr_assert(L.bytes_per_matrix >= end && L.bytes_per_matrix - end < 16, "%s", fmts[k]);
      }
    }
  }
}

Test(quant_blocks, layout_rejects_bad_sizes) {
  qformat f = ref_format("fp8");
  qlayout L;
  cr_assert_eq(qlayout_of(&f, 0, 10, &L), -1);
  cr_assert_eq(qlayout_of(&f, 10, 0, &L), -1);
  cr_assert_eq(qlayout_of(&f, -1, 10, &L), -1);
  cr_assert_eq(qlayout_of(&f, 10, -5, &L), -1);
  cr_assert_eq(qlayout_of(&f, (int64_t)1 << 40, (int64_t)1 << 30, &L), -1, "2^70 bytes must be refused");
  /* large but representable: accepted, with the exact byte count */
  qformat f32 = ref_format("fp32");
  cr_assert_eq(qlayout_of(&f32, (int64_t)1 << 20, (int64_t)1 << 20, &L), 0);
  cr_assert_eq(L.bytes_per_matrix, (int64_t)1 << 42);
}

/* format.h: qlayout_of returns -1 when "the layout would not fit in 62 bits". Sizes up to 2^31
 * rows and columns pass its first check, and then rows * code_bytes_per_row (or the scale bytes)
 * can reach 2^63 or 2^64: signed overflow (undefined behaviour) that in practice wraps to a zero
 * or negative byte count with rc 0 -- a caller that trusts it allocates too little. (Known bug:
 * docs/quant-bugs.md.) */
Test(quant_blocks, layout_rejects_oversized) {
  static const struct { const char *fmt; int64_t rows, cols; } t[] = {
      {"fp32", (int64_t)1 << 31, (int64_t)1 << 31},  /* 2^64 code bytes */
      {"fp32", (int64_t)1 << 30, (int64_t)1 << 31},  /* 2^63 */
      {"fp16", (int64_t)1 << 31, (int64_t)1 << 31},  /* 2^63 */
      {"bf16", (int64_t)1 << 31, (int64_t)1 << 30},  /* exactly 2^62: may be refused, must not wrap */
      {"fp8@1", (int64_t)1 << 31, (int64_t)1 << 31}, /* 2^62 code bytes + 2^64 scale bytes */
      {"fp8", (int64_t)1 << 31, (int64_t)1 << 31},   /* 2^62 + 2^57: no overflow, must be -1 */
  };
  char report[1024] = "";
  size_t used = 0;
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
    qformat f = ref_format(t[k].fmt);
    qlayout L;
    int rc = qlayout_of(&f, t[k].rows, t[k].cols, &L);
    /* the exact size in long double (exact below 2^64 for these powers of two) */
    long double bits = f.kind == QF_FP32 ? 32 : (f.kind == QF_BF16 || f.kind == QF_FP16) ? 16 : 8;
    long double need = (long double)t[k].rows * (long double)t[k].cols * bits / 8;
    if (f.block > 0)
      need += (long double)t[k].rows * (long double)((t[k].cols + f.block - 1) / f.block) * 4;
    /* beyond 2^62 bytes it must refuse; below, it may refuse (a cap on the element count is a
     * fine way to rule out overflow) but what it accepts must be the true size */
    int ok = need > 0x1p62L ? rc == -1 : (rc == -1 || (long double)L.bytes_per_matrix >= need);
    if (!ok && used < sizeof report)
      used += (size_t)snprintf(report + used, sizeof report - used,
                               "\n  %s %ldx%ld needs %.4Lg bytes: rc %d, bytes_per_matrix %ld", t[k].fmt,
                               (long)t[k].rows, (long)t[k].cols, need, rc, (long)L.bytes_per_matrix);
  }
  cr_assert_eq(used, 0u, "qlayout_of accepts layouts beyond 2^62 bytes:%s", report);
}

/* Decode a stored batch from the bytes alone, following format.h's layout (4-bit codes: element
 * 2j in the low nibble of byte j, 2j+1 in the high nibble; scales little-endian) and qref.c's
 * code values. */
static float decode_by_layout(const qformat *f, const qlayout *L,
                              const uint8_t *blob /* [nmat][L->bytes_per_matrix] */, int64_t m, int64_t r,
                              int64_t c) {
  const uint8_t *base = blob + m * L->bytes_per_matrix;
  const uint8_t *row = base + L->codes_off + r * L->code_bytes_per_row;
  const uint8_t *slot = L->scales_off >= 0
                            ? base + L->scales_off + (r * L->blocks_per_row + c / f->block) * L->scale_elem_bytes
                            : NULL;
  float s;
  switch (f->kind) {
    case QF_FP32: {
      float v;
      memcpy(&v, row + 4 * c, sizeof v);
      return v;
    }
    case QF_BF16: case QF_FP16:
      return (float)ref_decode(f->kind == QF_BF16 ? RSSM_EL_BF16 : RSSM_EL_FP16,
                               (uint32_t)row[2 * c] | ((uint32_t)row[2 * c + 1] << 8));
    case QF_NVFP4: {
      float s_dec;
      memcpy(&s_dec, base + L->tscale_off, sizeof s_dec);
      uint32_t code = (c & 1) ? (uint32_t)(row[c / 2] >> 4) : (uint32_t)(row[c / 2] & 0xFu);
      s = (float)ref_decode(RSSM_EL_E4M3, slot[0]);
      return ((float)ref_decode(RSSM_EL_E2M1, code) * s) * s_dec;
    }
    case QF_MXFP4: case QF_MXFP8: {
      s = slot[0] == 0xFF ? NAN : ldexpf(1.0f, (int)slot[0] - 127); /* E8M0 */
      uint32_t code = f->kind == QF_MXFP8 ? row[c]
                      : (c & 1)          ? (uint32_t)(row[c / 2] >> 4)
                                         : (uint32_t)(row[c / 2] & 0xFu);
      return (float)ref_decode(f->kind == QF_MXFP8 ? RSSM_EL_E4M3 : RSSM_EL_E2M1, code) * s;
    }
    default: {
      memcpy(&s, slot, sizeof s);
      rssm_elem e = f->kind == QF_INT8 ? RSSM_EL_INT8 : f->kind == QF_FP8_E5M2 ? RSSM_EL_E5M2 : RSSM_EL_E4M3;
      return (float)ref_decode(e, row[c]) * s;
    }
  }
}

/* The stored blob, read independently, equals q_decode_cpu's output and q_fake_cpu's; encoding is
 * deterministic down to the padding bytes (two encodes into differently dirty buffers compare
 * equal with memcmp); a batch of matrices is [nmat][bytes_per_matrix]. */
Test(quant_blocks, blob_decode_and_determinism) {
  static const char *fmts[] = {"fp32", "bf16", "fp16", "fp8", "fp8_e5m2", "int8", "nvfp4", "mxfp8",
                               "mxfp4", "fp16/sr", "fp8@64/sr", "int8@32/sr", "nvfp4@32/sr", "mxfp8@16/sr",
                               "mxfp4/sr", "bf16/sr"};
  typedef struct { int64_t rows, cols; } shp;
  static const shp shapes[] = {{4, 200}, {7, 33}, {1, 1}, {3, 130}};
  enum { NMAT = 3 };
  for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
    qformat f = ref_format(fmts[k]);
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
      int64_t rows = shapes[si].rows, cols = shapes[si].cols, per = rows * cols;
      qlayout L = layout(&f, rows, cols);
      size_t nbytes = (size_t)(NMAT * L.bytes_per_matrix);
      float *x = malloc((size_t)(NMAT * per) * sizeof *x), *y = malloc((size_t)(NMAT * per) * sizeof *y);
      float *yf = malloc((size_t)(NMAT * per) * sizeof *yf);
      uint8_t *b1 = malloc(nbytes), *b2 = malloc(nbytes);
      cr_assert(x && y && yf && b1 && b2);
      uint64_t rng = 7 + si;
      for (int64_t i = 0; i < NMAT * per; i++) x[i] = ref_rand_spread(&rng, -4.0, 3.0);
      uint64_t ids[NMAT] = {10, 11, 1ull << 40};
      uint32_t ev[NMAT] = {1, 2, 3};
      qsr_params sr = {777, ids, ev, QSR_STREAM_HP};
      memset(b1, 0xA5, nbytes);
      memset(b2, 0x5A, nbytes);
      q_encode_cpu(&f, &L, NMAT, x, b1, &sr);
      q_encode_cpu(&f, &L, NMAT, x, b2, &sr);
      cr_assert_eq(memcmp(b1, b2, nbytes), 0, "%s %ldx%ld: two encodes differ", fmts[k], (long)rows, (long)cols);
      q_decode_cpu(&f, &L, NMAT, b1, y);
      cr_assert_eq(q_fake_cpu(&f, &L, NMAT, x, yf, &sr), 0);
      int64_t first;
      int64_t bad = ref_count_bit_mismatch(y, yf, NMAT * per, &first);
      cr_assert_eq(bad, 0, "%s %ldx%ld: decode(encode) differs from q_fake_cpu at %ld", fmts[k], (long)rows,
                   (long)cols, (long)first);
      for (int64_t m = 0; m < NMAT; m++)
        for (int64_t r = 0; r < rows; r++)
          for (int64_t c = 0; c < cols; c++) {
            float v = decode_by_layout(&f, &L, b1, m, r, c);
            float w = y[m * per + r * cols + c];
            cr_assert_eq(ref_f32_bits(v), ref_f32_bits(w),
                         "%s %ldx%ld: matrix %ld [%ld][%ld]: bytes read %a, q_decode_cpu %a", fmts[k],
                         (long)rows, (long)cols, (long)m, (long)r, (long)c, (double)v, (double)w);
          }
      free(x);
      free(y);
      free(yf);
      free(b1);
      free(b2);
    }
  }
}

/* q_fake_cpu may work in place (x == y). */
Test(quant_blocks, fake_in_place) {
  qformat f = ref_format("nvfp4/sr");
  qlayout L = layout(&f, 3, 40);
  float x[2 * 120], y[2 * 120];
  uint64_t rng = 8;
  for (int i = 0; i < 240; i++) x[i] = ref_rand_spread(&rng, -2.0, 2.0);
  cr_assert_eq(q_fake_cpu(&f, &L, 2, x, y, NULL), 0);
  cr_assert_eq(q_fake_cpu(&f, &L, 2, x, x, NULL), 0);
  cr_assert_eq(memcmp(x, y, sizeof x), 0, "in-place fake quantisation differs");
}
