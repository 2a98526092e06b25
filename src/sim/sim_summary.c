/* Summary statistics of ssm-sim results (sim_summary.h). */
#include "src/sim/sim_summary.h"

#include <gsl/gsl_fit.h>
#include <math.h>

/* Error of step t over the selected heads (their mean), or the all-head error. */
static double step_err(const ssm_sim_result *r, const int *heads, int nheads, long long t) {
  if (!heads) return r->out_err[t];
  double s = 0.0;
  for (int i = 0; i < nheads; i++) s += r->out_err_head[t * r->H + heads[i]];
  return s / nheads;
}

static double mean_err(const ssm_sim_result *r, const int *heads, int nheads, long long a,
                       long long b) {
  double s = 0.0;
  long long n = 0;
  for (long long t = a; t < b; t++, n++) s += step_err(r, heads, nheads, t);
  return n ? s / (double)n : NAN;
}

void sim_summarise(const ssm_sim_result *r, const int *heads, int nheads, sim_summary *s) {
  long long N = r->steps;
  s->err_early = mean_err(r, heads, nheads, N / 10, N / 5 > N / 10 ? N / 5 : N / 10 + 1);
  s->err_late = mean_err(r, heads, nheads, N - N / 10 > 0 ? N - N / 10 : 0, N);
  s->growth = s->err_late / s->err_early;
  /* power-of-two buckets [2^k, 2^(k+1)) from 64 on: log-mean error against log-centre */
  double x[64], y[64];
  int nb = 0;
  for (long long lo = 64; lo < N && nb < 64; lo *= 2) {
    long long hi = 2 * lo < N ? 2 * lo : N;
    double m = mean_err(r, heads, nheads, lo, hi);
    if (!(m > 0.0) || !isfinite(m)) continue;
    x[nb] = log(0.5 * (double)(lo + hi));
    y[nb] = log(m);
    nb++;
  }
  s->slope = NAN;
  s->slope_se = NAN;
  if (nb >= 3) {
    double c0, c1, cov00, cov01, cov11, sumsq;
    gsl_fit_linear(x, 1, y, 1, (size_t)nb, &c0, &c1, &cov00, &cov01, &cov11, &sumsq);
    s->slope = c1;
    s->slope_se = sqrt(cov11);
  }
  s->ckpt_last = r->nstore ? r->ckpt_err[r->nstore - 1] : NAN;
  s->nstore = r->nstore;
  s->first_nonfinite = r->first_nonfinite;
}

void sim_print_table_header(FILE *out) {
  fprintf(out, "%-44s %11s %11s %8s %15s %11s %8s %9s\n", "configuration", "err(early)",
          "err(late)", "growth", "slope(log-log)", "ckpt(last)", "stores", "nonfinite");
}

void sim_print_table_row(FILE *out, const char *name, const sim_summary *s) {
  char slope[32];
  snprintf(slope, sizeof slope, "%.3f+-%.3f", s->slope, s->slope_se);
  fprintf(out, "%-44s %11.3e %11.3e %8.2f %15s %11.3e %8lld %9lld\n", name, s->err_early,
          s->err_late, s->growth, slope, s->ckpt_last, s->nstore, s->first_nonfinite);
}
