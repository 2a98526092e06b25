/* `replayssm theory` (src/theory): the Appendix C.6 model against the real quantisers, on a
 * reduced grid (64 matrices of 8 x 128, at most 128 steps, alpha 0.9, 0.968, 0.99; the closed
 * regime at 0.9, 0.99 and 0.999).
 *
 * Where the assumptions hold (a fresh state every step; SR of a fixed state in a format whose
 * block maxima do not clamp; split precision everywhere) the measured mean and variance of D must
 * agree with b(1-a^n)/(1-a) and s2(1-a^2n)/(1-a^2) within 5%, and the trials must be numerous
 * enough to resolve 5% (standard errors below 5%/3). Where they do not (RTN of a fixed state, the
 * bias case), the mean still follows b/(1-a) but the variance must be far above the prediction:
 * the check has to see the difference, not just pass. */
#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/wait.h>

#include "src/theory/theory.h"
#include "tests/cli/cli_test_util.h"
#include "tests/cli/h5_test_util.h"

static th_params small_grid(void) {
  th_params p;
  memset(&p, 0, sizeof p);
  p.seed = 7;
  p.nmat = 64;
  p.dv = 8;
  p.dk = 128;
  p.max_steps = 128;
  p.horizons = 8.0;
  p.L = 16;
  p.rho = 0.999;
  p.tol = 0.05;
  p.nalpha = 3;
  for (int i = 0; i < p.nalpha; i++) p.alpha[i] = 1.0 - pow(10.0, -1.0 - (double)i * 0.5);
  return p;
}

static th_result run(const th_params *p, const char *fmt_text, th_regime regime) {
  qformat f;
  char err[256];
  cr_assert_eq(qformat_parse(fmt_text, &f, err, sizeof err), 0, "%s", err);
  th_result res = {0};
  cr_assert_eq(th_run(p, &f, regime, &res, err, sizeof err), 0, "%s", err);
  cr_assert_eq(res.n, (size_t)(2 * p->nalpha + 1));
  return res;
}

static void expect_agreement(const th_result *res, const char *what) {
  for (size_t i = 0; i < res->n; i++) {
    const th_row *r = &res->rows[i];
    cr_expect_eq(r->assumption, TH_HOLDS, "%s %s alpha %g: assumptions judged %s (%s)", what,
                 th_mode_name(r->mode), r->alpha, th_assumption_name(r->assumption), r->why);
    cr_expect(r->resolved, "%s %s alpha %g: standard errors %.3g/%.3g too large for 5%%", what,
              th_mode_name(r->mode), r->alpha, r->se_var / r->pred_var, r->se_mean);
    cr_expect(r->rel_var <= 0.05, "%s %s alpha %g: Var D %.5g, predicted %.5g (%.2f%% off)", what,
              th_mode_name(r->mode), r->alpha, r->meas_var, r->pred_var, 100.0 * r->rel_var);
    cr_expect(r->rel_mean <= 0.05, "%s %s alpha %g: E D %.5g, predicted %.5g (%.2f%% off)", what,
              th_mode_name(r->mode), r->alpha, r->meas_mean, r->pred_mean, 100.0 * r->rel_mean);
  }
  cr_expect_eq(th_failures(res), 0);
}

Test(theory, iid_errors_follow_the_model) {
  th_params p = small_grid();
  const char *fmts[] = {"fp8", "fp8/sr", "bf16", "nvfp4/sr"};
  for (size_t k = 0; k < sizeof fmts / sizeof *fmts; k++) {
    th_result res = run(&p, fmts[k], TH_IID);
    char what[64];
    snprintf(what, sizeof what, "%s iid", fmts[k]);
    expect_agreement(&res, what);
    th_result_free(&res);
  }
}

Test(theory, sr_of_a_fixed_state_is_independent) {
  th_params p = small_grid();
  th_result res = run(&p, "fp8/sr", TH_FIXED);
  expect_agreement(&res, "fp8/sr fixed");
  /* each element's own variance depends on its place between grid points */
  cr_expect_gt(res.rows[0].elem_s2_cv, 0.3, "per-element variance spread %.3g",
               res.rows[0].elem_s2_cv);
  th_result_free(&res);
}

