/* `replayssm bench attention` without a GPU (the CPU machine of CI): one line and exit status 2
 * for a build without CUDA or a machine without a device; every usage error one line and exit 2
 * (the options are parsed in both builds); --help exit 0. And the attention lab's pure-C
 * arithmetic: variant names, the split count, the scratch sizes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/model_cuda/attn_lab.h"
#include "tests/cli/cli_test_util.h"

static const char *dir;

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir != NULL);
}
static void teardown(void) { tdir_remove(dir); }

static int run(char *const argv[], char **err_text, char **out_text) {
  return run_argv_captured(argv, dir, err_text, out_text);
}

TestSuite(bench_attn_cli, .init = setup, .fini = teardown);

Test(bench_attn_cli, no_device_is_one_line_and_exit_2) {
  if (getenv("RSSM_TEST_HAVE_GPU")) return; /* the GPU machine: the command would run */
  char *a1[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"attention", NULL};
  char *a2[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"attention", (char *)"--shape", (char *)"qwen4b",
                (char *)"--positions", (char *)"1024,131072", (char *)"--variants", (char *)"shipped,3", NULL};
  char *const *cases[] = {a1, a2};
  for (int i = 0; i < 2; i++) {
    char *e = NULL;
    int rc = run(cases[i], &e, NULL);
    cr_assert_eq(rc, 2, "case %d: exit status %d; stderr: %s", i, rc, e ? e : "");
    cr_assert(e && is_one_line(e), "case %d: expected one line, got: %s", i, e ? e : "(null)");
    cr_assert(strstr(e, "bench attention") && (strstr(e, "no CUDA device") || strstr(e, "built without CUDA")),
              "%s", e);
    free(e);
  }
}

Test(bench_attn_cli, usage_errors_are_one_line_and_exit_2) {
  const char *bad[][2] = {
      {"--shape", "qwen9b"},        {"--shape", ""},           {"--variants", "v9"},
      {"--variants", "stream,x"},   {"--positions", "0"},      {"--positions", "1024,"},
      {"--positions", "2000000"},   {"--positions", "12a"},    {"--rows", "0"},
      {"--rows", "5000"},           {"--reps", "0"},           {"--warmup", "-1"},
      {"--splits", "70000"},        {"--json", ""},            {"--bogus", "1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"attention", (char *)bad[i][0], (char *)bad[i][1],
                    NULL};
    char *e = NULL;
    int rc = run(argv, &e, NULL);
    cr_assert_eq(rc, 2, "case %zu (%s %s): exit status %d; stderr: %s", i, bad[i][0], bad[i][1], rc, e ? e : "");
    cr_assert(e && is_one_line(e), "case %zu: expected one line, got: %s", i, e ? e : "(null)");
    cr_assert(strstr(e, "bench attention") && !strstr(e, "CUDA"), "case %zu: %s", i, e);
    free(e);
  }
}

Test(bench_attn_cli, help_is_exit_0) {
  char *argv[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"attention", (char *)"--help", NULL};
  char *e = NULL, *o = NULL;
  cr_assert_eq(run(argv, &e, &o), 0);
  cr_assert(o && strstr(o, "--positions") && strstr(o, "--variants"), "%s", o ? o : "");
  free(e);
  free(o);
}

Test(attn_lab, names_parse_and_sizes) {
  for (int v = 1; v <= ATTN_LAB_NVARIANTS; v++) {
    char d[4];
    snprintf(d, sizeof d, "%d", v);
    cr_assert_eq(attn_lab_parse(attn_lab_name(v)), v);
    cr_assert_eq(attn_lab_parse(d), v);
  }
  cr_assert_eq(attn_lab_parse("5"), 0);
  cr_assert_null(attn_lab_name(0));
  /* every variant nsplit partials of (2 + D) floats per (row, head); part_ml rounded up to a
     multiple of 4 floats so that part_acc after it is 16-byte aligned */
  cr_assert_eq(attn_lab_scratch_floats(36, 4, 64, 7), (size_t)36 * 4 * 7 * 66);
  cr_assert_eq(attn_lab_ml_floats(1, 1, 1), (size_t)4);
  cr_assert_eq(attn_lab_ml_floats(1, 1, 3), (size_t)8);
  cr_assert_eq(attn_lab_scratch_floats(1, 1, 16, 3), (size_t)8 + 3 * 16);
  for (int n = 1; n < 40; n++) cr_assert_eq(attn_lab_ml_floats(3, 5, n) % 4, (size_t)0);
  cr_assert(attn_lab_shape_ok(16, 4, 256) && attn_lab_shape_ok(40, 8, 128) && attn_lab_shape_ok(4, 2, 64));
  /* the transformers fixtures' shapes (the GPU runtime runs them through the shipped decode) */
  cr_assert(attn_lab_shape_ok(4, 2, 32) && attn_lab_shape_ok(4, 2, 16));
  cr_assert(!attn_lab_shape_ok(12, 4, 256) && !attn_lab_shape_ok(16, 4, 96) && !attn_lab_shape_ok(6, 4, 64));
  cr_assert(!attn_lab_shape_ok(4, 2, 8) && !attn_lab_shape_ok(4, 2, 512));
}

/* The shipped split count: one row puts at least one block on every SM, spread evenly; it has
 * neither R nor max_ctx among its arguments (row-count invariance, spec batches). */
Test(attn_lab, split_count_shipped) {
  cr_assert_eq(attn_lab_splits_shipped(2, 132), 66);  /* the fixture models: 132 blocks */
  cr_assert_eq(attn_lab_splits_shipped(4, 132), 33);  /* Qwen3.5-4B: 132 */
  cr_assert_eq(attn_lab_splits_shipped(8, 132), 33);  /* Nemotron-3-Nano-4B: 264 (17 gives 136) */
  cr_assert_eq(attn_lab_splits_shipped(1, 132), 132);
  for (int sms = 1; sms <= 160; sms++)
    for (int nkv = 1; nkv <= 16; nkv++) {
      const int n = attn_lab_splits_shipped(nkv, sms);
      const int n0 = (sms + nkv - 1) / nkv;
      cr_assert(n >= n0 && n <= 4 * n0, "nKV=%d sms=%d: %d splits", nkv, sms, n);
      cr_assert((long)nkv * n >= sms);
    }
  cr_assert_eq(attn_lab_splits_shipped(0, 132), 1);
  cr_assert_eq(attn_lab_splits_shipped(4, 0), 1);
}

/* The split count: at least 4 blocks per SM, the most even spread over the SMs, capped so that a
 * split holds 16 positions at max_ctx. */
Test(attn_lab, split_count) {
  /* one Qwen3.5-4B row: 4 pairs, n0 = 132 gives 528 = 4 x 132 blocks exactly */
  cr_assert_eq(attn_lab_splits(1, 4, 131072, 132), 132);
  /* 36 rows x 4 kv heads = 144 pairs: n0 = 4 (576 blocks, 5 waves of 132 for 4.36), 11 gives
     1584 = 12 x 132 exactly and is the first even one in [4, 16] */
  cr_assert_eq(attn_lab_splits(36, 4, 131072, 132), 11);
  for (int R = 1; R <= 64; R++)
    for (int nkv = 1; nkv <= 8; nkv *= 2) {
      int n = attn_lab_splits(R, nkv, 131072, 132);
      cr_assert((long)R * nkv * n >= 4 * 132, "R=%d nKV=%d: %d splits", R, nkv, n);
    }
  cr_assert_eq(attn_lab_splits(1, 1, 64, 132), 4); /* 64 positions / 16 */
  cr_assert_eq(attn_lab_splits(1, 1, 1, 132), 1);
}
