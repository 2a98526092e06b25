/* The SPEC section 5 statistics of one configuration of a run file (replayssm summary), in the
 * spirit of llama.cpp's perplexity KL report. Steps whose kl is not finite (a configuration
 * that went non-finite) are counted and left out of every statistic. */
#ifndef RSSM_DRIVER_SUMMARY_STATS_H
#define RSSM_DRIVER_SUMMARY_STATS_H

#include <stdint.h>

#include "src/driver/run_data.h"

#define SUMMARY_MAX_BUCKETS 40

typedef struct {
  int64_t n;                 /* finite steps used */
  int64_t nonfinite;         /* steps left out */
  double kl_mean, kl_se;     /* standard error of the mean: sd / sqrt(n) */
  double kl_median, kl_p90, kl_p99, kl_p999, kl_max;
  double dp_mean, dp_rms;
  double top1;               /* fraction of steps whose argmax agrees */
  double lnppl, lnppl_se;    /* mean and standard error of nll_cfg - nll_ref */
  int nbuckets;              /* positions t+1 in [2^b, 2^(b+1)), b = 0..nbuckets-1 */
  double bucket_kl[SUMMARY_MAX_BUCKETS]; /* [nbuckets] mean KL, NaN when empty */
} summary_stats;

/* Statistics of configuration c of d. Returns 0, or -1 when out of memory. */
int summary_compute(const run_data *d, int c, summary_stats *s);

#endif
