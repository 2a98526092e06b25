/* `replayssm bench gemm` without a GPU (the CPU machine of CI): one line and exit status 2 for a
 * build without CUDA or a machine without a device; every usage error one line and exit 2 (the
 * options are parsed in both builds); --help exit 0. And the lab's pure-C helpers (names, the
 * split count) and the step's GEMMs read from the models' config.json. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench_gemm/bench_gemm.h"
#include "src/model_cuda/gemm_lab.h"
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

TestSuite(bench_gemm_cli, .init = setup, .fini = teardown);

Test(bench_gemm_cli, no_device_is_one_line_and_exit_2) {
  if (getenv("RSSM_TEST_HAVE_GPU")) return; /* the GPU machine: the command would run */
  char *a1[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"gemm", NULL};
  char *a2[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"gemm", (char *)"--shape", (char *)"qwen4b,qwen-tiny",
                (char *)"--rows", (char *)"1,16,64", (char *)"--prec", (char *)"bf16", (char *)"--variants",
                (char *)"stream,0", (char *)"--tile", (char *)"16", NULL};
  char *const *cases[] = {a1, a2};
  for (int i = 0; i < 2; i++) {
    char *e = NULL;
    int rc = run(cases[i], &e, NULL);
    cr_assert_eq(rc, 2, "case %d: exit status %d; stderr: %s", i, rc, e ? e : "");
    cr_assert(e && is_one_line(e), "case %d: expected one line, got: %s", i, e ? e : "(null)");
    cr_assert(strstr(e, "bench gemm") && (strstr(e, "no CUDA device") || strstr(e, "built without CUDA")), "%s", e);
    free(e);
  }
}