Test(theory, rtn_of_a_fixed_state_is_the_bias_case) {
  th_params p = small_grid();
  th_result res = run(&p, "fp8", TH_FIXED);
  for (size_t i = 0; i < res.n; i++) {
    const th_row *r = &res.rows[i];
    if (r->mode == TH_SPLIT) { /* one rounding: nothing accumulates, the model holds */
      cr_expect_eq(r->assumption, TH_HOLDS);
      cr_expect(r->agrees, "split: Var %.4g vs %.4g", r->meas_var, r->pred_var);
      continue;
    }
    cr_expect_eq(r->assumption, TH_VIOLATED, "%s alpha %g", th_mode_name(r->mode), r->alpha);
    /* the same error every step: E D = b (1 - a^n)/(1 - a) exactly */
    cr_expect(r->rel_mean <= 1e-6, "%s alpha %g: mean off by %.3g", th_mode_name(r->mode),
              r->alpha, r->rel_mean);
    /* and Var D = var_i(e_i) ((1 - a^n)/(1 - a))^2: (1 + a)/(1 - a) times the prediction when
     * stationary; at the largest alpha the check must see a gross disagreement */
    cr_expect(fabs(r->corr - 1.0) < 1e-6, "RTN of a fixed state: lag-1 autocorrelation %.9g",
              r->corr);
  }
  const th_row *conv_last = &res.rows[p.nalpha - 1];
  cr_expect_gt(conv_last->meas_var / conv_last->pred_var, 10.0, "Var ratio %.3g at alpha %g",
               conv_last->meas_var / conv_last->pred_var, conv_last->alpha);
  const th_row *conv_first = &res.rows[0]; /* alpha 0.9, stationary: (1 + a)/(1 - a) = 19 */
  cr_expect(fabs(conv_first->meas_var / conv_first->pred_var - 19.0) < 0.2, "ratio %.4g",
            conv_first->meas_var / conv_first->pred_var);
  cr_expect_eq(th_failures(&res), 0, "violated rows are not failures of the check");
  th_result_free(&res);
}

Test(theory, replay_rounds_once_per_window) {
  th_params p = small_grid();
  th_result res = run(&p, "fp16/sr", TH_IID);
  for (int i = 0; i < p.nalpha; i++) {
    const th_row *c = &res.rows[i], *r = &res.rows[p.nalpha + i];
    cr_expect_eq(r->mode, TH_REPLAY);
    cr_expect_eq(r->events * p.L, c->events);
    cr_expect(fabs(r->a_eff - pow(c->alpha, p.L)) < 1e-12);
  }
  th_result_free(&res);
}

/* The real recurrence: SR's errors feed back but stay uncorrelated with the accumulated D (fp8
 * has no clamped block maxima), so the model holds; RTN's stall (alpha*S rounding back to S) makes
 * e correlated with D, which kappa measures and the variance shows. */
Test(theory, closed_loop_sr_holds_rtn_stalls) {
  th_params p = small_grid();
  p.nalpha = 2;
  p.alpha[0] = 0.9;
  p.alpha[1] = 0.99;
  th_result sr = {0}, rtn = {0};
  qformat f;
  char err[256];
  cr_assert_eq(qformat_parse("fp8/sr", &f, err, sizeof err), 0);
  cr_assert_eq(th_run(&p, &f, TH_CLOSED, &sr, err, sizeof err), 0, "%s", err);
  cr_assert_eq(sr.n, (size_t)(3 * p.nalpha));
  for (size_t i = 0; i < sr.n; i++) cr_expect_eq(sr.rows[i].mode, (th_mode)(i / p.nalpha));
  expect_agreement(&sr, "fp8/sr closed");
  p.nalpha = 1;
  p.alpha[0] = 0.999;
  cr_assert_eq(qformat_parse("fp8", &f, err, sizeof err), 0);
  cr_assert_eq(th_run(&p, &f, TH_CLOSED, &rtn, err, sizeof err), 0, "%s", err);
  const th_row *c = &rtn.rows[0];
  cr_expect_eq(c->mode, TH_CONVENTIONAL);
  cr_expect_eq(c->assumption, TH_VIOLATED, "fp8 RTN closed alpha 0.999: kappa %.3g +- %.2g",
               c->kappa, c->kappa_se);
  cr_expect_gt(c->kappa, 0.5, "kappa %.3g", c->kappa);
  cr_expect_gt(c->meas_var, 1.5 * c->pred_var, "Var %.4g vs %.4g", c->meas_var, c->pred_var);
  cr_expect_eq(rtn.rows[2].mode, TH_SPLIT);
  cr_expect(rtn.rows[2].agrees, "split of the exact state: one rounding");
  th_result_free(&sr);
  th_result_free(&rtn);
}

