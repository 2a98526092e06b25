/* The error-propagation check of `replayssm theory` (theory.h): one error stream per (format,
 * rounding, regime) from quant/, accumulated into D for every alpha, and the comparison of the
 * measured mean and variance of D with the model's predictions. */
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "quant/quant.h"
#include "src/theory/theory.h"
#include "src/theory/theory_state.h"

const char *th_regime_name(th_regime r) {
  static const char *const n[] = {"iid", "fixed", "ar1"};
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

/* Pooled mean and variance of e over many steps, from each step's mean and variance. */
typedef struct {
  double sum_mean, sum_var, sum_mean2;
  int64_t n;
} pooled;

static void pooled_add(pooled *p, double mean, double var) {
  p->sum_mean += mean;
  p->sum_mean2 += mean * mean;
  p->sum_var += var;
  p->n++;
}
static void pooled_get(const pooled *p, double *b, double *s2) {
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
static th_assumption judge(const qformat *f, th_regime reg, th_mode mode, double corr, double a,
                           double tol, const char **why) {
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
  int correlated = 2.0 * corr * a / (1.0 - a) > 0.5 * tol;
  if (sr) {
    if (correlated) {
      *why = clamps(f) ? "SR errors correlated across steps: block maxima beyond the largest code "
                         "(rounded nvfp4 scale, power-of-two mx scale) clamp deterministically, "
                         "so part of the error repeats while the state stays put"
                       : "SR errors correlated across steps (measured lag-1 autocorrelation)";
      return TH_VIOLATED;
    }
    *why = reg == TH_FIXED ? "SR of a fixed state: fresh bits each step, independent and unbiased "
                             "per element; each element's variance depends on its place between "
                             "grid points (s2 is their mean)"
                           : "SR of a slowly moving state: fresh bits, errors uncorrelated across "
                             "steps given the state; stationary state";
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

typedef struct {
  const th_params *p;
  int64_t n;       /* elements */
  int64_t per_mat; /* elements per matrix */
  double *stat;    /* scratch [nmat] */
} ctx;

/* Mean and variance of D over all elements, and their standard errors from the spread between
 * the matrices (elements of one matrix share scales, so matrices are the independent batches). */
static void d_stats(const ctx *c, const double *d, double *mean, double *var, double *se_mean,
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

static int push_row(th_result *res, const th_row *r) {
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
static void compare(const ctx *c, th_row *r, const double *d, double a, int64_t n, double b,
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
  d_stats(c, d, &r->meas_mean, &r->meas_var, &r->se_mean, &r->se_var);
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

int th_run(const th_params *p, const qformat *fmt, th_regime regime, th_result *res, char *err,
           size_t errlen) {
  const int A = p->nalpha, L = p->L;
  const int64_t T = th_steps(p);
  ctx c = {p, (int64_t)p->nmat * p->dv * p->dk, (int64_t)p->dv * p->dk, NULL};
  qlayout lay;
  th_state st;
  if (qlayout_of(fmt, p->dv, p->dk, &lay) != 0) {
    snprintf(err, errlen, "theory: bad matrix size %d x %d", p->dv, p->dk);
    return -1;
  }
  if (th_state_init(&st, regime, p->nmat, p->dv, p->dk, p->rho, p->seed) != 0) goto oom;
  const size_t n = (size_t)c.n;
  float *y = malloc(n * sizeof *y);
  double *e = malloc(n * sizeof *e);
  double *d_conv = calloc((size_t)A * n, sizeof *d_conv);
  double *d_rep = calloc((size_t)A * n, sizeof *d_rep);
  double *e_sum = calloc(n, sizeof *e_sum), *e_sq = calloc(n, sizeof *e_sq);
  uint64_t *mid = malloc((size_t)p->nmat * sizeof *mid);
  uint32_t *ev = malloc((size_t)p->nmat * sizeof *ev);
  c.stat = malloc((size_t)p->nmat * sizeof *c.stat);
  double *e_prev = malloc(n * sizeof *e_prev), *lag1 = calloc((size_t)p->nmat, sizeof *lag1);
  double aL[TH_MAX_ALPHA];
  if (!y || !e || !d_conv || !d_rep || !e_sum || !e_sq || !mid || !ev || !c.stat || !e_prev ||
      !lag1) {
    free(y), free(e), free(d_conv), free(d_rep), free(e_sum), free(e_sq), free(mid), free(ev);
    free(c.stat), free(e_prev), free(lag1);
    th_state_free(&st);
    goto oom;
  }
  for (int m = 0; m < p->nmat; m++) mid[m] = qsr_matrix_id(0, 0, (uint32_t)m);
  for (int i = 0; i < A; i++) aL[i] = pow(p->alpha[i], (double)L);
  pooled pe_all = {0}, pe_flush = {0};
  int rc = 0;
  for (int64_t t = 0; t < T && rc == 0; t++) {
    th_state_next(&st, t);
    for (int m = 0; m < p->nmat; m++) ev[m] = (uint32_t)t; /* fresh SR bits every rounding */
    qsr_params srp = {p->seed, mid, ev, QSR_STREAM_STATE};
    if (q_fake_cpu(fmt, &lay, p->nmat, st.S, y, &srp) != 0) {
      rc = -1;
      break;
    }
    /* Every element is one trial, in units of its row's scale: rows three decades apart then
     * count alike, instead of the largest few rows deciding every variance. The scale is fixed
     * over time, so D in these units is the same recursion. The difference is exact in double. */
    for (size_t i = 0; i < n; i++)
      e[i] = ((double)y[i] - (double)st.S[i]) / st.rowscale[i / (size_t)p->dk];
    double mu = gsl_stats_mean(e, 1, n);
    double var = gsl_stats_variance_m(e, 1, n, mu) * (double)(n - 1) / (double)n;
    pooled_add(&pe_all, mu, var);
    for (int i = 0; i < A; i++) {
      double a = p->alpha[i], *d = d_conv + (size_t)i * n;
      for (size_t k = 0; k < n; k++) d[k] = a * d[k] + e[k];
    }
    if (regime == TH_FIXED)
      for (size_t k = 0; k < n; k++) e_sum[k] += e[k], e_sq[k] += e[k] * e[k];
    if (t > 0)
      for (int m = 0; m < p->nmat; m++) {
        double acc = 0.0;
        for (int64_t k = m * c.per_mat; k < (m + 1) * c.per_mat; k++) acc += e[k] * e_prev[k];
        lag1[m] += acc;
      }
    memcpy(e_prev, e, n * sizeof *e);
    if (t % L == L - 1) { /* a flush: the replay checkpoint is rounded once per window */
      pooled_add(&pe_flush, mu, var);
      for (int i = 0; i < A; i++) {
        double a = aL[i], *d = d_rep + (size_t)i * n;
        for (size_t k = 0; k < n; k++) d[k] = a * d[k] + e[k];
      }
    }
  }
  if (rc == 0) {
    double b_all, s2_all, b_fl, s2_fl;
    pooled_get(&pe_all, &b_all, &s2_all);
    pooled_get(&pe_flush, &b_fl, &s2_fl);
    /* lag-1 autocorrelation of e, per matrix (the batches) and overall */
    double corr = 0.0, corr_se = 0.0;
    for (int m = 0; m < p->nmat; m++) {
      double r = s2_all > 0.0 ? (lag1[m] / ((double)(T - 1) * (double)c.per_mat) - b_all * b_all) /
                                    s2_all
                              : 0.0;
      c.stat[m] = r;
      corr += r / p->nmat;
    }
    if (p->nmat > 1) corr_se = gsl_stats_sd(c.stat, 1, (size_t)p->nmat) / sqrt((double)p->nmat);
    double corr_sig = T > 1 && corr > 4.0 * corr_se ? corr : 0.0;
    /* fixed regime: how much each element's own error variance differs from the pooled one */
    double s2cv = NAN;
    if (regime == TH_FIXED) {
      double sum_v = 0.0, sum_v2 = 0.0, Td = (double)T;
      for (size_t k = 0; k < n; k++) {
        double bi = e_sum[k] / Td, vi = fmax(e_sq[k] / Td - bi * bi, 0.0);
        sum_v += vi;
        sum_v2 += vi * vi;
      }
      double mv = sum_v / (double)n;
      s2cv = mv > 0.0 ? sqrt(fmax(sum_v2 / (double)n - mv * mv, 0.0)) / mv : 0.0;
    }
    for (int mode = 0; mode < TH_NMODE && rc == 0; mode++) {
      int na = mode == TH_SPLIT ? 1 : A;
      for (int i = 0; i < na && rc == 0; i++) {
        th_row r;
        memset(&r, 0, sizeof r);
        r.fmt = *fmt;
        r.regime = regime;
        r.mode = (th_mode)mode;
        r.elem_s2_cv = s2cv;
        if (mode == TH_CONVENTIONAL) {
          r.alpha = p->alpha[i];
          compare(&c, &r, d_conv + (size_t)i * n, p->alpha[i], T, b_all, s2_all);
        } else if (mode == TH_REPLAY) {
          r.alpha = p->alpha[i];
          compare(&c, &r, d_rep + (size_t)i * n, aL[i], T / L, b_fl, s2_fl);
        } else {
          r.alpha = NAN;
          compare(&c, &r, e, 0.0, 1, b_fl, s2_fl);
        }
        r.corr = corr;
        r.corr_se = corr_se;
        r.assumption = judge(fmt, regime, (th_mode)mode, corr_sig, r.a_eff, p->tol, &r.why);
        if (push_row(res, &r) != 0) rc = -1;
      }
    }
  }
  res->steps = T;
  free(y), free(e), free(d_conv), free(d_rep), free(e_sum), free(e_sq), free(mid), free(ev);
  free(c.stat), free(e_prev), free(lag1);
  th_state_free(&st);
  if (rc == 0) return 0;
oom:
  snprintf(err, errlen, "theory: out of memory");
  return -1;
}
