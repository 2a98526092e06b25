/* Results that can be trusted after anything (issue 20, docs/reliability.md): one writer per
 * output (a lock), files that say whether they are complete and which experiment they hold,
 * --resume only into the same experiment, merge and summary only of complete files unless
 * --partial, output paths checked before the first step, and SIGTERM/SIGINT ending a run with a
 * checkpoint and a line saying how to resume. Signals and kills come at chosen writes (the
 * kill_at_write shim) or between chosen blocks, never after a sleep. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/driver/run_h5.h"
#include "src/driver/summary_report.h"
#include "src/io/status.h"
#include "tests/cli/cli_test_util.h"
#include "tests/driver/driver_test_util.h"

static const char *dir;
static char ini[TPATH_MAX], toks[TPATH_MAX], errf[TPATH_MAX], whole[TPATH_MAX], out[TPATH_MAX],
    part[TPATH_MAX + 16], ckpt[TPATH_MAX + 16];

/* 2 sequences x 400 steps in 8 blocks of 50, a checkpoint after every other block */
static const char *EXPERIMENT =
    "model = toy:gdn\ntokens = t.tok.zst\nsequences = 2\nsteps = 400\nblock = 50\n"
    "checkpoint_every = 100\nseed = 3\n"
    "config = conventional state=bf16\nconfig = replay L=16 ckpt=nvfp4/sr\n";

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir);
  make_text_stream(tpath(toks, dir, "t.tok.zst"), 3000);
  put_text(tpath(ini, dir, "exp.ini"), EXPERIMENT);
  tpath(errf, dir, "err.txt");
  tpath(whole, dir, "whole.h5");
  tpath(out, dir, "o.h5");
  snprintf(part, sizeof part, "%s.part", out);
  snprintf(ckpt, sizeof ckpt, "%s.ckpt", out);
}
static void teardown(void) { tdir_remove(dir); }
TestSuite(integrity, .init = setup, .fini = teardown, .timeout = 300);

/* `replayssm run exp.ini --out OUTPUT --quiet EXTRA...` (at most 6 extra arguments, NULL-ended);
 * returns the exit status, -1 when killed. */
static int run_exp(const char *output, const char *a, const char *b, const char *c,
                   const char *d) {
  return rssm(errf, (const char *[]){"run", ini, "--out", output, "--quiet", "--threads", "1", a,
                                     b, c, d, NULL});
}

static char *err_text(void) {
  char *e = slurp(errf, NULL);
  cr_assert(e, "no stderr file");
  return e;
}

/* exit status 2 and one line on stderr containing every needle (NULL-ended) */
static void expect_refusal(int rc, const char *n1, const char *n2, const char *n3) {
  char *e = err_text();
  cr_assert_eq(rc, 2, "exit %d (expected 2): %s", rc, e);
  cr_assert(is_one_line(e), "not one line: '%s'", e);
  const char *ns[] = {n1, n2, n3};
  for (int i = 0; i < 3; i++)
    cr_assert(!ns[i] || strstr(e, ns[i]), "'%s' does not say '%s'", e, ns[i]);
  free(e);
}

static void expect_same(const char *a, const char *b) {
  char why[512];
  cr_assert_eq(h5_datasets_equal(a, b, why, sizeof why), 0, "%s", why);
}

/* A run interrupted after `blocks` blocks (SIGKILL between two blocks). */
static void run_killed_after(const char *output, const char *blocks, const char *a,
                             const char *b, const char *c) {
  setenv("RSSM_TEST_KILL_AFTER_BLOCK", blocks, 1);
  int rc = run_exp(output, a, b, c, NULL);
  unsetenv("RSSM_TEST_KILL_AFTER_BLOCK");
  cr_assert_eq(rc, -1, "the run was not killed");
}

/* ---- 1. one writer per output ------------------------------------------------------------ */

Test(integrity, a_second_writer_is_refused_naming_the_holder) {
  char lockf[TPATH_MAX + 16];
  snprintf(lockf, sizeof lockf, "%s.lock", out);
  int fd = open(lockf, O_RDWR | O_CREAT, 0644);
  cr_assert_geq(fd, 0);
  struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
  cr_assert_eq(fcntl(fd, F_SETLK, &fl), 0); /* this process is "the other writer" */
  char pid[32];
  snprintf(pid, sizeof pid, "pid %ld", (long)getpid());
  expect_refusal(run_exp(out, NULL, NULL, NULL, NULL), pid, out, NULL);
  cr_assert_not(file_exists(out) || file_exists(part) || file_exists(ckpt),
                "the refused writer touched the outputs");
  expect_refusal(run_exp(out, "--resume", NULL, NULL, NULL), pid, NULL, NULL);
  expect_refusal(rssm(errf, (const char *[]){"merge", out, whole, NULL}), pid, NULL, NULL);
  close(fd); /* the lock goes with it */
  cr_assert_eq(run_exp(out, NULL, NULL, NULL, NULL), 0);
  cr_assert_not(file_exists(lockf), "the lock file was left behind");
}

