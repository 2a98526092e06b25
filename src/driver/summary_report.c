/* The statistics of `replayssm summary` with GSL (summary_report.h). */
#include "src/driver/summary_report.h"

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ssm/ssm_config.h"

const double SR_PCT[SR_NPCT] = {0.0, 0.001, 0.01, 0.05, 0.10, 0.50, 0.90, 0.95, 0.99, 0.999, 1.0};
const char *const SR_PCT_NAME[SR_NPCT] = {"min", "p0.1", "p1",   "p5",    "p10", "median",
                                          "p90", "p95",  "p99", "p99.9", "max"};

/* Per-unit sums of one configuration. */
enum { U_CNT, U_KL, U_NLL, U_REF, U_DP, U_DP2, U_TOP1, U_NSUM };

static void choose_units(const run_data *d, sr_units *u) {
  int m = 1;
  if (d->K < SR_MIN_SEQUENCE_UNITS && d->K > 0) {
    m = (int)((SR_MIN_UNITS + d->K - 1) / d->K);
    int64_t most = d->N / SR_MIN_BLOCK_STEPS;
    if (m > most) m = most > 1 ? (int)most : 1;
  }
  u->per_sequence = m;
  u->count = (int)(d->K * m);
  u->steps = m > 0 ? d->N / m : d->N;
  if (m == 1)
    snprintf(u->text, sizeof u->text, "%d sequences", u->count);
  else
    snprintf(u->text, sizeof u->text,
             "%d blocks of %lld steps (%d per sequence: %lld sequences are fewer than %d)",
             u->count, (long long)u->steps, m, (long long)d->K, SR_MIN_SEQUENCE_UNITS);
}

/* sqrt(U/(U-1) sum z_u^2) / total: the standard error whose linearised residuals are z */
static double se_from_residuals(const double *z, int U, double total) {
  if (U < 2 || total <= 0) return NAN;
  double ss = 0.0;
  for (int u = 0; u < U; u++) ss += z[u] * z[u];
  return sqrt((double)U / (double)(U - 1) * ss) / total;
}

/* Ratio estimator sum S / sum n with its standard error; z is scratch [U]. */
static sr_est ratio_mean(const double *S, const double *n, int U, double *z) {
  double s = 0.0, t = 0.0;
  for (int u = 0; u < U; u++) s += S[u], t += n[u];
  sr_est e = {t > 0 ? s / t : NAN, NAN};
  if (t <= 0) return e;
  for (int u = 0; u < U; u++) z[u] = S[u] - e.v * n[u];
  e.err = se_from_residuals(z, U, t);
  return e;
}

/* PPL_cfg - PPL_ref by the delta method on the two mean nlls' residuals. */
static sr_est ppl_difference(const double *sums, int U, double *z) {
  const double *n = sums + U_CNT * U, *a = sums + U_NLL * U, *b = sums + U_REF * U;
  double t = 0.0, sa = 0.0, sb = 0.0;
  for (int u = 0; u < U; u++) t += n[u], sa += a[u], sb += b[u];
  if (t <= 0) return (sr_est){NAN, NAN};
  double ma = sa / t, mb = sb / t, ea = exp(ma), eb = exp(mb);
  for (int u = 0; u < U; u++) z[u] = ea * (a[u] - ma * n[u]) - eb * (b[u] - mb * n[u]);
  return (sr_est){ea - eb, se_from_residuals(z, U, t)};
}

/* Percentiles of the finite kl values (sorted in place). */
static void percentiles(double *kl, size_t n, double *out) {
  if (n == 0) {
    for (int i = 0; i < SR_NPCT; i++) out[i] = NAN;
    return;
  }
  gsl_sort(kl, 1, n);
  for (int i = 0; i < SR_NPCT; i++) out[i] = gsl_stats_quantile_from_sorted_data(kl, 1, n, SR_PCT[i]);
}

