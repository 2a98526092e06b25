/* `replayssm run` end to end on the toy model: the control floor, the KL sign, independence of
 * the thread count, resume after SIGKILL, shards + merge, and summary. Each run is a few tenths
 * of a second. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/driver/run_data.h"
#include "src/driver/run_h5.h"
#include "src/io/status.h"
#include "src/tokens/token_source.h"
#include "tests/cli/cli_test_util.h"
#include "tests/driver/driver_test_util.h"
#include "tests/driver/summary_ref.h"

static const char *dir;
static char toks[TPATH_MAX], ini[TPATH_MAX], errf[TPATH_MAX];

/* A shortened quickstart: the same kinds of configurations, plus spec ones, in small blocks with
 * frequent checkpoints so that a kill lands between them. */
static const char *EXPERIMENT =
    "model = toy:gdn\n"
    "tokens = t.tok.zst\n"
    "sequences = 3\n"
    "steps = 160\n"
    "seed = 3\n"
    "block = 16\n"
    "checkpoint_every = 32\n"
    "[config control]\nspec = replay L=16 ckpt=fp32\n"
    "[config spec-control]\nspec = spec L=16 T=4 ckpt=fp32 accept=uniform\n"
    "[config shared]\nspec = replay L=16 ckpt=nvfp4/sr\n"
    "[config split]\nspec = replay L=16 hp=fp16/sr lp=nvfp4\n"
    "[config conv]\nspec = conventional state=fp8/sr\n"
    "[config spec-split]\nspec = spec L=8 T=3 hp=fp32 lp=nvfp4 accept=geom:0.7\n";

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir);
  make_text_stream(tpath(toks, dir, "t.tok.zst"), 20000);
  put_text(tpath(ini, dir, "exp.ini"), EXPERIMENT);
  tpath(errf, dir, "err.txt");
}
static void teardown(void) { tdir_remove(dir); }
TestSuite(run, .init = setup, .fini = teardown);

static void run_ok(const char *const *args) {
  int rc = rssm(errf, args);
  char *e = slurp(errf, NULL);
  cr_assert_eq(rc, 0, "replayssm %s %s failed (%d): %s", args[0], args[1], rc, e);
  free(e);
}

static void expect_equal(const char *a, const char *b) {
  char why[512];
  cr_assert_eq(h5_datasets_equal(a, b, why, sizeof why), 0, "%s vs %s: %s", a, b, why);
}

/* Datasets and every attribute: a resumed or merged run is the same file as the whole run. */
static void expect_same_file(const char *a, const char *b) {
  expect_equal(a, b);
  char why[512];
  cr_assert_eq(h5_attributes_equal(a, b, why, sizeof why), 0, "%s vs %s: %s", a, b, why);
}

static int find_cfg(const run_data *d, const char *name) {
  for (int c = 0; c < d->nconfig; c++)
    if (strcmp(d->cfg[c].name, name) == 0) return c;
  cr_assert_fail("configuration %s missing", name);
  return -1;
}

static double mean_kl(const run_data *d, int c) {
  double s = 0;
  for (int64_t i = 0; i < d->K * d->N; i++) s += d->cfg[c].kl[i];
  return s / (double)(d->K * d->N);
}

