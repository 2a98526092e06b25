/* Stochastic rounding (SPEC section 4): Philox4x32-10 known answers, the counter layout of
 * quant/quant.h, unbiasedness and the rounding probability (GSL statistics, binomial z-tests),
 * grid values left alone, and reproducibility: the bits are a pure function of (seed, matrix id,
 * event, stream, element), and changing any of them changes the rounding of a large fraction of
 * elements. */
#include <criterion/criterion.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quant/numerics.h"
#include "quant/quant.h"
#include "tests/quant/qref.h"

/* Random123 tests/kat_vectors, "philox4x32 10" lines: counter[4], key[2] -> output[4]. */
Test(quant_sr, philox_known_answers) {
  static const struct { uint32_t ctr[4], key[2], want[4]; } kat[] = {
      {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
      {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
       {0xffffffffu, 0xffffffffu},
       {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
      {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
       {0xa4093822u, 0x299f31d0u},
       {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
  };
  for (size_t i = 0; i < sizeof kat / sizeof kat[0]; i++) {
    uint32_t out[4];
    rssm_philox4x32_10(kat[i].ctr, kat[i].key, out);
    for (int w = 0; w < 4; w++)
      cr_assert_eq(out[w], kat[i].want[w], "KAT %zu word %d: 0x%08x, expected 0x%08x", i, w, out[w],
                   kat[i].want[w]);
  }
}

/* rssm_sr_bits builds the counter documented in quant/quant.h. */
Test(quant_sr, counter_layout) {
  uint64_t rng = 11;
  for (int i = 0; i < 20000; i++) {
    uint64_t seed = ref_rng_next(&rng), mid = ref_rng_next(&rng) & ~(0xFull << 32);
    uint32_t ev = (uint32_t)ref_rng_next(&rng), stream = (uint32_t)(ref_rng_next(&rng) & 0xFu);
    uint64_t elem = ref_rng_next(&rng) >> (i % 40); /* small and huge element indices */
    uint32_t got = rssm_sr_bits(seed, mid, ev, stream, elem);
    uint32_t want = ref_sr_bits(seed, mid, ev, stream, elem);
    cr_assert_eq(got, want, "seed %llx id %llx event %u stream %u elem %llu: 0x%08x, expected 0x%08x",
                 (unsigned long long)seed, (unsigned long long)mid, ev, stream, (unsigned long long)elem,
                 got, want);
  }
}

/* qsr_matrix_id packs layer (12 bits), head (16 bits) and sequence (32 bits) without collisions
 * and leaves the low 4 bits of the high word free for the stream. */
Test(quant_sr, matrix_id_packing) {
  cr_assert_eq(qsr_matrix_id(0, 0, 0), 0u);
  cr_assert_eq(qsr_matrix_id(1, 0, 0), 1ull << 52);
  cr_assert_eq(qsr_matrix_id(0, 1, 0), 1ull << 36);
  cr_assert_eq(qsr_matrix_id(0, 0, 1), 1ull);
  cr_assert_eq(qsr_matrix_id(4095, 65535, 0xFFFFFFFFu), 0xFFFFFFF0FFFFFFFFull);
  uint64_t rng = 12;
  for (int i = 0; i < 1000; i++) {
    uint32_t l = (uint32_t)ref_rng_next(&rng) & 0xFFFu, h = (uint32_t)ref_rng_next(&rng) & 0xFFFFu;
    uint32_t s = (uint32_t)ref_rng_next(&rng);
    uint64_t id = qsr_matrix_id(l, h, s);
    cr_assert_eq((id >> 32) & 0xFu, 0u, "stream bits must stay free");
    cr_assert_eq(id >> 52, l);
    cr_assert_eq((id >> 36) & 0xFFFFu, h);
    cr_assert_eq(id & 0xFFFFFFFFu, s);
  }
}

/* ------------------------------------------------------------------------------------------------
 * Unbiasedness and probability
 * --------------------------------------------------------------------------------------------- */
typedef struct {
  const char *fmt;   /* an SR format whose element grid is the one under test at scale 1 */
  rssm_elem e;
  float anchor;      /* column 0 of every row: makes the block scale exactly 1 */
  double lo, hi;     /* adjacent grid values, |lo| < |hi|, same sign */
} sr_case;

static const sr_case sr_cases[] = {
    {"fp16/sr", RSSM_EL_FP16, 1.0f, 1.0, 1.0 + 0x1p-10},
    {"fp16/sr", RSSM_EL_FP16, 1.0f, -3.0 * 0x1p-24, -4.0 * 0x1p-24}, /* subnormals */
    {"bf16/sr", RSSM_EL_BF16, 1.0f, 1.0, 1.0 + 0x1p-7},
    {"bf16/sr", RSSM_EL_BF16, 1.0f, -0x1p100, -0x1p100 * (1.0 + 0x1p-7)},
    {"fp8@128/sr", RSSM_EL_E4M3, 448.0f, 1.0, 1.125},                 /* s = 448/448 */
    {"fp8@128/sr", RSSM_EL_E4M3, 448.0f, -3.0 * 0x1p-9, -4.0 * 0x1p-9}, /* E4M3 subnormals */
    {"fp8@128/sr", RSSM_EL_E4M3, 448.0f, 416.0, 448.0},
    {"int8/sr", RSSM_EL_INT8, 127.0f, 3.0, 4.0},                      /* s = 127/127 */
    {"int8/sr", RSSM_EL_INT8, 127.0f, -100.0, -101.0},
    {"int8/sr", RSSM_EL_INT8, 127.0f, 0.0, 1.0},
};
static const double fractions[] = {0.1, 0.25, 0.5, 0.9, 1.0 / 3.0};

enum { SR_ROWS = 800, SR_COLS = 128 }; /* 800 * 127 = 101600 draws per case */

/* v = lo + p (hi - lo) as an fp32 value, and the p that this v really has. */
static float between(const sr_case *c, double p, double *p_true) {
  float v = (float)(c->lo + p * (c->hi - c->lo));
  *p_true = ((double)v - c->lo) / (c->hi - c->lo);
  return v;
}

/* The binomial z statistic of k successes in n draws with probability p. */
static double binomial_z(double k, double n, double p) { return (k - n * p) / sqrt(n * p * (1.0 - p)); }

static void check_sr_statistics(const sr_case *c, double p, int use_event) {
  qformat f = ref_format(c->fmt);
  qlayout L;
  cr_assert_eq(qlayout_of(&f, SR_ROWS, SR_COLS, &L), 0);
  double p_true;
  float v = between(c, p, &p_true);
  cr_assert(p_true > 0.0 && p_true < 1.0, "test bug: %a not strictly between the grid values", (double)v);
  float *x = malloc(SR_ROWS * SR_COLS * sizeof *x), *y = malloc(SR_ROWS * SR_COLS * sizeof *y);
  double *out = malloc(SR_ROWS * (SR_COLS - 1) * sizeof *out);
  cr_assert(x && y && out);
  for (int i = 0; i < SR_ROWS * SR_COLS; i++) x[i] = (i % SR_COLS == 0) ? c->anchor : v;
  uint64_t id = qsr_matrix_id(2, 5, 9);
  uint32_t ev = use_event ? 123456u : 0u;
  qsr_params sr = {0xFEEDFACEu, &id, &ev, QSR_STREAM_STATE};
  cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, &sr), 0);
  size_t n = 0, up = 0;
  float flo = (float)c->lo, fhi = (float)c->hi;
  for (int i = 0; i < SR_ROWS * SR_COLS; i++) {
    if (i % SR_COLS == 0) continue;
    cr_assert(ref_f32_bits(y[i]) == ref_f32_bits(flo) || ref_f32_bits(y[i]) == ref_f32_bits(fhi),
              "%s: %a rounded to %a, not to a neighbour (%a, %a)", c->fmt, (double)v, (double)y[i],
              (double)flo, (double)fhi);
    up += y[i] == fhi;
    out[n++] = (double)y[i];
  }
  double mean = gsl_stats_mean(out, 1, n), sd = gsl_stats_sd(out, 1, n);
  double se = sd / sqrt((double)n);
  cr_assert(fabs(mean - (double)v) <= 4.0 * se,
            "%s [%a, %a] p=%g: mean %.12g vs input %.12g (%.2f standard errors)", c->fmt, c->lo, c->hi,
            p_true, mean, (double)v, se > 0 ? (mean - (double)v) / se : INFINITY);
  double z = binomial_z((double)up, (double)n, p_true);
  cr_assert(fabs(z) < 4.0, "%s [%a, %a] p=%g: %zu of %zu rounded up (z = %.2f)", c->fmt, c->lo, c->hi,
            p_true, up, n, z);
  free(x);
  free(y);
  free(out);
}

Test(quant_sr, unbiased_with_probability_p) {
  for (size_t k = 0; k < sizeof sr_cases / sizeof sr_cases[0]; k++)
    for (size_t j = 0; j < sizeof fractions / sizeof fractions[0]; j++)
      check_sr_statistics(&sr_cases[k], fractions[j], (int)(j & 1));
}

/* The same statistics across events: one element, 10^5 events of the same matrix. */
Test(quant_sr, unbiased_across_events) {
  enum { NEV = 100000 };
  qformat f = ref_format("fp8@2/sr");
  qlayout L;
  cr_assert_eq(qlayout_of(&f, 1, 2, &L), 0);
  float *x = malloc(2 * NEV * sizeof *x), *y = malloc(2 * NEV * sizeof *y);
  uint64_t *ids = malloc(NEV * sizeof *ids);
  uint32_t *ev = malloc(NEV * sizeof *ev);
  double *out = malloc(NEV * sizeof *out);
  cr_assert(x && y && ids && ev && out);
  const double p = 0.3;
  float v = (float)(2.0 + p * 0.25); /* between the E4M3 values 2 and 2.25 */
  double p_true = ((double)v - 2.0) / 0.25;
  for (int i = 0; i < NEV; i++) {
    x[2 * i] = 448.0f;
    x[2 * i + 1] = v;
    ids[i] = qsr_matrix_id(1, 1, 1);
    ev[i] = (uint32_t)i;
  }
  qsr_params sr = {5, ids, ev, QSR_STREAM_HP};
  cr_assert_eq(q_fake_cpu(&f, &L, NEV, x, y, &sr), 0);
  size_t up = 0;
  for (int i = 0; i < NEV; i++) {
    out[i] = (double)y[2 * i + 1];
    cr_assert(out[i] == 2.0 || out[i] == 2.25, "%a -> %a", (double)v, out[i]);
    up += out[i] == 2.25;
  }
  double mean = gsl_stats_mean(out, 1, NEV), se = gsl_stats_sd(out, 1, NEV) / sqrt((double)NEV);
  cr_assert(fabs(mean - (double)v) <= 4.0 * se, "mean %.9g vs %.9g", mean, (double)v);
  double z = binomial_z((double)up, NEV, p_true);
  cr_assert(fabs(z) < 4.0, "%zu of %d up, p = %g (z = %.2f)", up, NEV, p_true, z);
  free(x);
  free(y);
  free(ids);
  free(ev);
  free(out);
}

/* A tiny rounding probability is resolved (SPEC: to at least 2^-22): p = 2^-20 (bf16: 2^-16, the
 * smallest an fp32 input can have there) over 2^24 draws, with the bits of consecutive elements
 * (rssm_sr_bits, checked against the documented counter above) fed to rssm_round_elem. */
Test(quant_sr, tiny_probability) {
  static const struct { rssm_elem e; double lo, hi, p; } t[] = {
      {RSSM_EL_FP16, 3.0 * 0x1p-24, 4.0 * 0x1p-24, 0x1p-20},
      {RSSM_EL_BF16, 1.0, 1.0 + 0x1p-7, 0x1p-16},
      {RSSM_EL_E4M3, 1.0, 1.125, 0x1p-20},
      {RSSM_EL_INT8, 1.0, 2.0, 0x1p-20},
      {RSSM_EL_INT8, 5.0, 6.0, 1.0 - 0x1p-20}, /* and its mirror image, almost always up */
  };
  const uint32_t n = 1u << 24;
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
    float v = (float)(t[k].lo + t[k].p * (t[k].hi - t[k].lo));
    double p_true = ((double)v - t[k].lo) / (t[k].hi - t[k].lo);
    cr_assert_eq(p_true, t[k].p, "test bug: p not exact");
    float flo = (float)t[k].lo, fhi = (float)t[k].hi;
    uint32_t up = 0, other = 0;
    for (uint32_t i = 0; i < n; i++) {
      float r = rssm_round_elem(t[k].e, v, 1, rssm_sr_bits(0xABCDEFull + k, 77, 3, QSR_STREAM_LP, i));
      up += r == fhi;
      other += r != fhi && r != flo;
    }
    cr_assert_eq(other, 0u, "format %d: results off the two neighbours", (int)t[k].e);
    double z = binomial_z((double)up, (double)n, p_true);
    cr_assert(fabs(z) < 4.0, "format %d p=%g: %u of %u up (expected %.1f, z = %.2f)", (int)t[k].e, p_true,
              up, n, p_true * n, z);
    cr_assert(up > 0u && up < n, "format %d: p=%g is not resolved", (int)t[k].e, p_true);
    /* the outputs take two values, so their mean and standard deviation follow from the count
     * (GSL's running statistics would spend most of this test's time on quantile estimates) */
    double q = (double)up / n, mean = t[k].lo + q * (t[k].hi - t[k].lo);
    double se = fabs(t[k].hi - t[k].lo) * sqrt(q * (1.0 - q) / (n - 1.0));
    cr_assert(fabs(mean - (double)v) <= 4.0 * se, "format %d: mean %.17g vs %.17g (se %g)", (int)t[k].e,
              mean, (double)v, se);
  }
}

/* Grid values are returned unchanged by SR, whatever the bits (through the batched path). */
Test(quant_sr, grid_values_unchanged) {
  static const struct { const char *fmt; rssm_elem e; float anchor; } t[] = {
      {"fp16/sr", RSSM_EL_FP16, 1.0f},     {"bf16/sr", RSSM_EL_BF16, 1.0f},
      {"fp8@1024/sr", RSSM_EL_E4M3, 448.0f}, {"fp8_e5m2@1024/sr", RSSM_EL_E5M2, 57344.0f},
      {"int8@1024/sr", RSSM_EL_INT8, 127.0f}, {"mxfp4@1024/sr", RSSM_EL_E2M1, 6.0f},
      {"mxfp8@1024/sr", RSSM_EL_E4M3, 448.0f},
  };
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
    const ref_grid *g = ref_grid_get(t[k].e);
    int stride = g->n > 600 ? g->n / 300 : 1; /* a sample of the fp16/bf16 grids */
    float x[1024], y[1024];
    int64_t n = 0;
    x[n++] = t[k].anchor;
    for (int i = 0; i < g->n && n + 2 <= 1024; i += stride) {
      if (g->val[i] > g->maxval) break;
      x[n++] = (float)g->val[i];
      x[n++] = -(float)g->val[i];
    }
    qformat f = ref_format(t[k].fmt);
    qlayout L;
    cr_assert_eq(qlayout_of(&f, 1, n, &L), 0);
    for (uint64_t seed = 0; seed < 8; seed++) {
      uint64_t id = seed * 1000003u;
      qsr_params sr = {seed, &id, NULL, (uint32_t)seed & 3u};
      cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, &sr), 0);
      for (int64_t i = 0; i < n; i++) {
        float want = (t[k].e == RSSM_EL_INT8 && x[i] == 0.0f) ? 0.0f : x[i]; /* int8: no -0 */
        cr_assert_eq(ref_f32_bits(y[i]), ref_f32_bits(want), "%s seed %llu: grid value %a -> %a", t[k].fmt,
                     (unsigned long long)seed, (double)x[i], (double)y[i]);
      }
    }
  }
}

