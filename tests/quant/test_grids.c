/* Element grids of SPEC section 3: every code's value, code -> value -> code round trips, ties to
 * the even code, saturation and IEEE overflow, signed zero and NaN/inf for the unscaled formats.
 * Values are checked against tests/quant/qref.c, which decodes codes from the format definitions. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/numerics.h"
#include "quant/quant.h"
#include "tests/quant/qref.h"

static const rssm_elem all_elems[] = {RSSM_EL_E4M3, RSSM_EL_E5M2, RSSM_EL_E2M1,
                                      RSSM_EL_FP16, RSSM_EL_BF16, RSSM_EL_INT8};
static const char *elem_name(rssm_elem e) {
  static const char *names[] = {"e4m3", "e5m2", "e2m1", "fp16", "bf16", "int8"};
  return names[e];
}

/* Random bit patterns for the SR variants: the extremes and a few in between. */
static const uint32_t some_rbits[] = {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFF00u, 0xFFFFFFFFu,
                                      0x12345678u, 0xDEADBEEFu};
#define N_RBITS (sizeof some_rbits / sizeof some_rbits[0])

/* numerics.h's decoder agrees with the format definitions for every code. */
Test(quant_grids, decode_matches_definition) {
  for (size_t k = 0; k < sizeof all_elems / sizeof all_elems[0]; k++) {
    rssm_elem e = all_elems[k];
    uint32_t ncodes = 1u << ref_code_bits(e);
    for (uint32_t c = 0; c < ncodes; c++) {
      double want = ref_decode(e, c);
      float got = rssm_decode_elem(e, c);
      if (isnan(want)) {
        cr_assert(isnan(got), "%s code 0x%x: NaN code decodes to %a", elem_name(e), c, (double)got);
      } else {
        cr_assert_eq(ref_f32_bits(got), ref_f32_bits((float)want),
                     "%s code 0x%x decodes to %a, expected %a", elem_name(e), c, (double)got, want);
      }
    }
  }
}

/* Every 8- and 4-bit code decodes and re-encodes to itself (RNE and SR alike: a grid value is
 * never moved); NaN codes decode to NaN; E5M2's infinity codes to +-inf. */
static void check_code_round_trip(rssm_elem e) {
  uint32_t ncodes = 1u << ref_code_bits(e);
  int nnan = 0, ninf = 0;
  for (uint32_t c = 0; c < ncodes; c++) {
    float v = rssm_decode_elem(e, c);
    if (isnan(ref_decode(e, c))) {
      cr_assert(isnan(v), "%s code 0x%x should decode to NaN, got %a", elem_name(e), c, (double)v);
      nnan++;
      continue;
    }
    if (isinf(v)) {
      ninf++;
      cr_assert_eq(e, RSSM_EL_E5M2, "%s code 0x%x decodes to inf", elem_name(e), c);
      cr_assert_eq(signbit(v) != 0, (c & 0x80u) != 0, "e5m2 code 0x%x: sign of inf", c);
    }
    uint32_t back = rssm_quantize_elem(e, v, 0, 0u);
    cr_assert_eq(back, c, "%s code 0x%x -> %a -> code 0x%x", elem_name(e), c, (double)v, back);
    for (size_t j = 0; j < N_RBITS; j++) {
      back = rssm_quantize_elem(e, v, 1, some_rbits[j]);
      cr_assert_eq(back, c, "%s code 0x%x -> %a -> SR(rbits 0x%x) code 0x%x", elem_name(e), c,
                   (double)v, some_rbits[j], back);
    }
  }
  int want_nan = e == RSSM_EL_E4M3 ? 2 : (e == RSSM_EL_E5M2 ? 6 : 0);
  cr_assert_eq(nnan, want_nan, "%s: %d NaN codes, expected %d", elem_name(e), nnan, want_nan);
  cr_assert_eq(ninf, e == RSSM_EL_E5M2 ? 2 : 0, "%s: %d inf codes", elem_name(e), ninf);
}

Test(quant_grids, e4m3_codes_round_trip) { check_code_round_trip(RSSM_EL_E4M3); }
Test(quant_grids, e5m2_codes_round_trip) { check_code_round_trip(RSSM_EL_E5M2); }
Test(quant_grids, e2m1_codes_round_trip) { check_code_round_trip(RSSM_EL_E2M1); }

