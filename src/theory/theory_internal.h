/* What the regimes of `replayssm theory` share (theory_model.c): pooled error statistics, the
 * comparison of a measured D with the model, and the judgement of the model's assumptions. */
#ifndef RSSM_THEORY_THEORY_INTERNAL_H
#define RSSM_THEORY_THEORY_INTERNAL_H

#include "src/theory/theory.h"

/* Pooled mean and variance of e over many steps, from each step's mean and variance. */
typedef struct {
  double sum_mean, sum_var, sum_mean2;
  int64_t n;
} th_pooled;

void th_pooled_add(th_pooled *p, double mean, double var /* population variance */);
void th_pooled_get(const th_pooled *p, double *b, double *s2);

typedef struct {
  const th_params *p;
  int64_t n;       /* elements */
  int64_t per_mat; /* elements per matrix */
  double *stat;    /* scratch [nmat] */
} th_ctx;

/* Mean and variance of D over all elements, and their standard errors from the spread between
 * the matrices. */
void th_d_stats(const th_ctx *c, const double *d, double *mean, double *var, double *se_mean,
                double *se_var);

/* Fills the comparison of D (in units of each row's scale) with the model: a per rounding, n
 * roundings, errors of mean b and variance s2. */
void th_compare(const th_ctx *c, th_row *r, const double *d, double a, int64_t n, double b,
                double s2);

/* Whether the assumptions hold. corr: the lag-1 autocorrelation of e where significant, else 0
 * (open-loop regimes); kappa: the measured relative effect of Cov(D_(n-1), e_n) on Var D where
 * significant, else 0 (closed regime). */
th_assumption th_judge(const qformat *f, th_regime reg, th_mode mode, double corr, double kappa,
                       double a, double tol, const char **why);

int th_push_row(th_result *res, const th_row *r); /* 0, or -1 out of memory */

/* Lag-1 autocorrelation of e from per-matrix sums of e_t e_(t-1) over `pairs` step pairs;
 * *se from the spread between matrices; returns the value, or 0 where it is not significant
 * (below 4 standard errors). */
double th_lag1(const th_ctx *c, const double *lag1 /* [nmat] */, int64_t pairs, double b,
               double s2, double *corr, double *se);

/* The closed-loop regime (theory_closed.c). */
int th_run_closed(const th_params *p, const qformat *fmt, th_result *res, char *err,
                  size_t errlen);

#endif
