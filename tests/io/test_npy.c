/* src/io/npy: round trips, the strict header grammar, size checks, integer arrays, atomic
 * writes, and interchange with NumPy itself (/usr/bin/python3). */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/io/npy.h"
#include "tests/cli/cli_test_util.h"

static const char *dir;
static char err[1024];

static void setup(void) {
  dir = tdir_make();
  cr_assert_not_null(dir, "mkdtemp failed");
  err[0] = '\0';
}
static void teardown(void) { tdir_remove(dir); }

TestSuite(npy, .init = setup, .fini = teardown);

/* Saves random data of this shape, loads it back, and checks shape, bits and file size. */
static void round_trip(int ndim, const int64_t *dim, uint64_t seed) {
  char p[TPATH_MAX];
  tpath(p, dir, "rt.npy");
  npy_shape s;
  cr_assert_eq(npy_shape_set(&s, ndim, dim), 0);
  float *x = malloc((size_t)(s.count ? s.count : 1) * sizeof *x); /* [count] */
  cr_assert_not_null(x);
  for (int64_t i = 0; i < s.count; i++) x[i] = rng_spread(&seed, -30, 30);
  cr_assert_eq(npy_save_f32(p, ndim, dim, x, err, sizeof err), RSSM_OK, "%s", err);

  size_t flen;
  char *raw = slurp(p, &flen);
  cr_assert_not_null(raw);
  /* NumPy's alignment: header (with preamble) a multiple of 64, ending in '\n' */
  size_t hdr = 10 + (size_t)((unsigned char)raw[8] | (unsigned char)raw[9] << 8);
  cr_assert_eq(hdr % 64, 0, "header length %zu", hdr);
  cr_assert_eq(raw[hdr - 1], '\n');
  cr_assert_eq(flen, hdr + 4 * (size_t)s.count);
  free(raw);

  npy_f32 a;
  cr_assert_eq(npy_load_f32(p, &a, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(a.shape.ndim, ndim);
  for (int d = 0; d < ndim; d++) cr_assert_eq(a.shape.dim[d], dim[d]);
  cr_assert_eq(a.shape.count, s.count);
  cr_assert_not_null(a.data);
  if (s.count) cr_assert_eq(memcmp(a.data, x, (size_t)s.count * 4), 0, "data differ");
  npy_f32_free(&a);
  cr_assert_null(a.data);
  free(x);
}

Test(npy, round_trip_shapes) {
  static const int64_t d0[1] = {0};
  static const int64_t d1[1] = {7};
  static const int64_t d2[2] = {3, 4};
  static const int64_t d3[3] = {2, 3, 5};
  static const int64_t d5[5] = {1, 2, 1, 3, 1};
  static const int64_t big[2] = {1, 40000};
  round_trip(0, d0, 1); /* a scalar: one element */
  round_trip(1, d1, 2);
  round_trip(2, d2, 3);
  round_trip(3, d3, 4);
  round_trip(5, d5, 5);
  round_trip(2, big, 6);
}

/* Zero-size arrays are valid .npy files and round-trip unchanged (the reader does not reject
 * them; `replayssm quant` writes them back as they are). */
Test(npy, round_trip_empty_axes) {
  static const int64_t a[1] = {0};
  static const int64_t b[3] = {0, 4, 5};
  static const int64_t c[2] = {3, 0};
  static const int64_t d[3] = {2, 0, 7};
  round_trip(1, a, 7);
  round_trip(3, b, 8);
  round_trip(2, c, 9);
  round_trip(3, d, 10);
}

Test(npy, header_text_matches_numpy) {
  char p[TPATH_MAX];
  tpath(p, dir, "h.npy");
  static const int64_t d1[1] = {5};
  float x[5] = {1, 2, 3, 4, 5};
  cr_assert_eq(npy_save_f32(p, 1, d1, x, err, sizeof err), RSSM_OK, "%s", err);
  char *raw = slurp(p, NULL);
  cr_assert_not_null(raw);
  const char *want = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
  cr_assert_eq(memcmp(raw + 10, want, strlen(want)), 0, "header is '%.60s'", raw + 10);
  free(raw);
}

/* Loads a hand-made file and returns the status; the message goes to err. */
static int load_raw(int major, const char *dict, const void *data, size_t len, npy_f32 *a) {
  char p[TPATH_MAX];
  tpath(p, dir, "raw.npy");
  cr_assert_eq(write_npy_raw(p, major, dict, data, len), 0);
  return npy_load_f32(p, a, err, sizeof err);
}

Test(npy, reads_versions_2_and_3_and_literal_variants) {
  float x[6] = {1.5f, -2.0f, 3.25f, 1e-30f, -7e20f, 0.125f};
  const char *dicts[] = {
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
      "{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (2, 3)}",
      "{'shape': (2,3,), 'fortran_order': False, 'descr': '<f4'}",
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }",
  };
  for (int major = 1; major <= 3; major++) {
    for (size_t k = 0; k < sizeof dicts / sizeof dicts[0]; k++) {
      npy_f32 a;
      int rc = load_raw(major, dicts[k], x, sizeof x, &a);
      cr_assert_eq(rc, RSSM_OK, "v%d dict %zu: %s", major, k, err);
      cr_assert_eq(a.shape.ndim, 2);
      cr_assert_eq(a.shape.dim[0], 2);
      cr_assert_eq(a.shape.dim[1], 3);
      cr_assert_eq(memcmp(a.data, x, sizeof x), 0);
      npy_f32_free(&a);
    }
  }
}

/* A malformed file must give RSSM_ERR_INPUT, one line naming the file and every keyword. */
static void expect_bad(int major, const char *dict, size_t data_len, const char *k1,
                       const char *k2) {
  static float zeros[64];
  npy_f32 a;
  int rc = load_raw(major, dict, zeros, data_len, &a);
  cr_assert_eq(rc, RSSM_ERR_INPUT, "dict %s: rc %d (%s)", dict, rc, err);
  cr_assert_null(a.data);
  cr_assert(strstr(err, "raw.npy:") != NULL, "message does not name the file: %s", err);
  cr_assert(strchr(err, '\n') == NULL, "message is not one line: %s", err);
  cr_assert(strstr(err, k1) != NULL, "'%s' not in: %s", k1, err);
  if (k2) cr_assert(strstr(err, k2) != NULL, "'%s' not in: %s", k2, err);
}

Test(npy, header_errors) {
  expect_bad(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16, "dtype '<f8'",
             "expected '<f4', float32");
  expect_bad(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8, "big-endian",
             "'<f4'");
  expect_bad(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }", 8, "dtype '<i4'",
             "int32");
  expect_bad(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", 16,
             "fortran_order", "C order");
  expect_bad(1, "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 8, "fortran_order",
             "True or False");
  expect_bad(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8,
             "'descr'", "structured");
  expect_bad(1, "{'descr': '<f4', 'shape': (2,), }", 8, "lacks key 'fortran_order'", NULL);
  expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
             "unexpected key 'x'", NULL);
  expect_bad(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8,
             "'descr'", "more than once");
  expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2), }", 8, "'shape'",
             "not a tuple");
  expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 8, "'shape'",
             "non-negative");
  expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': 2, }", 8, "'shape'",
             "tuple");
  expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (02,), }", 8, "'shape'",
             NULL);
  /* 2^32 * 2^32 elements: the count overflows 64 bits */
  expect_bad(1,
             "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", 8,
             "'shape'", "overflow");
  /* 2^61 elements of 4 bytes: the byte size overflows */
  expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2305843009213693952,), }",
             8, "overflow", NULL);
  expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
             8, "'shape'", "larger");
  expect_bad(1, "['descr', '<f4']", 8, "header", "'{'");
  expect_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } extra", 8, "header",
             "after the closing");
  expect_bad(3, "{'descr': '<f4' 'fortran_order': False, 'shape': (2,), }", 8, "'descr'",
             "expected ',' or '}'");
}

