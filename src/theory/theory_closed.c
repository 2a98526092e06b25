/* The closed-loop regime of `replayssm theory` (theory.h): the real recurrence, so that the
 * rounding error feeds back through the state it rounds.
 *
 * Per alpha, with a fresh input field w_t every step (the iid field of theory_state.h, scaled so
 * that the exact state is stationary with the row scales of the open-loop regimes):
 *   exact         X_t  = alpha X_(t-1) + sqrt(1 - alpha^2) w_t            (double)
 *   conventional  Sq_t = Q(alpha Sq_(t-1) + sqrt(1 - alpha^2) w_t)       every step
 *   replay        Sr_t = alpha Sr_(t-1) + sqrt(1 - alpha^2) w_t, and Sr = Q(Sr) every L-th step
 *   split         Q(X_t) at every L-th step: one rounding of the exact (high-precision) state
 * so that D = Sq - X obeys D_t = alpha D_(t-1) + e_t with e_t = Q(y_t) - y_t exactly, and the
 * replay D = Sr - X obeys it with alpha^L per flush. Every alpha runs its own stream (the state
 * depends on alpha), from the same seed, so alphas differ only in alpha. */
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "src/theory/theory_internal.h"
#include "src/theory/theory_state.h"

typedef struct {
  double *x, *sq, *sr, *e, *prev, *d, *es, *dpre; /* [n] */
  float *y, *q;                                   /* [n] */
  double *lag1, *lag1r;                           /* [nmat] */
  double *kn, *knr;   /* [nmat] weighted sums of 2 Cov(D_pre, e): conventional, replay */
  uint64_t *mid;
  uint32_t *ev;
} bufs;

static void bufs_free(bufs *b) {
  free(b->x), free(b->sq), free(b->sr), free(b->e), free(b->prev), free(b->d), free(b->es);
  free(b->y), free(b->q), free(b->lag1), free(b->lag1r), free(b->mid), free(b->ev);
  free(b->dpre), free(b->kn), free(b->knr);
}

static int bufs_alloc(bufs *b, size_t n, int nmat) {
  memset(b, 0, sizeof *b);
  double **dd[] = {&b->x, &b->sq, &b->sr, &b->e, &b->prev, &b->d, &b->es, &b->dpre};
  for (size_t i = 0; i < sizeof dd / sizeof *dd; i++)
    if (!(*dd[i] = malloc(n * sizeof **dd[i]))) return -1;
  b->y = malloc(n * sizeof *b->y);
  b->q = malloc(n * sizeof *b->q);
  b->lag1 = malloc((size_t)nmat * sizeof *b->lag1);
  b->lag1r = malloc((size_t)nmat * sizeof *b->lag1r);
  b->mid = malloc((size_t)nmat * sizeof *b->mid);
  b->ev = malloc((size_t)nmat * sizeof *b->ev);
  b->kn = malloc((size_t)nmat * sizeof *b->kn);
  b->knr = malloc((size_t)nmat * sizeof *b->knr);
  return b->y && b->q && b->lag1 && b->lag1r && b->mid && b->ev && b->kn && b->knr ? 0 : -1;
}

/* q = Q(y) for every matrix, SR bits from (seed, matrix, event t, stream). */
static int quantise(const th_params *p, const qformat *fmt, const qlayout *lay, bufs *b,
                    int64_t t, uint32_t stream) {
  for (int m = 0; m < p->nmat; m++) b->ev[m] = (uint32_t)t;
  qsr_params srp = {p->seed, b->mid, b->ev, stream};
  return q_fake_cpu(fmt, lay, p->nmat, b->y, b->q, &srp);
}

/* Mean and population variance of e[0..n) into the pooled statistics; returns the variance. */
static double add_stats(th_pooled *pl, const double *e, size_t n) {
  double mu = gsl_stats_mean(e, 1, n);
  double var = gsl_stats_variance_m(e, 1, n, mu) * (double)(n - 1) / (double)n;
  th_pooled_add(pl, mu, var);
  return var;
}

/* Var D_n = a^2 Var D_(n-1) + Var e_n + 2 Cov(a D_(n-1), e_n), where a D_(n-1) = D_pre is the
 * error of the value about to be rounded. The covariance term, weighted as Var D weighs each
 * rounding (a^2 per later rounding), over the same weighting of Var e, is the relative change of
 * Var D that correlation with the accumulated error causes (kappa). Per matrix, for the standard
 * error. */
static void add_kappa(const th_ctx *c, double *kn, double *kd, double a2, const double *dpre,
                      const double *e, double var_e) {
  for (int m = 0; m < c->p->nmat; m++) {
    const double *x = dpre + m * c->per_mat, *y = e + m * c->per_mat;
    double cov = gsl_stats_covariance(x, 1, y, 1, (size_t)c->per_mat);
    kn[m] = a2 * kn[m] + 2.0 * cov;
  }
  *kd = a2 * *kd + var_e;
}