/* ------------------------------------------------------------------------------------------------
 * Reproducibility and independence
 * --------------------------------------------------------------------------------------------- */
enum { RP_ROWS = 64, RP_COLS = 130, RP_N = RP_ROWS * RP_COLS };

typedef struct {
  uint64_t seed, id;
  uint32_t event, stream;
} sr_key;

static void fake_with(const qformat *f, const float *x /* [RP_ROWS][RP_COLS] */,
                      float *y /* [RP_ROWS][RP_COLS] */, sr_key k) {
  qlayout L;
  cr_assert_eq(qlayout_of(f, RP_ROWS, RP_COLS, &L), 0);
  qsr_params sr = {k.seed, &k.id, &k.event, k.stream};
  cr_assert_eq(q_fake_cpu(f, &L, 1, x, y, &sr), 0);
}

static double fraction_differing(const float *a /* [RP_N] */, const float *b /* [RP_N] */) {
  int64_t first;
  return (double)ref_count_bit_mismatch(a, b, RP_N, &first) / RP_N;
}

Test(quant_sr, same_key_same_bits_other_key_other_bits) {
  static const char *fmts[] = {"fp16/sr", "bf16/sr", "fp8/sr", "fp8_e5m2/sr", "int8/sr",
                               "nvfp4/sr", "mxfp8/sr", "mxfp4/sr"};
  const sr_key base = {0x1234567890ull, qsr_matrix_id(7, 3, 1000), 17, QSR_STREAM_HP};
  const struct { const char *what; sr_key k; } changed[] = {
      {"seed (low word)", {base.seed + 1, base.id, base.event, base.stream}},
      {"seed (high word)", {base.seed ^ (1ull << 40), base.id, base.event, base.stream}},
      {"matrix id: sequence", {base.seed, qsr_matrix_id(7, 3, 1001), base.event, base.stream}},
      {"matrix id: head", {base.seed, qsr_matrix_id(7, 4, 1000), base.event, base.stream}},
      {"matrix id: layer", {base.seed, qsr_matrix_id(8, 3, 1000), base.event, base.stream}},
      {"event", {base.seed, base.id, base.event + 1, base.stream}},
      {"stream", {base.seed, base.id, base.event, QSR_STREAM_LP}},
  };
  float *x = malloc(RP_N * sizeof *x), *y0 = malloc(RP_N * sizeof *y0), *y1 = malloc(RP_N * sizeof *y1);
  cr_assert(x && y0 && y1);
  uint64_t rng = 13;
  for (int i = 0; i < RP_N; i++) x[i] = ref_rand_spread(&rng, -0.5, 0.5);
  for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
    qformat f = ref_format(fmts[k]);
    fake_with(&f, x, y0, base);
    fake_with(&f, x, y1, base);
    cr_assert_eq(memcmp(y0, y1, RP_N * sizeof *y0), 0, "%s: same key, different bits", fmts[k]);
    for (size_t j = 0; j < sizeof changed / sizeof changed[0]; j++) {
      fake_with(&f, x, y1, changed[j].k);
      double frac = fraction_differing(y0, y1);
      /* random positions between grid values differ with probability E[2p(1-p)] = 1/3 */
      cr_assert(frac > 0.2, "%s: changing the %s changes only %.3f of the elements", fmts[k],
                changed[j].what, frac);
    }
    /* round-to-nearest ignores all of it */
    qformat rtn = f;
    rtn.rounding = QR_RTN;
    fake_with(&rtn, x, y0, base);
    fake_with(&rtn, x, y1, changed[0].k);
    cr_assert_eq(memcmp(y0, y1, RP_N * sizeof *y0), 0, "%s: RTN depends on the SR key", fmts[k]);
  }
  free(x);
  free(y0);
  free(y1);
}