Test(npy, size_errors) {
  const char *d = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }";
  expect_bad(1, d, 44, "truncated", "needs 48");
  expect_bad(2, d, 0, "truncated", "(3, 4)");
  expect_bad(1, d, 52, "4 trailing bytes", NULL);
}

Test(npy, preamble_errors) {
  char p[TPATH_MAX];
  tpath(p, dir, "raw.npy");
  npy_f32 a;
  /* wrong magic */
  cr_assert_eq(write_npy_raw(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }",
                             "abcd", 4), 0);
  char *raw = slurp(p, NULL);
  size_t n = 64 + 4;
  raw[1] = 'X';
  cr_assert_eq(write_bytes(p, raw, n), 0);
  cr_assert_eq(npy_load_f32(p, &a, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "magic") && strstr(err, "raw.npy"), "%s", err);
  /* unsupported version */
  raw[1] = 'N';
  raw[6] = 4;
  cr_assert_eq(write_bytes(p, raw, n), 0);
  cr_assert_eq(npy_load_f32(p, &a, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "version 4.0"), "%s", err);
  /* header length past the end of the file */
  raw[6] = 1;
  raw[8] = (char)0xff;
  raw[9] = 0x7f;
  cr_assert_eq(write_bytes(p, raw, n), 0);
  cr_assert_eq(npy_load_f32(p, &a, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "header length 32767"), "%s", err);
  /* too short for a preamble, and empty */
  cr_assert_eq(write_bytes(p, raw, 7), 0);
  cr_assert_eq(npy_load_f32(p, &a, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "too short"), "%s", err);
  cr_assert_eq(write_bytes(p, raw, 0), 0);
  cr_assert_eq(npy_load_f32(p, &a, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "0 bytes"), "%s", err);
  free(raw);
  /* missing file; a directory */
  cr_assert_eq(npy_load_f32(tpath(p, dir, "absent.npy"), &a, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "absent.npy") && strstr(err, "cannot open"), "%s", err);
  cr_assert_eq(npy_load_f32(dir, &a, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "not a regular file"), "%s", err);
}

