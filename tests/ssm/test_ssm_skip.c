/* Appendix F's skip=THR (docs/ssm-engine.md, "Skipping the checkpoint read"): a threshold that no
 * head reaches changes nothing, bit for bit; a threshold above every gamma gives the readout with
 * the checkpoint treated as zero; flushes still fold from the real checkpoint. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/ssm/ssm_math.h"
#include "tests/ssm/ssm_testutil.h"

static const ssm_dims dims_m2 = {SSM_MAMBA2, 4, 16, 40, 2};
static const ssm_dims dims_gdn = {SSM_GDN, 4, 16, 40, 2};

static void build(ssm_state *st, const char *text, const ssm_dims *d) {
  ssm_config cfg = tu_config(text);
  ssm_ids ids = {99, 3, 7};
  char err[200];
  cr_assert_eq(ssm_state_build(st, &cfg, d, &ids, err, sizeof err), 0, "%s", err);
}

static size_t blob_bytes(const ssm_state *st, const ssm_ckpt *c) {
  return (size_t)st->dims.H * (size_t)c->lay.bytes_per_matrix;
}

/* Runs `with` and `without` (standard steps) side by side over N tokens: the checkpoints after
 * every flush must be identical; the outputs must be identical when same_out. Returns the skip
 * count of `with`. */
static uint64_t side_by_side(const char *with, const char *without, const ssm_dims *d, int N,
                             double ua, double ub, int same_out) {
  tu_stream s;
  tu_stream_make(&s, d, N, 21, ua, ub);
  ssm_state a, b;
  build(&a, with, d);
  build(&b, without, d);
  const size_t hv = (size_t)d->H * d->dv;
  float *oa = malloc(hv * sizeof(float)), *ob = malloc(hv * sizeof(float));
  cr_assert(oa && ob);
  int flushes = 0;
  for (int t = 0; t < N; t++) {
    ssm_inputs in = tu_at(&s, t);
    cr_assert_eq(ssm_step(&a, &in, oa), 0);
    cr_assert_eq(ssm_step(&b, &in, ob), 0);
    if (same_out)
      cr_assert(memcmp(oa, ob, hv * sizeof(float)) == 0, "%s: output of token %d differs", with, t);
    cr_assert_eq(a.flushed, b.flushed);
    if (a.flushed) {
      flushes++;
      cr_assert(memcmp(a.main.blob, b.main.blob, blob_bytes(&a, &a.main)) == 0,
                "%s: checkpoint after token %d differs", with, t);
      if (a.cfg.split)
        cr_assert(memcmp(a.lp.blob, b.lp.blob, blob_bytes(&a, &a.lp)) == 0,
                  "%s: C_lp after token %d differs", with, t);
    }
  }
  cr_assert_geq(flushes, 3, "a few windows");
  cr_assert_gt(a.ckpt_reads, 0);
  cr_assert_eq(b.ckpt_skips, 0, "no skip without the key");
  uint64_t skips = a.ckpt_skips;
  free(oa);
  free(ob);
  ssm_state_free(&a);
  ssm_state_free(&b);
  tu_stream_free(&s);
  return skips;
}

/* alpha >= 1 - 10^-0.3 ~ 0.5, so gamma over a window of 16 is >= 2^-16 > 1e-30. */
Test(ssm_skip, threshold_no_head_reaches_is_bit_identical) {
  static const char *const pairs[][2] = {
      {"replay L=16 ckpt=fp32 skip=1e-30", "replay L=16 ckpt=fp32"},
      {"replay L=16 ckpt=nvfp4/sr skip=1e-30", "replay L=16 ckpt=nvfp4/sr"},
      {"replay L=16 hp=fp32 lp=nvfp4 skip=1e-30", "replay L=16 hp=fp32 lp=nvfp4"},
      {"replay L=5 hp=fp16/sr lp=fp8 gdn_u=cached skip=1e-30",
       "replay L=5 hp=fp16/sr lp=fp8 gdn_u=cached"},
  };
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    cr_assert_eq(side_by_side(pairs[i][0], pairs[i][1], &dims_m2, 80, 0.3, 3.0, 1), 0);
    cr_assert_eq(side_by_side(pairs[i][0], pairs[i][1], &dims_gdn, 80, 0.3, 3.0, 1), 0);
  }
}

/* Flushes fold from the real checkpoint: with every non-flush read skipped, the checkpoints are
 * still those without skip wherever they do not depend on readouts (Mamba-2; GDN split with
 * gdn_u=recompute, whose flush recomputes every u from C_hp). */