Test(quant_grids, e4m3_e5m2_known_values) {
  /* a few anchors from the OCP FP8 specification */
  cr_assert_eq(rssm_decode_elem(RSSM_EL_E4M3, 0x7Eu), 448.0f);
  cr_assert_eq(rssm_decode_elem(RSSM_EL_E4M3, 0x01u), 0x1p-9f);
  cr_assert_eq(rssm_decode_elem(RSSM_EL_E4M3, 0x08u), 0x1p-6f);
  cr_assert_eq(rssm_decode_elem(RSSM_EL_E5M2, 0x7Bu), 57344.0f);
  cr_assert_eq(rssm_decode_elem(RSSM_EL_E5M2, 0x01u), 0x1p-16f);
  cr_assert_eq(rssm_decode_elem(RSSM_EL_E5M2, 0x7Cu), INFINITY);
  cr_assert_eq(rssm_decode_elem(RSSM_EL_E5M2, 0xFCu), -INFINITY);
  static const float e2m1[8] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f};
  for (uint32_t c = 0; c < 8; c++) {
    cr_assert_eq(rssm_decode_elem(RSSM_EL_E2M1, c), e2m1[c], "e2m1 code %u", c);
    cr_assert_eq(rssm_decode_elem(RSSM_EL_E2M1, c | 8u), -e2m1[c], "e2m1 code %u", c | 8u);
  }
}

/* The 65536 codes of fp16 and bf16: directly, and through a stored fp16/bf16 matrix (the blob's
 * 16-bit codes are the codes, little-endian, at codes_off). */
static void check_half_codes(rssm_elem e, qformat_kind kind) {
  float *x = malloc(65536 * sizeof *x);
  float *y = malloc(65536 * sizeof *y);
  cr_assert(x && y);
  for (uint32_t c = 0; c < 65536u; c++) {
    float v = rssm_decode_elem(e, c);
    x[c] = v;
    if (isnan(ref_decode(e, c))) {
      cr_assert(isnan(v), "%s code 0x%04x should decode to NaN", elem_name(e), c);
      cr_assert(isnan(rssm_decode_elem(e, rssm_quantize_elem(e, v, 0, 0u))),
                "%s: NaN does not stay NaN", elem_name(e));
      continue;
    }
    uint32_t back = rssm_quantize_elem(e, v, 0, 0u);
    cr_assert_eq(back, c, "%s code 0x%04x -> %a -> 0x%04x", elem_name(e), c, (double)v, back);
    back = rssm_quantize_elem(e, v, 1, some_rbits[c % N_RBITS]);
    cr_assert_eq(back, c, "%s code 0x%04x -> SR -> 0x%04x", elem_name(e), c, back);
  }
  qformat f = {kind, 0, QR_RTN};
  qlayout L;
  cr_assert_eq(qlayout_of(&f, 256, 256, &L), 0);
  uint8_t *blob = malloc((size_t)L.bytes_per_matrix);
  cr_assert(blob);
  q_encode_cpu(&f, &L, 1, x, blob, NULL);
  q_decode_cpu(&f, &L, 1, blob, y);
  for (uint32_t c = 0; c < 65536u; c++) {
    const uint8_t *p = blob + L.codes_off + 2 * c;
    uint32_t stored = (uint32_t)p[0] | ((uint32_t)p[1] << 8);
    if (isnan(x[c])) {
      cr_assert(isnan(y[c]), "%s: NaN input 0x%04x decoded to %a", elem_name(e), c, (double)y[c]);
      continue;
    }
    cr_assert_eq(stored, c, "%s: stored code 0x%04x for code 0x%04x", elem_name(e), stored, c);
    cr_assert_eq(ref_f32_bits(y[c]), ref_f32_bits(x[c]), "%s code 0x%04x: fake quant moved it",
                 elem_name(e), c);
  }
  free(blob);
  free(x);
  free(y);
}

Test(quant_grids, fp16_codes_round_trip) { check_half_codes(RSSM_EL_FP16, QF_FP16); }
Test(quant_grids, bf16_codes_round_trip) { check_half_codes(RSSM_EL_BF16, QF_BF16); }