Test(npy, index_arrays) {
  char p[TPATH_MAX];
  tpath(p, dir, "tok.npy");
  int32_t t4[5] = {0, 1, -7, 2147483647, -2147483647 - 1};
  cr_assert_eq(write_npy_raw(p, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (5,), }",
                             t4, sizeof t4), 0);
  npy_index ix;
  cr_assert_eq(npy_load_index(p, &ix, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(ix.n, 5);
  cr_assert_eq(ix.source_bytes, 4);
  for (int i = 0; i < 5; i++) cr_assert_eq(ix.data[i], (int64_t)t4[i], "element %d", i);
  npy_index_free(&ix);

  int64_t t8[3] = {5, -((int64_t)1 << 40), INT64_MAX};
  cr_assert_eq(write_npy_raw(p, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
                             t8, sizeof t8), 0);
  cr_assert_eq(npy_load_index(p, &ix, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(ix.n, 3);
  cr_assert_eq(ix.source_bytes, 8);
  cr_assert_eq(memcmp(ix.data, t8, sizeof t8), 0);
  npy_index_free(&ix);

  cr_assert_eq(write_npy_raw(p, 1, "{'descr': '<i4', 'fortran_order': False, 'shape': (0,), }",
                             NULL, 0), 0);
  cr_assert_eq(npy_load_index(p, &ix, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(ix.n, 0);
  npy_index_free(&ix);

  cr_assert_eq(write_npy_raw(p, 1,
                             "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }", t4,
                             16), 0);
  cr_assert_eq(npy_load_index(p, &ix, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "1-D") && strstr(err, "(2, 2)"), "%s", err);
  cr_assert_eq(write_npy_raw(p, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }",
                             t4, 8), 0);
  cr_assert_eq(npy_load_index(p, &ix, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "dtype '<f4'") && strstr(err, "'<i4' or '<i8'"), "%s", err);
  cr_assert_eq(write_npy_raw(p, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (2,), }",
                             t8, 12), 0);
  cr_assert_eq(npy_load_index(p, &ix, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert(strstr(err, "truncated"), "%s", err);
}

Test(npy, atomic_save_replaces_and_leaves_no_temporary) {
  char p[TPATH_MAX];
  tpath(p, dir, "out.npy");
  cr_assert_eq(write_bytes(p, "old contents", 12), 0);
  static const int64_t d[2] = {2, 2};
  float x[4] = {1, 2, 3, 4};
  cr_assert_eq(npy_save_f32(p, 2, d, x, err, sizeof err), RSSM_OK, "%s", err);
  npy_f32 a;
  cr_assert_eq(npy_load_f32(p, &a, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(memcmp(a.data, x, sizeof x), 0);
  npy_f32_free(&a);
  cr_assert_eq(count_entries_containing(dir, ".tmp."), 0);

  /* a directory that does not exist: an I/O error, nothing created */
  char q[TPATH_MAX];
  tpath(q, dir, "no/such/dir/out.npy");
  cr_assert_eq(npy_save_f32(q, 2, d, x, err, sizeof err), RSSM_ERR_IO);
  cr_assert(strstr(err, "out.npy"), "%s", err);
  /* the target is a directory: rename fails, the temporary is removed, the directory stays */
  char sub[TPATH_MAX];
  tpath(sub, dir, "adir");
  cr_assert_eq(mkdir(sub, 0755), 0);
  cr_assert_eq(npy_save_f32(sub, 2, d, x, err, sizeof err), RSSM_ERR_IO);
  cr_assert(strstr(err, "rename"), "%s", err);
  cr_assert_eq(count_entries_containing(dir, ".tmp."), 0);
  rmdir(sub);
}

/* --- interchange with NumPy ---------------------------------------------------------------- */

static int python(const char *script) {
  char *argv[] = {(char *)"/usr/bin/python3", (char *)"-c", (char *)script, NULL};
  char e[TPATH_MAX];
  int st = run_prog(argv, NULL, tpath(e, dir, "py.err"));
  if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
    char *msg = slurp(e, NULL);
    cr_log_error("python failed: %s", msg ? msg : "?");
    free(msg);
    return -1;
  }
  return 0;
}

Test(npy, numpy_reads_what_we_write) {
  char p[TPATH_MAX], script[2 * TPATH_MAX];
  tpath(p, dir, "ours.npy");
  static const int64_t d[3] = {2, 3, 4};
  float x[24];
  for (int i = 0; i < 24; i++) x[i] = (float)i * 0.5f - 3.0f;
  cr_assert_eq(npy_save_f32(p, 3, d, x, err, sizeof err), RSSM_OK, "%s", err);
  snprintf(script, sizeof script,
           "import numpy as np\n"
           "a = np.load('%s')\n"
           "assert a.dtype == np.float32 and a.shape == (2, 3, 4), (a.dtype, a.shape)\n"
           "assert (a.ravel() == np.arange(24, dtype=np.float32) * 0.5 - 3).all()\n",
           p);
  cr_assert_eq(python(script), 0, "numpy could not read our file (is python3-numpy installed?)");
}

Test(npy, we_read_what_numpy_writes) {
  char script[4 * TPATH_MAX];
  snprintf(script, sizeof script,
           "import numpy as np\n"
           "a = (np.arange(30, dtype=np.float32).reshape(5, 6) - 7.5) * 1.25\n"
           "np.save('%s/v1.npy', a)\n"
           "for v in ((2, 0), (3, 0)):\n"
           "    with open('%s/v%%d.npy' %% v[0], 'wb') as f:\n"
           "        np.lib.format.write_array(f, a, version=v)\n"
           "np.save('%s/t.npy', np.array([3, -1, 70000], dtype=np.int64))\n"
           "np.save('%s/e.npy', np.zeros((0, 3), np.float32))\n",
           dir, dir, dir, dir);
  cr_assert_eq(python(script), 0, "numpy failed (is python3-numpy installed?)");
  char p[TPATH_MAX];
  for (int v = 1; v <= 3; v++) {
    char name[16];
    snprintf(name, sizeof name, "v%d.npy", v);
    npy_f32 a;
    cr_assert_eq(npy_load_f32(tpath(p, dir, name), &a, err, sizeof err), RSSM_OK, "%s", err);
    cr_assert_eq(a.shape.ndim, 2);
    cr_assert_eq(a.shape.dim[0], 5);
    cr_assert_eq(a.shape.dim[1], 6);
    for (int i = 0; i < 30; i++)
      cr_assert_eq(a.data[i], ((float)i - 7.5f) * 1.25f, "v%d element %d", v, i);
    npy_f32_free(&a);
  }
  npy_index ix;
  cr_assert_eq(npy_load_index(tpath(p, dir, "t.npy"), &ix, err, sizeof err), RSSM_OK, "%s",
               err);
  cr_assert_eq(ix.n, 3);
  cr_assert_eq(ix.data[0], 3);
  cr_assert_eq(ix.data[1], -1);
  cr_assert_eq(ix.data[2], 70000);
  npy_index_free(&ix);
  npy_f32 e;
  cr_assert_eq(npy_load_f32(tpath(p, dir, "e.npy"), &e, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(e.shape.count, 0);
  cr_assert_eq(e.shape.dim[0], 0);
  cr_assert_eq(e.shape.dim[1], 3);
  npy_f32_free(&e);
}
