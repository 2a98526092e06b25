/* `replayssm quant`, run as the real executable (RSSM_BIN): bad inputs give exit status 2 and one
 * line on stderr; fp32 is the identity; fp8 matches an independent implementation of SPEC
 * section 3's rule bit for bit; SR stays on the two grid neighbours and follows the seed. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "src/io/npy.h"
#include "tests/cli/cli_test_util.h"

#ifndef RSSM_BIN
#error "RSSM_BIN is defined by rssm_add_criterion_test"
#endif

static const char *dir;
static char err[1024];

static void setup(void) {
  dir = tdir_make();
  cr_assert_not_null(dir, "mkdtemp failed");
}
static void teardown(void) { tdir_remove(dir); }

TestSuite(cli, .init = setup, .fini = teardown);

/* Runs `replayssm ARGS...` (NULL-terminated); the wait status, stderr (malloc'ed) in *t. */
#define replayssm(t, ...) run_captured(RSSM_BIN, dir, (t), NULL, __VA_ARGS__)

/* exit status exactly 2 (not a signal), stderr one line holding every keyword, no output file */
static void expect_input_error(int st, char *text, const char *out, const char *k1,
                               const char *k2) {
  cr_assert(st != -1 && text != NULL, "could not run %s", RSSM_BIN);
  cr_assert(WIFEXITED(st), "terminated by signal %d; stderr: %s",
            WIFSIGNALED(st) ? WTERMSIG(st) : -1, text);
  cr_assert_eq(WEXITSTATUS(st), 2, "exit status %d; stderr: %s", WEXITSTATUS(st), text);
  cr_assert(is_one_line(text), "stderr is not a single line: [%s]", text);
  cr_assert(strstr(text, k1) != NULL, "'%s' not in stderr: %s", k1, text);
  if (k2) cr_assert(strstr(text, k2) != NULL, "'%s' not in stderr: %s", k2, text);
  if (out) cr_assert(!file_exists(out), "%s was written despite the error", out);
  cr_assert_eq(count_entries_containing(dir, ".tmp."), 0, "a temporary file was left behind");
  free(text);
}

static void expect_ok(int st, char *text) {
  cr_assert(st != -1 && text != NULL, "could not run %s", RSSM_BIN);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d; stderr: %s", st, text);
  cr_assert_str_empty(text, "unexpected stderr: %s", text);
  free(text);
}

/* The wait status and stderr of one run, checked (a macro, so that the run happens first). */
#define BAD(out, k1, k2, ...)                             \
  do {                                                    \
    char *t_;                                             \
    int st_ = replayssm(&t_, __VA_ARGS__, NULL);          \
    expect_input_error(st_, t_, out, k1, k2);             \
  } while (0)
#define RUN_OK(...)                                       \
  do {                                                    \
    char *t_;                                             \
    int st_ = replayssm(&t_, __VA_ARGS__, NULL);          \
    expect_ok(st_, t_);                                   \
  } while (0)

/* Random values spread over 2^emin..2^emax, never zero. */
static float *random_array(int64_t n, uint64_t seed, int emin, int emax) {
  float *x = malloc((size_t)(n ? n : 1) * sizeof *x); /* [n] */
  cr_assert_not_null(x);
  for (int64_t i = 0; i < n; i++) x[i] = rng_spread(&seed, emin, emax);
  return x;
}

static void save(const char *path, int ndim, const int64_t *dim, const float *x) {
  cr_assert_eq(npy_save_f32(path, ndim, dim, x, err, sizeof err), RSSM_OK, "%s", err);
}