Test(quant_grids, int8_codes_round_trip) {
  for (int v = -127; v <= 127; v++) {
    uint32_t code = (uint32_t)(uint8_t)(int8_t)v;
    cr_assert_eq(rssm_decode_elem(RSSM_EL_INT8, code), (float)v);
    cr_assert_eq(rssm_quantize_elem(RSSM_EL_INT8, (float)v, 0, 0u), code, "int8 %d", v);
    for (size_t j = 0; j < N_RBITS; j++)
      cr_assert_eq(rssm_quantize_elem(RSSM_EL_INT8, (float)v, 1, some_rbits[j]), code, "int8 %d SR", v);
  }
  /* 0x80 (-128) is a code but not on the symmetric grid: it saturates to -127 */
  cr_assert_eq(rssm_round_elem(RSSM_EL_INT8, -128.0f, 0, 0u), -127.0f);
}

/* Ties: the exact midpoint of two adjacent grid values goes to the one with the even code
 * (for integers: the even integer), for both signs. */
static void check_ties(rssm_elem e) {
  const ref_grid *g = ref_grid_get(e);
  int ntested = 0;
  for (int i = 0; i + 1 < g->n; i++) {
    if (g->val[i + 1] > g->maxval) break; /* the fp16/bf16 overflow entry: see overflow tests */
    double mid = 0.5 * (g->val[i] + g->val[i + 1]);
    float m = (float)mid;
    cr_assert_eq((double)m, mid, "test bug: midpoint not an fp32 value");
    uint32_t even = (g->code[i] & 1u) == 0u ? g->code[i] : g->code[i + 1];
    double want = (g->code[i] & 1u) == 0u ? g->val[i] : g->val[i + 1];
    for (int s = 0; s < 2; s++) {
      float x = s ? -m : m;
      float r = rssm_round_elem(e, x, 0, 0u);
      float w = (float)(s ? -want : want); /* the element grid keeps the sign of a zero */
      cr_assert_eq(ref_f32_bits(r), ref_f32_bits(w), "%s: tie %a rounds to %a, expected %a (code 0x%x)",
                   elem_name(e), (double)x, (double)r, (double)w, even);
      uint32_t code = rssm_quantize_elem(e, x, 0, 0u);
      cr_assert_eq(code & 1u, 0u, "%s: tie %a gives odd code 0x%x", elem_name(e), (double)x, code);
      ntested++;
    }
  }
  cr_assert(ntested >= 2 * 7, "%s: only %d ties", elem_name(e), ntested);
}

Test(quant_grids, ties_to_even_e4m3) { check_ties(RSSM_EL_E4M3); }
Test(quant_grids, ties_to_even_e5m2) { check_ties(RSSM_EL_E5M2); }
Test(quant_grids, ties_to_even_e2m1) { check_ties(RSSM_EL_E2M1); }
Test(quant_grids, ties_to_even_fp16) { check_ties(RSSM_EL_FP16); }
Test(quant_grids, ties_to_even_bf16) { check_ties(RSSM_EL_BF16); }
Test(quant_grids, ties_to_even_int8) { check_ties(RSSM_EL_INT8); }

/* The same ties through whole block formats whose scale is exactly 1: an anchor element at the
 * format's maximum (fp8: 448/448, e5m2: 57344/57344, int8: 127/127; mxfp8: 2^(8-8); mxfp4:
 * 2^(2-2)) makes x / s = x, so the block path must reproduce the element grid's ties. */