Test(run, control_floor_kl_sign_and_layout) {
  char out[TPATH_MAX], err[1024];
  tpath(out, dir, "a.h5");
  run_ok((const char *[]){"run", ini, "--out", out, "--quiet", NULL});
  run_data d;
  cr_assert_eq(run_h5_read(out, &d, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(d.K, 3);
  cr_assert_eq(d.N, 160);
  cr_assert_eq(d.nconfig, 6);
  cr_assert_str_eq(d.cfg[0].name, "control"); /* the experiment's order */
  cr_assert_str_eq(d.cfg[2].spec, "replay L=16 ckpt=nvfp4/sr");
  double floor = mean_kl(&d, find_cfg(&d, "control"));
  double spec_floor = mean_kl(&d, find_cfg(&d, "spec-control"));
  cr_log_info("control mean KL %.3e, spec-control %.3e", floor, spec_floor);
  /* 10x the observed floors here (control 7.5e-13, spec-control 6.9e-13) */
  cr_assert(fabs(floor) <= 7.5e-12, "control mean KL %.3e exceeds 7.5e-12", floor);
  cr_assert(fabs(spec_floor) <= 7.5e-12, "spec-control mean KL %.3e exceeds 7.5e-12", spec_floor);
  for (int c = 0; c < d.nconfig; c++) {
    for (int64_t i = 0; i < d.K * d.N; i++)
      cr_assert(d.cfg[c].kl[i] >= -1e-6f, "%s: kl[%lld] = %.3e is negative beyond rounding",
                d.cfg[c].name, (long long)i, d.cfg[c].kl[i]);
    for (int64_t k = 0; k < d.K; k++) cr_assert_eq(d.cfg[c].first_nonfinite[k], -1);
  }
  /* the toy model is sensitive to state error: NVFP4 checkpoints are visible */
  cr_assert_gt(mean_kl(&d, find_cfg(&d, "shared")), 1e-3);
  cr_assert_gt(mean_kl(&d, find_cfg(&d, "spec-split")), 1e-4);
  /* /tokens holds the evenly spaced windows of the stream */
  token_source src;
  cr_assert_eq(token_source_load(toks, &src, err, sizeof err), RSSM_OK, "%s", err);
  for (int64_t k = 0; k < d.K; k++) {
    int64_t start = token_window_start(src.n, d.N + 1, 3, k);
    cr_assert_eq(d.window_start[k], start);
    for (int64_t t = 0; t <= d.N; t++) cr_assert_eq(d.tokens[k * (d.N + 1) + t], src.ids[start + t]);
  }
  cr_assert_eq(d.window_start[2], src.n - 161);
  token_source_free(&src);
  /* the summary's statistics of every configuration, evaluated independently from the file */
  for (int c = 0; c < d.nconfig; c++) summary_check_against_reference(&d, c);
  run_data_free(&d);
  /* an existing output is never overwritten without --force */
  cr_assert_eq(rssm(errf, (const char *[]){"run", ini, "--out", out, "--quiet", NULL}), 2);
  char *e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "--force"), "%s", e);
  free(e);
  run_ok((const char *[]){"run", ini, "--out", out, "--quiet", "--force", NULL});
  /* summary: every configuration in an aligned table */
  char sumf[TPATH_MAX];
  tpath(sumf, dir, "summary.txt");
  const char *argv[] = {RSSM_BIN, "summary", out, NULL};
  cr_assert_eq(run_prog((char *const *)argv, sumf, errf), 0);
  char *s = slurp(sumf, NULL);
  cr_assert(strstr(s, "mean KL") && strstr(s, "spec-split") && strstr(s, "ln(PPL/PPL_ref)"), "%s", s);
  free(s);
}

Test(run, thread_count_does_not_matter) {
  char a[TPATH_MAX], b[TPATH_MAX];
  run_ok((const char *[]){"run", ini, "--out", tpath(a, dir, "t1.h5"), "--threads", "1", "--quiet", NULL});
  run_ok((const char *[]){"run", ini, "--out", tpath(b, dir, "t3.h5"), "--threads", "3", "--quiet", NULL});
  expect_equal(a, b);
}

