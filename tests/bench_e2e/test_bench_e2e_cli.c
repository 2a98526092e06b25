/* `replayssm bench e2e` without a GPU (the CPU machine of CI): one clear line and exit status 2,
 * both for a machine without a device and for a build without CUDA; usage errors are exit 2 with
 * one line; --help is exit 0; --dry-run prints the byte model without a device (checked against
 * the state bytes of the Qwen3.5-4B shape computed here by hand). Runs `replayssm bench e2e`. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli/cli_test_util.h"

static const char *dir;

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir != NULL);
}
static void teardown(void) { tdir_remove(dir); }

/* Runs argv; returns the exit status (-1 if not exited) and the stderr text in *err_text. */
static int run(char *const argv[], char **err_text, char **out_text) {
  return run_argv_captured(argv, dir, err_text, out_text);
}

static void expect_no_device(char *const argv[]) {
  char *e = NULL;
  int rc = run(argv, &e, NULL);
  cr_assert_eq(rc, 2, "exit status %d; stderr: %s", rc, e ? e : "");
  cr_assert(e && is_one_line(e), "expected one line on stderr, got: %s", e ? e : "(null)");
  cr_assert(strstr(e, "bench e2e") && (strstr(e, "no CUDA device") || strstr(e, "built without CUDA")),
            "%s", e);
  free(e);
}

TestSuite(bench_e2e_cli, .init = setup, .fini = teardown);

Test(bench_e2e_cli, no_device_is_one_line_and_exit_2) {
  if (getenv("RSSM_TEST_HAVE_GPU")) return; /* the GPU machine: the command would run */
  char *a1[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"e2e", (char *)"--model",
                (char *)RSSM_SOURCE_DIR "/data/models/qwen35-gdn-tiny", NULL};
  expect_no_device(a1);
  char *a2[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"e2e", (char *)"--shape", (char *)"qwen3.5-4b", (char *)"--streams",
                (char *)"64", NULL};
  expect_no_device(a2);
}

Test(bench_e2e_cli, usage_errors_are_one_line_and_exit_2) {
  const char *bad[][4] = {
      {"--model", "x", "--shape", "y"},          /* both */
      {"--model", "x", "--gemm", "tf32"},        /* unknown precision */
      {"--model", "x", "--streams", "0"},        /* K >= 1 */
      {"--model", "x", "--configs", "spec L=16 T=4 ckpt=fp32"}, /* spec refused */
      {"--model", "x", "--configs", "replay L=0"},              /* bad configuration */
      {"--model", "x", "--graph", "maybe"},
      {"--model", "x", "--bogus", "1"},
      {"--shape", "x", "--transformers", "python3"},            /* transformers needs --model */
      {"--model", "x", "--transformers-json", "y.json"},        /* ... and --transformers */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"e2e", (char *)bad[i][0], (char *)bad[i][1],
                    (char *)bad[i][2], (char *)bad[i][3], NULL};
    char *e = NULL;
    int rc = run(argv, &e, NULL);
    cr_assert_eq(rc, 2, "case %zu: exit status %d; stderr: %s", i, rc, e ? e : "");
    cr_assert(e && is_one_line(e), "case %zu: expected one line, got: %s", i, e ? e : "(null)");
    free(e);
  }
  char *none[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"e2e", NULL};
  char *e = NULL;
  cr_assert_eq(run(none, &e, NULL), 2);
  cr_assert(e && is_one_line(e) && strstr(e, "--model"), "%s", e ? e : "");
  free(e);
}

Test(bench_e2e_cli, help_is_exit_0) {
  char *argv[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"e2e", (char *)"--help", NULL};
  char *e = NULL, *o = NULL;
  cr_assert_eq(run(argv, &e, &o), 0, "%s", e ? e : "");
  cr_assert(o && strstr(o, "usage: replayssm bench e2e") && strstr(o, "streams/s"), "%s", o ? o : "");
  free(e);
  free(o);
}

