/* The CPU references of the spec-round kernels (src/model_cuda/mc_ref.h: mc_ref_conv_spec,
 * mc_ref_qk_prepare_t, mc_ref_attn_decode_t, mc_ref_spec_metrics) against the lockstep
 * references, bit for bit, without a GPU. A spec round is exact arithmetic on the same values as
 * T standard steps: draft j's conv output equals step j's after steps 0..j-1 shifted the window,
 * and the window after committing a equals the window after a steps; token rows sharing a cache
 * row write and read what one row per token would; a token row's metrics against its reference
 * ring row are a configuration row's against its reference. Random inputs, never zero. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "src/model_cuda/mc_ref.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* +-[0.05, 1) * scale */
static float rnd(float scale) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  float u = (float)(rng >> 40) * 5.9604644775390625e-08f;
  float sg = (rng >> 20) & 1 ? -1.0f : 1.0f;
  return sg * (0.05f + 0.95f * u) * scale;
}

static float *rnd_n(int64_t n, float scale) {
  float *p = malloc((size_t)n * sizeof(float));
  cr_assert(p);
  for (int64_t i = 0; i < n; i++) p[i] = rnd(scale);
  return p;
}

static void same(const float *a, const float *b, int64_t n, const char *what) {
  for (int64_t i = 0; i < n; i++)
    cr_assert(memcmp(&a[i], &b[i], sizeof(float)) == 0, "%s[%lld]: %a vs %a", what,
              (long long)i, (double)a[i], (double)b[i]);
}

Test(mc_ref_spec, conv_round_is_T_steps) {
  const int R = 3, T = 5, K = 4;
  const int64_t C = 37, ldx = C + 3, W = (K - 1) * C;
  const int a[3] = {1, 5, 3};
  float *win = rnd_n(R * W, 2.0f), *x = rnd_n(R * T * ldx, 2.0f);
  float *w = rnd_n(C * K, 0.7f), *bias = rnd_n(C, 0.3f);
  float *win0 = malloc((size_t)(R * W) * sizeof(float)); /* the windows before the round */
  float *out = malloc((size_t)(R * T * C) * sizeof(float));
  float *ws = malloc((size_t)W * sizeof(float)), *os = malloc((size_t)C * sizeof(float));
  cr_assert(win0 && out && ws && os);
  memcpy(win0, win, (size_t)(R * W) * sizeof(float));
  for (int pass = 0; pass < 2; pass++) {
    const float *bp = pass ? bias : NULL;
    memcpy(win, win0, (size_t)(R * W) * sizeof(float));
    mc_ref_conv_spec(win, x, ldx, w, bp, a, out, R, T, C, K);
    for (int r = 0; r < R; r++) {
      memcpy(ws, win0 + r * W, (size_t)W * sizeof(float));
      for (int j = 0; j < T; j++) {
        mc_ref_conv_step(ws, x + (r * T + j) * ldx, ldx, w, bp, os, 1, C, K);
        same(out + (r * T + j) * C, os, C, "draft output");
        if (j + 1 == a[r]) same(win + r * W, ws, W, "window after the commit");
      }
    }
  }
  /* a = 0 leaves the window as it was */
  const int none[3] = {0, 0, 0};
  memcpy(win, win0, (size_t)(R * W) * sizeof(float));
  mc_ref_conv_spec(win, x, ldx, w, bias, none, out, R, T, C, K);
  same(win, win0, R * W, "window without a commit");
  free(ws), free(os), free(out), free(win0), free(w), free(bias), free(x), free(win);
}

/* Token rows r T + j sharing cache row r against one cache row per token row holding the same
 * history: the same q, K/V writes and attention output, bit for bit. */