Test(ssm_skip, flush_checkpoints_unchanged) {
  uint64_t n;
  n = side_by_side("replay L=16 ckpt=fp32 skip=0.999999", "replay L=16 ckpt=fp32", &dims_m2, 70,
                   0.3, 3.0, 0);
  cr_assert_gt(n, 0);
  n = side_by_side("replay L=8 ckpt=nvfp4/sr skip=0.999999", "replay L=8 ckpt=nvfp4/sr", &dims_m2,
                   70, 0.3, 3.0, 0);
  cr_assert_gt(n, 0);
  n = side_by_side("replay L=16 hp=fp32 lp=nvfp4 skip=0.999999", "replay L=16 hp=fp32 lp=nvfp4",
                   &dims_m2, 70, 0.3, 3.0, 0);
  cr_assert_gt(n, 0);
  n = side_by_side("replay L=16 hp=fp32 lp=nvfp4 skip=0.999999", "replay L=16 hp=fp32 lp=nvfp4",
                   &dims_gdn, 70, 0.3, 3.0, 0);
  cr_assert_gt(n, 0);
  n = side_by_side("replay L=6 hp=bf16/sr lp=mxfp4 skip=0.5", "replay L=6 hp=bf16/sr lp=mxfp4",
                   &dims_gdn, 70, 0.3, 3.0, 0);
  cr_assert_gt(n, 0);
}

/* A threshold above every gamma: a non-flush output is the readout of the records alone (C = 0),
 * computed here directly from the stream, with the engine's order (ssm_math.h item 3: bit for bit)
 * and in double (an independent check). Mamba-2, where x_j = v_j does not depend on C. */
static void check_zero_ckpt(const char *text) {
  const ssm_dims *d = &dims_m2;
  enum { N = 64 };
  tu_stream s;
  tu_stream_make(&s, d, N, 5, 0.3, 3.0);
  ssm_state st;
  build(&st, text, d);
  const int H = d->H, dv = d->dv, dk = d->dk, G = d->G, hpg = H / G, L = st.cfg.L;
  const size_t hv = (size_t)H * dv;
  float *o = malloc(hv * sizeof(float));
  cr_assert(o);
  int h = 0, checked = 0; /* records since the last flush, before this token */
  for (int t = 0; t < N; t++) {
    ssm_inputs in = tu_at(&s, t);
    cr_assert_eq(ssm_step(&st, &in, o), 0);
    const int n = h + 1, t0 = t - h; /* records t0..t */
    if (n < L) {
      for (int hd = 0; hd < H; hd++) {
        const int g = hd / hpg;
        float alpha[64], w[65], coef[64];
        const float *xs[64];
        const float *q = s.q + ((size_t)t * G + g) * dk;
        for (int j = 0; j < n; j++) {
          alpha[j] = s.alpha[(size_t)(t0 + j) * H + hd];
          xs[j] = s.v + ((size_t)(t0 + j) * H + hd) * dv;
        }
        rssm_decay_weights(alpha, n, w);
        cr_assert_lt(w[0], 0.999999f);
        for (int j = 0; j < n; j++)
          coef[j] = rssm_readout_coef(w[j + 1],
                                      rssm_dot_w32(s.k + ((size_t)(t0 + j) * G + g) * dk, q, dk));
        for (int i = 0; i < dv; i++) {
          float want = rssm_readout_row(0.0f, w[0], xs, coef, n, i);
          float got = o[(size_t)hd * dv + i];
          cr_assert(memcmp(&want, &got, sizeof got) == 0, "%s t=%d head %d row %d: %a != %a",
                    text, t, hd, i, (double)got, (double)want);
          double acc = 0.0, gam = 1.0;
          for (int j = n - 1; j >= 0; j--) {
            double dot = 0.0;
            for (int c = 0; c < dk; c++)
              dot += (double)s.k[((size_t)(t0 + j) * G + g) * dk + c] * q[c];
            acc += gam * xs[j][i] * dot;
            gam *= alpha[j];
          }
          cr_assert_leq(fabs((double)got - acc), 1e-5 * (1.0 + fabs(acc)), "t=%d: %g vs %g", t,
                        (double)got, acc);
        }
      }
      checked++;
    }
    h = st.h;
    cr_assert_eq(h, n < L ? n : 0);
  }
  cr_assert_geq(checked, N - N / L - 1);
  /* every non-flush readout of every head was skipped */
  cr_assert_eq(st.ckpt_skips, st.ckpt_reads);
  cr_assert_eq(st.ckpt_reads, (uint64_t)checked * (uint64_t)H);
  free(o);
  ssm_state_free(&st);
  tu_stream_free(&s);
}

Test(ssm_skip, threshold_above_every_gamma_reads_no_checkpoint) {
  check_zero_ckpt("replay L=16 ckpt=fp32 skip=0.999999");
  check_zero_ckpt("replay L=32 hp=fp32 lp=nvfp4 skip=0.999999");
  check_zero_ckpt("replay L=7 ckpt=fp8/sr skip=0.999999");
}

