/* Independent summary statistics (summary_ref.h). */
#include "tests/driver/summary_ref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Quantile p of sorted x [n]: linear interpolation between the order statistics around (n-1) p. */
static double quantile(const double *x, int64_t n, double p) {
  double h = (double)(n - 1) * p;
  int64_t lo = (int64_t)floor(h);
  if (lo >= n - 1) return x[n - 1];
  return x[lo] + (h - (double)lo) * (x[lo + 1] - x[lo]);
}

static void near(double got, double want, const char *what, const char *cfg) {
  double tol = 1e-12 * fmax(1.0, fabs(want));
  cr_assert(fabs(got - want) <= tol || (isnan(got) && isnan(want)), "%s: %s %.17g, independent %.17g",
            cfg, what, got, want);
}

void summary_check_against_reference(const run_data *d, int c) {
  const run_cfg_data *x = &d->cfg[c];
  int64_t KN = d->K * d->N, n = 0, top = 0;
  double *kl = malloc((size_t)KN * sizeof(double) + 8);
  cr_assert(kl);
  double skl = 0, sdp = 0, sdp2 = 0, sdn = 0;
  for (int64_t i = 0; i < KN; i++) {
    if (!isfinite(x->kl[i]) || !isfinite(x->nll[i]) || !isfinite(d->ref_nll[i])) continue;
    kl[n++] = x->kl[i];
    skl += x->kl[i];
    sdp += x->dp[i];
    sdp2 += (double)x->dp[i] * x->dp[i];
    sdn += (double)x->nll[i] - (double)d->ref_nll[i];
    top += x->top1[i];
  }
  summary_stats s;
  cr_assert_eq(summary_compute(d, c, &s), 0);
  cr_assert_eq(s.n, n, "%s: n", x->name);
  cr_assert_eq(s.nonfinite, KN - n, "%s: nonfinite", x->name);
  cr_assert_gt(n, 1);
  double mean = skl / (double)n, mdn = sdn / (double)n, v = 0, vdn = 0;
  for (int64_t i = 0, j = 0; i < KN; i++) {
    if (!isfinite(x->kl[i]) || !isfinite(x->nll[i]) || !isfinite(d->ref_nll[i])) continue;
    double e = (double)x->nll[i] - (double)d->ref_nll[i] - mdn;
    v += (kl[j] - mean) * (kl[j] - mean);
    vdn += e * e;
    j++;
  }
  qsort(kl, (size_t)n, sizeof(double), cmp_double);
  near(s.kl_mean, mean, "mean KL", x->name);
  near(s.kl_se, sqrt(v / (double)(n - 1) / (double)n), "KL standard error", x->name);
  near(s.kl_median, quantile(kl, n, 0.5), "median KL", x->name);
  near(s.kl_p90, quantile(kl, n, 0.90), "p90 KL", x->name);
  near(s.kl_p99, quantile(kl, n, 0.99), "p99 KL", x->name);
  near(s.kl_p999, quantile(kl, n, 0.999), "p99.9 KL", x->name);
  near(s.kl_max, kl[n - 1], "max KL", x->name);
  near(s.dp_mean, sdp / (double)n, "mean dp", x->name);
  near(s.dp_rms, sqrt(sdp2 / (double)n), "rms dp", x->name);
  cr_assert_eq(s.top1, (double)top / (double)n, "%s: top1", x->name);
  near(s.lnppl, mdn, "ln PPL error", x->name);
  near(s.lnppl_se, sqrt(vdn / (double)(n - 1) / (double)n), "ln PPL standard error", x->name);
  /* buckets: positions t+1 in [2^b, 2^(b+1)) */
  for (int b = 0; b < s.nbuckets; b++) {
    double bs = 0;
    int64_t bn = 0;
    for (int64_t k = 0; k < d->K; k++)
      for (int64_t t = (INT64_C(1) << b) - 1; t < d->N && t + 1 < (INT64_C(2) << b); t++) {
        int64_t i = k * d->N + t;
        if (!isfinite(x->kl[i]) || !isfinite(x->nll[i]) || !isfinite(d->ref_nll[i])) continue;
        bs += x->kl[i];
        bn++;
      }
    near(s.bucket_kl[b], bn ? bs / (double)bn : NAN, "bucket KL", x->name);
  }
  free(kl);
}
