/* Per-step metrics (SPEC section 5) against a double-precision evaluation, the KL sign, and the
 * non-finite rule; the toy decoder's save/load round trip and spec/standard agreement. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/decode/decoder.h"
#include "src/model/metrics.h"
#include "src/io/status.h"
#include "src/ssm/ssm_config.h"
#include "tests/cli/cli_test_util.h"

enum { V = 1000 };

static void random_logits(float *x, uint64_t *s, double scale) {
  for (int i = 0; i < V; i++) x[i] = (float)(((double)(rng_next(s) >> 11) * 0x1.0p-53 - 0.5) * scale);
}

Test(metrics, match_double_reference_and_kl_nonnegative) {
  static float a[V], b[V], la[V], lb[V];
  uint64_t s = 7;
  for (int trial = 0; trial < 200; trial++) {
    double scale = trial % 2 ? 30.0 : 3.0;
    random_logits(a, &s, scale);
    memcpy(b, a, sizeof a);
    /* configurations near the reference (tiny) and far from it */
    double eps = trial < 100 ? 1e-6 : 0.5;
    for (int i = 0; i < V; i++) b[i] += (float)(eps * ((double)(rng_next(&s) >> 11) * 0x1.0p-53 - 0.5));
    int64_t aa, ab;
    cr_assert_eq(metrics_log_softmax(a, V, la, &aa), 0);
    cr_assert_eq(metrics_log_softmax(b, V, lb, &ab), 0);
    int64_t target = (int64_t)(rng_next(&s) % V);
    step_metrics m;
    metrics_step(la, aa, lb, ab, V, target, &m);
    /* double reference */
    double ma = a[0], mb = b[0], za = 0, zb = 0;
    for (int i = 0; i < V; i++) ma = fmax(ma, a[i]), mb = fmax(mb, b[i]);
    for (int i = 0; i < V; i++) za += exp(a[i] - ma), zb += exp(b[i] - mb);
    double kl = 0;
    for (int i = 0; i < V; i++) {
      double pa = exp(a[i] - ma) / za;
      kl += pa * ((a[i] - ma - log(za)) - (b[i] - mb - log(zb)));
    }
    double nll = -(b[target] - mb - log(zb));
    cr_assert(m.kl >= 0.0f, "KL %.3e is negative", m.kl);
    cr_assert(fabs(m.kl - kl) <= 1e-6 + 1e-4 * kl, "kl %.9g vs double %.9g", m.kl, kl);
    /* near the reference the true KL is ~1e-13: the fp32 normaliser's error (~6e-8) must not
       show up to first order, as it would with the plain sum */
    if (eps < 1e-3) cr_assert(m.kl <= 1e-10, "near-identical KL %.3e", m.kl);
    cr_assert(fabs(m.nll - nll) <= 1e-5 * (1 + nll), "nll %.9g vs %.9g", m.nll, nll);
  }
  /* identical logits: exactly zero */
  step_metrics m;
  metrics_step(la, 0, la, 0, V, 3, &m);
  cr_assert_eq(m.kl, 0.0f);
  cr_assert_eq(m.dp, 0.0f);
  cr_assert_eq(m.top1, 1);
}

Test(metrics, nonfinite_detected) {
  static float a[V], la[V];
  uint64_t s = 1;
  random_logits(a, &s, 5.0);
  int64_t am;
  a[17] = NAN;
  cr_assert_eq(metrics_log_softmax(a, V, la, &am), -1);
  a[17] = INFINITY;
  cr_assert_eq(metrics_log_softmax(a, V, la, &am), -1);
}

static rssm_decoder *open_dec(rssm_model *m, const char *cfg_text, uint32_t seq) {
  static ssm_config cfgs[8];
  static int n = 0;
  char err[256];
  ssm_config *c = &cfgs[n++ % 8];
  cr_assert_eq(ssm_config_parse(cfg_text, c, err, sizeof err), 0, "%s", err);
  rssm_decoder_params p = {c, 5, seq, 4096};
  rssm_decoder *d;
  cr_assert_eq(rssm_decoder_open(m, &p, &d, err, sizeof err), RSSM_OK, "%s", err);
  return d;
}

/* Save in the middle, continue; load into a fresh decoder, continue: identical logits. */
Test(toy, save_load_continues_bit_identically) {
  const char *models[] = {"toy:gdn", "toy:mamba2"};
  const char *cfgs[] = {"replay L=8 ckpt=nvfp4/sr", "conventional state=fp8/sr",
                        "replay L=8 hp=fp16/sr lp=nvfp4"};
  char err[256];
  static float la[256], lb[256];
  for (int mi = 0; mi < 2; mi++) {
    rssm_model *m;
    cr_assert_eq(rssm_model_open(models[mi], &m, err, sizeof err), RSSM_OK, "%s", err);
    for (int ci = 0; ci < 3; ci++) {
      rssm_decoder *a = open_dec(m, cfgs[ci], 3), *b = open_dec(m, cfgs[ci], 3);
      for (int t = 0; t < 21; t++) cr_assert_eq(a->ops->step(a, 'a' + t % 20, la, err, sizeof err), 0);
      int64_t n = a->ops->state_bytes(a);
      unsigned char *buf = malloc((size_t)n);
      cr_assert_eq(a->ops->save(a, buf, err, sizeof err), 0);
      cr_assert_eq(b->ops->load(b, buf, n, err, sizeof err), 0, "%s", err);
      free(buf);
      for (int t = 0; t < 30; t++) {
        a->ops->step(a, 'b' + t % 11, la, err, sizeof err);
        b->ops->step(b, 'b' + t % 11, lb, err, sizeof err);
        cr_assert_eq(memcmp(la, lb, sizeof la), 0, "%s %s: step %d differs after load", models[mi],
                     cfgs[ci], t);
      }
      rssm_decoder_free(a);
      rssm_decoder_free(b);
    }
    rssm_model_close(m);
  }
}

