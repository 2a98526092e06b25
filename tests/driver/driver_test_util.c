/* Driver test helpers (driver_test_util.h). */
#include "tests/driver/driver_test_util.h"

#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "src/tokens/tokstream.h"
#include "tests/cli/cli_test_util.h"

void make_text_stream(const char *path, int64_t n) {
  static const char *words[] = {"the", "whale", "sea", "ship", "captain", "white", "and", "of",
                                "a", "to", "in", "his", "deep", "old", "harpoon", "boat",
                                "waves", "call", "me", "Ishmael", "years", "ago", "never", "mind"};
  const int nw = (int)(sizeof words / sizeof words[0]);
  uint32_t *ids = malloc((size_t)n * sizeof(uint32_t));
  cr_assert(ids);
  uint64_t s = 12345;
  int64_t i = 0;
  int prev = 0;
  while (i < n) {
    /* a sticky chain: the next word depends on the previous one, so text has structure */
    int w = (int)((rng_next(&s) % 4 == 0 ? rng_next(&s) : (uint64_t)prev * 7 + 3) % (uint64_t)nw);
    prev = w;
    for (const char *p = words[w]; *p && i < n; p++) ids[i++] = (unsigned char)*p;
    if (i < n) ids[i++] = rng_next(&s) % 9 == 0 ? '.' : ' ';
  }
  char err[512];
  cr_assert_eq(tokstream_write(path, "byte", 256, ids, n, err, sizeof err), 0, "%s", err);
  free(ids);
}

void put_text(const char *path, const char *text) {
  cr_assert_eq(write_bytes(path, text, strlen(text)), 0, "cannot write %s", path);
}