/* Full buckets: [2^b, 2^(b+1)) lies within steps 1..N. Errors over the sequences. */
static void buckets(const run_data *d, int c, sr_config *s, double *bs, double *bn, double *z) {
  const run_cfg_data *x = &d->cfg[c];
  s->nbuckets = 0;
  while (s->nbuckets < SR_MAX_BUCKETS && (INT64_C(2) << s->nbuckets) - 1 <= d->N) s->nbuckets++;
  int K = (int)d->K;
  for (int b = 0; b < s->nbuckets; b++) {
    int64_t lo = (INT64_C(1) << b) - 1, hi = (INT64_C(2) << b) - 1; /* 0-based steps [lo, hi) */
    for (int k = 0; k < K; k++) {
      bs[k] = bn[k] = 0.0;
      for (int64_t t = lo; t < hi; t++) {
        int64_t i = k * d->N + t;
        if (!isfinite(x->kl[i]) || !isfinite(x->nll[i]) || !isfinite(d->ref_nll[i])) continue;
        bs[k] += x->kl[i];
        bn[k] += 1.0;
      }
    }
    s->bucket_kl[b] = ratio_mean(bs, bn, K, z);
  }
}

/* One configuration: sums is [U_NSUM][U] scratch, kl [K*N] scratch. */
static void build_config(const run_data *d, const sr_units *un, int c, sr_config *s,
                         double *sums, double *kl, double *z) {
  const run_cfg_data *x = &d->cfg[c];
  int U = un->count, m = un->per_sequence;
  memset(sums, 0, sizeof(double) * U_NSUM * (size_t)U);
  size_t n = 0;
  for (int64_t k = 0; k < d->K; k++)
    for (int64_t t = 0; t < d->N; t++) {
      int64_t i = k * d->N + t;
      if (!isfinite(x->kl[i]) || !isfinite(x->nll[i]) || !isfinite(d->ref_nll[i])) continue;
      int u = (int)(k * m + t * m / d->N);
      double dp = x->dp[i];
      sums[U_CNT * U + u] += 1.0;
      sums[U_KL * U + u] += x->kl[i];
      sums[U_NLL * U + u] += x->nll[i];
      sums[U_REF * U + u] += d->ref_nll[i];
      sums[U_DP * U + u] += dp;
      sums[U_DP2 * U + u] += dp * dp;
      sums[U_TOP1 * U + u] += x->top1[i];
      kl[n++] = x->kl[i];
    }
  s->n = (int64_t)n;
  s->nonfinite = d->K * d->N - s->n;
  const double *cnt = sums + U_CNT * U;
  s->kl = ratio_mean(sums + U_KL * U, cnt, U, z);
  s->nll = ratio_mean(sums + U_NLL * U, cnt, U, z);
  s->ppl = (sr_est){exp(s->nll.v), exp(s->nll.v) * s->nll.err};
  /* ln(PPL_cfg / PPL_ref) = mean of the paired per-step differences */
  double *diff = kl + n; /* [U] scratch past the kl values */
  for (int u = 0; u < U; u++) diff[u] = sums[U_NLL * U + u] - sums[U_REF * U + u];
  s->ln_ppl_ratio = ratio_mean(diff, cnt, U, z);
  double r = exp(s->ln_ppl_ratio.v);
  s->ppl_ratio = (sr_est){r, r * s->ln_ppl_ratio.err};
  s->ppl_diff = ppl_difference(sums, U, z);
  s->dp_mean = ratio_mean(sums + U_DP * U, cnt, U, z);
  sr_est m2 = ratio_mean(sums + U_DP2 * U, cnt, U, z);
  double rms = sqrt(m2.v);
  s->dp_rms = (sr_est){rms, rms > 0 ? m2.err / (2.0 * rms) : NAN};
  s->top1 = ratio_mean(sums + U_TOP1 * U, cnt, U, z);
  percentiles(kl, n, s->kl_pct);
}