/* ---- 2. file state and identity ---------------------------------------------------------- */

Test(integrity, resume_refuses_another_experiment_saying_what_differs) {
  cr_assert_eq(run_exp(out, NULL, NULL, NULL, NULL), 0);
  /* a complete output of other steps or another seed */
  expect_refusal(run_exp(out, "--resume", "--steps", "300", NULL), "steps", "400", "300");
  expect_refusal(run_exp(out, "--resume", "--seed", "9", NULL), "seed", "3", "9");
  /* and a checkpoint of another configuration list */
  cr_assert_eq(unlink(out), 0);
  run_killed_after(out, "3", NULL, NULL, NULL);
  cr_assert(file_exists(ckpt));
  expect_refusal(rssm(errf, (const char *[]){"run", ini, "--out", out, "--quiet", "--resume",
                                              "--config", "conventional state=fp16", NULL}),
                 "config conventional state=fp16", "the checkpoint has none", NULL);
  cr_assert(file_exists(ckpt), "the refusal removed the checkpoint");
  /* the matching experiment resumes */
  cr_assert_eq(run_exp(whole, NULL, NULL, NULL, NULL), 0);
  cr_assert_eq(run_exp(out, "--resume", NULL, NULL, NULL), 0);
  expect_same(whole, out);
}

Test(integrity, resume_refuses_an_output_that_is_not_a_run_file) {
  put_text(out, "not an HDF5 file\n");
  expect_refusal(run_exp(out, "--resume", NULL, NULL, NULL), out, "not an HDF5 file", NULL);
  char *t = slurp(out, NULL);
  cr_assert_str_eq(t, "not an HDF5 file\n");
  free(t);
}

/* An older complete output, then an interrupted --force rerun of another seed: --resume must
 * continue the rerun from its checkpoint, not keep the old results. */
Test(integrity, resume_after_an_interrupted_force_rerun_uses_its_checkpoint) {
  cr_assert_eq(run_exp(out, "--seed", "1", NULL, NULL), 0);
  run_killed_after(out, "3", "--seed", "2", "--force");
  cr_assert(file_exists(ckpt));
  cr_assert_eq(run_exp(out, "--resume", "--seed", "2", NULL), 0);
  cr_assert_not(file_exists(ckpt));
  cr_assert_eq(run_exp(whole, "--seed", "2", NULL, NULL), 0);
  expect_same(whole, out);
}

/* The .part of an interrupted run: summary and merge refuse it; with --partial they use the
 * written steps only, and say so. */
