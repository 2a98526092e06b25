/* The statistics of `replayssm summary` (docs/driver.md, "Summary"), modelled on llama.cpp's
 * perplexity KL report: per configuration its own perplexity, the PPL ratio and difference to
 * the reference, KL percentiles from the minimum to the maximum, dp's mean and RMS and top-1
 * agreement, each mean with an error.
 *
 * Errors come from independent units, not from steps (neighbouring steps of one sequence are
 * correlated): the sequences when there are at least SR_MIN_SEQUENCE_UNITS of them, else blocks
 * of consecutive steps (SR_MIN_UNITS units in all, at least SR_MIN_BLOCK_STEPS steps each). Each
 * unit keeps sums and counts; a mean is sum/count over all units and its standard error is the
 * ratio (linearisation) estimator's, sqrt(U/(U-1) sum_u (S_u - m n_u)^2) / sum_u n_u. Functions of
 * means (PPL, PPL ratio and difference, RMS, a ratio of two mean KLs) take the delta method on the
 * same per-unit residuals. Steps whose kl, nll or reference nll is not finite are left out. */
#ifndef RSSM_DRIVER_SUMMARY_REPORT_H
#define RSSM_DRIVER_SUMMARY_REPORT_H

#include <stdint.h>

#include "src/driver/run_data.h"

#define SR_MIN_SEQUENCE_UNITS 10
#define SR_MIN_UNITS 16
#define SR_MIN_BLOCK_STEPS 64
#define SR_MAX_BUCKETS 40
#define SR_NPCT 11

/* KL percentiles reported (fractions; GSL's linear interpolation, numpy's default) */
extern const double SR_PCT[SR_NPCT];
/* their names: "min", "p0.1", ..., "max" */
extern const char *const SR_PCT_NAME[SR_NPCT];

typedef struct {
  double v;   /* the estimate */
  double err; /* its standard error over the units; NaN with fewer than two units */
} sr_est;

typedef struct {
  int count;              /* U */
  int per_sequence;       /* units per sequence: 1 = the sequences themselves */
  int64_t steps;          /* steps per unit (the last block of a sequence may hold more) */
  char text[160];         /* "4 sequences" / "16 blocks of 512 steps (4 per sequence; ...)" */
} sr_units;

typedef struct {
  int64_t n, nonfinite;   /* steps used, steps left out */
  sr_est kl;              /* mean KL(ref || cfg), nats per token */
  double kl_pct[SR_NPCT]; /* nats */
  sr_est nll, ppl;        /* own mean nll (nats per token) and exp of it */
  sr_est ln_ppl_ratio;    /* mean(nll_cfg - nll_ref) over the same steps */
  sr_est ppl_ratio;       /* PPL_cfg / PPL_ref */
  sr_est ppl_diff;        /* PPL_cfg - PPL_ref */
  sr_est dp_mean, dp_rms; /* dp = p_cfg(target) - p_ref(target), probability */
  sr_est top1;            /* fraction of steps whose argmax agrees */
  int nbuckets;           /* full buckets [2^b, 2^(b+1)) of the 1-based step, b < nbuckets */
  sr_est bucket_kl[SR_MAX_BUCKETS]; /* errors over the sequences */
} sr_config;

typedef struct {
  sr_units units;
  sr_est ref_nll, ref_ppl;  /* the reference over every step */
  int nconfig;
  sr_config *cfg;           /* [nconfig] */
  double *kl_sum;           /* [nconfig][U] per-unit KL sums (for comparisons) */
  double *kl_cnt;           /* [nconfig][U] their step counts */
} sr_report;

typedef struct {
  int a, b;                /* configurations: mean KL of a / mean KL of b */
  double ratio, lo, hi;    /* estimate and 95% interval (NaN when it cannot be computed) */
  double se_log;           /* standard error of ln(ratio) */
  int dof;                 /* U - 1 (the interval's t quantile) */
} sr_compare;

/* Everything above for d. Returns 0, or -1 when out of memory. */
int sr_build(const run_data *d, sr_report *r);
void sr_free(sr_report *r);

/* Ratio of the mean KLs of configurations a and b with a 95% interval: delta method on
 * ln(ratio) over the units (paired: both configurations decoded the same units), t quantile
 * with U-1 degrees of freedom. */
sr_compare sr_compare_configs(const sr_report *r, int a, int b);

/* The split/shared pairs of d: every shared-checkpoint replay configuration against each split
 * one with the same L whose low-precision format is the shared checkpoint's (kind and block;
 * rounding may differ), as (shared, split). Writes at most max pairs; returns how many. */
int sr_default_pairs(const run_data *d, int (*pairs)[2], int max);

#endif