/* Intermediate threshold: exactly the heads with gamma < THR skip (count against the stream). */
Test(ssm_skip, counts_match_the_decays) {
  const ssm_dims *d = &dims_m2;
  enum { N = 100 };
  const double thr = 1e-2;
  tu_stream s;
  tu_stream_make(&s, d, N, 8, 0.05, 1.5);
  ssm_state st;
  build(&st, "replay L=16 ckpt=fp32 skip=1e-2", d);
  float o[4 * 16];
  uint64_t want = 0, reads = 0;
  int h = 0;
  for (int t = 0; t < N; t++) {
    ssm_inputs in = tu_at(&s, t);
    cr_assert_eq(ssm_step(&st, &in, o), 0);
    if (h + 1 < 16)
      for (int hd = 0; hd < d->H; hd++) {
        float gam = 1.0f; /* the engine's w[0]: the product from the newest record down */
        for (int j = t; j >= t - h; j--) gam = gam * s.alpha[(size_t)j * d->H + hd];
        want += (double)gam < thr;
        reads++;
      }
    h = st.h;
  }
  cr_assert_eq(st.ckpt_reads, reads);
  cr_assert_eq(st.ckpt_skips, want);
  cr_assert(want > 0 && want < reads, "the threshold splits the reads (%llu of %llu)",
            (unsigned long long)want, (unsigned long long)reads);
  ssm_state_free(&st);
  tu_stream_free(&s);
}

/* Spec: the same rule in the drafts' readouts; a threshold no head reaches changes nothing. */
Test(ssm_skip, spec_threshold_no_head_reaches_is_bit_identical) {
  const ssm_dims *d = &dims_gdn;
  enum { N = 60, T = 3 };
  tu_stream s;
  tu_stream_make(&s, d, N + T, 4, 0.3, 3.0);
  ssm_state a, b;
  build(&a, "spec L=8 T=3 hp=fp32 lp=nvfp4 accept=fixed:2 skip=1e-30", d);
  build(&b, "spec L=8 T=3 hp=fp32 lp=nvfp4 accept=fixed:2", d);
  const size_t n = (size_t)T * d->H * d->dv;
  float *oa = malloc(n * sizeof(float)), *ob = malloc(n * sizeof(float));
  cr_assert(oa && ob);
  for (int t = 0; t + T <= N; t += 2) {
    ssm_inputs in = tu_at(&s, t);
    cr_assert_eq(ssm_verify(&a, &in, oa), 0);
    cr_assert_eq(ssm_verify(&b, &in, ob), 0);
    cr_assert(memcmp(oa, ob, n * sizeof(float)) == 0, "round at %d", t);
    cr_assert_eq(ssm_commit(&a, 2), 0);
    cr_assert_eq(ssm_commit(&b, 2), 0);
  }
  cr_assert_gt(a.ckpt_reads, 0);
  cr_assert_eq(a.ckpt_skips, 0);
  free(oa);
  free(ob);
  ssm_state_free(&a);
  ssm_state_free(&b);
  tu_stream_free(&s);
}

/* Spec with a threshold that triggers: the drafts' readouts skip the checkpoint of the heads whose
 * decay since the flush is below THR, so outputs move (by less than what the skipped term can
 * carry) while the Mamba-2 checkpoints, folded from committed records only, stay identical. */
Test(ssm_skip, spec_threshold_that_triggers) {
  const ssm_dims *d = &dims_m2;
  enum { N = 120, T = 3 };
  tu_stream s;
  tu_stream_make(&s, d, N + T, 8, 0.05, 1.5);
  ssm_state a, b;
  build(&a, "spec L=8 T=3 ckpt=fp32 accept=fixed:2 skip=1e-2", d);
  build(&b, "spec L=8 T=3 ckpt=fp32 accept=fixed:2", d);
  const size_t n = (size_t)T * d->H * d->dv;
  float *oa = malloc(n * sizeof(float)), *ob = malloc(n * sizeof(float));
  cr_assert(oa && ob);
  double worst = 0, scale = 0;
  int flushes = 0;
  for (int t = 0; t + T <= N; t += 2) {
    ssm_inputs in = tu_at(&s, t);
    cr_assert_eq(ssm_verify(&a, &in, oa), 0);
    cr_assert_eq(ssm_verify(&b, &in, ob), 0);
    for (size_t i = 0; i < n; i++)
      worst = fmax(worst, fabs((double)oa[i] - ob[i])), scale = fmax(scale, fabs((double)ob[i]));
    cr_assert_eq(ssm_commit(&a, 2), 0);
    cr_assert_eq(ssm_commit(&b, 2), 0);
    cr_assert_eq(a.flushed, b.flushed);
    if (a.flushed) {
      flushes++;
      cr_assert(memcmp(a.main.blob, b.main.blob, blob_bytes(&a, &a.main)) == 0,
                "checkpoint after the round at %d differs", t);
    }
  }
  fprintf(stderr, "spec skip=1e-2: %llu of %llu readouts skipped, outputs moved by %.3e of %.3e\n",
          (unsigned long long)a.ckpt_skips, (unsigned long long)a.ckpt_reads, worst, scale);
  cr_assert_geq(flushes, 5);
  cr_assert(a.ckpt_skips > 0 && a.ckpt_skips < a.ckpt_reads, "skipped %llu of %llu",
            (unsigned long long)a.ckpt_skips, (unsigned long long)a.ckpt_reads);
  cr_assert_eq(b.ckpt_skips, 0);
  cr_assert_gt(worst, 0.0, "the skip changed no output");
  cr_assert_lt(worst, 1e-2 * scale, "a skipped term moved an output by %.3e", worst);
  free(oa);
  free(ob);
  ssm_state_free(&a);
  ssm_state_free(&b);
  tu_stream_free(&s);
}
