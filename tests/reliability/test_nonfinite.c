/* Non-finite states end to end (issue 10, docs/reliability.md): the toy models toy:gdn-big and
 * toy:mamba2-big scale their value projections by 1e5, so states grow past fp16's largest value
 * (65504) while the fp32 reference stays finite. Through `replayssm run`, a configuration that
 * stores its state (or its replay checkpoints) in fp16 is recorded with its first non-finite step
 * (kl = nll = inf, dp = NaN, top1 = 0 from there on), the configurations that stay finite run on
 * bit-identical to a run without it, `replayssm summary` names the step, and a run killed after
 * the configuration died resumes to the same file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "src/driver/run_data.h"
#include "src/driver/run_h5.h"
#include "src/io/status.h"
#include "tests/cli/cli_test_util.h"
#include "tests/driver/driver_test_util.h"

static const char *dir;
static char toks[TPATH_MAX], errf[TPATH_MAX];

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir);
  make_text_stream(tpath(toks, dir, "t.tok.zst"), 3000);
  tpath(errf, dir, "err.txt");
}
static void teardown(void) { tdir_remove(dir); }
TestSuite(nonfinite, .init = setup, .fini = teardown, .timeout = 600);

static void run_ok(const char *const *args) {
  int rc = rssm(errf, args);
  char *e = slurp(errf, NULL);
  cr_assert_eq(rc, 0, "replayssm %s failed (%d): %s", args[0], rc, e ? e : "");
  free(e);
}

/* Runs `model` with the given configurations (NULL-terminated) into out. */
static void run_configs(const char *model, const char *const *cfgs, const char *out,
                        const char *ini) {
  char text[2048];
  int n = snprintf(text, sizeof text, "model = %s\ntokens = t.tok.zst\nsequences = 2\nsteps = 200\n"
                   "block = 32\ncheckpoint_every = 64\nseed = 5\n", model);
  for (int i = 0; cfgs[i]; i++) n += snprintf(text + n, sizeof text - (size_t)n, "config = %s\n", cfgs[i]);
  put_text(ini, text);
  run_ok((const char *[]){"run", ini, "--out", out, "--quiet", "--force", NULL});
}

static void check_model(const char *model) {
  static const char *all[] = {"conventional state=fp16", "conventional state=bf16",
                              "replay L=8 ckpt=fp16", "replay L=8 ckpt=fp32", NULL};
  static const char *healthy[] = {"conventional state=bf16", "replay L=8 ckpt=fp32", NULL};
  const int overflows[] = {1, 0, 1, 0};
  char out[TPATH_MAX], alone[TPATH_MAX], ini[TPATH_MAX], ini2[TPATH_MAX], err[1024];
  run_configs(model, all, tpath(out, dir, "all.h5"), tpath(ini, dir, "all.ini"));
  run_configs(model, healthy, tpath(alone, dir, "alone.h5"), tpath(ini2, dir, "alone.ini"));
  run_data d, h;
  cr_assert_eq(run_h5_read(out, &d, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(run_h5_read(alone, &h, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(d.nconfig, 4);
  size_t kn = (size_t)(d.K * d.N);
  for (int c = 0, hc = 0; c < 4; c++) {
    const run_cfg_data *x = &d.cfg[c];
    for (int64_t k = 0; k < d.K; k++) {
      int64_t f = x->first_nonfinite[k];
      if (!overflows[c]) {
        cr_assert_eq(f, -1, "%s %s: went non-finite at %lld", model, all[c], (long long)f);
        continue;
      }
      cr_assert(f >= 0 && f < d.N, "%s %s sequence %lld: first_nonfinite %lld", model, all[c],
                (long long)k, (long long)f);
      for (int64_t t = 0; t < d.N; t++) {
        size_t i = (size_t)(k * d.N + t);
        if (t < f) {
          cr_assert(isfinite(x->kl[i]) && isfinite(x->nll[i]), "%s %s: not finite before %lld",
                    model, all[c], (long long)f);
        } else {
          cr_assert(isinf(x->kl[i]) && x->kl[i] > 0 && isinf(x->nll[i]) && isnan(x->dp[i]) &&
                    x->top1[i] == 0, "%s %s step %lld: not marked non-finite", model, all[c],
                    (long long)t);
        }
      }
    }
    if (!overflows[c]) {
      /* the configurations that stay finite are exactly what they are without the others */
      cr_assert_str_eq(h.cfg[hc].spec, x->spec);
      cr_assert_eq(memcmp(h.cfg[hc].kl, x->kl, kn * sizeof(float)), 0, "%s %s differs", model,
                   all[c]);
      cr_assert_eq(memcmp(h.cfg[hc].nll, x->nll, kn * sizeof(float)), 0);
      hc++;
    }
  }
  cr_assert_eq(memcmp(d.ref_nll, h.ref_nll, kn * sizeof(float)), 0);
  /* the summary names each non-finite configuration with its first step */
  char sumf[TPATH_MAX];
  const char *argv[] = {RSSM_BIN, "summary", out, NULL};
  cr_assert_eq(run_prog((char *const *)argv, tpath(sumf, dir, "summary.txt"), errf), 0);
  char *sum = slurp(sumf, NULL);
  cr_assert(sum);
  for (int c = 0; c < 4; c++) {
    if (!overflows[c]) continue;
    int64_t first = d.cfg[c].first_nonfinite[0];
    int64_t seq = 0;
    if (d.cfg[c].first_nonfinite[1] < first) first = d.cfg[c].first_nonfinite[1], seq = 1;
    char want[256];
    snprintf(want, sizeof want, "first at step %lld of sequence %lld", (long long)first,
             (long long)seq);
    const char *line = NULL;
    for (const char *p = sum; (p = strstr(p, all[c])) != NULL; p++)
      if (p == sum || p[-1] == '\n') {
        const char *eol = strchr(p, '\n');
        const char *at = strstr(p, want);
        if (at && (!eol || at < eol)) line = p;
      }
    cr_assert(line, "the summary does not say '%s  %s':\n%s", all[c], want, sum);
  }
  free(sum);
  /* killed after the fp16 configurations died (block 3 of 7; checkpoint after block 2), the run
   * resumes to the same datasets: dead pairs stay dead across the checkpoint */
  char cut[TPATH_MAX];
  tpath(cut, dir, "cut.h5");
  setenv("RSSM_TEST_KILL_AFTER_BLOCK", "3", 1);
  int rc = rssm(errf, (const char *[]){"run", ini, "--out", cut, "--quiet", NULL});
  unsetenv("RSSM_TEST_KILL_AFTER_BLOCK");
  cr_assert_eq(rc, -1, "the run was not killed");
  run_ok((const char *[]){"run", ini, "--out", cut, "--quiet", "--resume", NULL});
  char why[512];
  cr_assert_eq(h5_datasets_equal(out, cut, why, sizeof why), 0, "resumed run differs: %s", why);
  run_data_free(&d);
  run_data_free(&h);
}

Test(nonfinite, gdn_fp16_state_overflow) { check_model("toy:gdn-big"); }
Test(nonfinite, mamba2_fp16_state_overflow) { check_model("toy:mamba2-big"); }