static void check_block_ties(const char *fmt, rssm_elem e, float anchor) {
  const ref_grid *g = ref_grid_get(e);
  int64_t n = 1;
  float *x = malloc((size_t)(2 * g->n + 1) * sizeof *x);
  float *want = malloc((size_t)(2 * g->n + 1) * sizeof *want);
  float *y = malloc((size_t)(2 * g->n + 1) * sizeof *y);
  cr_assert(x && want && y);
  x[0] = anchor;
  want[0] = anchor;
  for (int i = 0; i + 1 < g->n; i++) {
    float m = (float)(0.5 * (g->val[i] + g->val[i + 1]));
    float w = (float)((g->code[i] & 1u) == 0u ? g->val[i] : g->val[i + 1]);
    x[n] = m;
    want[n++] = w;
    x[n] = -m;
    want[n++] = (e == RSSM_EL_INT8 && w == 0.0f) ? 0.0f : -w;
  }
  char text[32];
  snprintf(text, sizeof text, "%s@%d", fmt, 2048); /* one block holds the whole row */
  qformat f = ref_format(text);
  qlayout L;
  cr_assert_eq(qlayout_of(&f, 1, n, &L), 0);
  cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
  int64_t first;
  int64_t bad = ref_count_bit_mismatch(y, want, n, &first);
  cr_assert_eq(bad, 0, "%s: %ld of %ld ties wrong; first: %a -> %a, expected %a", fmt, (long)bad,
               (long)n, first >= 0 ? (double)x[first] : 0.0, first >= 0 ? (double)y[first] : 0.0,
               first >= 0 ? (double)want[first] : 0.0);
  free(x);
  free(want);
  free(y);
}

Test(quant_grids, ties_to_even_through_blocks) {
  check_block_ties("fp8", RSSM_EL_E4M3, 448.0f);
  check_block_ties("fp8_e5m2", RSSM_EL_E5M2, 57344.0f);
  check_block_ties("int8", RSSM_EL_INT8, 127.0f);
  check_block_ties("mxfp8", RSSM_EL_E4M3, 448.0f);
  check_block_ties("mxfp4", RSSM_EL_E2M1, 6.0f);
}

/* Saturating grids clamp at their maximum, for RNE and SR, both signs. */
Test(quant_grids, saturation) {
  static const struct { rssm_elem e; float maxval; float over[6]; } t[] = {
      {RSSM_EL_E4M3, 448.0f, {448.5f, 463.99f, 464.0f, 465.0f, 1e6f, FLT_MAX}},
      {RSSM_EL_E5M2, 57344.0f, {57345.0f, 61439.0f, 61440.0f, 61441.0f, 1e10f, FLT_MAX}},
      {RSSM_EL_E2M1, 6.0f, {6.01f, 6.99f, 7.0f, 7.01f, 1e9f, FLT_MAX}},
      {RSSM_EL_INT8, 127.0f, {127.4f, 127.5f, 128.0f, 200.0f, 1e6f, 1.5e7f}},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    for (int j = 0; j < 6; j++) {
      for (int s = 0; s < 2; s++) {
        float x = s ? -t[i].over[j] : t[i].over[j];
        float want = s ? -t[i].maxval : t[i].maxval;
        float r = rssm_round_elem(t[i].e, x, 0, 0u);
        cr_assert_eq(r, want, "%s: %a -> %a, expected %a", elem_name(t[i].e), (double)x, (double)r,
                     (double)want);
        for (size_t k = 0; k < N_RBITS; k++) {
          r = rssm_round_elem(t[i].e, x, 1, some_rbits[k]);
          cr_assert_eq(r, want, "%s SR: %a -> %a", elem_name(t[i].e), (double)x, (double)r);
        }
      }
    }
  }
}

/* Saturation through the MX block path: the block scale is a power of two chosen from amax's
 * exponent, so amax / s can exceed the element maximum (mxfp8: [256, 512) vs 448; mxfp4: [4, 8)
 * vs 6) and must clamp there. */
Test(quant_grids, saturation_through_mx_blocks) {
  float x[4] = {500.0f, -480.0f, 1.0f, 300.0f};
  float y[4];
  qformat f = ref_format("mxfp8");
  qlayout L;
  cr_assert_eq(qlayout_of(&f, 1, 4, &L), 0);
  cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
  cr_assert_eq(y[0], 448.0f, "mxfp8: 500 -> %a", (double)y[0]);
  cr_assert_eq(y[1], -448.0f, "mxfp8: -480 -> %a", (double)y[1]);
  cr_assert_eq(y[2], 1.0f);
  cr_assert_eq(y[3], 288.0f, "mxfp8: 300 -> %a (e4m3 step 32 above 256)", (double)y[3]);

  float x4[4] = {7.5f, -7.0f, 0.75f, 5.0f};
  f = ref_format("mxfp4");
  cr_assert_eq(qlayout_of(&f, 1, 4, &L), 0);
  cr_assert_eq(q_fake_cpu(&f, &L, 1, x4, y, NULL), 0);
  cr_assert_eq(y[0], 6.0f, "mxfp4: 7.5 -> %a", (double)y[0]);
  cr_assert_eq(y[1], -6.0f, "mxfp4: -7 -> %a", (double)y[1]);
  cr_assert_eq(y[2], 1.0f, "mxfp4: 0.75 is a tie of 0.5 and 1: even code (1.0)");
  cr_assert_eq(y[3], 4.0f, "mxfp4: 5 is a tie of 4 and 6: even code (4)");
}

