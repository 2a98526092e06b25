/* Text report of `replayssm theory` (theory_report.h). */
#include "src/theory/theory_report.h"

#include <math.h>
#include <string.h>

static void row_line(FILE *out, const th_row *r) {
  char f[48];
  qformat_to_string(&r->fmt, f, sizeof f);
  fprintf(out, "%-14s %-6s %-12s %9.6g %8lld %-4s %11.4e %11.4e %11.4e %11.4e %7.2f%% %7.2f%% "
               "%6.2f%% %8.1e %8.1e %-9s %s\n",
          f, th_regime_name(r->regime), th_mode_name(r->mode), r->alpha, (long long)r->events,
          r->stationary ? "yes" : "no", r->pred_mean, r->meas_mean, r->pred_var, r->meas_var,
          100.0 * r->rel_mean, 100.0 * r->rel_var, 100.0 * r->se_var / r->pred_var, r->corr,
          r->kappa,
          th_assumption_name(r->assumption),
          r->agrees ? "agrees" : r->resolved ? "DIFFERS" : "differs (unresolved)");
}

/* Rows i..j-1 share format, rounding, regime and mode. */
static size_t group_end(const th_result *res, size_t i) {
  const th_row *a = &res->rows[i];
  size_t j = i + 1;
  while (j < res->n && res->rows[j].regime == a->regime && res->rows[j].mode == a->mode &&
         memcmp(&res->rows[j].fmt, &a->fmt, sizeof a->fmt) == 0)
    j++;
  return j;
}

static void group_line(FILE *out, const th_result *res, size_t i, size_t j) {
  const th_row *a = &res->rows[i];
  char f[48];
  qformat_to_string(&a->fmt, f, sizeof f);
  int agree = 0, stat = 0, holds = 0, unres = 0, holds_ok = 0;
  double worst_m = 0.0, worst_v = 0.0;
  for (size_t k = i; k < j; k++) {
    agree += res->rows[k].agrees;
    stat += res->rows[k].stationary;
    holds += res->rows[k].assumption == TH_HOLDS;
    unres += res->rows[k].assumption == TH_HOLDS && !res->rows[k].resolved &&
             !res->rows[k].agrees;
    holds_ok += res->rows[k].assumption == TH_HOLDS && res->rows[k].agrees;
    worst_m = fmax(worst_m, res->rows[k].rel_mean);
    worst_v = fmax(worst_v, res->rows[k].rel_var);
  }
  int n = (int)(j - i);
  const char *verdict = holds == n   ? (agree == n           ? "ok"
                                        : unres + agree == n ? "unresolved"
                                                             : "FAIL")
                        : holds == 0 ? (agree == n ? "agrees anyway" : "differs, as expected")
                        : holds_ok + unres == holds ? "ok where they hold"
                                                    : "FAIL where they hold";
  const char *assume = holds == n ? "holds" : holds == 0 ? th_assumption_name(a->assumption)
                                                        : "mixed";
  fprintf(out, "%-14s %-6s %-12s %3d/%-3d %6d/%-3d %9.2f%% %9.2f%%  %-9s %s\n", f,
          th_regime_name(a->regime), th_mode_name(a->mode), agree, n, stat, n, 100.0 * worst_m,
          100.0 * worst_v, assume, verdict);
}

void th_report(FILE *out, const th_params *p, const th_result *res, int verbose) {
  fprintf(out,
          "theory: D_t = a D_(t-1) + e_t with e = Q(S) - S from quant/; %d x %d x %d elements per "
          "step, %lld steps, L = %d, rho = %g, agreement within %.0f%%\n",
          p->nmat, p->dv, p->dk, (long long)res->steps, p->L, p->rho, 100.0 * p->tol);
  fprintf(out, "predictions: the exact sums b(1-a^n)/(1-a), s2(1-a^2n)/(1-a^2) after n roundings "
               "('stationary': n(1-a) >= %g, where they equal the limits b/(1-a), s2/(1-a^2));\n"
               "mean error in units of max(|E D|, sd D)\n", p->horizons);
  if (verbose) {
    fprintf(out,
            "%-14s %-6s %-12s %9s %8s %-4s %11s %11s %11s %11s %8s %8s %7s %8s %8s %-9s %s\n",
            "format", "regime", "mode", "alpha", "n", "stat", "pred_mean", "meas_mean", "pred_var",
            "meas_var", "err_mean", "err_var", "se_var", "lag1", "kappa", "assume", "result");
    for (size_t i = 0; i < res->n; i++) row_line(out, &res->rows[i]);
    fprintf(out, "\n");
  }
  fprintf(out, "%-14s %-6s %-12s %7s %10s %10s %10s  %-9s %s\n", "format", "regime", "mode",
          "agree", "stationary", "worst_mean", "worst_var", "assume", "verdict");
  for (size_t i = 0; i < res->n;) {
    size_t j = group_end(res, i);
    group_line(out, res, i, j);
    i = j;
  }
  /* every distinct reason once, for the rows where the assumptions do not (surely) hold */
  fprintf(out, "\nwhere the assumptions do not hold, and why:\n");
  for (size_t i = 0; i < res->n; i++) {
    const th_row *r = &res->rows[i];
    if (r->assumption == TH_HOLDS) continue;
    int seen = 0;
    for (size_t k = 0; k < i && !seen; k++)
      seen = res->rows[k].assumption != TH_HOLDS && res->rows[k].why == r->why;
    if (!seen) fprintf(out, "  - %s\n", r->why);
  }
  size_t fails = th_failures(res), unres = th_unresolved(res), holds = 0;
  for (size_t i = 0; i < res->n; i++) holds += res->rows[i].assumption == TH_HOLDS;
  if (unres)
    fprintf(out, "%zu comparisons where the assumptions hold have standard errors above %.2g%% "
                 "(heavy-tailed errors, e.g. clamped block maxima): not judged; more --matrices "
                 "resolve them\n",
            unres, 100.0 * p->tol / 3.0);
  fprintf(out, "theory check: %s (%zu of %zu resolved comparisons where the assumptions hold agree "
               "within %.0f%%)\n",
          fails ? "FAILED" : "passed", holds - unres - fails, holds - unres, 100.0 * p->tol);
}
