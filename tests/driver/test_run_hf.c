/* `replayssm run` on real model directories: tiny random Qwen3.5 (GDN + gated attention) and
 * Nemotron-H (Mamba-2 + attention + MoE) checkpoints written by the model tests' helpers, decoded
 * through the model runtime's backend (src/decode/hf_decoder.h). The control floor, spec with fp32
 * checkpoints, thread independence and resume after SIGKILL, end to end; the batched stepping
 * (step_many) against one decoder at a time. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/driver/run_data.h"
#include "src/driver/run_h5.h"
#include "src/io/status.h"
#include "tests/cli/cli_test_util.h"
#include "tests/driver/driver_test_util.h"
#include "tests/model/tiny_models.h"

static const char *dir;
static char model_dir[TPATH_MAX], toks[TPATH_MAX], ini[TPATH_MAX], errf[TPATH_MAX];

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir);
  tpath(model_dir, dir, "model");
  tpath(ini, dir, "exp.ini");
  tpath(errf, dir, "err.txt");
  tpath(toks, dir, "t.npy");
}

static void teardown(void) {
  char p[TPATH_MAX + 32];
  snprintf(p, sizeof p, "%s/config.json", model_dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/model.safetensors", model_dir);
  unlink(p);
  rmdir(model_dir);
  tdir_remove(dir);
}
TestSuite(run_hf, .init = setup, .fini = teardown);

static void prepare(tiny_kind kind) {
  cr_assert_eq(mkdir(model_dir, 0755), 0);
  tt_list l;
  char cfg[8192];
  tiny_build(kind, &l, cfg, sizeof cfg);
  cr_assert_eq(tiny_write(model_dir, &l, cfg), 0);
  tt_free(&l);
  int64_t V = tiny_vocab(kind);
  int32_t ids[300];
  uint64_t s = 99;
  for (int i = 0; i < 300; i++) ids[i] = (int32_t)(rng_next(&s) % (uint64_t)V);
  cr_assert_eq(write_npy_raw(toks, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (300,), }",
                             ids, sizeof ids), 0);
  put_text(ini, "model = model\ntokens = t.npy\nsequences = 2\nsteps = 48\nseed = 4\n"
                  "block = 8\ncheckpoint_every = 16\n"
                  "[config control]\nspec = replay L=8 ckpt=fp32\n"
                  "[config spec-control]\nspec = spec L=8 T=3 ckpt=fp32 accept=uniform\n"
                  "[config shared]\nspec = replay L=8 ckpt=nvfp4/sr\n"
                  "[config spec-split]\nspec = spec L=8 T=3 hp=fp32 lp=nvfp4 accept=geom:0.6\n");
}

static void run_ok(const char *const *args) {
  int rc = rssm(errf, args);
  char *e = slurp(errf, NULL);
  cr_assert_eq(rc, 0, "replayssm %s failed (%d): %s", args[0], rc, e);
  free(e);
}

static double mean_kl(const run_data *d, int c) {
  double s = 0;
  for (int64_t i = 0; i < d->K * d->N; i++) s += d->cfg[c].kl[i];
  return s / (double)(d->K * d->N);
}

/* 10x the worst observed here: the controls' mean KL 1.4e-15..2.3e-14 (qwen3.5 text, nemotron-h);
 * the floor of the quantised ones 10x below the smallest (spec-split on qwen3.5, 5.0e-8; shared
 * 1.4e-6..6.6e-5) */
#define CONTROL_TOL 2.5e-13
#define QUANT_KL_FLOOR 5e-9