static void load(const char *path, npy_f32 *a, int ndim, const int64_t *dim) {
  cr_assert_eq(npy_load_f32(path, a, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(a->shape.ndim, ndim);
  for (int d = 0; d < ndim; d++) cr_assert_eq(a->shape.dim[d], dim[d], "axis %d", d);
}

static uint32_t bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* --- an independent E4M3 (OCP FN: bias 7, 3 mantissa bits, max 448, no infinities) ---------- */

/* The spacing of the E4M3 grid around magnitude a: 2^(e-3) in the binade [2^e, 2^(e+1)), and
 * the subnormal spacing 2^-9 below 2^-6. */
static float e4m3_step(float a) {
  int e;
  frexpf(a, &e); /* a = m 2^e, m in [0.5, 1): the binade is 2^(e-1) */
  int ex = e - 1;
  if (ex < -6) ex = -6;
  return ldexpf(1.0f, ex - 3);
}

/* round to nearest, ties to even, saturating at +-448; the sign of zero is kept */
static float e4m3_rne(float v) {
  float a = fabsf(v);
  if (a >= 448.0f) return copysignf(448.0f, v);
  float step = e4m3_step(a);
  /* a / step is exact (a power of two); rintf rounds half to even in the default mode, and an
   * even multiple of the step is an even mantissa code, also at a binade's upper edge */
  float r = rintf(a / step) * step;
  if (r > 448.0f) r = 448.0f;
  return copysignf(r, v);
}

/* the grid neighbours lo <= |v| <= hi of |v| */
static void e4m3_neighbours(float v, float *lo, float *hi) {
  float a = fabsf(v);
  if (a >= 448.0f) {
    *lo = *hi = 448.0f;
    return;
  }
  float step = e4m3_step(a);
  *lo = floorf(a / step) * step;
  *hi = *lo == a ? a : *lo + step;
}

/* SPEC section 3, fp8: per block of `block` along the last axis, s = amax/448 (1 where amax is
 * 0), code = round(x / s), value = code * s; all in fp32. */
static void fp8_reference(const float *x, float *y, int64_t nrows, int64_t cols, int block) {
  for (int64_t r = 0; r < nrows; r++) {
    for (int64_t b0 = 0; b0 < cols; b0 += block) {
      int64_t b1 = b0 + block < cols ? b0 + block : cols;
      float amax = 0.0f;
      for (int64_t c = b0; c < b1; c++) amax = fmaxf(amax, fabsf(x[r * cols + c]));
      float s = amax == 0.0f ? 1.0f : amax / 448.0f;
      for (int64_t c = b0; c < b1; c++) y[r * cols + c] = e4m3_rne(x[r * cols + c] / s) * s;
    }
  }
}

Test(cli, e4m3_reference_is_right) {
  /* the reference itself, against values worked out by hand */
  cr_assert_eq(e4m3_rne(1.0625f), 1.0f);           /* tie between 1 and 1.125: even is 1 */
  cr_assert_eq(e4m3_rne(1.1875f), 1.25f);          /* tie between 1.125 and 1.25 */
  cr_assert_eq(e4m3_rne(1.07f), 1.125f);
  cr_assert_eq(e4m3_rne(15.5f), 16.0f);            /* binade edge: 15 and 16, even is 16 */
  cr_assert_eq(e4m3_rne(-300.0f), -288.0f);        /* spacing 32 in [256, 448] */
  cr_assert_eq(e4m3_rne(440.0f), 448.0f);
  cr_assert_eq(e4m3_rne(1000.0f), 448.0f);         /* saturation */
  cr_assert_eq(e4m3_rne(0x1p-9f), 0x1p-9f);        /* smallest subnormal */
  cr_assert_eq(e4m3_rne(0x3p-10f), 0x1p-8f);       /* 1.5 * 2^-9: tie, even is 2 * 2^-9 */
  cr_assert_eq(e4m3_rne(0x1p-10f), 0.0f);          /* tie between 0 and 2^-9 */
  cr_assert_eq(bits(e4m3_rne(-0x1p-12f)), bits(-0.0f));
  cr_assert_eq(e4m3_rne(0x1.1p-7f), 0x1p-7f);      /* subnormal spacing 2^-9 below 2^-6 */
}

/* --- bad input ---------------------------------------------------------------------------- */

Test(cli, bad_inputs_exit_2_with_one_line) {
  char in[TPATH_MAX], out[TPATH_MAX], p[TPATH_MAX];
  tpath(in, dir, "in.npy");
  tpath(out, dir, "out.npy");
  static const int64_t d[2] = {4, 8};
  float *x = random_array(32, 11, -4, 4);
  save(in, 2, d, x);

  /* missing input file */
  BAD(out, "absent.npy", "No such file", "quant", "--format", "fp8",
      tpath(p, dir, "absent.npy"), out);
  /* truncated: the last 4 bytes cut off */
  size_t n;
  char *raw = slurp(in, &n);
  cr_assert_not_null(raw);
  cr_assert_eq(write_bytes(tpath(p, dir, "short.npy"), raw, n - 4), 0);
  BAD(out, "short.npy", "truncated", "quant", "--format", "fp8", p, out);
  /* truncated inside the header */
  cr_assert_eq(write_bytes(tpath(p, dir, "stub.npy"), raw, 30), 0);
  BAD(out, "stub.npy", "header length", "quant", "--format", "fp8", p, out);
  /* wrong magic */
  raw[0] = 'P';
  cr_assert_eq(write_bytes(tpath(p, dir, "magic.npy"), raw, n), 0);
  BAD(out, "magic.npy", "magic", "quant", "--format", "fp8", p, out);
  free(raw);
  /* not float32 */
  double dd[4] = {1, 2, 3, 4};
  cr_assert_eq(write_npy_raw(tpath(p, dir, "f64.npy"), 1,
                             "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", dd,
                             sizeof dd), 0);
  BAD(out, "dtype '<f8'", "'<f4'", "quant", "--format", "fp8", p, out);
  cr_assert_eq(write_npy_raw(tpath(p, dir, "i4.npy"), 1,
                             "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", dd,
                             16), 0);
  BAD(out, "dtype '<i4'", "float32", "quant", "--format", "fp8", p, out);
  /* a 0-d array holds no matrix */
  float one = 1.0f;
  cr_assert_eq(npy_save_f32(tpath(p, dir, "scalar.npy"), 0, NULL, &one, err, sizeof err),
               RSSM_OK);
  BAD(out, "scalar.npy", "0-d", "quant", "--format", "fp8", p, out);
  /* unknown and malformed formats */
  BAD(out, "--format", "fp9", "quant", "--format", "fp9", in, out);
  BAD(out, "--format", "fp8@x", "quant", "--format", "fp8@x", in, out);
  BAD(out, "--format", "fp8/rne", "quant", "--format", "fp8/rne", in, out);
  BAD(out, "--format", "fp32/sr", "quant", "--format", "fp32/sr", in, out);
  BAD(out, "--format", NULL, "quant", "--format", "", in, out);
  /* missing and extra arguments */
  BAD(NULL, "missing", "--format", "quant");
  BAD(out, "missing", "--format", "quant", in, out);
  BAD(NULL, "missing", "OUT.npy", "quant", "--format", "fp8", in);
  BAD(NULL, "--format", "needs a value", "quant", "--format");
  BAD(out, "extra", NULL, "quant", "--format", "fp8", in, out, "extra");
  BAD(out, "unknown option", "--frmat", "quant", "--frmat", "fp8", in, out);
  /* bad seeds */
  const char *seeds[] = {"-1", "0x", "12abc", "18446744073709551616", "0x1ffffffffffffffff",
                         " 5", ""};
  for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
    BAD(out, "--seed", NULL, "quant", "--format", "fp8/sr", "--seed", seeds[i], in, out);
  /* the top level */
  BAD(NULL, "unknown command", "frobnicate", "frobnicate");
  free(x);
}

Test(cli, help_and_version) {
  char o[TPATH_MAX];
  RUN_OK("--help");
  char *s = slurp(tpath(o, dir, "stdout.txt"), NULL);
  cr_assert(s && strstr(s, "quant"), "top-level help lacks the command list: %s", s);
  free(s);
  RUN_OK("quant", "--help");
  s = slurp(o, NULL);
  cr_assert(s && strstr(s, "--format") && strstr(s, "nvfp4"), "quant help: %s", s);
  free(s);
  RUN_OK("--version");
  s = slurp(o, NULL);
  cr_assert(s && strncmp(s, "replayssm ", 10) == 0 && is_one_line(s), "version: %s", s);
  free(s);
}

/* --- results ------------------------------------------------------------------------------ */

Test(cli, fp32_is_bit_identical) {
  char in[TPATH_MAX], out[TPATH_MAX];
  static const int64_t d[3] = {2, 7, 33};
  const int64_t count = 2 * 7 * 33;
  /* from fp32 subnormals to 2^100 */
  float *x = random_array(count, 21, -140, 100);
  save(tpath(in, dir, "in.npy"), 3, d, x);
  RUN_OK("quant", "--format", "fp32", in, tpath(out, dir, "out.npy"));
  npy_f32 y;
  load(out, &y, 3, d);
  cr_assert_eq(memcmp(y.data, x, (size_t)count * 4), 0, "fp32 changed the data");
  npy_f32_free(&y);
  free(x);
}

/* Runs fp8 on x of this shape and compares with the reference bit for bit. */
static void check_fp8(int ndim, const int64_t *dim, const float *x, const char *format,
                      int block) {
  char in[TPATH_MAX], out[TPATH_MAX];
  int64_t count = 1;
  for (int i = 0; i < ndim; i++) count *= dim[i];
  int64_t cols = dim[ndim - 1];
  save(tpath(in, dir, "in.npy"), ndim, dim, x);
  RUN_OK("quant", "--format", format, in, tpath(out, dir, "out.npy"));
  npy_f32 y;
  load(out, &y, ndim, dim);
  float *ref = malloc((size_t)count * sizeof *ref); /* [count / cols][cols] */
  cr_assert_not_null(ref);
  fp8_reference(x, ref, count / cols, cols, block);
  int64_t changed = 0, zeros = 0;
  for (int64_t i = 0; i < count; i++) {
    cr_assert_eq(bits(y.data[i]), bits(ref[i]),
                 "%s element %ld: x = %a, got %a, expected %a", format, (long)i, (double)x[i],
                 (double)y.data[i], (double)ref[i]);
    changed += y.data[i] != x[i];
    zeros += y.data[i] == 0.0f;
  }
  /* the comparison meant something: values were rounded, and some fell below the grid */
  cr_assert_gt(changed, count / 2);
  cr_assert_gt(zeros, 0);
  free(ref);
  npy_f32_free(&y);
}

Test(cli, fp8_matches_reference_3d) {
  /* cols = 200: one full block of 128 and a short one of 72 per row */
  static const int64_t d[3] = {3, 5, 200};
  float *x = random_array(3 * 5 * 200, 31, -12, 12);
  check_fp8(3, d, x, "fp8", 128);
  check_fp8(3, d, x, "fp8_e4m3@128/rtn", 128);
  check_fp8(3, d, x, "fp8@48", 48);
  free(x);
}

Test(cli, fp8_matches_reference_1d_and_4d) {
  static const int64_t d1[1] = {300};
  float *x = random_array(300, 41, -12, 12);
  check_fp8(1, d1, x, "fp8", 128);
  free(x);
  static const int64_t d4[4] = {2, 2, 3, 130};
  x = random_array(2 * 2 * 3 * 130, 42, -12, 12);
  check_fp8(4, d4, x, "fp8", 128);
  free(x);
}

Test(cli, fp8_ties_round_to_even) {
  /* One row whose amax is 448 makes s = 1 exactly, so x / s lands on exact ties of the grid. */
  static const int64_t d[2] = {1, 12};
  float x[12] = {448.0f, 1.0625f,  1.1875f, -1.0625f, 15.5f,   -0x3p-10f,
                 0x1p-10f, 0x5p-10f, 272.0f, -304.0f, 0x1.1p-7f, 3.0f};
  float want[12] = {448.0f, 1.0f,  1.25f, -1.0f,  16.0f,   -0x1p-8f,
                    0.0f,   0x1p-8f, 256.0f, -320.0f, 0x1p-7f, 3.0f};
  for (int i = 0; i < 12; i++) cr_assert_eq(e4m3_rne(x[i]), want[i], "reference at %d", i);
  char in[TPATH_MAX], out[TPATH_MAX];
  save(tpath(in, dir, "in.npy"), 2, d, x);
  RUN_OK("quant", "--format", "fp8", in, tpath(out, dir, "out.npy"));
  npy_f32 y;
  load(out, &y, 2, d);
  for (int i = 0; i < 12; i++)
    cr_assert_eq(bits(y.data[i]), bits(want[i]), "element %d: x = %a, got %a, expected %a", i,
                 (double)x[i], (double)y.data[i], (double)want[i]);
  npy_f32_free(&y);
}

/* Runs fp8/sr with a seed and returns the output (malloc'ed). */
static float *run_sr(const char *in, const char *seed, int ndim, const int64_t *dim,
                     int64_t count) {
  char out[TPATH_MAX];
  RUN_OK("quant", "--format", "fp8/sr", "--seed", seed, in,
                      tpath(out, dir, "sr.npy"));
  npy_f32 y;
  load(out, &y, ndim, dim);
  float *r = malloc((size_t)count * sizeof *r); /* [count] */
  cr_assert_not_null(r);
  memcpy(r, y.data, (size_t)count * 4);
  npy_f32_free(&y);
  return r;
}

Test(cli, fp8_sr_neighbours_and_seed) {
  static const int64_t d[3] = {3, 5, 200};
  const int64_t count = 3 * 5 * 200, cols = 200;
  float *x = random_array(count, 51, -12, 12);
  char in[TPATH_MAX];
  save(tpath(in, dir, "in.npy"), 3, d, x);
  float *a = run_sr(in, "16", 3, d, count);
  float *a2 = run_sr(in, "0x10", 3, d, count); /* the same seed in hex */
  float *b = run_sr(in, "17", 3, d, count);
  float *rtn = malloc((size_t)count * sizeof *rtn); /* [count] */
  fp8_reference(x, rtn, count / cols, cols, 128);
  int64_t differ_seed = 0, differ_rtn = 0;
  for (int64_t i = 0; i < count; i++) {
    /* this element's block scale, as in the reference */
    int64_t r = i / cols, c0 = (i % cols) / 128 * 128, c1 = c0 + 128 < cols ? c0 + 128 : cols;
    float amax = 0.0f;
    for (int64_t c = c0; c < c1; c++) amax = fmaxf(amax, fabsf(x[r * cols + c]));
    float s = amax / 448.0f, lo, hi;
    e4m3_neighbours(x[i] / s, &lo, &hi);
    float vlo = copysignf(lo, x[i]) * s, vhi = copysignf(hi, x[i]) * s;
    cr_assert(a[i] == vlo || a[i] == vhi, "element %ld: x = %a, SR gave %a, neighbours %a %a",
              (long)i, (double)x[i], (double)a[i], (double)vlo, (double)vhi);
    cr_assert_eq(bits(a[i]), bits(a2[i]), "seed 16 and 0x10 differ at %ld", (long)i);
    differ_seed += a[i] != b[i];
    differ_rtn += a[i] != rtn[i];
  }
  /* with ~3000 elements strictly between grid points, both counts are far from zero */
  cr_assert_gt(differ_seed, count / 20, "seeds 16 and 17 differ in only %ld places",
               (long)differ_seed);
  cr_assert_gt(differ_rtn, count / 20, "SR equals RTN in all but %ld places", (long)differ_rtn);
  free(a);
  free(a2);
  free(b);
  free(rtn);
  free(x);
}

Test(cli, empty_arrays_are_written_back) {
  static const int64_t d[3] = {0, 5, 200};
  char in[TPATH_MAX], out[TPATH_MAX];
  float none = 0.0f;
  save(tpath(in, dir, "in.npy"), 3, d, &none);
  RUN_OK("quant", "--format", "nvfp4/sr", in, tpath(out, dir, "out.npy"));
  npy_f32 y;
  load(out, &y, 3, d);
  cr_assert_eq(y.shape.count, 0);
  npy_f32_free(&y);
  /* huge leading axes beside a 0: still empty, and no overflow computing the matrix count */
  static const int64_t huge[4] = {(int64_t)1 << 40, (int64_t)1 << 40, 0, 5};
  save(in, 4, huge, &none);
  RUN_OK("quant", "--format", "fp8", in, out);
  load(out, &y, 4, huge);
  cr_assert_eq(y.shape.count, 0);
  npy_f32_free(&y);
  /* the format is still checked */
  BAD(NULL, "nvfp5", NULL, "quant", "--format", "nvfp5", in, out);
}

Test(cli, output_replaces_existing_file_and_may_be_the_input) {
  static const int64_t d[2] = {4, 64};
  float *x = random_array(256, 61, -6, 6);
  char in[TPATH_MAX];
  save(tpath(in, dir, "in.npy"), 2, d, x);
  RUN_OK("quant", "--format", "fp8", in, in);
  npy_f32 y;
  load(in, &y, 2, d);
  float ref[256];
  fp8_reference(x, ref, 4, 64, 128);
  cr_assert_eq(memcmp(y.data, ref, sizeof ref), 0);
  npy_f32_free(&y);
  cr_assert_eq(count_entries_containing(dir, ".tmp."), 0);
  free(x);
}

Test(cli, sr_bits_follow_the_matrix_index) {
  /* two identical matrices: SR draws differ because matrix i has its own id qsr_matrix_id(0,0,i) */
  static const int64_t d3[3] = {2, 5, 200};
  static const int64_t d2[2] = {5, 200};
  const int64_t per = 5 * 200;
  float *x = random_array(2 * per, 71, -12, 12);
  memcpy(x + per, x, (size_t)per * sizeof *x);
  char in[TPATH_MAX];
  save(tpath(in, dir, "stack.npy"), 3, d3, x);
  float *stack = run_sr(in, "5", 3, d3, 2 * per);
  save(tpath(in, dir, "one.npy"), 2, d2, x);
  float *one = run_sr(in, "5", 2, d2, per);
  int64_t differ = 0;
  for (int64_t i = 0; i < per; i++) differ += stack[i] != stack[per + i];
  cr_assert_gt(differ, per / 20, "matrices 0 and 1 share their SR bits (%ld differ)",
               (long)differ);
  /* a 2-D file is matrix 0 of a stack */
  cr_assert_eq(memcmp(one, stack, (size_t)per * 4), 0);
  free(stack);
  free(one);
  free(x);
}