Test(bench_gemm_cli, usage_errors_are_one_line_and_exit_2) {
  const char *bad[][2] = {
      {"--shape", "qwen9b"}, {"--shape", ""},      {"--shape", "tiny"},  {"--prec", "fp16"},
      {"--prec", ""},        {"--variants", "v9"}, {"--variants", "16"}, {"--variants", "stream,x"},
      {"--rows", "0"},       {"--rows", "65"},     {"--rows", "16,"},    {"--rows", "1a"},
      {"--reps", "0"},       {"--warmup", "-1"},   {"--tile", "65"},     {"--bogus", "1"},
      {"--flush", "maybe"},  {"--flush", ""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char *argv[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"gemm", (char *)bad[i][0], (char *)bad[i][1], NULL};
    char *e = NULL;
    int rc = run(argv, &e, NULL);
    cr_assert_eq(rc, 2, "case %zu (%s %s): exit status %d; stderr: %s", i, bad[i][0], bad[i][1], rc, e ? e : "");
    cr_assert(e && is_one_line(e), "case %zu: expected one line, got: %s", i, e ? e : "(null)");
    cr_assert(strstr(e, "bench gemm") && !strstr(e, "CUDA"), "case %zu: %s", i, e);
    free(e);
  }
}

Test(bench_gemm_cli, help_is_exit_0_and_bench_lists_gemm) {
  char *argv[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"gemm", (char *)"--help", NULL};
  char *e = NULL, *o = NULL;
  cr_assert_eq(run(argv, &e, &o), 0);
  cr_assert(o && strstr(o, "--rows") && strstr(o, "--prec") && strstr(o, "--tile"), "%s", o ? o : "");
  free(e);
  free(o);
  char *a2[] = {(char *)RSSM_BIN, (char *)"bench", (char *)"--help", NULL};
  cr_assert_eq(run(a2, &e, &o), 0);
  cr_assert(o && strstr(o, "bench gemm"), "%s", o ? o : "");
  free(e);
  free(o);
}

/* The parser's defaults and lists, in-process. */
Test(bench_gemm_cli, parse_defaults_and_lists) {
  bg_options o;
  char *a1[] = {(char *)"gemm", NULL};
  cr_assert_eq(bg_parse(1, a1, &o), 0);
  cr_assert_eq(o.nmodels, 4);
  cr_assert(o.nrows == 2 && o.rows[0] == 16 && o.rows[1] == 64);
  cr_assert(o.nprecs == 2 && o.precs[0] == GEMM_LAB_FP32 && o.precs[1] == GEMM_LAB_BF16);
  cr_assert(o.nvariants == GEMM_LAB_NVARIANTS && o.reps == 20 && o.tile == 0 && o.flush == 1);
  char *a2[] = {(char *)"gemm", (char *)"--shape", (char *)"nano4b", (char *)"--rows", (char *)"1,7,64",
                (char *)"--variants", (char *)"splitk,cublas", (char *)"--prec=bf16", (char *)"--flush",
                (char *)"off", NULL};
  cr_assert_eq(bg_parse(10, a2, &o), 0);
  cr_assert_eq(o.flush, 0);
  cr_assert(o.nmodels == 1 && o.models[0] == 3);
  cr_assert(o.nrows == 3 && o.rows[1] == 7 && o.rows[2] == 64);
  cr_assert(o.nvariants == 2 && o.variants[0] == GEMM_LAB_SPLITK && o.variants[1] == GEMM_LAB_CUBLAS);
  cr_assert(o.nprecs == 1 && o.precs[0] == GEMM_LAB_BF16);
}

Test(gemm_lab, names_chunks_and_splits) {
  for (int v = 0; v < GEMM_LAB_NVARIANTS; v++) {
    char d[4];
    snprintf(d, sizeof d, "%d", v);
    cr_assert_eq(gemm_lab_parse(gemm_lab_name(v)), v);
    cr_assert_eq(gemm_lab_parse(d), v);
  }
  cr_assert_eq(gemm_lab_parse("16"), -1);
  cr_assert_eq(gemm_lab_parse("lt8"), -1);
  cr_assert_eq(gemm_lab_parse("lt7"), GEMM_LAB_LT0 + 7);
  cr_assert_eq(gemm_lab_parse("lt"), -1);
  cr_assert_eq(gemm_lab_parse("lt0"), GEMM_LAB_LT0);
  cr_assert_eq(gemm_lab_parse("11"), GEMM_LAB_LT0 + 3);
  cr_assert_eq(gemm_lab_parse("wide"), GEMM_LAB_WIDE);
  cr_assert_eq(gemm_lab_parse("mma"), -1);
  cr_assert_eq(gemm_lab_parse("stream4"), GEMM_LAB_STREAM4);
  cr_assert_eq(gemm_lab_parse("mma8"), GEMM_LAB_MMA8);
  cr_assert_eq(gemm_lab_parse("mma16"), GEMM_LAB_MMA16);
  cr_assert_null(gemm_lab_name(GEMM_LAB_NVARIANTS));
  cr_assert_null(gemm_lab_name(-1));
  /* which variants are THE FIXED ORDER (bit-exact, row-invariant required) and which precisions
     each runs at (the tensor-core kernel: bf16 only) */
  for (int v = 0; v < GEMM_LAB_NVARIANTS; v++) {
    const int order = v == GEMM_LAB_STREAM || v == GEMM_LAB_SPLITK || v == GEMM_LAB_STREAM4;
    const int lt = v >= GEMM_LAB_LT0 ? v - GEMM_LAB_LT0 : -1;
    const int mma = v == GEMM_LAB_MMA4 || v == GEMM_LAB_MMA8 || v == GEMM_LAB_MMA16 ||
                    v == GEMM_LAB_WIDE || lt >= 0; /* tensor cores: bf16 only */
    cr_assert_eq(gemm_lab_lt_rank(v), lt, "variant %d", v);
    cr_assert_eq(gemm_lab_is_tiled(v), v == GEMM_LAB_CUBLAS || lt >= 0, "variant %d", v);
    cr_assert_eq(gemm_lab_is_order(v), order, "variant %d", v);
    cr_assert_eq(gemm_lab_has_prec(v, GEMM_LAB_BF16), 1, "variant %d", v);
    cr_assert_eq(gemm_lab_has_prec(v, GEMM_LAB_FP32), !mma, "variant %d", v);
    cr_assert_eq(gemm_lab_mma_warps(v),
                 v == GEMM_LAB_MMA4 ? 4 : v == GEMM_LAB_MMA8 ? 8 : v == GEMM_LAB_MMA16 ? 16 : 0,
                 "variant %d", v);
  }
  cr_assert_eq(gemm_lab_has_prec(GEMM_LAB_NVARIANTS, GEMM_LAB_BF16), 0);
  cr_assert_eq(gemm_lab_rows_alloc(GEMM_LAB_MMA4, 17, 16), 17);
  cr_assert(gemm_lab_chunk(GEMM_LAB_BF16) == 8 && gemm_lab_chunk(GEMM_LAB_FP32) == 4);
  cr_assert_eq(gemm_lab_rows_alloc(GEMM_LAB_CUBLAS, 17, 16), 32);
  cr_assert_eq(gemm_lab_rows_alloc(GEMM_LAB_CUBLAS, 9, 64), 64);
  cr_assert_eq(gemm_lab_rows_alloc(GEMM_LAB_LT0 + 2, 17, 16), 32); /* on cuBLAS's tiles */
  cr_assert_eq(gemm_lab_rows_alloc(GEMM_LAB_STREAM, 17, 16), 17);
  cr_assert_eq(gemm_lab_rows_alloc(GEMM_LAB_STREAM4, 17, 16), 17);
  /* the 4B shapes: every weight has >= 2560 rows = 320 blocks per row group >= 2 x 132 */
  cr_assert_eq(gemm_lab_splits(2560, 4096, GEMM_LAB_BF16, 132), 1);
  cr_assert_eq(gemm_lab_splits(248320, 2560, GEMM_LAB_FP32, 132), 1);
  /* the tiny models' 256 x 256 (32 blocks): 9 splits wanted, capped at one chunk per lane */
  cr_assert_eq(gemm_lab_splits(256, 256, GEMM_LAB_BF16, 132), 1);  /* 32 chunks */
  cr_assert_eq(gemm_lab_splits(256, 256, GEMM_LAB_FP32, 132), 2);  /* 64 chunks */
  cr_assert_eq(gemm_lab_splits(256, 768, GEMM_LAB_FP32, 132), 6);  /* 192 chunks */
  cr_assert_eq(gemm_lab_splits(8, 1 << 20, GEMM_LAB_FP32, 132), GEMM_LAB_MAX_SPLITS);
  for (int64_t rows = 1; rows < 3000; rows += 37)
    for (int64_t cols = 1; cols < 5000; cols += 311) {
      const int n = gemm_lab_splits(rows, cols, GEMM_LAB_BF16, 132);
      cr_assert(n >= 1 && n <= GEMM_LAB_MAX_SPLITS);
    }
  /* bf16 rounding: ties to even, the carry into the exponent, NaN stays NaN */
  cr_assert_eq(gemm_lab_bf16_rne(1.0f), 0x3f80);
  cr_assert_eq(gemm_lab_bf16_rne(1.00390625f), 0x3f80);   /* 1 + 2^-8: tie, to even */
  cr_assert_eq(gemm_lab_bf16_rne(1.01171875f), 0x3f82);   /* 1 + 3 2^-8: tie, to even (up) */
  cr_assert_eq(gemm_lab_bf16_rne(-1.0f), 0xbf80);
  cr_assert_eq(gemm_lab_bf16_rne(3.4e38f), 0x7f80);       /* rounds up to infinity */
  cr_assert_eq(gemm_lab_bf16_rne(__builtin_nanf("")) & 0x7fc0, 0x7fc0);
}

/* The step's GEMMs from the models' config.json (the shapes the bench times). */
Test(gemm_lab, step_gemms_of_the_models) {
  int nm = 0;
  const bg_model *m = bg_models(&nm);
  cr_assert_eq(nm, 4);
  for (int i = 0; i < nm; i++) {
    char path[4096], err[512];
    snprintf(path, sizeof path, "%s/%s", RSSM_SOURCE_DIR, m[i].dir);
    model_config c;
    cr_assert_eq(model_config_load(path, &c, err, sizeof err), 0, "%s: %s", path, err);
    bg_step s;
    cr_assert_eq(bg_step_of(&c, &s), 0);
    if (i == 0) { /* qwen35-gdn-tiny: 6 GDN + 2 attention layers, each with a SwiGLU MLP */
      cr_assert_eq(s.nseq, 33);
      cr_assert_eq(s.n, 7); /* gdn.in, gdn.out, mlp.in, mlp.out, attn.in, attn.out, lm_head */
      cr_assert(strcmp(s.g[0].name, "gdn.in") == 0 && s.g[0].rows == 1032 && s.g[0].cols == 256 && s.g[0].count == 6);
      cr_assert(strcmp(s.g[s.seq[s.nseq - 1]].name, "lm_head") == 0);
      cr_assert_eq(bg_step_weight_elems(&s), 6 * 1032 * 256 + 8 * 256 * 256 + 2 * 768 * 256 + 8 * 1536 * 256 +
                                                 8 * 256 * 768 + 256 * 256);
    }
    if (i == 2) { /* Qwen3.5-4B: ~16.8 GB of fp32 GEMM weights (docs/gpu-runtime.md) */
      const double gb = 4.0 * (double)bg_step_weight_elems(&s) * 1e-9;
      cr_assert(gb > 15.5 && gb < 18.0, "%.2f GB", gb);
      cr_assert_eq(s.nseq, 2 * 32 * 2 + 1);
    }
    for (int k = 0; k < s.nseq; k++) cr_assert(s.inst[k] < s.g[s.seq[k]].count);
    model_config_free(&c);
  }
}
