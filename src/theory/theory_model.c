/* The model side of `replayssm theory` (theory.h, theory_internal.h): names, the pooled error
 * statistics, the judgement of the assumptions, and the comparison of a measured D with the
 * predictions. */
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/theory/theory_internal.h"

const char *th_regime_name(th_regime r) {
  static const char *const n[] = {"iid", "fixed", "ar1", "closed"};
  return (unsigned)r < TH_NREGIME ? n[r] : "?";
}
const char *th_mode_name(th_mode m) {
  static const char *const n[] = {"conventional", "replay", "split"};
  return (unsigned)m < TH_NMODE ? n[m] : "?";
}
const char *th_assumption_name(th_assumption a) {
  static const char *const n[] = {"holds", "violated", "uncertain"};
  return (unsigned)a <= TH_UNCERTAIN ? n[a] : "?";
}
int th_regime_parse(const char *s, th_regime *out) {
  for (int r = 0; r < TH_NREGIME; r++)
    if (strcmp(s, th_regime_name((th_regime)r)) == 0) {
      *out = (th_regime)r;
      return 0;
    }
  return -1;
}

int64_t th_steps(const th_params *p) {
  double amax = 0.0;
  for (int i = 0; i < p->nalpha; i++)
    if (p->alpha[i] > amax) amax = p->alpha[i];
  double want = ceil(p->horizons / (1.0 - amax));
  int64_t t = want > (double)p->max_steps ? p->max_steps : (int64_t)want;
  t = (t + p->L - 1) / p->L * p->L; /* whole windows, so the last step is a flush */
  return t < p->L ? p->L : t;
}

void th_result_free(th_result *res) {
  free(res->rows);
  memset(res, 0, sizeof *res);
}

size_t th_failures(const th_result *res) {
  size_t n = 0;
  for (size_t i = 0; i < res->n; i++)
    if (res->rows[i].assumption == TH_HOLDS && res->rows[i].resolved && !res->rows[i].agrees) n++;
  return n;
}

size_t th_unresolved(const th_result *res) {
  size_t n = 0;
  for (size_t i = 0; i < res->n; i++)
    if (res->rows[i].assumption == TH_HOLDS && !res->rows[i].resolved) n++;
  return n;
}

void th_pooled_add(th_pooled *p, double mean, double var) {
  p->sum_mean += mean;
  p->sum_mean2 += mean * mean;
  p->sum_var += var;
  p->n++;
}
void th_pooled_get(const th_pooled *p, double *b, double *s2) {
  double n = (double)p->n;
  *b = p->sum_mean / n;
  /* within-step variance plus the variance of the step means (population form) */
  double between = p->sum_mean2 / n - *b * *b;
  *s2 = p->sum_var / n + (between > 0.0 ? between : 0.0);
}

/* Formats whose block maximum can land beyond the largest code (the scale is rounded, or a power of
 * two), where even SR clamps, deterministically. */
static int clamps(const qformat *f) {
  return f->kind == QF_NVFP4 || f->kind == QF_MXFP4 || f->kind == QF_MXFP8;
}

/* Why the model's assumptions hold (or not) for this regime, rounding and mode. corr: the
 * measured lag-1 autocorrelation of e, 0 where it is not significant. A correlation that persists
 * over lags inflates Var D by up to 2 corr a / (1 - a); where that bound exceeds half the tolerance
 * the independence assumption is taken as violated. */
th_assumption th_judge(const qformat *f, th_regime reg, th_mode mode, double corr, double kappa,
                       double a, double tol, const char **why) {
  int sr = f->rounding == QR_SR;
  if (mode == TH_SPLIT) {
    *why = "split: one rounding of the high-precision state, never fed back; D is e itself";
    return TH_HOLDS;
  }
  if (reg == TH_IID) {
    *why = "fresh state every rounding: e independent and identically distributed";
    return TH_HOLDS;
  }
  if (reg == TH_FIXED && !sr) {
    *why = "RTN of a fixed state repeats the same error every step (fully correlated): the bias "
           "case, mean b/(1-a) per element but spread ~1/(1-a)^2, not 1/(1-a^2)";
    return TH_VIOLATED;
  }
  if (reg == TH_CLOSED) {
    /* Var D_n = a^2 Var D_(n-1) + s2 + 2 a Cov(D_(n-1), e_n): kappa is the measured relative size
     * of the last term, the part of the error that is correlated with what it rounds */
    if (fabs(kappa) <= 0.5 * tol) {
      *why = sr ? "SR inside the recurrence: unbiased given everything before, so e is "
                  "uncorrelated with the accumulated D even though it feeds back"
                : "RTN inside the recurrence: the new input moves each value across many grid "
                  "cells per step, so e is not measurably correlated with the accumulated D";
      return TH_HOLDS;
    }
    if (sr)
      *why = clamps(f) ? "SR inside the recurrence: a clamped block maximum is shrunk by a "
                         "fraction of itself, accumulated error included, so e is correlated "
                         "with D (an extra decay: Var D below the prediction)"
                       : "SR inside the recurrence: e correlated with the accumulated D";
    else
      *why = "RTN inside the recurrence: the error depends on the stored value that earlier "
             "errors made (a value whose decay alpha*S rounds back to S stalls), so e is "
             "correlated with the accumulated D";
    return TH_VIOLATED;
  }
  int correlated = 2.0 * corr * a / (1.0 - a) > 0.5 * tol;
  if (sr) {
    if (correlated) {
      *why = clamps(f) ? "SR errors correlated across steps: block maxima beyond the largest code "
                         "(rounded nvfp4 scale, power-of-two mx scale) clamp deterministically, "
                         "so part of the error repeats while the state stays put"
                       : "SR errors correlated across steps (measured lag-1 autocorrelation)";
      return TH_VIOLATED;
    }
    *why = reg == TH_FIXED ? "SR of a fixed state: fresh bits each step, independent and "
                             "unbiased per element; each element's variance depends on its place "
                             "between grid points (s2 is their mean)"
                           : "SR of a slowly moving state: fresh bits, errors uncorrelated "
                             "across steps given the state; stationary state";
    return TH_HOLDS;
  }
  if (correlated) {
    *why = "RTN of a slowly moving state: errors correlated with the state stay correlated across "
           "steps while a value moves less than a grid cell per step";
    return TH_VIOLATED;
  }
  *why = "RTN of a slowly moving state: the value crosses many grid cells per step, so the "
         "errors decorrelate (no significant lag-1 autocorrelation)";
  return TH_HOLDS;
}