int sr_build(const run_data *d, sr_report *r) {
  memset(r, 0, sizeof *r);
  choose_units(d, &r->units);
  int U = r->units.count, C = d->nconfig;
  size_t KN = (size_t)(d->K * d->N);
  size_t nbig = (size_t)U + (size_t)d->K + 1;
  double *sums = malloc(sizeof(double) * (U_NSUM * (size_t)U + 1));
  double *kl = malloc(sizeof(double) * (KN + nbig + 1)); /* [K*N] values, then [U] scratch */
  double *z = malloc(sizeof(double) * nbig);
  double *bs = malloc(sizeof(double) * nbig), *bn = malloc(sizeof(double) * nbig);
  r->cfg = calloc((size_t)C + 1, sizeof *r->cfg);
  r->kl_sum = malloc(sizeof(double) * ((size_t)C * (size_t)U + 1));
  r->kl_cnt = malloc(sizeof(double) * ((size_t)C * (size_t)U + 1));
  int rc = (!sums || !kl || !z || !bs || !bn || !r->cfg || !r->kl_sum || !r->kl_cnt) ? -1 : 0;
  if (rc == 0) {
    r->nconfig = C;
    /* the reference over every step (its nll is finite by construction) */
    memset(bs, 0, sizeof(double) * (size_t)U);
    memset(bn, 0, sizeof(double) * (size_t)U);
    int m = r->units.per_sequence;
    for (int64_t k = 0; k < d->K; k++)
      for (int64_t t = 0; t < d->N; t++) {
        int u = (int)(k * m + t * m / d->N);
        bs[u] += d->ref_nll[k * d->N + t];
        bn[u] += 1.0;
      }
    r->ref_nll = ratio_mean(bs, bn, U, z);
    r->ref_ppl = (sr_est){exp(r->ref_nll.v), exp(r->ref_nll.v) * r->ref_nll.err};
    for (int c = 0; c < C; c++) {
      build_config(d, &r->units, c, &r->cfg[c], sums, kl, z);
      memcpy(r->kl_sum + (size_t)c * (size_t)U, sums + U_KL * U, sizeof(double) * (size_t)U);
      memcpy(r->kl_cnt + (size_t)c * (size_t)U, sums + U_CNT * U, sizeof(double) * (size_t)U);
      buckets(d, c, &r->cfg[c], bs, bn, z);
    }
  }
  free(sums);
  free(kl);
  free(z);
  free(bs);
  free(bn);
  if (rc != 0) sr_free(r);
  return rc;
}

void sr_free(sr_report *r) {
  free(r->cfg);
  free(r->kl_sum);
  free(r->kl_cnt);
  memset(r, 0, sizeof *r);
}

sr_compare sr_compare_configs(const sr_report *r, int a, int b) {
  sr_compare out = {a, b, NAN, NAN, NAN, NAN, r->units.count - 1};
  int U = r->units.count;
  const double *sa = r->kl_sum + (size_t)a * (size_t)U, *na = r->kl_cnt + (size_t)a * (size_t)U;
  const double *sb = r->kl_sum + (size_t)b * (size_t)U, *nb = r->kl_cnt + (size_t)b * (size_t)U;
  double ta = 0, tb = 0, Sa = 0, Sb = 0;
  for (int u = 0; u < U; u++) ta += na[u], tb += nb[u], Sa += sa[u], Sb += sb[u];
  if (ta <= 0 || tb <= 0 || Sa <= 0 || Sb <= 0) return out;
  double ma = Sa / ta, mb = Sb / tb;
  out.ratio = ma / mb;
  if (U < 2) return out;
  /* d ln(ma/mb): residual of a's mean relative to ma minus b's relative to mb */
  double ss = 0.0;
  for (int u = 0; u < U; u++) {
    double zu = (sa[u] - ma * na[u]) / (ma * ta) - (sb[u] - mb * nb[u]) / (mb * tb);
    ss += zu * zu;
  }
  out.se_log = sqrt((double)U / (double)(U - 1) * ss);
  double q = gsl_cdf_tdist_Pinv(0.975, (double)(U - 1));
  out.lo = out.ratio * exp(-q * out.se_log);
  out.hi = out.ratio * exp(q * out.se_log);
  return out;
}

int sr_default_pairs(const run_data *d, int (*pairs)[2], int max) {
  int n = 0;
  char err[256];
  for (int a = 0; a < d->nconfig; a++) {
    ssm_config ca;
    if (ssm_config_parse(d->cfg[a].spec, &ca, err, sizeof err) != 0) continue;
    if (ca.strategy != SSM_REPLAY || ca.split) continue;
    for (int b = 0; b < d->nconfig && n < max; b++) {
      ssm_config cb;
      if (b == a || ssm_config_parse(d->cfg[b].spec, &cb, err, sizeof err) != 0) continue;
      if (cb.strategy != SSM_REPLAY || !cb.split || cb.L != ca.L) continue;
      if (cb.lp.kind != ca.ckpt.kind || cb.lp.block != ca.ckpt.block) continue;
      pairs[n][0] = a;
      pairs[n][1] = b;
      n++;
    }
  }
  return n;
}
