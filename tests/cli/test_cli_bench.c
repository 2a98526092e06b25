/* `replayssm bench`, run as the real executable (RSSM_BIN): the dispatcher's usage errors, and
 * `bench kernels` on a machine without a GPU (or in a build without CUDA): exit status 2 and one
 * line on stderr, no output file. Set RSSM_TEST_HAVE_GPU where a device is usable: the
 * no-device cases are then skipped (the command would start benchmarking). */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/cli/cli_test_util.h"

#ifndef RSSM_BIN
#error "RSSM_BIN is defined by rssm_add_criterion_test"
#endif

static const char *dir;

static void setup(void) {
  dir = tdir_make();
  cr_assert_not_null(dir, "mkdtemp failed");
}
static void teardown(void) { tdir_remove(dir); }

TestSuite(bench, .init = setup, .fini = teardown);

/* Runs `replayssm ARGS...` (NULL-terminated); returns the exit status (asserting a normal exit)
 * and the captured stderr (malloc'ed) in *err_text, stdout in *out_text (or NULL). */
#define replayssm(err_text, out_text, ...)                                                  \
  exit_status(run_captured(RSSM_BIN, dir, (err_text), (out_text), __VA_ARGS__), (err_text), \
              (out_text))

/* err_text is read here, after the run (an argument beside the run's could be read before it) */
static int exit_status(int st, char *const *err_text, char *const *out_text) {
  cr_assert_neq(st, -1, "could not run %s", RSSM_BIN);
  cr_assert_not_null(*err_text);
  if (out_text) cr_assert_not_null(*out_text);
  cr_assert(WIFEXITED(st), "terminated by signal %d; stderr: %s", WIFSIGNALED(st) ? WTERMSIG(st) : -1,
            *err_text);
  return WEXITSTATUS(st);
}

static int no_gpu_line(const char *e) {
  return is_one_line(e) && strncmp(e, "replayssm bench kernels: ", 25) == 0 &&
         (strstr(e, "no CUDA device") || strstr(e, "built without CUDA"));
}

Test(bench, kernels_without_a_gpu_is_one_line_and_status_2) {
  if (getenv("RSSM_TEST_HAVE_GPU")) return;
  char out[TPATH_MAX];
  tpath(out, dir, "k.csv");
  char *e, *o;
  cr_assert_eq(replayssm(&e, &o, "bench", "kernels", "--quick", "--out", out, NULL), 2, "%s", e);
  cr_assert(no_gpu_line(e), "stderr: [%s]", e);
  cr_assert_str_empty(o, "stdout: [%s]", o);
  cr_assert(!file_exists(out), "an output file was written");
  free(e);
  free(o);
  cr_assert_eq(replayssm(&e, NULL, "bench", "kernels", NULL), 2, "%s", e);
  cr_assert(no_gpu_line(e), "stderr: [%s]", e);
  free(e);
}

Test(bench, kernels_help_needs_no_gpu) {
  char *e, *o;
  cr_assert_eq(replayssm(&e, &o, "bench", "kernels", "--help", NULL), 0, "%s", e);
  cr_assert(strstr(o, "bench kernels") != NULL, "stdout: [%s]", o);
  free(e);
  free(o);
}

Test(bench, bad_usage_is_one_line_and_status_2) {
  const char *cases[][4] = {
      {"bench", NULL, NULL, NULL},
      {"bench", "nonsense", NULL, NULL},
      {"bench", "kernels", "--shapes", "gpt2"},
      {"bench", "kernels", "--batches", "0"},
      {"bench", "kernels", "--parts", "std,foo"},
      {"bench", "kernels", "--bogus", NULL},
      {"bench", "kernels", "--kernels", "v2"}, /* the kernel-version option is gone (one set ships) */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *e;
    int st = replayssm(&e, NULL, cases[i][0], cases[i][1], cases[i][2], cases[i][3], NULL);
    cr_assert_eq(st, 2, "case %zu: status %d, stderr: %s", i, st, e);
    cr_assert(is_one_line(e) && strncmp(e, "replayssm bench", 15) == 0, "case %zu: stderr: [%s]", i, e);
    free(e);
  }
}

Test(bench, listed_in_the_usage) {
  char *e, *o;
  cr_assert_eq(replayssm(&e, &o, "--help", NULL), 0);
  cr_assert(strstr(o, "  bench ") != NULL, "stdout: [%s]", o);
  free(e);
  free(o);
}