/* The command itself: a tiny grid to HDF5, the summary on stdout, and a one-line usage error. */
Test(theory, command_line) {
  const char *dir = tdir_make();
  cr_assert(dir);
  char out[TPATH_MAX], log[TPATH_MAX], errp[TPATH_MAX];
  tpath(out, dir, "t.h5");
  tpath(log, dir, "stdout.txt");
  tpath(errp, dir, "stderr.txt");
  char *argv[] = {RSSM_BIN, "theory", "--formats", "fp8/sr", "--regimes", "iid", "--alphas",
                  "2", "--alpha-min", "0.9", "--alpha-max", "0.99", "--steps", "64", "--matrices",
                  "4", "--seed", "9", "--out", out, NULL};
  int st = run_prog(argv, log, errp);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d", WEXITSTATUS(st));
  cr_expect(file_exists(out));
  /* the file holds what th_run computes for the same parameters, row for row */
  th_params p = small_grid();
  p.seed = 9, p.nmat = 4, p.max_steps = 64, p.nalpha = 2, p.alpha[0] = 0.9, p.alpha[1] = 0.99;
  th_result res = run(&p, "fp8/sr", TH_IID);
  hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(f, 0);
  cr_assert_eq(h5t_attr_i64(f, "seed"), 9);
  cr_assert_eq(h5t_attr_i64(f, "steps"), res.steps);
  const int64_t R = (int64_t)res.n;
  double *col = malloc((size_t)R * sizeof(double));
  int64_t *ev = malloc((size_t)R * sizeof(int64_t));
  cr_assert(col && ev);
  h5t_read(f, "/alpha", H5T_NATIVE_DOUBLE, col, 2);
  cr_assert(col[0] == 0.9 && fabs(col[1] - 0.99) < 1e-15, "alpha %.17g %.17g", col[0], col[1]);
  h5t_read(f, "/rows/events", H5T_NATIVE_INT64, ev, R);
  for (int64_t i = 0; i < R; i++) cr_expect_eq(ev[i], res.rows[i].events, "row %lld events", (long long)i);
  static const struct { const char *name; size_t off; } cols[] = {
      {"/rows/meas_mean", offsetof(th_row, meas_mean)}, {"/rows/meas_var", offsetof(th_row, meas_var)},
      {"/rows/pred_mean", offsetof(th_row, pred_mean)}, {"/rows/pred_var", offsetof(th_row, pred_var)},
      {"/rows/a_eff", offsetof(th_row, a_eff)},         {"/rows/rel_var", offsetof(th_row, rel_var)}};
  for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
    h5t_read(f, cols[c].name, H5T_NATIVE_DOUBLE, col, R);
    for (int64_t i = 0; i < R; i++) {
      double want = *(const double *)((const char *)&res.rows[i] + cols[c].off);
      cr_expect(memcmp(&col[i], &want, sizeof want) == 0, "%s row %lld: %.17g in the file, %.17g "
                "from th_run", cols[c].name, (long long)i, col[i], want);
    }
  }
  free(col);
  free(ev);
  H5Fclose(f);
  th_result_free(&res);
  char *text = slurp(log, NULL);
  cr_assert(text);
  cr_expect(strstr(text, "theory check:") != NULL, "%s", text);
  free(text);
  char *bad[] = {RSSM_BIN, "theory", "--formats", "fp32", NULL};
  st = run_prog(bad, NULL, errp);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2);
  char *e = slurp(errp, NULL);
  cr_assert(e);
  cr_expect(is_one_line(e), "%s", e);
  free(e);
  tdir_remove(dir);
}
