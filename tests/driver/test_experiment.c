/* Experiment files: every bad file is refused with exit status 2 and one line naming the file
 * and line; sweeps expand as documented; the effective experiment parses back to itself. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/driver/experiment.h"
#include "src/io/status.h"
#include "tests/cli/cli_test_util.h"
#include "tests/driver/driver_test_util.h"

static const char *dir;
static char toks[TPATH_MAX], ini[TPATH_MAX], errf[TPATH_MAX], outf[TPATH_MAX];

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir);
  make_text_stream(tpath(toks, dir, "t.tok.zst"), 5000);
  tpath(ini, dir, "exp.ini");
  tpath(errf, dir, "err.txt");
  tpath(outf, dir, "out.h5");
}
static void teardown(void) { tdir_remove(dir); }
TestSuite(experiment, .init = setup, .fini = teardown);

/* Runs the experiment `text`; expects exit 2 and one line containing every needle. */
static void expect_refused(const char *text, const char *const *needles) {
  put_text(ini, text);
  const char *args[] = {"run", ini, "--out", outf, "--quiet", NULL};
  int rc = rssm(errf, args);
  char *e = slurp(errf, NULL);
  cr_assert_eq(rc, 2, "exit %d for:\n%s\nstderr: %s", rc, text, e);
  cr_assert(is_one_line(e), "not one line: '%s'", e);
  for (int i = 0; needles[i]; i++)
    cr_assert(strstr(e, needles[i]), "'%s' does not contain '%s'", e, needles[i]);
  free(e);
  cr_assert_not(file_exists(outf), "an output was written for a bad experiment");
}

static char where[TPATH_MAX + 16];
static const char *at(int line) {
  snprintf(where, sizeof where, "%s:%d:", ini, line);
  return where;
}

Test(experiment, unknown_key) {
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\nstepz = 5\n"
                 "config = replay L=16 ckpt=fp32\n",
                 (const char *[]){at(5), "unknown key 'stepz'", NULL});
}

Test(experiment, bad_configuration_string) {
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n\n"
                 "config = replay L=16 ckpt=nvfp9\n",
                 (const char *[]){at(6), "bad configuration", "nvfp9", NULL});
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n"
                 "[config x]\nspec = replay L=16 ckpt=fp8 hp=fp32 lp=nvfp4\n",
                 (const char *[]){at(6), "bad configuration", NULL});
}

Test(experiment, missing_model) {
  expect_refused("# comment\nmodel = no/such/model\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n"
                 "config = replay L=16 ckpt=fp32\n",
                 (const char *[]){at(2), "no/such/model", "no such file", NULL});
  expect_refused("model = toy:lstm\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n"
                 "config = replay L=16 ckpt=fp32\n",
                 (const char *[]){at(1), "toy:lstm", NULL});
}

Test(experiment, token_ids_outside_vocabulary) {
  char npy[TPATH_MAX];
  int32_t ids[40];
  for (int i = 0; i < 40; i++) ids[i] = 'a' + i % 20;
  ids[33] = 300;
  cr_assert_eq(write_npy_raw(tpath(npy, dir, "big.npy"), 1,
                             "{'descr': '<i4', 'fortran_order': False, 'shape': (40,), }", ids,
                             sizeof ids), 0);
  expect_refused("model = toy:gdn\n\n\ntokens = big.npy\nsteps = 10\nsequences = 1\n"
                 "config = replay L=16 ckpt=fp32\n",
                 (const char *[]){at(4), "300", "vocabulary", NULL});
}

Test(experiment, other_errors_name_the_line) {
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = many\n",
                 (const char *[]){at(3), "steps", NULL});
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\n[bogus]\nx = 1\n",
                 (const char *[]){at(4), "unknown section", NULL});
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n"
                 "[config a]\nspec = replay L=16 ckpt=fp32\n[config b]\nspec = replay L=8 ckpt=fp32\n"
                 "[config a]\nspec = replay L=4 ckpt=fp32\n",
                 (const char *[]){at(9), "section repeated", "line 5", NULL});
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n"
                 "template = replay L={L} ckpt=nvfp4\nsweep.L = 4,8\nsweep.r = rtn,sr\n",
                 (const char *[]){at(7), "sweep.r is not used", NULL});
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n"
                 "template = replay L={L} ckpt=nvfp4/{rounding}\nsweep.L = 4,8\n",
                 (const char *[]){at(5), "placeholder", NULL});
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = 100000\nsequences = 1\n"
                 "config = replay L=16 ckpt=fp32\n",
                 (const char *[]){at(2), "fewer than steps", NULL});
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\nno equals sign\n",
                 (const char *[]){at(5), NULL});
}

/* Labels must print as name=LABEL and parse back (found by fuzz_experiment: a trailing \v was
 * kept in the label, and inih strips it when the effective experiment is read back); inih cuts
 * section names at 49 characters, so a longer [config NAME] is refused rather than renamed. */