int rssm(const char *err_path, const char *const *args) {
  const char *argv[64];
  int n = 0;
  argv[n++] = RSSM_BIN;
  while (args[n - 1] && n < 63) {
    argv[n] = args[n - 1];
    n++;
  }
  argv[n] = NULL;
  int st = run_prog((char *const *)argv, NULL, err_path);
  return st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

typedef struct {
  hid_t other;
  char *why;
  size_t whylen;
  int bad;
  int count;
} visit_ctx;

static herr_t visit(hid_t obj, const char *name, const H5O_info_t *info, void *op) {
  visit_ctx *c = op;
  if (info->type != H5O_TYPE_DATASET) return 0;
  c->count++;
  hid_t da = H5Dopen2(obj, name, H5P_DEFAULT);
  hid_t db = H5Dopen2(c->other, name, H5P_DEFAULT);
  if (da < 0 || db < 0) {
    snprintf(c->why, c->whylen, "dataset %s is missing from one file", name);
    c->bad = 1;
    if (da >= 0) H5Dclose(da);
    if (db >= 0) H5Dclose(db);
    return 1;
  }
  hid_t sa = H5Dget_space(da), sb = H5Dget_space(db);
  hsize_t a[8] = {0}, b[8] = {0};
  int ra = H5Sget_simple_extent_dims(sa, a, NULL), rb = H5Sget_simple_extent_dims(sb, b, NULL);
  hid_t ta = H5Dget_type(da), tb = H5Dget_type(db);
  size_t ea = H5Tget_size(ta);
  int same = ra == rb && memcmp(a, b, sizeof a) == 0 && H5Tequal(ta, tb) > 0;
  if (!same) {
    snprintf(c->why, c->whylen, "dataset %s: shape or type differs", name);
    c->bad = 1;
  } else {
    size_t n = ea;
    for (int i = 0; i < ra; i++) n *= (size_t)a[i];
    unsigned char *ba = malloc(n + 1), *bb = malloc(n + 1);
    if (n) {
      H5Dread(da, ta, H5S_ALL, H5S_ALL, H5P_DEFAULT, ba);
      H5Dread(db, ta, H5S_ALL, H5S_ALL, H5P_DEFAULT, bb);
    }
    if (n && memcmp(ba, bb, n) != 0) {
      size_t i = 0;
      while (ba[i] == bb[i]) i++;
      snprintf(c->why, c->whylen, "dataset %s: contents differ (first at element %zu)", name, i / ea);
      c->bad = 1;
    }
    free(ba);
    free(bb);
  }
  H5Tclose(ta);
  H5Tclose(tb);
  H5Sclose(sa);
  H5Sclose(sb);
  H5Dclose(da);
  H5Dclose(db);
  return c->bad;
}

/* Opens a and b, sets *other to b's file and visits every object of a with fn(ctx). Returns 1 when
 * either file does not open (why says so), else 0. */
static int visit_pair(const char *a, const char *b, char *why, size_t whylen, H5O_iterate_t fn,
                      hid_t *other, void *ctx) {
  hid_t fa = H5Fopen(a, H5F_ACC_RDONLY, H5P_DEFAULT), fb = H5Fopen(b, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (fa < 0 || fb < 0) {
    snprintf(why, whylen, "cannot open %s or %s", a, b);
    if (fa >= 0) H5Fclose(fa);
    if (fb >= 0) H5Fclose(fb);
    return 1;
  }
  *other = fb;
  H5Ovisit(fa, H5_INDEX_NAME, H5_ITER_INC, fn, ctx);
  H5Fclose(fa);
  H5Fclose(fb);
  return 0;
}

static int one_way(const char *a, const char *b, char *why, size_t whylen, int *count) {
  visit_ctx c = {0, why, whylen, 0, 0};
  if (visit_pair(a, b, why, whylen, visit, &c.other, &c)) return 1;
  *count = c.count;
  return c.bad;
}

int h5_datasets_equal(const char *a, const char *b, char *why, size_t whylen) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  int na = 0, nb = 0;
  if (one_way(a, b, why, whylen, &na) || one_way(b, a, why, whylen, &nb)) return 1;
  if (na == 0) {
    snprintf(why, whylen, "%s holds no datasets", a);
    return 1;
  }
  return 0;
}

/* ---- attributes ------------------------------------------------------------------------- */

typedef struct {
  hid_t other_obj; /* the same object in the other file */
  const char *obj_name;
  char *why;
  size_t whylen;
  int bad;
  int compared; /* attributes compared (the per-process ones are not) */
} attr_ctx;

/* Bytes of attribute a as a comparable buffer: variable-length strings read as their text. */
static unsigned char *attr_bytes(hid_t a, size_t *n) {
  hid_t t = H5Aget_type(a), sp = H5Aget_space(a);
  hssize_t np = H5Sget_simple_extent_npoints(sp);
  unsigned char *buf = NULL;
  if (H5Tis_variable_str(t) > 0 && np >= 1) { /* every string's text, NUL-separated */
    char **str = calloc((size_t)np, sizeof *str);
    if (str && H5Aread(a, t, str) >= 0) {
      size_t total = 0;
      for (hssize_t i = 0; i < np; i++) total += (str[i] ? strlen(str[i]) : 0) + 1;
      buf = malloc(total + 1);
      *n = 0;
      for (hssize_t i = 0; buf && i < np; i++) {
        size_t l = str[i] ? strlen(str[i]) : 0;
        memcpy(buf + *n, str[i] ? str[i] : "", l + 1);
        *n += l + 1;
      }
      for (hssize_t i = 0; i < np; i++) H5free_memory(str[i]);
    }
    free(str);
  } else {
    *n = H5Tget_size(t) * (size_t)np;
    buf = malloc(*n + 1);
    if (buf && H5Aread(a, t, buf) < 0) {
      free(buf);
      buf = NULL;
    }
  }
  H5Sclose(sp);
  H5Tclose(t);
  return buf;
}

static herr_t attr_visit(hid_t obj, const char *name, const H5A_info_t *info, void *op) {
  (void)info;
  attr_ctx *c = op;
  /* provenance of the writing process (when, where, how long): differs by design */
  static const char *const per_process[] = {"created", "host", "wall_seconds"};
  for (size_t i = 0; i < sizeof per_process / sizeof *per_process; i++)
    if (strcmp(name, per_process[i]) == 0) return 0;
  c->compared++;
  hid_t aa = H5Aopen(obj, name, H5P_DEFAULT), ab = H5Aopen(c->other_obj, name, H5P_DEFAULT);
  size_t na = 0, nb = 0;
  unsigned char *ba = aa >= 0 ? attr_bytes(aa, &na) : NULL, *bb = ab >= 0 ? attr_bytes(ab, &nb) : NULL;
  if (!ba || !bb) {
    snprintf(c->why, c->whylen, "attribute %s of %s is missing from one file", name, c->obj_name);
    c->bad = 1;
  } else if (na != nb || memcmp(ba, bb, na) != 0) {
    snprintf(c->why, c->whylen, "attribute %s of %s differs", name, c->obj_name);
    c->bad = 1;
  }
  free(ba);
  free(bb);
  if (aa >= 0) H5Aclose(aa);
  if (ab >= 0) H5Aclose(ab);
  return c->bad;
}

typedef struct {
  hid_t other;
  char *why;
  size_t whylen;
  int bad, count;
} attr_walk;

static herr_t attr_object(hid_t obj, const char *name, const H5O_info_t *info, void *op) {
  (void)info;
  attr_walk *w = op;
  hid_t oa = H5Oopen(obj, name, H5P_DEFAULT), ob = H5Oopen(w->other, name, H5P_DEFAULT);
  if (oa < 0 || ob < 0) {
    snprintf(w->why, w->whylen, "object %s is missing from one file", name);
    w->bad = 1;
  } else {
    attr_ctx c = {ob, name, w->why, w->whylen, 0, 0};
    hsize_t idx = 0;
    H5Aiterate2(oa, H5_INDEX_NAME, H5_ITER_INC, &idx, attr_visit, &c);
    w->count += c.compared;
    w->bad |= c.bad;
  }
  if (oa >= 0) H5Oclose(oa);
  if (ob >= 0) H5Oclose(ob);
  return w->bad;
}

static int attrs_one_way(const char *a, const char *b, char *why, size_t whylen, int *count) {
  attr_walk w = {0, why, whylen, 0, 0};
  if (visit_pair(a, b, why, whylen, attr_object, &w.other, &w)) return 1;
  *count = w.count;
  return w.bad;
}

int h5_attributes_equal(const char *a, const char *b, char *why, size_t whylen) {
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  int na = 0, nb = 0;
  if (attrs_one_way(a, b, why, whylen, &na) || attrs_one_way(b, a, why, whylen, &nb)) return 1;
  if (na != nb) {
    snprintf(why, whylen, "%s holds %d attributes, %s %d", a, na, b, nb);
    return 1;
  }
  if (na == 0) {
    snprintf(why, whylen, "%s holds no attributes", a);
    return 1;
  }
  return 0;
}