static double kappa_of(const th_ctx *c, const double *kn, double kd, double *se) {
  double k = 0.0;
  for (int m = 0; m < c->p->nmat; m++) k += (c->stat[m] = kd > 0.0 ? kn[m] / kd : 0.0);
  k /= c->p->nmat;
  *se = c->p->nmat > 1 ? gsl_stats_sd(c->stat, 1, (size_t)c->p->nmat) / sqrt(c->p->nmat) : NAN;
  return k;
}

/* Accumulates the per-matrix sums of e_t e_(t-1). */
static void add_lag1(const th_ctx *c, double *lag1, const double *e, const double *prev) {
  for (int m = 0; m < c->p->nmat; m++) {
    double acc = 0.0;
    for (int64_t k = m * c->per_mat; k < (m + 1) * c->per_mat; k++) acc += e[k] * prev[k];
    lag1[m] += acc;
  }
}

/* One alpha: simulates and appends the conventional, replay and split rows. */
static int one_alpha(const th_params *p, const qformat *fmt, const qlayout *lay, th_ctx *c,
                     bufs *b, double a, th_result *res) {
  const int L = p->L;
  const size_t n = (size_t)c->n;
  double want = ceil(p->horizons / (1.0 - a));
  int64_t T = want > (double)p->max_steps ? p->max_steps : (int64_t)want;
  T = (T + L - 1) / L * L;
  if (T < 2 * L) T = 2 * L; /* at least two flushes, so that the replay errors have a lag */
  th_state st;
  if (th_state_init(&st, TH_CLOSED, p->nmat, p->dv, p->dk, p->rho, p->seed) != 0) return -1;
  const double cin = sqrt(1.0 - a * a);
  th_pooled pc = {0}, pr = {0}, ps = {0};
  memset(b->lag1, 0, (size_t)p->nmat * sizeof *b->lag1);
  memset(b->lag1r, 0, (size_t)p->nmat * sizeof *b->lag1r);
  memset(b->kn, 0, (size_t)p->nmat * sizeof *b->kn);
  memset(b->knr, 0, (size_t)p->nmat * sizeof *b->knr);
  double kd = 0.0, kdr = 0.0, aL = pow(a, (double)L);
  int64_t flushes = 0;
  int rc = 0;
  for (int64_t t = 0; t < T && rc == 0; t++) {
    th_state_next(&st, t);
    for (size_t k = 0; k < n; k++) {
      double w = st.rowscale[k / (size_t)p->dk] * st.z[k], yk;
      if (t == 0) {
        b->x[k] = b->sr[k] = yk = w;
      } else {
        b->x[k] = a * b->x[k] + cin * w;
        b->sr[k] = a * b->sr[k] + cin * w;
        yk = a * b->sq[k] + cin * w;
      }
      b->e[k] = yk;
      b->y[k] = (float)yk;
      b->dpre[k] = (yk - b->x[k]) / st.rowscale[k / (size_t)p->dk]; /* a D_(t-1) */
    }
    if (quantise(p, fmt, lay, b, t, QSR_STREAM_STATE) != 0) rc = -1;
    for (size_t k = 0; rc == 0 && k < n; k++) {
      b->sq[k] = (double)b->q[k];
      /* e in units of the row's scale, like the open-loop regimes */
      b->e[k] = (b->sq[k] - b->e[k]) / st.rowscale[k / (size_t)p->dk];
    }
    if (rc) break;
    add_kappa(c, b->kn, &kd, a * a, b->dpre, b->e, add_stats(&pc, b->e, n));
    if (t > 0) add_lag1(c, b->lag1, b->e, b->prev);
    memcpy(b->prev, b->e, n * sizeof *b->e);
    if (t % L != L - 1) continue;
    /* a flush: the shared checkpoint is rounded (its own SR stream) ... */
    for (size_t k = 0; k < n; k++) {
      b->y[k] = (float)b->sr[k];
      b->dpre[k] = (b->sr[k] - b->x[k]) / st.rowscale[k / (size_t)p->dk]; /* a^L D_(k-1) */
    }
    if (quantise(p, fmt, lay, b, t, QSR_STREAM_HP) != 0) rc = -1;
    for (size_t k = 0; rc == 0 && k < n; k++) {
      double r = st.rowscale[k / (size_t)p->dk], e = ((double)b->q[k] - b->sr[k]) / r;
      if (flushes > 0) b->lag1r[k / (size_t)c->per_mat] += e * b->d[k];
      b->d[k] = e; /* the previous flush's error, for the lag */
      b->sr[k] = (double)b->q[k];
    }
    if (rc) break;
    add_kappa(c, b->knr, &kdr, aL * aL, b->dpre, b->d, add_stats(&pr, b->d, n));
    /* ... and split precision rounds the exact state once, never feeding it back */
    for (size_t k = 0; k < n; k++) b->y[k] = (float)b->x[k];
    if (quantise(p, fmt, lay, b, t, QSR_STREAM_LP) != 0) rc = -1;
    for (size_t k = 0; rc == 0 && k < n; k++)
      b->es[k] = ((double)b->q[k] - b->x[k]) / st.rowscale[k / (size_t)p->dk];
    if (rc) break;
    add_stats(&ps, b->es, n);
    flushes++;
  }
  double bc, s2c, br, s2r, bs, s2s;
  th_pooled_get(&pc, &bc, &s2c);
  th_pooled_get(&pr, &br, &s2r);
  th_pooled_get(&ps, &bs, &s2s);
  double corr, corr_se, corr_r, corr_r_se;
  th_lag1(c, b->lag1, T - 1, bc, s2c, &corr, &corr_se);
  th_lag1(c, b->lag1r, flushes - 1, br, s2r, &corr_r, &corr_r_se);
  double kse, kse_r, kap = kappa_of(c, b->kn, kd, &kse), kap_r = kappa_of(c, b->knr, kdr, &kse_r);
  /* significant: beyond 4 standard errors between matrices */
  double sig = fabs(kap) > 4.0 * kse ? kap : 0.0, sig_r = fabs(kap_r) > 4.0 * kse_r ? kap_r : 0.0;
  for (int mode = 0; mode < TH_NMODE && rc == 0; mode++) {
    th_row r;
    memset(&r, 0, sizeof r);
    r.fmt = *fmt;
    r.regime = TH_CLOSED;
    r.mode = (th_mode)mode;
    r.alpha = a;
    r.elem_s2_cv = NAN;
    for (size_t k = 0; k < n; k++) {
      double dk = mode == TH_CONVENTIONAL ? b->sq[k] - b->x[k] : b->sr[k] - b->x[k];
      b->d[k] = dk / st.rowscale[k / (size_t)p->dk];
    }
    if (mode == TH_CONVENTIONAL) {
      th_compare(c, &r, b->d, a, T, bc, s2c);
      r.corr = corr, r.corr_se = corr_se, r.kappa = kap, r.kappa_se = kse;
    } else if (mode == TH_REPLAY) {
      th_compare(c, &r, b->d, aL, flushes, br, s2r);
      r.corr = corr_r, r.corr_se = corr_r_se, r.kappa = kap_r, r.kappa_se = kse_r;
    } else {
      th_compare(c, &r, b->es, 0.0, 1, bs, s2s);
      r.corr = r.corr_se = r.kappa = r.kappa_se = NAN;
    }
    r.assumption = th_judge(fmt, TH_CLOSED, (th_mode)mode, 0.0, mode == TH_REPLAY ? sig_r : sig,
                            r.a_eff, p->tol, &r.why);
    if (th_push_row(res, &r) != 0) rc = -1;
  }
  if (T > res->steps) res->steps = T;
  th_state_free(&st);
  return rc;
}