/* A spec decoder (fp32 checkpoints) predicts what standard decoding does, up to reassociation. */
Test(toy, spec_matches_standard_decoding) {
  char err[256];
  rssm_model *m;
  cr_assert_eq(rssm_model_open("toy:gdn", &m, err, sizeof err), RSSM_OK, "%s", err);
  rssm_decoder *ref = open_dec(m, "conventional state=fp32", 0);
  rssm_decoder *sp = open_dec(m, "spec L=8 T=4 ckpt=fp32 accept=fixed:2", 0);
  static float lr[256], ls[4 * 256];
  int64_t toks[64];
  for (int i = 0; i < 64; i++) toks[i] = 'a' + (i * 7) % 26;
  int t = 0;
  while (t + 4 <= 64) {
    cr_assert_eq(sp->ops->verify(sp, toks + t, 4, ls, err, sizeof err), 0, "%s", err);
    for (int j = 0; j < 2; j++) {
      cr_assert_eq(ref->ops->step(ref, toks[t + j], lr, err, sizeof err), 0);
      for (int v = 0; v < 256; v++)
        cr_assert(fabsf(lr[v] - ls[j * 256 + v]) <= 1e-4f * (1 + fabsf(lr[v])), "step %d", t + j);
    }
    cr_assert_eq(sp->ops->commit(sp, 2, err, sizeof err), 0);
    t += 2;
  }
  rssm_decoder_free(ref);
  rssm_decoder_free(sp);
  rssm_model_close(m);
}

#include "src/driver/run_data.h"
#include "src/driver/summary_stats.h"

/* summary_compute against direct formulas on a small run with known values. */
Test(summary, statistics_by_hand) {
  run_data d;
  cr_assert_eq(run_data_alloc(&d, 2, 8, 1), 0);
  /* kl = 0.1 * (index + 1) over 16 steps; one non-finite step at the end */
  for (int i = 0; i < 16; i++) {
    d.cfg[0].kl[i] = 0.1f * (float)(i + 1);
    d.cfg[0].nll[i] = 2.0f + 0.01f * (float)i;
    d.ref_nll[i] = 2.0f;
    d.cfg[0].dp[i] = i % 2 ? 0.02f : -0.02f;
    d.cfg[0].top1[i] = i < 12;
  }
  d.cfg[0].kl[15] = INFINITY;
  summary_stats s;
  cr_assert_eq(summary_compute(&d, 0, &s), 0);
  cr_assert_eq(s.n, 15);
  cr_assert_eq(s.nonfinite, 1);
  double mean = 0.1 * (15 * 16 / 2) / 15.0; /* 0.8 */
  cr_assert(fabs(s.kl_mean - mean) < 1e-6, "%g", s.kl_mean);
  double var = 0;
  for (int i = 0; i < 15; i++) var += (0.1 * (i + 1) - mean) * (0.1 * (i + 1) - mean);
  var /= 14;
  cr_assert(fabs(s.kl_se - sqrt(var / 15)) < 1e-6, "%g", s.kl_se);
  cr_assert(fabs(s.kl_median - 0.8) < 1e-6, "%g", s.kl_median);
  cr_assert(fabs(s.kl_max - 1.5) < 1e-6);
  cr_assert(fabs(s.kl_p90 - (1.3 + 0.6 * 0.1)) < 1e-6, "p90 %g", s.kl_p90); /* GSL: (n-1) p = 12.6 */
  cr_assert(fabs(s.dp_rms - 0.02) < 1e-7);
  cr_assert(fabs(s.top1 - 12.0 / 15.0) < 1e-12);
  cr_assert(fabs(s.lnppl - 0.07) < 1e-6, "%g", s.lnppl); /* mean of 0.01 i, i = 0..14 */
  /* buckets of the 1-based position within each row of 8: [1], [2,3], [4..7], [8] */
  cr_assert_eq(s.nbuckets, 4);
  double b1 = (0.1 + 0.9) / 2, b4 = (0.4 + 0.5 + 0.6 + 0.7 + 1.2 + 1.3 + 1.4 + 1.5) / 8;
  cr_assert(fabs(s.bucket_kl[0] - b1) < 1e-6, "%g", s.bucket_kl[0]);
  cr_assert(fabs(s.bucket_kl[2] - b4) < 1e-6, "%g", s.bucket_kl[2]);
  cr_assert(fabs(s.bucket_kl[3] - 0.8) < 1e-6, "%g", s.bucket_kl[3]); /* step 8 of row 0 only */
  run_data_free(&d);
}