Test(run, resume_after_sigkill_is_identical) {
  char whole[TPATH_MAX], cut[TPATH_MAX], ckpt[TPATH_MAX + 8];
  run_ok((const char *[]){"run", ini, "--out", tpath(whole, dir, "whole.h5"), "--quiet", NULL});
  tpath(cut, dir, "cut.h5");
  snprintf(ckpt, sizeof ckpt, "%s.ckpt", cut);
  uint64_t seed = 20261201; /* fixed: the same kill points on every run */
  /* 160 steps in blocks of 16: 10 blocks; die after a random one of the first 9 */
  for (int round = 0; round < 2; round++) {
    unlink(cut);
    int block = 1 + (int)(rng_next(&seed) % 9);
    char env[16];
    snprintf(env, sizeof env, "%d", block);
    setenv("RSSM_TEST_KILL_AFTER_BLOCK", env, 1);
    int rc = rssm(errf, (const char *[]){"run", ini, "--out", cut, "--quiet", "--force", NULL});
    unsetenv("RSSM_TEST_KILL_AFTER_BLOCK");
    cr_assert_eq(rc, -1, "the run was not killed after block %d", block);
    cr_assert_not(file_exists(cut));
    if (block >= 2) {
      cr_assert(file_exists(ckpt), "no checkpoint after %d blocks", block);
      /* a plain rerun refuses to clobber the interrupted run */
      cr_assert_eq(rssm(errf, (const char *[]){"run", ini, "--out", cut, "--quiet", NULL}), 2);
    }
    run_ok((const char *[]){"run", ini, "--out", cut, "--quiet", "--resume", NULL});
    cr_assert_not(file_exists(ckpt), "the checkpoint was left behind");
    expect_same_file(whole, cut);
  }
  /* and a kill inside an HDF5 write (the kill_at_write shim counts the writes to OUT.part and
     dies at the Nth; the second round tears that write in half), not at a moment in time */
  char count_file[TPATH_MAX];
  tpath(count_file, dir, "writes.txt");
  unlink(cut);
  unlink(ckpt);
  setenv("LD_PRELOAD", KILL_SHIM, 1);
  /* the sanitizer runtimes want to be first; the shim only forwards calls */
  const char *asan_was = getenv("ASAN_OPTIONS");
  char *asan_saved = asan_was ? strdup(asan_was) : NULL;
  setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
  setenv("RSSM_KILL_COUNT", count_file, 1);
  run_ok((const char *[]){"run", ini, "--out", cut, "--quiet", NULL});
  unsetenv("RSSM_KILL_COUNT");
  char *count_text = slurp(count_file, NULL);
  long writes = count_text ? atol(count_text) : 0;
  free(count_text);
  cr_assert_gt(writes, 4, "the shim counted %ld writes", writes);
  for (int round = 0; round < 2; round++) {
    unlink(cut);
    unlink(ckpt);
    char at[32];
    snprintf(at, sizeof at, "%ld", 1 + (long)(rng_next(&seed) % (uint64_t)writes));
    setenv("RSSM_KILL_AT_WRITE", at, 1);
    if (round == 1) setenv("RSSM_KILL_HALF", "1", 1);
    int rc = rssm(errf, (const char *[]){"run", ini, "--out", cut, "--quiet", NULL});
    unsetenv("RSSM_KILL_AT_WRITE");
    unsetenv("RSSM_KILL_HALF");
    cr_assert_eq(rc, -1, "the run was not killed at write %s of %ld", at, writes);
    run_ok((const char *[]){"run", ini, "--out", cut, "--quiet", "--resume", NULL});
    expect_same_file(whole, cut);
  }
  unsetenv("LD_PRELOAD");
  if (asan_saved) setenv("ASAN_OPTIONS", asan_saved, 1);
  else unsetenv("ASAN_OPTIONS");
  free(asan_saved);
}