Test(integrity, summary_and_merge_refuse_incomplete_files_unless_partial) {
  cr_assert_eq(run_exp(whole, NULL, NULL, NULL, NULL), 0);
  run_killed_after(out, "3", NULL, NULL, NULL); /* 150 of 400 steps written */
  cr_assert(file_exists(part));
  expect_refusal(rssm(errf, (const char *[]){"summary", part, NULL}), part, "incomplete",
                 "150 of 400");
  char *e = NULL, *o = NULL;
  int st = run_captured(RSSM_BIN, dir, &e, &o, "summary", "--partial", part, NULL);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "summary --partial: %s", e);
  cr_assert(strstr(o, "partial:") && strstr(o, "steps 0..149"), "does not say so: %s", o);
  /* its mean KL is the complete run's over the same 150 steps */
  run_data d;
  char err[1024];
  cr_assert_eq(run_h5_read(whole, &d, err, sizeof err), RSSM_OK, "%s", err);
  run_data_truncate(&d, 150);
  sr_report rep;
  cr_assert_eq(sr_build(&d, &rep), 0);
  for (int c = 0; c < d.nconfig; c++) {
    char mkl[40];
    snprintf(mkl, sizeof mkl, "%.3e +- %.1e", rep.cfg[c].kl.v, rep.cfg[c].kl.err);
    cr_assert(strstr(o, mkl), "'%s' (150 steps of the complete run) not in: %s", mkl, o);
  }
  sr_free(&rep);
  run_data_free(&d);
  free(e);
  free(o);
  /* merge: a complete shard and an interrupted one */
  char s0[TPATH_MAX], s1[TPATH_MAX], m[TPATH_MAX];
  cr_assert_eq(run_exp(tpath(s0, dir, "s0.h5"), "--shard", "0/2", NULL, NULL), 0);
  tpath(s1, dir, "s1.h5");
  run_killed_after(s1, "3", "--shard", "1/2", NULL);
  char s1part[TPATH_MAX + 8];
  snprintf(s1part, sizeof s1part, "%s.part", s1);
  expect_refusal(rssm(errf, (const char *[]){"merge", tpath(m, dir, "m.h5"), s0, s1part, NULL}),
                 s1part, "incomplete", "--partial");
  cr_assert_not(file_exists(m));
  cr_assert_eq(rssm(errf, (const char *[]){"merge", "--partial", m, s0, s1part, NULL}), 0);
  cr_assert_eq(run_h5_read(m, &d, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert(d.steps_written[0] == 400 && d.steps_written[1] == 150, "steps_written %lld %lld",
            (long long)d.steps_written[0], (long long)d.steps_written[1]);
  run_data_free(&d);
  expect_refusal(rssm(errf, (const char *[]){"summary", m, NULL}), "incomplete",
                 "150 to 400 of 400", NULL);
}

/* ---- 4. output paths, before the first step ---------------------------------------------- */

Test(integrity, output_paths_are_checked_before_the_first_step) {
  char sub[TPATH_MAX], missing[TPATH_MAX];
  tpath(sub, dir, "adir");
  cr_assert_eq(mkdir(sub, 0755), 0);
  expect_refusal(run_exp(sub, NULL, NULL, NULL, NULL), sub, "directory", NULL);
  char subpart[TPATH_MAX + 8];
  snprintf(subpart, sizeof subpart, "%s.part", sub);
  cr_assert_not(file_exists(subpart), "a .part was written for a directory");
  tpath(missing, dir, "nodir/o.h5");
  expect_refusal(run_exp(missing, NULL, NULL, NULL, NULL), "nodir", "does not exist", NULL);
  /* --out naming the token file, even with --force */
  size_t n0, n1;
  char *before = slurp(toks, &n0);
  expect_refusal(run_exp(toks, "--force", NULL, NULL, NULL), toks, "input", NULL);
  char *after = slurp(toks, &n1);
  cr_assert(n0 == n1 && memcmp(before, after, n0) == 0, "the token file changed");
  free(before);
  free(after);
  /* merge --force over one of its own inputs */
  char s0[TPATH_MAX], s1[TPATH_MAX];
  cr_assert_eq(run_exp(tpath(s0, dir, "s0.h5"), "--shard", "0/2", NULL, NULL), 0);
  cr_assert_eq(run_exp(tpath(s1, dir, "s1.h5"), "--shard", "1/2", NULL, NULL), 0);
  char *b0 = slurp(s0, &n0);
  expect_refusal(rssm(errf, (const char *[]){"merge", "--force", s0, s0, s1, NULL}), s0, "input",
                 NULL);
  char *a0 = slurp(s0, &n1);
  cr_assert(n0 == n1 && memcmp(b0, a0, n0) == 0, "merge overwrote its input");
  free(b0);
  free(a0);
}

/* ---- 5. SIGTERM / SIGINT ------------------------------------------------------------------ */

/* The signal arrives during the k-th write to the .part (inside a block's HDF5 write): the run
 * finishes that block, checkpoints, says how to resume, exits 128 + signal; --resume completes
 * to the uninterrupted datasets. */
static void signal_at_write(int sig, const char *k) {
  char s[8];
  snprintf(s, sizeof s, "%d", sig);
  setenv("LD_PRELOAD", KILL_SHIM, 1);
  setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1);
  setenv("RSSM_KILL_AT_WRITE", k, 1);
  setenv("RSSM_KILL_SIGNAL", s, 1);
  int rc = run_exp(out, NULL, NULL, NULL, NULL);
  unsetenv("LD_PRELOAD");
  unsetenv("ASAN_OPTIONS");
  unsetenv("RSSM_KILL_AT_WRITE");
  unsetenv("RSSM_KILL_SIGNAL");
  char *e = err_text();
  cr_assert_eq(rc, 128 + sig, "exit %d (expected %d): %s", rc, 128 + sig, e);
  cr_assert(is_one_line(e), "not one line: '%s'", e);
  cr_assert(strstr(e, sig == SIGTERM ? "SIGTERM" : "SIGINT") && strstr(e, "--resume") &&
            strstr(e, ckpt), "'%s' does not say how to resume", e);
  free(e);
  cr_assert(file_exists(ckpt) && file_exists(part) && !file_exists(out));
  cr_assert_eq(run_exp(out, "--resume", NULL, NULL, NULL), 0);
  expect_same(whole, out);
}

Test(integrity, sigterm_and_sigint_stop_with_a_checkpoint) {
  cr_assert_eq(run_exp(whole, NULL, NULL, NULL, NULL), 0);
  signal_at_write(SIGTERM, "60"); /* inside a block after the creation (~40 writes) */
  cr_assert_eq(unlink(out), 0);
  signal_at_write(SIGINT, "45");
}