/* fp16/bf16 overflow exactly as an IEEE cast: past the midpoint between the largest finite value
 * and 2^16 (2^128) the result is +-inf, below it the largest finite value; SR does the same. */
Test(quant_grids, half_overflow_like_a_cast) {
  static const struct { rssm_elem e; float x; float want; } t[] = {
      {RSSM_EL_FP16, 65504.0f, 65504.0f},
      {RSSM_EL_FP16, 65519.0f, 65504.0f},
      {RSSM_EL_FP16, 65519.99609375f, 65504.0f}, /* the float just below 65520 */
      {RSSM_EL_FP16, 65520.0f, INFINITY},
      {RSSM_EL_FP16, 70000.0f, INFINITY},
      {RSSM_EL_FP16, FLT_MAX, INFINITY},
      {RSSM_EL_BF16, 3.38953139e38f, 3.38953139e38f},
      {RSSM_EL_BF16, 0x1.fefffep127f, 3.38953139e38f}, /* bits 0x7F7F7FFF: below the midpoint */
      {RSSM_EL_BF16, 0x1.ffp127f, INFINITY},           /* bits 0x7F7F8000: the midpoint, odd -> up */
      {RSSM_EL_BF16, FLT_MAX, INFINITY},
  };
  cr_assert_eq(ref_f32_bits(t[7].x), 0x7F7F7FFFu, "test bug: constant");
  cr_assert_eq(ref_f32_bits(t[8].x), 0x7F7F8000u, "test bug: constant");
  cr_assert_eq(ref_f32_bits(t[6].x), 0x7F7F0000u, "test bug: constant");
  cr_assert_eq(ref_f32_bits(t[2].x) + 1u, ref_f32_bits(65520.0f), "test bug: constant");
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    for (int s = 0; s < 2; s++) {
      float x = s ? -t[i].x : t[i].x, want = s ? -t[i].want : t[i].want;
      float r = rssm_round_elem(t[i].e, x, 0, 0u);
      cr_assert_eq(ref_f32_bits(r), ref_f32_bits(want), "%s: %a -> %a, expected %a",
                   elem_name(t[i].e), (double)x, (double)r, (double)want);
      for (size_t k = 0; k < N_RBITS; k++) {
        r = rssm_round_elem(t[i].e, x, 1, some_rbits[k]);
        cr_assert_eq(ref_f32_bits(r), ref_f32_bits(want), "%s SR: %a -> %a", elem_name(t[i].e),
                     (double)x, (double)r);
      }
    }
  }
  /* through the batched path as well */
  float x[4] = {65519.0f, 65520.0f, -65520.0f, 1e30f}, y[4];
  qformat f = ref_format("fp16");
  qlayout L;
  cr_assert_eq(qlayout_of(&f, 1, 4, &L), 0);
  cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
  cr_assert_eq(y[0], 65504.0f);
  cr_assert_eq(y[1], INFINITY);
  cr_assert_eq(y[2], -INFINITY);
  cr_assert_eq(y[3], INFINITY);
}

/* -0.0 keeps its sign bit in the codes of formats that have one, and a negative value too small
 * for the grid rounds to -0 (as a cast does). */