Test(experiment, labels_without_control_characters) {
  expect_refused("model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n"
                 "[config a\v\v]\nspec = replay L=16 ckpt=fp32\n",
                 (const char *[]){at(6), "configuration name", "control characters", NULL});
  char text[1024], name[200];
  memset(name, 'n', 150);
  name[150] = '\0';
  snprintf(text, sizeof text, "model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n"
           "[config %s]\nspec = replay L=16 ckpt=fp32\n", name);
  expect_refused(text, (const char *[]){at(5), "section name longer than 49", NULL});
}

/* --device cuda (docs/gpu-runtime.md): exit 2 and one line, whichever applies here: a build
 * without CUDA, a machine without a device (CI), or, on a GPU machine, the toy model (the GPU
 * runtime needs a Hugging Face directory). */
static int cuda_refusal(const char *e) {
  return strstr(e, "--device cuda: ") &&
         (strstr(e, "built without CUDA") || strstr(e, "no CUDA device") ||
          strstr(e, "needs a Hugging Face model directory"));
}

Test(experiment, device_cuda_refused_clearly) {
  put_text(ini, "model = toy:gdn\ntokens = t.tok.zst\nsteps = 10\nsequences = 1\n"
                  "config = replay L=16 ckpt=fp32\n");
  const char *args[] = {"run", ini, "--out", outf, "--device", "cuda", NULL};
  cr_assert_eq(rssm(errf, args), 2);
  char *e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && cuda_refusal(e), "%s", e);
  free(e);
}

Test(experiment, logits_device_cuda_without_a_device) {
  /* only meaningful where no GPU is usable (CI); on a GPU machine the command would decode */
  if (getenv("RSSM_TEST_HAVE_GPU")) return;
  const char *args[] = {"logits", "--device", "cuda", "--model",
                        RSSM_SOURCE_DIR "/tests/fixtures/nemotron_h", "--tokens",
                        RSSM_SOURCE_DIR "/tests/fixtures/nemotron_h/tokens.npy", "--out",
                        outf, NULL};
  cr_assert_eq(rssm(errf, args), 2);
  char *e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "--device cuda: ") &&
                (strstr(e, "built without CUDA") || strstr(e, "no CUDA device")), "%s", e);
  free(e);
}

Test(experiment, sweeps_expand_and_text_round_trips) {
  put_text(ini, "model = toy:mamba2\ntokens = t.tok.zst\nsteps = 10\nsequences = 2\nseed = 9\n"
                  "config = conventional state=fp32 name=ref-copy\n"
                  "[sweep window]\ntemplate = replay L={L} ckpt=nvfp4/{rounding}\n"
                  "sweep.L = 4, 8,16\nsweep.rounding = rtn,sr\n"
                  "[config split]\nspec = replay L=16 hp=fp32 lp=nvfp4\n");
  static experiment e, back;
  char err[1024];
  experiment_init(&e);
  cr_assert_eq(experiment_parse_file(ini, &e, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(experiment_validate(&e, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(e.nconfig, 2 + 6);
  cr_assert_str_eq(e.configs[0].cfg.name, "ref-copy");
  cr_assert_str_eq(e.configs[1].cfg.name, "split");
  const char *want[] = {"replay L=4 ckpt=nvfp4", "replay L=4 ckpt=nvfp4/sr", "replay L=8 ckpt=nvfp4",
                        "replay L=8 ckpt=nvfp4/sr", "replay L=16 ckpt=nvfp4", "replay L=16 ckpt=nvfp4/sr"};
  for (int i = 0; i < 6; i++) cr_assert_str_eq(e.configs[2 + i].cfg.name, want[i]);
  char *text = experiment_to_text(&e);
  put_text(ini, text);
  experiment_init(&back);
  cr_assert_eq(experiment_parse_file(ini, &back, err, sizeof err), RSSM_OK, "%s", err);
  char *text2 = experiment_to_text(&back);
  cr_assert_str_eq(text, text2);
  free(text);
  free(text2);
}

/* The shipped experiment files parse and validate (their data need not exist). */
Test(experiment, shipped_experiments_parse) {
  const char *files[] = {"quickstart.ini", "paper_kl_vs_length.ini", "paper_window_sweep.ini",
                         "paper_rtn_vs_sr.ini", "appendix_f_skip.ini"};
  const int nconf[] = {5, 8, 1 + 5 + 5, 1 + 14 + 14, 6};
  static experiment e;
  char path[TPATH_MAX], err[1024];
  for (int i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/experiments/%s", RSSM_SOURCE_DIR, files[i]);
    experiment_init(&e);
    cr_assert_eq(experiment_parse_file(path, &e, err, sizeof err), RSSM_OK, "%s", err);
    cr_assert_eq(experiment_validate(&e, err, sizeof err), RSSM_OK, "%s", err);
    cr_assert_eq(e.nconfig, nconf[i], "%s: %d configurations", files[i], e.nconfig);
  }
}