/* --dry-run: the byte model from the config alone. Qwen3.5-4B, K = 64, conventional fp32 state:
 * 24 GDN layers x 64 rows x (state read + write: 2 x 32 heads x 128 x 128 x 4 B, plus the conv
 * window read + write: 2 x 3 x 8192 x 4 B) = 6.74444 GB; weights fp32 ~16.82 GB (4.2 G floats),
 * bf16 about half. */
Test(bench_e2e_cli, dry_run_byte_model) {
  char *argv[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"e2e", (char *)"--shape",
                  (char *)RSSM_SOURCE_DIR "/data/shapes/qwen3.5-4b", (char *)"--streams",
                  (char *)"64", (char *)"--gemm", (char *)"fp32,bf16", (char *)"--dry-run", NULL};
  char *e = NULL, *o = NULL;
  cr_assert_eq(run(argv, &e, &o), 0, "%s", e ? e : "");
  const double state = 64.0 * 24.0 * (2.0 * 32 * 128 * 128 * 4 + 2.0 * 3 * 8192 * 4) * 1e-9;
  char want[64];
  snprintf(want, sizeof want, "state %.6g,", state);
  cr_assert(o && strstr(o, want), "expected '%s' in: %s", want, o ? o : "");
  double w32 = 0, w16 = 0;
  const char *p32 = strstr(o, "gemm=fp32"), *p16 = strstr(o, "gemm=bf16");
  cr_assert(p32 && p16, "%s", o);
  cr_assert(sscanf(strstr(p32, "weights"), "weights %lf", &w32) == 1);
  cr_assert(sscanf(strstr(p16, "weights"), "weights %lf", &w16) == 1);
  cr_assert(w32 > 16.7 && w32 < 17.0, "fp32 weights %g GB", w32);
  cr_assert(fabs(w16 - w32 / 2) < 0.01 * w32, "bf16 weights %g GB, fp32 %g GB", w16, w32);
  /* over 1 GiB of fp32 GEMM weights: the runtime's row tile is 16; bf16 GEMMs keep 64 (mc_tile.h) */
  cr_assert(strstr(o, "row tile 16 (fp32 GEMMs), 64 (bf16)"), "%s", o);
  free(e);
  free(o);
}

/* The row tile the dry run reports is the runtime's rule (mc_row_tile_for) on the GEMM weights
 * of the config: 16 for both 4B shapes with fp32 GEMMs (64 with bf16), 64 for the trained tiny models (their GPU results and
 * golden comparisons keep the 64-row tiles they were made with). */
Test(bench_e2e_cli, dry_run_row_tile) {
  const char *cases[][3] = {
      {"--shape", RSSM_SOURCE_DIR "/data/shapes/qwen3.5-4b", "row tile 16 (fp32 GEMMs), 64 (bf16)"},
      {"--shape", RSSM_SOURCE_DIR "/data/shapes/nemotron-3-nano-4b",
       "row tile 16 (fp32 GEMMs), 64 (bf16)"},
      {"--model", RSSM_SOURCE_DIR "/data/models/qwen35-gdn-tiny",
       "row tile 64 (fp32 GEMMs), 64 (bf16)"},
      {"--model", RSSM_SOURCE_DIR "/data/models/nemotronh-m2-tiny",
       "row tile 64 (fp32 GEMMs), 64 (bf16)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *argv[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"e2e", (char *)cases[i][0],
                    (char *)cases[i][1], (char *)"--streams", (char *)"1", (char *)"--dry-run",
                    NULL};
    char *e = NULL, *o = NULL;
    cr_assert_eq(run(argv, &e, &o), 0, "%s: %s", cases[i][1], e ? e : "");
    cr_expect(o && strstr(o, cases[i][2]), "%s: expected '%s' in: %s", cases[i][1], cases[i][2],
              o ? o : "");
    free(e);
    free(o);
  }
}