static void attn_case(int gated, int nH, int nKV, int D, int64_t max_ctx) {
  const int R = 2, T = 3, RT = R * T;
  const int64_t qd = (int64_t)nH * D, kvd = (int64_t)nKV * D;
  const int64_t ld = (gated ? 2 * qd : qd) + 2 * kvd + 3;
  const int rd = gated ? D / 4 : 0, half = rd / 2;
  const int rpos[2] = {0, 7};
  int pos[6];
  for (int i = 0; i < RT; i++) pos[i] = rpos[i / T] + i % T;
  float *cs = calloc((size_t)(max_ctx * (half > 0 ? half : 1)), sizeof(float));
  float *sn = calloc((size_t)(max_ctx * (half > 0 ? half : 1)), sizeof(float));
  if (half > 0) mc_ref_rope_tables(1e7, rd, max_ctx, cs, sn);
  float *qn = rnd_n(D, 0.3f), *kn = rnd_n(D, 0.3f), *qkv = rnd_n(RT * ld, 2.0f);
  float *kc = rnd_n(R * max_ctx * kvd, 1.0f), *vc = rnd_n(R * max_ctx * kvd, 1.0f);
  /* one cache row per token row: a copy of its state row's history */
  float *kc1 = malloc((size_t)(RT * max_ctx * kvd) * sizeof(float));
  float *vc1 = malloc((size_t)(RT * max_ctx * kvd) * sizeof(float));
  for (int i = 0; i < RT; i++) {
    memcpy(kc1 + i * max_ctx * kvd, kc + (i / T) * max_ctx * kvd, (size_t)(max_ctx * kvd) * 4);
    memcpy(vc1 + i * max_ctx * kvd, vc + (i / T) * max_ctx * kvd, (size_t)(max_ctx * kvd) * 4);
  }
  float *q = malloc((size_t)(RT * qd) * sizeof(float)), *q1 = malloc((size_t)(RT * qd) * 4);
  float *o = malloc((size_t)(RT * qd) * sizeof(float)), *o1 = malloc((size_t)(RT * qd) * 4);
  mc_ref_qk_prepare_t(qkv, ld, gated, qn, kn, cs, sn, rd, 1e-6f, pos, q, kc, vc, max_ctx, RT, T,
                      nH, nKV, D);
  mc_ref_qk_prepare(qkv, ld, gated, qn, kn, cs, sn, rd, 1e-6f, pos, q1, kc1, vc1, max_ctx, RT, nH,
                    nKV, D);
  same(q, q1, RT * qd, "q");
  /* the one-row-per-token caches lack the other drafts' K/V: copy them in (draft j attends to
   * drafts 0..j of its row, written by the same prepare) */
  for (int i = 0; i < RT; i++)
    for (int j = 0; j < T; j++) {
      const int src = (i / T) * T + j;
      memmove(kc1 + (i * max_ctx + pos[src]) * kvd, kc1 + (src * max_ctx + pos[src]) * kvd,
             (size_t)kvd * 4);
      memmove(vc1 + (i * max_ctx + pos[src]) * kvd, vc1 + (src * max_ctx + pos[src]) * kvd,
             (size_t)kvd * 4);
    }
  for (int i = 0; i < RT; i++) {
    same(kc + ((i / T) * max_ctx + pos[i]) * kvd, kc1 + (i * max_ctx + pos[i]) * kvd, kvd, "k");
    same(vc + ((i / T) * max_ctx + pos[i]) * kvd, vc1 + (i * max_ctx + pos[i]) * kvd, kvd, "v");
  }
  mc_ref_attn_decode_t(q, kc, vc, pos, max_ctx, gated ? qkv : NULL, ld, o, RT, T, nH, nKV, D);
  mc_ref_attn_decode(q1, kc1, vc1, pos, max_ctx, gated ? qkv : NULL, ld, o1, RT, nH, nKV, D);
  same(o, o1, RT * qd, "attention output");
  free(cs), free(sn), free(qn), free(kn), free(qkv), free(kc), free(vc), free(kc1), free(vc1);
  free(q), free(q1), free(o), free(o1);
}

Test(mc_ref_spec, attention_token_rows) {
  attn_case(1, 4, 2, 32, 40);
  attn_case(0, 4, 2, 16, 40);
}

Test(mc_ref_spec, metrics_against_the_ring) {
  const int K = 2, RT = 4;
  const int64_t V = 300;
  float *ring = rnd_n(3 * V, 6.0f), *lg = rnd_n(RT * V, 6.0f);
  const int ref_row[4] = {2, 0, 1, 2};
  const int64_t tg[4] = {3, 299, 0, 17};
  mc_row_stats st[4];
  mc_row_metrics m[4];
  mc_ref_spec_metrics(lg, ring, ref_row, tg, RT, V, st, m);
  (void)K;
  for (int i = 0; i < RT; i++) {
    /* configuration row 1 against reference row 0 of a two-row batch */
    float pair[600];
    memcpy(pair, ring + ref_row[i] * V, (size_t)V * 4);
    memcpy(pair + V, lg + i * V, (size_t)V * 4);
    mc_row_stats s2[2];
    mc_row_metrics m2[2];
    mc_ref_row_metrics(pair, &tg[i], 2, 1, V, s2, m2);
    cr_assert(memcmp(&m[i], &m2[1], sizeof m[i]) == 0, "token row %d", i);
    cr_assert(m[i].finite && m[i].kl > 0.0f);
  }
  free(ring), free(lg);
}
