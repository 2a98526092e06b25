/* The issue-17 targets of `replayssm bench kernels` (src/bench_kernels/targets.h) decided from
 * made-up measurements: each value is the right quotient of the right rows, the goal's side is
 * right (>= for speed-ups, <= for verification), a goal met exactly counts as met, rows that are
 * missing count as not measured and a failed check as check FAIL, and the table and CSV say so.
 * No timing happens here: every time below is invented, chosen so that the quotients are exact
 * in binary floating point (powers of two over small integers) where a test compares them. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench_kernels/targets.h"

static const char *const conv = "conventional state=fp32", *const rep = "replay L=16 ckpt=fp32";

static bk_meas std_row(const char *sh, const char *cfg, int B, double us, double pct) {
  bk_meas m = {"std", sh, cfg, "", B, 16, 0, 0, us, pct, "pass"};
  return m;
}
static bk_meas lp_row(const char *sh, const char *fmt, double us) {
  bk_meas m = {"lp", sh, "replay L=16 hp=fp32 lp=x", fmt, 256, 16, 0, 0, us, 10.0, "pass"};
  return m;
}
static bk_meas spec_row(const char *sh, const char *variant, int T, int a, double us) {
  bk_meas m = {"spec", sh, "spec L=16 T=8 ckpt=fp32 accept=fixed:1", variant, 256, 16, T, a, us, 5.0,
               "pass"};
  return m;
}

static const bk_target *get(const bk_target *t, int n, const char *target, const char *shape) {
  for (int i = 0; i < n; i++)
    if (strcmp(t[i].target, target) == 0 && strcmp(t[i].shape, shape) == 0) return &t[i];
  cr_assert_fail("no row %s / %s", target, shape);
  return NULL;
}

/* Shape A meets every target, shape B misses every one, shape C has nothing measured. */
static int make(bk_meas *m) {
  int n = 0;
  /* A: conventional 85 % exactly (met at the boundary); replay 2x at 256, 1x at 1 */
  m[n++] = std_row("A", conv, 256, 800.0, 85.0);
  m[n++] = std_row("A", rep, 256, 400.0, 47.0);
  m[n++] = std_row("A", conv, 1, 10.0, 5.0);
  m[n++] = std_row("A", rep, 1, 10.0, 3.0);
  m[n++] = lp_row("A", "fp32", 600.0);
  m[n++] = lp_row("A", "bf16", 400.0);  /* 1.5x exactly */
  m[n++] = lp_row("A", "fp8", 300.0);   /* 2x */
  m[n++] = lp_row("A", "nvfp4", 150.0); /* 4x */
  m[n++] = spec_row("A", "snapshot", 8, 0, 5000.0); /* the wrong variant must not be taken */
  m[n++] = spec_row("A", "output-only", 4, 1, 9999.0); /* nor another T */
  m[n++] = spec_row("A", "output-only", 8, 8, 9999.0); /* nor another a */
  m[n++] = spec_row("A", "output-only", 8, 1, 1000.0); /* 1.25x */
  /* B: 60 %, 1.25x, 0.5x, and slow low-precision reads, verify 2.5x */
  m[n++] = std_row("B", conv, 256, 800.0, 60.0);
  m[n++] = std_row("B", rep, 256, 640.0, 40.0);
  m[n++] = std_row("B", conv, 1, 10.0, 5.0);
  m[n++] = std_row("B", rep, 1, 20.0, 3.0);
  m[n++] = lp_row("B", "fp32", 600.0);
  m[n++] = lp_row("B", "bf16", 750.0);
  m[n++] = lp_row("B", "fp8", 750.0);
  m[n++] = lp_row("B", "nvfp4", 800.0);
  m[n++] = spec_row("B", "output-only", 8, 1, 2000.0);
  /* the same rows of another batch size must be ignored */
  m[n++] = std_row("B", conv, 128, 1.0, 99.0);
  m[n++] = std_row("B", rep, 128, 1.0, 99.0);
  return n;
}