Test(quant_grids, signed_zero) {
  cr_assert_eq(rssm_quantize_elem(RSSM_EL_FP16, -0.0f, 0, 0u), 0x8000u);
  cr_assert_eq(rssm_quantize_elem(RSSM_EL_BF16, -0.0f, 0, 0u), 0x8000u);
  cr_assert_eq(rssm_quantize_elem(RSSM_EL_E4M3, -0.0f, 0, 0u), 0x80u);
  cr_assert_eq(rssm_quantize_elem(RSSM_EL_E5M2, -0.0f, 0, 0u), 0x80u);
  cr_assert_eq(rssm_quantize_elem(RSSM_EL_E2M1, -0.0f, 0, 0u), 0x8u);
  cr_assert_eq(rssm_quantize_elem(RSSM_EL_FP16, 0.0f, 0, 0u), 0x0000u);
  cr_assert_eq(rssm_quantize_elem(RSSM_EL_FP16, -1e-10f, 0, 0u), 0x8000u, "underflow keeps the sign");
  cr_assert_eq(rssm_quantize_elem(RSSM_EL_E4M3, -1e-5f, 0, 0u), 0x80u, "underflow keeps the sign");
  cr_assert_eq(ref_f32_bits(rssm_decode_elem(RSSM_EL_FP16, 0x8000u)), 0x80000000u);
  cr_assert_eq(ref_f32_bits(rssm_decode_elem(RSSM_EL_E4M3, 0x80u)), 0x80000000u);

  /* stored fp16 and bf16 matrices */
  float x[3] = {-0.0f, 0.0f, -1e-30f}, y[3];
  static const qformat_kind halves[] = {QF_FP16, QF_BF16};
  for (int k = 0; k < 2; k++) {
    qformat f = {halves[k], 0, QR_RTN};
    qlayout L;
    cr_assert_eq(qlayout_of(&f, 1, 3, &L), 0);
    uint8_t blob[64];
    cr_assert(L.bytes_per_matrix <= (int64_t)sizeof blob);
    q_encode_cpu(&f, &L, 1, x, blob, NULL);
    cr_assert_eq(blob[L.codes_off + 0], 0x00);
    cr_assert_eq(blob[L.codes_off + 1], 0x80, "-0.0: the high byte of the code carries the sign");
    cr_assert_eq(blob[L.codes_off + 3], 0x00, "+0.0 has no sign bit");
    q_decode_cpu(&f, &L, 1, blob, y);
    cr_assert_eq(ref_f32_bits(y[0]), 0x80000000u);
    cr_assert_eq(ref_f32_bits(y[1]), 0x00000000u);
    if (halves[k] == QF_FP16) cr_assert_eq(ref_f32_bits(y[2]), 0x80000000u, "-1e-30 -> -0 in fp16");
  }

  /* an fp8 block: -0.0 beside a non-zero element stores code 0x80 and decodes to -0.0 */
  float xb[3] = {1.0f, -0.0f, 0.5f}, yb[3];
  qformat f = ref_format("fp8");
  qlayout L;
  cr_assert_eq(qlayout_of(&f, 1, 3, &L), 0);
  uint8_t blob[64];
  cr_assert(L.bytes_per_matrix <= (int64_t)sizeof blob);
  q_encode_cpu(&f, &L, 1, xb, blob, NULL);
  cr_assert_eq(blob[L.codes_off + 1], 0x80, "fp8: -0.0 stored as 0x%02x", blob[L.codes_off + 1]);
  q_decode_cpu(&f, &L, 1, blob, yb);
  cr_assert_eq(ref_f32_bits(yb[1]), 0x80000000u);
}

/* NaN has a code in E4M3, E5M2, fp16 and bf16, and it decodes back to NaN (E2M1 and int8 have
 * none: their blocks carry NaN in the scale instead). */
Test(quant_grids, nan_codes) {
  static const rssm_elem with_nan[] = {RSSM_EL_E4M3, RSSM_EL_E5M2, RSSM_EL_FP16, RSSM_EL_BF16};
  for (size_t k = 0; k < 4; k++) {
    for (int s = 0; s < 2; s++) {
      float nan = s ? -NAN : NAN;
      uint32_t code = rssm_quantize_elem(with_nan[k], nan, 0, 0u);
      cr_assert(isnan(ref_decode(with_nan[k], code)), "%s: NaN encodes to 0x%x, which is not a NaN code",
                elem_name(with_nan[k]), code);
      cr_assert(isnan(rssm_decode_elem(with_nan[k], code)));
      code = rssm_quantize_elem(with_nan[k], nan, 1, 0x12345678u);
      cr_assert(isnan(ref_decode(with_nan[k], code)), "%s SR: NaN encodes to 0x%x", elem_name(with_nan[k]),
                code);
    }
  }
}