/* A matrix's bits depend on its own (id, event) only, not on its place in a batch nor on its
 * neighbours: the same matrix at batch position 2 and alone give the same result. */
Test(quant_sr, independent_of_batch_position) {
  static const char *fmts[] = {"fp16/sr", "fp8@64/sr", "nvfp4/sr", "int8/sr"};
  enum { NMAT = 4 };
  float *x = malloc(NMAT * RP_N * sizeof *x), *y = malloc(NMAT * RP_N * sizeof *y);
  float *alone = malloc(RP_N * sizeof *alone);
  cr_assert(x && y && alone);
  uint64_t rng = 14;
  for (int i = 0; i < NMAT * RP_N; i++) x[i] = ref_rand_spread(&rng, -1.0, 1.0);
  uint64_t ids[NMAT] = {100, 7, qsr_matrix_id(3, 3, 3), 100};
  uint32_t ev[NMAT] = {1, 1, 9, 2};
  for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
    qformat f = ref_format(fmts[k]);
    qlayout L;
    cr_assert_eq(qlayout_of(&f, RP_ROWS, RP_COLS, &L), 0);
    qsr_params sr = {31337, ids, ev, QSR_STREAM_STATE};
    cr_assert_eq(q_fake_cpu(&f, &L, NMAT, x, y, &sr), 0);
    for (int m = 0; m < NMAT; m++) {
      qsr_params one = {31337, &ids[m], &ev[m], QSR_STREAM_STATE};
      cr_assert_eq(q_fake_cpu(&f, &L, 1, x + m * RP_N, alone, &one), 0);
      cr_assert_eq(memcmp(alone, y + m * RP_N, RP_N * sizeof *alone), 0,
                   "%s: matrix %d differs between its batch and alone", fmts[k], m);
    }
  }
  free(x);
  free(y);
  free(alone);
}