Test(run, merged_shards_equal_the_whole_run) {
  char whole[TPATH_MAX], s0[TPATH_MAX], s1[TPATH_MAX], m[TPATH_MAX];
  run_ok((const char *[]){"run", ini, "--out", tpath(whole, dir, "whole.h5"), "--quiet", NULL});
  run_ok((const char *[]){"run", ini, "--out", tpath(s0, dir, "s0.h5"), "--shard", "0/2", "--quiet", NULL});
  run_ok((const char *[]){"run", ini, "--out", tpath(s1, dir, "s1.h5"), "--shard", "1/2", "--quiet", NULL});
  run_ok((const char *[]){"merge", tpath(m, dir, "merged.h5"), s1, s0, NULL});
  expect_same_file(whole, m);
  /* the attribute comparison does see a difference: a shard's attributes are not the whole run's */
  char why_attr[512];
  cr_assert_eq(h5_attributes_equal(whole, s0, why_attr, sizeof why_attr), 1);
  cr_log_info("whole vs shard 0: %s", why_attr);
  run_data a, b;
  char err[1024];
  cr_assert_eq(run_h5_read(whole, &a, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(run_h5_read(m, &b, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_str_eq(a.shard, b.shard);
  cr_assert_str_eq(a.experiment, b.experiment);
  cr_assert_eq(a.offset, b.offset);
  run_data_free(&a);
  run_data_free(&b);
  /* shards of different runs are refused, naming the attribute */
  char other[TPATH_MAX], m3[TPATH_MAX];
  run_ok((const char *[]){"run", ini, "--out", tpath(other, dir, "o1.h5"), "--shard", "1/2",
                          "--seed", "77", "--quiet", NULL});
  cr_assert_eq(rssm(errf, (const char *[]){"merge", tpath(m3, dir, "m3.h5"), s0, other, NULL}), 2);
  char *e3 = slurp(errf, NULL);
  cr_assert(is_one_line(e3) && strstr(e3, "seed"), "%s", e3);
  free(e3);
  /* a missing shard is refused */
  char m2[TPATH_MAX];
  cr_assert_eq(rssm(errf, (const char *[]){"merge", tpath(m2, dir, "m2.h5"), s0, NULL}), 2);
  char *e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "shard"), "%s", e);
  free(e);
}

Test(run, command_line_form_and_mamba2) {
  char out[TPATH_MAX], err[1024];
  run_ok((const char *[]){"run", "--model", "toy:mamba2", "--tokens", toks, "--config",
                          "replay L=8 ckpt=fp32", "--config", "replay L=8 ckpt=int8/sr",
                          "--steps", "64", "--sequences", "2", "--out", tpath(out, dir, "c.h5"),
                          "--quiet", NULL});
  run_data d;
  cr_assert_eq(run_h5_read(out, &d, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(d.nconfig, 2);
  cr_assert(fabs(mean_kl(&d, 0)) <= 9e-12, "%.3e", mean_kl(&d, 0)); /* 10x the observed 9.2e-13 */
  cr_assert_str_eq(d.model, "toy:mamba2");
  run_data_free(&d);
}

/* A configuration whose state overflows (fp16 storage of states near 1e6): kl = inf from its
 * first non-finite step on, first_nonfinite records it, and the others run on unaffected. */
Test(run, nonfinite_configuration_recorded_others_run_on) {
  char out[TPATH_MAX], one[TPATH_MAX], err[1024];
  run_ok((const char *[]){"run", "--model", "toy:mamba2-big", "--tokens", toks, "--config",
                          "conventional state=fp16", "--config", "replay L=8 ckpt=fp32",
                          "--steps", "64", "--sequences", "2", "--out", tpath(out, dir, "nf.h5"),
                          "--quiet", NULL});
  run_ok((const char *[]){"run", "--model", "toy:mamba2-big", "--tokens", toks, "--config",
                          "replay L=8 ckpt=fp32", "--steps", "64", "--sequences", "2", "--out",
                          tpath(one, dir, "one.h5"), "--quiet", NULL});
  run_data d, e;
  cr_assert_eq(run_h5_read(out, &d, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(run_h5_read(one, &e, err, sizeof err), RSSM_OK, "%s", err);
  for (int64_t k = 0; k < d.K; k++) {
    int64_t f = d.cfg[0].first_nonfinite[k];
    cr_assert(f >= 0 && f < d.N, "sequence %lld: first_nonfinite %lld", (long long)k, (long long)f);
    for (int64_t t = 0; t < d.N; t++) {
      float kl = d.cfg[0].kl[k * d.N + t];
      if (t < f) cr_assert(isfinite(kl), "finite before first_nonfinite");
      else cr_assert(isinf(kl) && kl > 0, "kl at step %lld is %g, expected inf", (long long)t, kl);
    }
    cr_assert_eq(d.cfg[1].first_nonfinite[k], -1);
  }
  /* the healthy configuration is exactly what it is alone */
  cr_assert_eq(memcmp(d.cfg[1].kl, e.cfg[0].kl, (size_t)(d.K * d.N) * sizeof(float)), 0);
  cr_assert_eq(memcmp(d.ref_nll, e.ref_nll, (size_t)(d.K * d.N) * sizeof(float)), 0);
  run_data_free(&d);
  run_data_free(&e);
  const char *argv[] = {RSSM_BIN, "summary", out, NULL};
  char sumf[TPATH_MAX];
  cr_assert_eq(run_prog((char *const *)argv, tpath(sumf, dir, "s.txt"), errf), 0);
}

/* The lockstep block size changes nothing: spec rounds that straddle a block boundary wait for the
 * next block whole (blocks of 16, 7 and 99; T = 3 and 4 do not divide 7 or 99). */
Test(run, block_size_does_not_matter) {
  char a[TPATH_MAX], b[TPATH_MAX], c[TPATH_MAX], ini2[TPATH_MAX], ini3[TPATH_MAX];
  char *text = strdup(EXPERIMENT);
  char *p = strstr(text, "block = 16");
  cr_assert(p);
  memcpy(p, "block = 07", 10);
  put_text(tpath(ini2, dir, "exp7.ini"), text);
  memcpy(p, "block = 99", 10); /* blocks of 99 and 61 */
  put_text(tpath(ini3, dir, "exp99.ini"), text);
  free(text);
  run_ok((const char *[]){"run", ini, "--out", tpath(a, dir, "b16.h5"), "--quiet", NULL});
  run_ok((const char *[]){"run", ini2, "--out", tpath(b, dir, "b7.h5"), "--quiet", NULL});
  run_ok((const char *[]){"run", ini3, "--out", tpath(c, dir, "b99.h5"), "--quiet", NULL});
  expect_equal(a, b);
  expect_equal(a, c);
}