/* fp32/bf16/fp16 treat NaN and inf as a plain cast does. */
Test(quant_grids, half_nonfinite_like_a_cast) {
  float x[6] = {NAN, -NAN, INFINITY, -INFINITY, 1.0f, -2.5f}, y[6];
  static const qformat_kind kinds[] = {QF_FP32, QF_BF16, QF_FP16};
  for (int k = 0; k < 3; k++) {
    for (int sr = 0; sr < 2; sr++) {
      if (kinds[k] == QF_FP32 && sr) continue;
      qformat f = {kinds[k], 0, sr ? QR_SR : QR_RTN};
      qlayout L;
      cr_assert_eq(qlayout_of(&f, 2, 3, &L), 0);
      cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, NULL), 0);
      cr_assert(isnan(y[0]) && isnan(y[1]), "%s: NaN must stay NaN", qformat_kind_name(kinds[k]));
      cr_assert_eq(y[2], INFINITY);
      cr_assert_eq(y[3], -INFINITY);
      cr_assert_eq(y[4], 1.0f);
      cr_assert_eq(y[5], -2.5f);
    }
  }
}

/* Random fp32 values (all binades, subnormals included) against the table search, RNE and SR. */
static void check_half_random(rssm_elem e) {
  uint64_t rng = 0x5EED0000u + (uint64_t)e;
  int64_t bad = 0;
  float first_x = 0.0f, first_got = 0.0f, first_want = 0.0f;
  for (int i = 0; i < (1 << 19); i++) {
    uint32_t u = (uint32_t)ref_rng_next(&rng);
    float x;
    if (i & 1) {
      x = ref_bits_f32(u);
      if (!isfinite(x)) continue;
    } else {
      /* values near the grid's range, where the interesting cases are */
      double lo = e == RSSM_EL_FP16 ? -9.0 : -41.0, hi = e == RSSM_EL_FP16 ? 4.9 : 38.5;
      x = ref_rand_spread(&rng, lo, hi);
    }
    uint32_t rb = (uint32_t)ref_rng_next(&rng);
    int sr = (i >> 1) & 1;
    float got = rssm_round_elem(e, x, sr, rb);
    float want = ref_round(e, x, sr, rb);
    if (ref_f32_bits(got) != ref_f32_bits(want)) {
      if (!bad) { first_x = x; first_got = got; first_want = want; }
      bad++;
    }
  }
  cr_assert_eq(bad, 0, "%s: %ld mismatches; first %a -> %a, expected %a", elem_name(e), (long)bad,
               (double)first_x, (double)first_got, (double)first_want);
}

Test(quant_grids, fp16_random_against_reference) { check_half_random(RSSM_EL_FP16); }
Test(quant_grids, bf16_random_against_reference) { check_half_random(RSSM_EL_BF16); }

/* The small grids, exhaustively over a dense sweep of inputs, RNE and SR. */
Test(quant_grids, small_grids_sweep_against_reference) {
  static const rssm_elem small[] = {RSSM_EL_E4M3, RSSM_EL_E5M2, RSSM_EL_E2M1, RSSM_EL_INT8};
  uint64_t rng = 77;
  for (size_t k = 0; k < 4; k++) {
    rssm_elem e = small[k];
    double top = ref_grid_get(e)->maxval * 1.2;
    for (int i = 0; i < 200000; i++) {
      float x = (float)(top * (2.0 * ref_rng_uniform(&rng) - 1.0));
      if (i % 3 == 0) x = ref_rand_spread(&rng, -12.0, log10(top));
      uint32_t rb = (uint32_t)ref_rng_next(&rng);
      int sr = i & 1;
      float got = rssm_round_elem(e, x, sr, rb), want = ref_round(e, x, sr, rb);
      cr_assert_eq(ref_f32_bits(got), ref_f32_bits(want), "%s%s: %a -> %a, expected %a", elem_name(e),
                   sr ? " SR" : "", (double)x, (double)got, (double)want);
    }
  }
}
