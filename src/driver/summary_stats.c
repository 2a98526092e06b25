/* Summary statistics with GSL (summary_stats.h). */
#include "src/driver/summary_stats.h"

#include <gsl/gsl_sort.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>

int summary_compute(const run_data *d, int c, summary_stats *s) {
  const run_cfg_data *x = &d->cfg[c];
  int64_t KN = d->K * d->N;
  double *kl = malloc((size_t)KN * sizeof(double) + 8);
  double *dp = malloc((size_t)KN * sizeof(double) + 8);
  double *dn = malloc((size_t)KN * sizeof(double) + 8);
  if (!kl || !dp || !dn) {
    free(kl);
    free(dp);
    free(dn);
    return -1;
  }
  int64_t n = 0, top = 0;
  double bsum[SUMMARY_MAX_BUCKETS] = {0};
  int64_t bcnt[SUMMARY_MAX_BUCKETS] = {0};
  s->nbuckets = 0;
  while (s->nbuckets < SUMMARY_MAX_BUCKETS && (INT64_C(1) << s->nbuckets) <= d->N) s->nbuckets++;
  for (int64_t k = 0; k < d->K; k++)
    for (int64_t t = 0; t < d->N; t++) {
      int64_t i = k * d->N + t;
      if (!isfinite(x->kl[i]) || !isfinite(x->nll[i]) || !isfinite(d->ref_nll[i])) continue;
      kl[n] = x->kl[i];
      dp[n] = x->dp[i];
      dn[n] = (double)x->nll[i] - (double)d->ref_nll[i];
      top += x->top1[i];
      int b = 0;
      while ((INT64_C(2) << b) <= t + 1) b++;
      bsum[b] += x->kl[i];
      bcnt[b]++;
      n++;
    }
  s->n = n;
  s->nonfinite = KN - n;
  if (n == 0) {
    s->kl_mean = s->kl_se = s->kl_median = s->kl_p90 = s->kl_p99 = s->kl_p999 = s->kl_max = NAN;
    s->dp_mean = s->dp_rms = s->top1 = s->lnppl = s->lnppl_se = NAN;
  } else {
    size_t un = (size_t)n;
    s->kl_mean = gsl_stats_mean(kl, 1, un);
    s->kl_se = n > 1 ? gsl_stats_sd_m(kl, 1, un, s->kl_mean) / sqrt((double)n) : NAN;
    gsl_sort(kl, 1, un);
    s->kl_median = gsl_stats_median_from_sorted_data(kl, 1, un);
    s->kl_p90 = gsl_stats_quantile_from_sorted_data(kl, 1, un, 0.90);
    s->kl_p99 = gsl_stats_quantile_from_sorted_data(kl, 1, un, 0.99);
    s->kl_p999 = gsl_stats_quantile_from_sorted_data(kl, 1, un, 0.999);
    s->kl_max = kl[un - 1];
    s->dp_mean = gsl_stats_mean(dp, 1, un);
    double ss = 0.0;
    for (size_t i = 0; i < un; i++) ss += dp[i] * dp[i];
    s->dp_rms = sqrt(ss / (double)n);
    s->top1 = (double)top / (double)n;
    /* ln(PPL_cfg / PPL_ref) = mean(nll_cfg) - mean(nll_ref) = mean of the per-step differences;
     * the differences are paired, so their own spread gives the uncertainty */
    s->lnppl = gsl_stats_mean(dn, 1, un);
    s->lnppl_se = n > 1 ? gsl_stats_sd_m(dn, 1, un, s->lnppl) / sqrt((double)n) : NAN;
  }
  for (int b = 0; b < s->nbuckets; b++) s->bucket_kl[b] = bcnt[b] ? bsum[b] / (double)bcnt[b] : NAN;
  free(kl);
  free(dp);
  free(dn);
  return 0;
}
