/* `bench kernels`' command line (src/bench_kernels/bk_options.h) on the CPU: the defaults, --quick
 * and --targets-only and their order, the shape and part lists, and every bad value answered with
 * exit status 2 (one line on stderr), nothing run. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <string.h>

#include "src/bench_kernels/bk_options.h"

/* argv of `kernels ARGS...` (at most 15 arguments) into *o; returns bk_parse_args' status. */
static int parse(bk_options *o, const char *const *args) {
  char *argv[16] = {(char *)"kernels"};
  int argc = 1;
  for (; args[argc - 1] && argc < 16; argc++) argv[argc] = (char *)args[argc - 1];
  memset(o, 0x5a, sizeof *o); /* nothing may survive from before */
  return bk_parse_args(argc, argv, o);
}

Test(bk_options, defaults) {
  bk_options o;
  const char *args[] = {NULL};
  cr_assert_eq(parse(&o, args), 0);
  cr_assert_eq(o.nshapes, BK_N_SHAPES);
  for (int i = 0; i < BK_N_SHAPES; i++) cr_assert_eq(o.shapes[i], i);
  cr_assert_eq(o.nbatches, 10);
  cr_assert(o.batches[0] == 1 && o.batches[9] == 512);
  cr_assert(o.nwindows == 5 && o.windows[0] == 4 && o.windows[4] == 64);
  cr_assert(o.ndrafts == 5 && o.drafts[4] == 8);
  cr_assert(o.nlp == 6 && strcmp(o.lp_formats[5], "mxfp4") == 0);
  cr_assert_eq(o.parts, BK_P_STD | BK_P_WINDOW | BK_P_SPEC | BK_P_LP | BK_P_SKIP);
  cr_assert(o.iters == 15 && o.warmup == 3 && o.check_batch == 6);
  cr_assert(o.skip_threshold == 1e-3);
  cr_assert(o.out == NULL && o.targets_out == NULL && !o.quick && !o.targets_only);
  cr_assert(strcmp(bk_shapes[2].key, "qwen4b") == 0 && bk_shapes[2].d.H == 32);
}

/* --targets-only applies after --quick: its lists win, --quick's counts stay. */
Test(bk_options, quick_then_targets_only) {
  bk_options o;
  const char *quick[] = {"--quick", NULL};
  cr_assert_eq(parse(&o, quick), 0);
  cr_assert(o.nbatches == 2 && o.batches[1] == 256 && o.nwindows == 3 && o.ndrafts == 2);
  cr_assert(o.nlp == 2 && strcmp(o.lp_formats[1], "nvfp4") == 0 && o.iters == 5 && o.warmup == 2);
  const char *both[] = {"--targets-only", "--quick", NULL};
  cr_assert_eq(parse(&o, both), 0);
  cr_assert_eq(o.parts, BK_P_STD | BK_P_SPEC | BK_P_LP);
  cr_assert(o.ndrafts == 1 && o.drafts[0] == 8);
  cr_assert(o.nlp == 4 && strcmp(o.lp_formats[3], "nvfp4") == 0);
  cr_assert(o.iters == 5);
}

Test(bk_options, lists_and_counts) {
  bk_options o;
  const char *args[] = {"--shapes", "qwen4b,nano", "--batches", "3,65535", "--parts", "spec,skip",
                        "--iters", "10000", "--warmup", "0", "--check-batch", "64",
                        "--skip-threshold", "0.25", NULL};
  cr_assert_eq(parse(&o, args), 0);
  cr_assert(o.nshapes == 2 && o.shapes[0] == 2 && o.shapes[1] == 0);
  cr_assert(o.nbatches == 2 && o.batches[0] == 3 && o.batches[1] == 65535);
  cr_assert_eq(o.parts, BK_P_SPEC | BK_P_SKIP);
  cr_assert(o.iters == 10000 && o.warmup == 0 && o.check_batch == 64);
  cr_assert(o.skip_threshold == 0.25);
}

Test(bk_options, help_is_not_a_run, .init = cr_redirect_stdout) {
  bk_options o;
  const char *args[] = {"--help", NULL};
  cr_assert_eq(parse(&o, args), -1);
}

/* Every bad value: status 2 and one line on stderr naming the option. */
Test(bk_options, bad_values, .init = cr_redirect_stderr) {
  const char *bad[][3] = {
      {"--shapes", "qwen4b,mamba"}, {"--shapes", ","},         {"--batches", "0"},
      {"--batches", "65536"},       {"--batches", "1,x"},      {"--parts", "std,all"},
      {"--parts", ","},             {"--iters", "0"},          {"--iters", "10001"},
      {"--warmup", "-1"},           {"--check-batch", "65"},   {"--skip-threshold", "1"},
      {"--skip-threshold", "0"},    {"--skip-threshold", "1e-3x"}, {"--out", ""},
      {"--bogus", "1"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    bk_options o;
    const char *args[] = {bad[i][0], bad[i][1], NULL};
    cr_assert_eq(parse(&o, args), 2, "%s %s accepted", bad[i][0], bad[i][1]);
  }
}
