/* The open-loop regimes of `replayssm theory` (theory.h): one error stream per (format,
 * rounding, regime) from quant/, accumulated into D for every alpha at once. */
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "src/theory/theory_internal.h"
#include "src/theory/theory_state.h"

int th_run(const th_params *p, const qformat *fmt, th_regime regime, th_result *res, char *err,
           size_t errlen) {
  if (regime == TH_CLOSED) return th_run_closed(p, fmt, res, err, errlen);
  const int A = p->nalpha, L = p->L;
  const int64_t T = th_steps(p);
  th_ctx c = {p, (int64_t)p->nmat * p->dv * p->dk, (int64_t)p->dv * p->dk, NULL};
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
  th_pooled pe_all = {0}, pe_flush = {0};
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
    th_pooled_add(&pe_all, mu, var);
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
      th_pooled_add(&pe_flush, mu, var);
      for (int i = 0; i < A; i++) {
        double a = aL[i], *d = d_rep + (size_t)i * n;
        for (size_t k = 0; k < n; k++) d[k] = a * d[k] + e[k];
      }
    }
  }
  if (rc == 0) {
    double b_all, s2_all, b_fl, s2_fl;
    th_pooled_get(&pe_all, &b_all, &s2_all);
    th_pooled_get(&pe_flush, &b_fl, &s2_fl);
    double corr, corr_se;
    double corr_sig = th_lag1(&c, lag1, T - 1, b_all, s2_all, &corr, &corr_se);
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
          th_compare(&c, &r, d_conv + (size_t)i * n, p->alpha[i], T, b_all, s2_all);
        } else if (mode == TH_REPLAY) {
          r.alpha = p->alpha[i];
          th_compare(&c, &r, d_rep + (size_t)i * n, aL[i], T / L, b_fl, s2_fl);
        } else {
          r.alpha = NAN;
          th_compare(&c, &r, e, 0.0, 1, b_fl, s2_fl);
        }
        r.corr = corr;
        r.corr_se = corr_se;
        r.kappa = r.kappa_se = NAN;
        r.assumption =
            th_judge(fmt, regime, (th_mode)mode, corr_sig, 0.0, r.a_eff, p->tol, &r.why);
        if (th_push_row(res, &r) != 0) rc = -1;
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