Test(bench_targets, values_and_verdicts) {
  bk_meas m[40];
  int n = make(m);
  const char *shapes[] = {"A", "B", "C"};
  bk_target t[3 * BK_N_TARGETS];
  int nt = bk_targets_eval(m, n, shapes, 3, t);
  cr_assert_eq(nt, 3 * BK_N_TARGETS);
  struct {
    const char *target;
    double a, b;
  } want[] = {
      {"conv_pct", 85.0, 60.0}, {"replay_256", 2.0, 1.25}, {"replay_1", 1.0, 0.5},
      {"lp_nvfp4", 4.0, 0.75},  {"lp_fp8", 2.0, 0.8},      {"lp_bf16", 1.5, 0.8},
      {"verify_t8", 1.25, 2.5},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    const bk_target *a = get(t, nt, want[i].target, "A"), *b = get(t, nt, want[i].target, "B");
    const bk_target *c = get(t, nt, want[i].target, "C");
    cr_assert_float_eq(a->value, want[i].a, 1e-12, "%s A: %g", want[i].target, a->value);
    cr_assert_float_eq(b->value, want[i].b, 1e-12, "%s B: %g", want[i].target, b->value);
    cr_assert_eq(a->verdict, BK_MET, "%s A", want[i].target);
    cr_assert_eq(b->verdict, BK_MISSED, "%s B", want[i].target);
    cr_assert_eq(c->verdict, BK_UNMEASURED, "%s C", want[i].target);
    cr_assert_lt(c->value, 0.0);
  }
  /* the goals of the table */
  cr_assert_float_eq(get(t, nt, "conv_pct", "A")->goal, 85.0, 0.0);
  cr_assert_float_eq(get(t, nt, "replay_256", "A")->goal, 1.6, 0.0);
  cr_assert_float_eq(get(t, nt, "replay_1", "A")->goal, 0.9, 0.0);
  cr_assert_float_eq(get(t, nt, "lp_nvfp4", "A")->goal, 3.0, 0.0);
  cr_assert_float_eq(get(t, nt, "lp_fp8", "A")->goal, 2.0, 0.0);
  cr_assert_float_eq(get(t, nt, "lp_bf16", "A")->goal, 1.5, 0.0);
  cr_assert_float_eq(get(t, nt, "verify_t8", "A")->goal, 1.3, 0.0);
  cr_assert(get(t, nt, "verify_t8", "A")->at_most);
  cr_assert(!get(t, nt, "replay_1", "A")->at_most);
}

Test(bench_targets, failed_checks_and_missing_rows) {
  bk_meas m[40];
  int n = make(m);
  /* A's nvfp4 read failed its bit-identity check (its time is then not measured, -1) */
  for (int i = 0; i < n; i++)
    if (strcmp(m[i].shape, "A") == 0 && strcmp(m[i].variant, "nvfp4") == 0) {
      m[i].check = "FAIL";
      m[i].us = -1.0;
    }
  /* B's replay at B = 1 was not measured (e.g. --batches 256) */
  for (int i = 0; i < n; i++)
    if (strcmp(m[i].shape, "B") == 0 && m[i].B == 1 && strcmp(m[i].config, rep) == 0) m[i].us = -1.0;
  const char *shapes[] = {"A", "B"};
  bk_target t[2 * BK_N_TARGETS];
  int nt = bk_targets_eval(m, n, shapes, 2, t);
  cr_assert_eq(get(t, nt, "lp_nvfp4", "A")->verdict, BK_CHECK_FAILED);
  cr_assert_eq(get(t, nt, "replay_1", "B")->verdict, BK_UNMEASURED);
  cr_assert_eq(get(t, nt, "lp_fp8", "A")->verdict, BK_MET, "the other formats are unaffected");
  /* a failed conventional check fails every target that divides by it */
  for (int i = 0; i < n; i++)
    if (strcmp(m[i].shape, "B") == 0 && m[i].B == 256 && strcmp(m[i].config, conv) == 0) m[i].check = "FAIL";
  nt = bk_targets_eval(m, n, shapes, 2, t);
  cr_assert_eq(get(t, nt, "conv_pct", "B")->verdict, BK_CHECK_FAILED);
  cr_assert_eq(get(t, nt, "replay_256", "B")->verdict, BK_CHECK_FAILED);
  cr_assert_eq(get(t, nt, "verify_t8", "B")->verdict, BK_CHECK_FAILED);
}

static char *render(const bk_target *t, int n, int csv) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  cr_assert(f);
  if (csv) cr_assert_eq(bk_targets_write_csv(f, t, n), 0);
  else bk_targets_print(f, t, n);
  fclose(f);
  return buf;
}

Test(bench_targets, table_and_csv) {
  bk_meas m[40];
  int n = make(m);
  const char *shapes[] = {"A", "B", "C"};
  bk_target t[3 * BK_N_TARGETS];
  int nt = bk_targets_eval(m, n, shapes, 3, t);
  char *txt = render(t, nt, 0);
  cr_assert(strstr(txt, "conv_pct   A                         85.0 %    >=85 %  met"), "%s", txt);
  cr_assert(strstr(txt, "replay_256 B                          1.25x    >=1.6x  missed"), "%s", txt);
  cr_assert(strstr(txt, "verify_t8  A                          1.25x    <=1.3x  met"), "%s", txt);
  cr_assert(strstr(txt, "lp_nvfp4   C                              -    >=3.0x  not measured"), "%s", txt);
  cr_assert(strstr(txt, "targets: 7 met, 7 missed, 7 not measured, 0 check failed (of 21)\n"), "%s", txt);
  free(txt);
  char *csv = render(t, nt, 1);
  cr_assert(strncmp(csv, "target,shape,value,unit,goal,sense,verdict\n", 43) == 0, "%s", csv);
  cr_assert(strstr(csv, "\nlp_bf16,A,1.5,x,1.5,>=,met\n"), "%s", csv);
  cr_assert(strstr(csv, "\nconv_pct,B,60,pct,85,>=,missed\n"), "%s", csv);
  cr_assert(strstr(csv, "\nverify_t8,B,2.5,x,1.3,<=,missed\n"), "%s", csv);
  cr_assert(strstr(csv, "\nreplay_1,C,-1,x,0.9,>=,not measured\n"), "%s", csv);
  free(csv);
}