/* End to end, element e of a stored matrix uses word (e & 3) of Philox at counter
 * {e >> 2, event, id_lo, id_hi | stream}: at p = 1/2 exactly the decision is a function of the
 * word's top bit alone (either polarity, consistently), for every element of the matrix. */
Test(quant_sr, elements_use_their_documented_counter) {
  qformat f = ref_format("fp16/sr");
  qlayout L;
  cr_assert_eq(qlayout_of(&f, RP_ROWS, RP_COLS, &L), 0);
  float *x = malloc(RP_N * sizeof *x), *y = malloc(RP_N * sizeof *y);
  cr_assert(x && y);
  const float mid = 1.0f + 0x1p-11f, lo = 1.0f, hi = 1.0f + 0x1p-10f;
  for (int i = 0; i < RP_N; i++) x[i] = (i & 1) ? mid : -mid;
  sr_key k = {0xDEADBEEFCAFEull, qsr_matrix_id(4, 2, 77) | 5u, 42, QSR_STREAM_LP};
  qsr_params sr = {k.seed, &k.id, &k.event, k.stream};
  cr_assert_eq(q_fake_cpu(&f, &L, 1, x, y, &sr), 0);
  int agree = 0, disagree = 0;
  for (int i = 0; i < RP_N; i++) {
    float a = fabsf(y[i]);
    cr_assert(a == lo || a == hi, "%a -> %a", (double)x[i], (double)y[i]);
    int up = a == hi;
    int top = (int)(ref_sr_bits(k.seed, k.id, k.event, k.stream, (uint64_t)i) >> 31);
    if (up == top) agree++; else disagree++;
  }
  cr_assert(agree == RP_N || disagree == RP_N,
            "SR decisions do not follow the documented counter: %d agree, %d disagree with bit 31", agree,
            disagree);
  free(x);
  free(y);
}