static void check(tiny_kind kind) {
  prepare(kind);
  char a[TPATH_MAX], b[TPATH_MAX], c[TPATH_MAX], err[1024], why[512];
  run_ok((const char *[]){"run", ini, "--out", tpath(a, dir, "a.h5"), "--quiet", NULL});
  run_data d;
  cr_assert_eq(run_h5_read(a, &d, err, sizeof err), RSSM_OK, "%s", err);
  for (int ci = 0; ci < 2; ci++) {
    double s = 0;
    for (int64_t i = 0; i < d.K * d.N; i++) {
      cr_assert(d.cfg[ci].kl[i] >= -1e-6f, "%s kl %.3e", d.cfg[ci].name, d.cfg[ci].kl[i]);
      s += d.cfg[ci].kl[i];
    }
    s /= (double)(d.K * d.N);
    fprintf(stderr, "run_hf kind %d %s: mean KL %.3e\n", (int)kind, d.cfg[ci].name, s);
    cr_assert(fabs(s) <= CONTROL_TOL, "%s: mean KL %.3e exceeds %.0e", d.cfg[ci].name, s, CONTROL_TOL);
  }
  /* the quantised configurations have an effect, each its own: a runtime that ran them as fp32
     would give the control's KL (identical, or within its floor) */
  for (int ci = 2; ci < d.nconfig; ci++) {
    double s = mean_kl(&d, ci);
    fprintf(stderr, "run_hf kind %d %s: mean KL %.3e\n", (int)kind, d.cfg[ci].name, s);
    cr_assert(s >= QUANT_KL_FLOOR, "%s: mean KL %.3e below %.0e: the format has no effect",
              d.cfg[ci].name, s, QUANT_KL_FLOOR);
    for (int cj = 0; cj < ci; cj++)
      cr_assert(memcmp(d.cfg[ci].kl, d.cfg[cj].kl, sizeof(float) * (size_t)(d.K * d.N)) != 0,
                "%s and %s have identical KL", d.cfg[ci].name, d.cfg[cj].name);
  }
  cr_assert(strncmp(d.model_checksum, "crc32:", 6) == 0, "%s", d.model_checksum);
  run_data_free(&d);
  run_ok((const char *[]){"run", ini, "--out", tpath(b, dir, "b.h5"), "--threads", "3", "--quiet", NULL});
  cr_assert_eq(h5_datasets_equal(a, b, why, sizeof why), 0, "threads: %s", why);
  setenv("RSSM_TEST_KILL_AFTER_BLOCK", "4", 1);
  int rc = rssm(errf, (const char *[]){"run", ini, "--out", tpath(c, dir, "c.h5"), "--quiet", NULL});
  unsetenv("RSSM_TEST_KILL_AFTER_BLOCK");
  cr_assert_eq(rc, -1, "the run was not killed");
  run_ok((const char *[]){"run", ini, "--out", c, "--quiet", "--resume", NULL});
  cr_assert_eq(h5_datasets_equal(a, c, why, sizeof why), 0, "resume: %s", why);
}

Test(run_hf, qwen35_gdn_attention) { check(TINY_QWEN35_TEXT); }
Test(run_hf, nemotron_h_mamba2_moe) { check(TINY_NEMOTRON_H); }

/* The batched path (the model's step_many: references and non-spec pairs of a group of sequences
 * in one forward per step) against the one-decoder-at-a-time path, for several groupings:
 * sequences per group 1, 2, 3 and fewer sequences than threads (configurations cut into parts
 * after the references). Every dataset must be identical. */
static void run_env(const char *out, const char *seqs, const char *threads, const char *unbatched,
                    const char *group) {
  if (unbatched) setenv("RSSM_RUN_UNBATCHED", unbatched, 1);
  if (group) setenv("RSSM_RUN_GROUP", group, 1);
  run_ok((const char *[]){"run", ini, "--out", out, "--sequences", seqs, "--threads", threads,
                          "--quiet", "--force", NULL});
  unsetenv("RSSM_RUN_UNBATCHED");
  unsetenv("RSSM_RUN_GROUP");
}

static void check_batched(tiny_kind kind) {
  prepare(kind);
  char ref[TPATH_MAX], out[TPATH_MAX], why[512];
  tpath(ref, dir, "ref.h5");
  tpath(out, dir, "out.h5");
  static const char *const seqs[] = {"3", "1"};
  for (int i = 0; i < 2; i++) {
    run_env(ref, seqs[i], "1", "1", NULL);
    static const char *const threads[] = {"1", "2", "3"};
    for (int t = 0; t < 3; t++) {
      run_env(out, seqs[i], threads[t], NULL, NULL);
      cr_assert_eq(h5_datasets_equal(ref, out, why, sizeof why), 0,
                   "%s sequences, %s threads: %s", seqs[i], threads[t], why);
    }
    run_env(out, seqs[i], "2", NULL, "2");
    cr_assert_eq(h5_datasets_equal(ref, out, why, sizeof why), 0, "%s sequences, groups of 2: %s",
                 seqs[i], why);
  }
}

Test(run_hf, batched_qwen35) { check_batched(TINY_QWEN35_TEXT); }
Test(run_hf, batched_nemotron_h) { check_batched(TINY_NEMOTRON_H); }