/* Mean and variance of D over all elements, and their standard errors from the spread between
 * the matrices (elements of one matrix share scales, so matrices are the independent batches). */
void th_d_stats(const th_ctx *c, const double *d, double *mean, double *var, double *se_mean,
                    double *se_var) {
  int nm = c->p->nmat;
  *mean = gsl_stats_mean(d, 1, (size_t)c->n);
  *var = gsl_stats_variance_m(d, 1, (size_t)c->n, *mean);
  for (int m = 0; m < nm; m++)
    c->stat[m] = gsl_stats_mean(d + m * c->per_mat, 1, (size_t)c->per_mat);
  *se_mean = nm > 1 ? gsl_stats_sd(c->stat, 1, (size_t)nm) / sqrt((double)nm) : NAN;
  for (int m = 0; m < nm; m++)
    c->stat[m] = gsl_stats_variance(d + m * c->per_mat, 1, (size_t)c->per_mat);
  *se_var = nm > 1 ? gsl_stats_sd(c->stat, 1, (size_t)nm) / sqrt((double)nm) : NAN;
}

int th_push_row(th_result *res, const th_row *r) {
  if (res->n == res->cap) {
    size_t cap = res->cap ? 2 * res->cap : 64;
    th_row *nr = realloc(res->rows, cap * sizeof *nr);
    if (!nr) return -1;
    res->rows = nr;
    res->cap = cap;
  }
  res->rows[res->n++] = *r;
  return 0;
}

/* Fills the comparison of one D array with the model: a per rounding, n roundings. */
void th_compare(const th_ctx *c, th_row *r, const double *d, double a, int64_t n, double b,
                    double s2) {
  r->a_eff = a;
  r->events = n;
  r->b = b;
  r->s2 = s2;
  double an = pow(a, (double)n), a2n = an * an;
  if (a == 0.0) {
    r->pred_mean = r->lim_mean = b;
    r->pred_var = r->lim_var = s2;
  } else {
    r->pred_mean = b * (1.0 - an) / (1.0 - a);
    r->pred_var = s2 * (1.0 - a2n) / (1.0 - a * a);
    r->lim_mean = b / (1.0 - a);
    r->lim_var = s2 / (1.0 - a * a);
  }
  /* stationary: the finite sums are within horizons e-folds of their limits */
  r->stationary = a == 0.0 || (double)n * (1.0 - a) >= c->p->horizons;
  th_d_stats(c, d, &r->meas_mean, &r->meas_var, &r->se_mean, &r->se_var);
  /* The mean is judged in units of the larger of |E D| and the spread of D: where b is ~0 (any
   * rounding of a sign-symmetric state) a relative error of the mean itself would be 0/0. */
  double unit = fmax(fabs(r->pred_mean), sqrt(r->pred_var));
  r->rel_mean = unit > 0.0 ? fabs(r->meas_mean - r->pred_mean) / unit : 0.0;
  r->rel_var = r->pred_var > 0.0 ? fabs(r->meas_var - r->pred_var) / r->pred_var
                                 : (r->meas_var > 0.0 ? INFINITY : 0.0);
  r->agrees = r->rel_mean <= c->p->tol && r->rel_var <= c->p->tol;
  /* NaN standard errors (one matrix) cannot vouch for anything */
  r->resolved = r->se_mean / (unit > 0.0 ? unit : 1.0) <= c->p->tol / 3.0 &&
                r->se_var / (r->pred_var > 0.0 ? r->pred_var : 1.0) <= c->p->tol / 3.0;
}

double th_lag1(const th_ctx *c, const double *lag1, int64_t pairs, double b, double s2,
               double *corr, double *se) {
  int nm = c->p->nmat;
  *corr = 0.0;
  *se = 0.0;
  if (pairs < 1 || !(s2 > 0.0)) return 0.0;
  for (int m = 0; m < nm; m++) {
    c->stat[m] = (lag1[m] / ((double)pairs * (double)c->per_mat) - b * b) / s2;
    *corr += c->stat[m] / nm;
  }
  if (nm > 1) *se = gsl_stats_sd(c->stat, 1, (size_t)nm) / sqrt((double)nm);
  return *corr > 4.0 * *se ? *corr : 0.0;
}