int th_run_closed(const th_params *p, const qformat *fmt, th_result *res, char *err,
                  size_t errlen) {
  qlayout lay;
  if (qlayout_of(fmt, p->dv, p->dk, &lay) != 0) {
    snprintf(err, errlen, "theory: bad matrix size %d x %d", p->dv, p->dk);
    return -1;
  }
  th_ctx c = {p, (int64_t)p->nmat * p->dv * p->dk, (int64_t)p->dv * p->dk, NULL};
  bufs b;
  int rc = bufs_alloc(&b, (size_t)c.n, p->nmat);
  c.stat = rc == 0 ? malloc((size_t)p->nmat * sizeof *c.stat) : NULL;
  if (rc == 0 && c.stat) {
    for (int m = 0; m < p->nmat; m++) b.mid[m] = qsr_matrix_id(0, 0, (uint32_t)m);
    size_t first = res->n;
    for (int i = 0; i < p->nalpha && rc == 0; i++)
      rc = one_alpha(p, fmt, &lay, &c, &b, p->alpha[i], res);
    /* rows came per alpha (conventional, replay, split); order them by mode like the other
     * regimes (a stable insertion sort: alphas stay in order) */
    for (size_t i = first + 1; rc == 0 && i < res->n; i++) {
      th_row r = res->rows[i];
      size_t j = i;
      for (; j > first && res->rows[j - 1].mode > r.mode; j--) res->rows[j] = res->rows[j - 1];
      res->rows[j] = r;
    }
  } else {
    rc = -1;
  }
  free(c.stat);
  bufs_free(&b);
  if (rc != 0) snprintf(err, errlen, "theory: out of memory");
  return rc;
}
