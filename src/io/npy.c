/* .npy arrays: loading float32 and integer-index arrays, and saving float32 atomically.
 * The header grammar lives in npy_header.c. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/io/errbuf.h"
#include "src/io/npy.h"

/* The data are read and written as the host's bytes; '<' means little-endian. */
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "src/io/npy.c assumes a little-endian host"
#endif

/* What a dtype string means, for messages that say what the file held. */
static const char *descr_meaning(const char *d) {
  static const struct { const char *code, *name; } known[] = {
      {"f2", "float16"}, {"f4", "float32"}, {"f8", "float64"}, {"f16", "float128"},
      {"i1", "int8"},    {"i2", "int16"},   {"i4", "int32"},   {"i8", "int64"},
      {"u1", "uint8"},   {"u2", "uint16"},  {"u4", "uint32"},  {"u8", "uint64"},
      {"b1", "bool"},    {"c8", "complex64"}, {"c16", "complex128"}, {"O", "object"},
  };
  const char *body = (d[0] == '<' || d[0] == '>' || d[0] == '|' || d[0] == '=') ? d + 1 : d;
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(body, known[i].code) == 0) return known[i].name;
  return "unknown type";
}

/* Open path for reading, check it is a regular file, and parse its header. */
static int open_checked(const char *path, FILE **fp, int64_t *size, npy_header *h, char *err,
                        size_t errlen) {
  *fp = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    rssm_fail(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    /* A missing or unreadable input is the caller's to fix. */
    return RSSM_ERR_INPUT;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    rssm_fail(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
    fclose(f);
    return RSSM_ERR_IO;
  }
  if (!S_ISREG(st.st_mode)) {
    rssm_fail(err, errlen, "%s: not a regular file (expected a .npy file)", path);
    fclose(f);
    return RSSM_ERR_INPUT;
  }
  *size = (int64_t)st.st_size;
  int rc = npy_read_header(path, f, *size, h, err, errlen);
  if (rc != RSSM_OK) {
    fclose(f);
    return rc;
  }
  if (h->fortran_order) {
    rssm_fail(err, errlen,
              "%s: fortran_order is True (expected False: C order; save np.ascontiguousarray(a))",
              path);
    fclose(f);
    return RSSM_ERR_INPUT;
  }
  *fp = f;
  return RSSM_OK;
}

/* The data must fill the rest of the file exactly. */
static int check_data_size(const char *path, const npy_header *h, int64_t file_size,
                           int64_t itemsize, int64_t *nbytes, char *err, size_t errlen) {
  char shp[256];
  npy_shape_to_string(&h->shape, shp, sizeof shp);
  if (h->shape.count > INT64_MAX / itemsize) {
    rssm_fail(err, errlen, "%s: shape %s of '%s': byte size overflows 64 bits", path, shp,
              h->descr);
    return RSSM_ERR_INPUT;
  }
  int64_t need = h->shape.count * itemsize;
  int64_t have = file_size - h->data_offset; /* >= 0: npy_read_header checked it */
  if (have < need) {
    rssm_fail(err, errlen,
              "%s: data: file is truncated: %" PRId64
              " bytes after the header, shape %s of '%s' "
              "needs %" PRId64,
              path, have, shp, h->descr, need);
    return RSSM_ERR_INPUT;
  }
  if (have > need) {
    rssm_fail(err, errlen,
              "%s: data: %" PRId64 " trailing bytes after the data (shape %s of '%s' needs %" PRId64
              " bytes, the file has %" PRId64 ")",
              path, have - need, shp, h->descr, need, have);
    return RSSM_ERR_INPUT;
  }
  if ((uint64_t)need > (uint64_t)SIZE_MAX) {
    rssm_fail(err, errlen, "%s: data: %" PRId64 " bytes do not fit in memory", path, need);
    return RSSM_ERR_INPUT;
  }
  *nbytes = need;
  return RSSM_OK;
}

static int read_data(const char *path, FILE *f, void *dst, int64_t nbytes, char *err,
                     size_t errlen) {
  if (nbytes == 0) return RSSM_OK;
  size_t got = fread(dst, 1, (size_t)nbytes, f);
  if (got != (size_t)nbytes) {
    /* The size was checked against fstat, so a short read is an I/O problem (or the file
     * changed under us), not a malformed file. */
    rssm_fail(err, errlen, "%s: data: read %zu of %" PRId64 " bytes: %s", path, got, nbytes,
              ferror(f) ? strerror(errno) : "file shrank while reading");
    return RSSM_ERR_IO;
  }
  return RSSM_OK;
}

int npy_load_f32(const char *path, npy_f32 *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  FILE *f;
  int64_t size, nbytes;
  npy_header h;
  int rc = open_checked(path, &f, &size, &h, err, errlen);
  if (rc != RSSM_OK) return rc;
  if (strcmp(h.descr, "<f4") != 0) {
    if (strcmp(h.descr, ">f4") == 0)
      rssm_fail(err, errlen,
                "%s: dtype '>f4' is big-endian (expected little-endian '<f4', float32)", path);
    else
      rssm_fail(err, errlen, "%s: dtype '%s' (%s) is not supported (expected '<f4', float32)", path,
                h.descr, descr_meaning(h.descr));
    fclose(f);
    return RSSM_ERR_INPUT;
  }
  rc = check_data_size(path, &h, size, 4, &nbytes, err, errlen);
  if (rc != RSSM_OK) {
    fclose(f);
    return rc;
  }
  /* malloc(0) may return NULL; an empty array still gets a valid pointer. */
  float *data = malloc(nbytes > 0 ? (size_t)nbytes : 1); /* [count] */
  if (!data) {
    rssm_fail(err, errlen, "%s: out of memory for %" PRId64 " bytes of data", path, nbytes);
    fclose(f);
    return RSSM_ERR_IO;
  }
  rc = read_data(path, f, data, nbytes, err, errlen);
  fclose(f);
  if (rc != RSSM_OK) {
    free(data);
    return rc;
  }
  out->shape = h.shape;
  out->data = data;
  return RSSM_OK;
}

void npy_f32_free(npy_f32 *a) {
  if (!a) return;
  free(a->data);
  memset(a, 0, sizeof *a);
}

int npy_load_index(const char *path, npy_index *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  FILE *f;
  int64_t size, nbytes;
  npy_header h;
  int rc = open_checked(path, &f, &size, &h, err, errlen);
  if (rc != RSSM_OK) return rc;
  int itemsize = strcmp(h.descr, "<i4") == 0 ? 4 : strcmp(h.descr, "<i8") == 0 ? 8 : 0;
  if (!itemsize) {
    if (strcmp(h.descr, ">i4") == 0 || strcmp(h.descr, ">i8") == 0)
      rssm_fail(err, errlen, "%s: dtype '%s' is big-endian (expected little-endian '<i4' or '<i8')",
                path, h.descr);
    else
      rssm_fail(err, errlen,
                "%s: dtype '%s' (%s) is not supported (expected '<i4' or '<i8', int32 or int64)",
                path, h.descr, descr_meaning(h.descr));
    fclose(f);
    return RSSM_ERR_INPUT;
  }
  if (h.shape.ndim != 1) {
    char shp[256];
    npy_shape_to_string(&h.shape, shp, sizeof shp);
    rssm_fail(err, errlen, "%s: shape %s has %d dimensions (expected a 1-D array)", path, shp,
              h.shape.ndim);
    fclose(f);
    return RSSM_ERR_INPUT;
  }
  rc = check_data_size(path, &h, size, itemsize, &nbytes, err, errlen);
  if (rc != RSSM_OK) {
    fclose(f);
    return rc;
  }
  int64_t n = h.shape.count;
  /* int64 output is at least as large as the file's data, so nbytes/itemsize*8 fits. */
  if (n > INT64_MAX / 8 || (uint64_t)n * 8 > (uint64_t)SIZE_MAX) {
    rssm_fail(err, errlen, "%s: %" PRId64 " elements do not fit in memory", path, n);
    fclose(f);
    return RSSM_ERR_INPUT;
  }
  int64_t *data = malloc(n > 0 ? (size_t)n * 8 : 1); /* [n] */
  if (!data) {
    rssm_fail(err, errlen, "%s: out of memory for %" PRId64 " elements", path, n);
    fclose(f);
    return RSSM_ERR_IO;
  }
  /* int32 data are read into the upper half of the buffer and widened in place, front to back:
   * element i's 8-byte slot never overlaps a not-yet-read 4-byte element j > i. */
  void *dst = itemsize == 8 ? (void *)data : (void *)((char *)data + (size_t)n * 4);
  rc = read_data(path, f, dst, nbytes, err, errlen);
  fclose(f);
  if (rc != RSSM_OK) {
    free(data);
    return rc;
  }
  if (itemsize == 4) {
    const int32_t *src = dst; /* [n] */
    for (int64_t i = 0; i < n; i++) {
      int32_t v;
      memcpy(&v, src + i, 4);
      data[i] = v;
    }
  }
  out->n = n;
  out->data = data;
  out->source_bytes = itemsize;
  return RSSM_OK;
}

void npy_index_free(npy_index *a) {
  if (!a) return;
  free(a->data);
  memset(a, 0, sizeof *a);
}

/* --- writing --------------------------------------------------------------------------------- */

/* The format-1.0 preamble and header, as NumPy writes them: the total is padded with spaces to a
 * multiple of 64 bytes and ends with '\n'. Returns the length, or -1 if it does not fit. */
static int64_t format_header(const npy_shape *s, char *buf, size_t buflen) {
  char shp[NPY_MAX_NDIM * 22 + 8];
  npy_shape_to_string(s, shp, sizeof shp);
  char dict[sizeof shp + 64];
  int n = snprintf(dict, sizeof dict, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
                   shp);
  if (n < 0 || (size_t)n >= sizeof dict) return -1;
  int64_t total = 10 + n + 1; /* preamble, dict, '\n' */
  total = (total + 63) / 64 * 64;
  int64_t hlen = total - 10;
  if (hlen > 65535 || (size_t)total > buflen) return -1;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(hlen & 0xff);
  buf[9] = (char)(hlen >> 8);
  memcpy(buf + 10, dict, (size_t)n);
  memset(buf + 10 + n, ' ', (size_t)(total - 10 - n - 1));
  buf[total - 1] = '\n';
  return total;
}

static int write_all(int fd, const void *p, int64_t n) {
  const char *c = p;
  while (n > 0) {
    size_t chunk = n > (1 << 30) ? (size_t)1 << 30 : (size_t)n;
    ssize_t w = write(fd, c, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    c += w;
    n -= w;
  }
  return 0;
}

int npy_save_f32(const char *path, int ndim, const int64_t *dim, const float *data, char *err,
                 size_t errlen) {
  npy_shape s;
  if (npy_shape_set(&s, ndim, dim) != 0 || s.count > INT64_MAX / 4) {
    rssm_fail(err, errlen, "%s: cannot write: invalid shape (ndim %d)", path, ndim);
    return RSSM_ERR_INPUT;
  }
  char hdr[2048];
  int64_t hlen = format_header(&s, hdr, sizeof hdr);
  if (hlen < 0) {
    rssm_fail(err, errlen, "%s: cannot write: header too long", path);
    return RSSM_ERR_INPUT;
  }
  size_t tlen = strlen(path) + 32;
  char *tmp = malloc(tlen);
  if (!tmp) {
    rssm_fail(err, errlen, "%s: out of memory", path);
    return RSSM_ERR_IO;
  }
  /* Same directory as the target, so that rename() is atomic. */
  snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    rssm_fail(err, errlen, "%s: cannot create %s: %s", path, tmp, strerror(errno));
    free(tmp);
    return RSSM_ERR_IO;
  }
  const char *what = NULL;
  if (write_all(fd, hdr, hlen) != 0 || write_all(fd, data, s.count * 4) != 0)
    what = "write";
  else if (fsync(fd) != 0)
    what = "fsync";
  int saved = errno;
  if (close(fd) != 0 && !what) {
    what = "close";
    saved = errno;
  }
  if (!what && rename(tmp, path) != 0) {
    what = "rename";
    saved = errno;
  }
  if (what) {
    rssm_fail(err, errlen, "%s: %s of %s failed: %s", path, what, tmp, strerror(saved));
    unlink(tmp);
    free(tmp);
    return RSSM_ERR_IO;
  }
  free(tmp);
  /* Make the rename itself durable; a failure here leaves a complete file, so it is ignored. */
  char *dir = strdup(path);
  if (dir) {
    char *slash = strrchr(dir, '/');
    const char *d = ".";
    if (slash == dir) d = "/";
    else if (slash) { *slash = '\0'; d = dir; }
    int dfd = open(d, O_RDONLY);
    if (dfd >= 0) {
      (void)fsync(dfd);
      close(dfd);
    }
    free(dir);
  }
  return RSSM_OK;
}
