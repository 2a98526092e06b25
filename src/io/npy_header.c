/* The .npy preamble and header dictionary: parsed strictly, every size checked before use.
 *
 * Layout (NumPy's format spec): "\x93NUMPY", major, minor, a little-endian header length
 * (2 bytes for 1.0, 4 bytes for 2.0 and 3.0), then that many bytes of a Python dict literal
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
 * padded with spaces and ended by '\n'. We accept exactly the literal forms NumPy writes (either
 * quote style, optional trailing commas, Python 2 'L' suffixes on integers) and nothing that
 * would need a Python evaluator. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/errbuf.h"
#include "src/io/npy.h"

int npy_shape_set(npy_shape *s, int ndim, const int64_t *dim) {
  if (ndim < 0 || ndim > NPY_MAX_NDIM) return -1;
  s->ndim = ndim;
  int has_zero = 0;
  for (int i = 0; i < ndim; i++) {
    if (dim[i] < 0) return -1;
    if (dim[i] == 0) has_zero = 1;
    s->dim[i] = dim[i];
  }
  /* A zero anywhere makes the array empty whatever the other axes say (as in NumPy). */
  int64_t n = 1;
  if (has_zero) {
    n = 0;
  } else {
    for (int i = 0; i < ndim; i++) {
      if (n > INT64_MAX / dim[i]) return -1;
      n *= dim[i];
    }
  }
  s->count = n;
  return 0;
}

void npy_shape_to_string(const npy_shape *s, char *buf, size_t buflen) {
  if (!buf || buflen == 0) return;
  size_t used = 0;
  buf[0] = '\0';
#define APPEND(...)                                                          \
  do {                                                                       \
    if (used < buflen) {                                                     \
      int k_ = snprintf(buf + used, buflen - used, __VA_ARGS__);             \
      if (k_ > 0) used += (size_t)k_;                                        \
    }                                                                        \
  } while (0)
  APPEND("(");
  for (int i = 0; i < s->ndim; i++) APPEND(i ? ", %" PRId64 : "%" PRId64, s->dim[i]);
  APPEND(s->ndim == 1 ? ",)" : ")");
#undef APPEND
}

/* --- the dict literal -------------------------------------------------------------------------- */

typedef struct {
  const char *p, *end;
  const char *path;
  char *err;
  size_t errlen;
} cursor;

static void skip_ws(cursor *c) {
  while (c->p < c->end &&
         (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r' || *c->p == '\f'))
    c->p++;
}

static int eat(cursor *c, char ch) {
  skip_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return 1;
  }
  return 0;
}

/* A quoted string without escapes; copies it into out (outlen bytes). Returns 0, -1 when the
 * next token is not a string, -2 when it is malformed or too long. */
static int parse_string(cursor *c, char *out, size_t outlen) {
  skip_ws(c);
  if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return -1;
  char q = *c->p++;
  const char *start = c->p;
  while (c->p < c->end && *c->p != q) {
    if (*c->p == '\\' || *c->p == '\n') return -2; /* escapes: NumPy never writes them */
    c->p++;
  }
  if (c->p >= c->end) return -2;
  size_t n = (size_t)(c->p - start);
  c->p++; /* closing quote */
  if (n + 1 > outlen) return -2;
  memcpy(out, start, n);
  out[n] = '\0';
  return 0;
}

static const char *token_preview(const cursor *c, char *buf, size_t buflen) {
  size_t n = 0;
  const char *p = c->p;
  while (p < c->end && n + 1 < buflen && n < 20 && *p != '\n') {
    unsigned char ch = (unsigned char)*p++;
    buf[n++] = (ch >= 0x20 && ch < 0x7f) ? (char)ch : '?';
  }
  buf[n] = '\0';
  return n ? buf : "end of header";
}

/* A Python int literal: digits without a leading zero (except "0"), optional 'L'/'l' suffix. */
static int parse_dim(cursor *c, int64_t *out) {
  skip_ws(c);
  const char *start = c->p;
  int64_t v = 0;
  while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
    int d = *c->p - '0';
    if (v > (INT64_MAX - d) / 10) return -2;
    v = v * 10 + d;
    c->p++;
  }
  size_t n = (size_t)(c->p - start);
  if (n == 0) return -1;
  if (n > 1 && start[0] == '0') return -1;
  if (c->p < c->end && (*c->p == 'L' || *c->p == 'l')) c->p++;
  *out = v;
  return 0;
}

static int parse_shape(cursor *c, npy_shape *s) {
  char prev[32];
  const char *path = c->path;
  if (!eat(c, '(')) {
    rssm_fail(c->err, c->errlen, "%s: header key 'shape': expected a tuple like (3, 4), found '%s'",
              path, token_preview(c, prev, sizeof prev));
    return RSSM_ERR_INPUT;
  }
  int64_t dim[NPY_MAX_NDIM];
  int n = 0;
  int need_comma_for_one = 1;
  for (;;) {
    if (eat(c, ')')) break;
    if (n == NPY_MAX_NDIM) {
      rssm_fail(c->err, c->errlen, "%s: header key 'shape': more than %d dimensions", path,
                NPY_MAX_NDIM);
      return RSSM_ERR_INPUT;
    }
    int rc = parse_dim(c, &dim[n]);
    if (rc == -2) {
      rssm_fail(c->err, c->errlen, "%s: header key 'shape': dimension %d is larger than %" PRId64,
                path, n, INT64_MAX);
      return RSSM_ERR_INPUT;
    }
    if (rc != 0) {
      rssm_fail(c->err, c->errlen,
                "%s: header key 'shape': expected a non-negative integer, found '%s'", path,
                token_preview(c, prev, sizeof prev));
      return RSSM_ERR_INPUT;
    }
    n++;
    if (eat(c, ',')) {
      need_comma_for_one = 0;
      continue;
    }
    if (eat(c, ')')) break;
    rssm_fail(c->err, c->errlen, "%s: header key 'shape': expected ',' or ')', found '%s'", path,
              token_preview(c, prev, sizeof prev));
    return RSSM_ERR_INPUT;
  }
  /* "(5)" is the integer 5 in Python, not a tuple. */
  if (n == 1 && need_comma_for_one) {
    rssm_fail(c->err, c->errlen,
              "%s: header key 'shape': '(%" PRId64 ")' is not a tuple (expected '(%" PRId64 ",)')",
              path, dim[0], dim[0]);
    return RSSM_ERR_INPUT;
  }
  if (npy_shape_set(s, n, dim) != 0) {
    rssm_fail(c->err, c->errlen, "%s: header key 'shape': the element count overflows 64 bits",
              path);
    return RSSM_ERR_INPUT;
  }
  return RSSM_OK;
}

static int parse_bool(cursor *c, int *out) {
  skip_ws(c);
  size_t left = (size_t)(c->end - c->p);
  if (left >= 4 && memcmp(c->p, "True", 4) == 0) {
    c->p += 4;
    *out = 1;
  } else if (left >= 5 && memcmp(c->p, "False", 5) == 0) {
    c->p += 5;
    *out = 0;
  } else {
    return -1;
  }
  /* "Trueish" is a name, not True */
  if (c->p < c->end && ((*c->p >= 'a' && *c->p <= 'z') || (*c->p >= 'A' && *c->p <= 'Z') ||
                        (*c->p >= '0' && *c->p <= '9') || *c->p == '_'))
    return -1;
  return 0;
}

int npy_parse_header_dict(const char *path, const char *text, size_t len, npy_header *h,
                          char *err, size_t errlen) {
  cursor c = {text, text + len, path, err, errlen};
  char prev[32];
  int seen_descr = 0, seen_fortran = 0, seen_shape = 0;

  if (memchr(text, '\0', len)) {
    rssm_fail(err, errlen, "%s: header contains a NUL byte (expected a Python dict literal)", path);
    return RSSM_ERR_INPUT;
  }
  if (!eat(&c, '{')) {
    rssm_fail(err, errlen, "%s: header: expected a dict starting with '{', found '%s'", path,
              token_preview(&c, prev, sizeof prev));
    return RSSM_ERR_INPUT;
  }
  for (;;) {
    if (eat(&c, '}')) break;
    char key[32];
    int rc = parse_string(&c, key, sizeof key);
    if (rc != 0) {
      rssm_fail(err, errlen, "%s: header: expected a quoted key or '}', found '%s'", path,
                token_preview(&c, prev, sizeof prev));
      return RSSM_ERR_INPUT;
    }
    if (!eat(&c, ':')) {
      rssm_fail(err, errlen, "%s: header key '%s': expected ':' after the key", path, key);
      return RSSM_ERR_INPUT;
    }
    if (strcmp(key, "descr") == 0) {
      if (seen_descr++) goto duplicate;
      rc = parse_string(&c, h->descr, sizeof h->descr);
      if (rc != 0) {
        rssm_fail(err, errlen,
                  "%s: header key 'descr': expected a dtype string such as '<f4' (structured "
                  "dtypes are not supported), found '%s'",
                  path, token_preview(&c, prev, sizeof prev));
        return RSSM_ERR_INPUT;
      }
    } else if (strcmp(key, "fortran_order") == 0) {
      if (seen_fortran++) goto duplicate;
      if (parse_bool(&c, &h->fortran_order) != 0) {
        rssm_fail(err, errlen, "%s: header key 'fortran_order': expected True or False, found '%s'",
                  path, token_preview(&c, prev, sizeof prev));
        return RSSM_ERR_INPUT;
      }
    } else if (strcmp(key, "shape") == 0) {
      if (seen_shape++) goto duplicate;
      rc = parse_shape(&c, &h->shape);
      if (rc != RSSM_OK) return rc;
    } else {
      rssm_fail(err, errlen,
                "%s: header has unexpected key '%s' (expected only 'descr', 'fortran_order', "
                "'shape')",
                path, key);
      return RSSM_ERR_INPUT;
    }
    if (eat(&c, ',')) continue;
    if (eat(&c, '}')) break;
    rssm_fail(err, errlen, "%s: header key '%s': expected ',' or '}' after the value, found '%s'",
              path, key, token_preview(&c, prev, sizeof prev));
    return RSSM_ERR_INPUT;
  duplicate:
    rssm_fail(err, errlen, "%s: header key '%s' appears more than once", path, key);
    return RSSM_ERR_INPUT;
  }
  skip_ws(&c);
  if (c.p != c.end) {
    rssm_fail(err, errlen, "%s: header: unexpected '%s' after the closing '}'", path,
              token_preview(&c, prev, sizeof prev));
    return RSSM_ERR_INPUT;
  }
  const char *missing = !seen_descr ? "descr" : !seen_fortran ? "fortran_order"
                        : !seen_shape ? "shape" : NULL;
  if (missing) {
    rssm_fail(err, errlen, "%s: header lacks key '%s' (expected 'descr', 'fortran_order', 'shape')",
              path, missing);
    return RSSM_ERR_INPUT;
  }
  return RSSM_OK;
}

/* --- the preamble ---------------------------------------------------------------------------- */

static uint32_t le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

int npy_read_header(const char *path, FILE *f, int64_t file_size, npy_header *h, char *err,
                    size_t errlen) {
  static const unsigned char magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  unsigned char pre[12];
  memset(h, 0, sizeof *h);

  if (file_size < 10) {
    rssm_fail(err, errlen,
              "%s: file is %" PRId64
              " bytes, too short for a .npy file (at least 10 bytes of "
              "preamble expected)",
              path, file_size);
    return RSSM_ERR_INPUT;
  }
  if (fread(pre, 1, 8, f) != 8) {
    rssm_fail(err, errlen, "%s: read error in the preamble: %s", path, strerror(errno));
    return RSSM_ERR_IO;
  }
  if (memcmp(pre, magic, sizeof magic) != 0) {
    rssm_fail(err, errlen, "%s: magic: not a .npy file (expected the bytes \\x93NUMPY)", path);
    return RSSM_ERR_INPUT;
  }
  h->major = pre[6];
  h->minor = pre[7];
  int len_bytes;
  if (h->major == 1 && h->minor == 0) {
    len_bytes = 2;
  } else if ((h->major == 2 || h->major == 3) && h->minor == 0) {
    len_bytes = 4;
  } else {
    rssm_fail(err, errlen, "%s: version %d.%d is not supported (expected 1.0, 2.0 or 3.0)", path,
              h->major, h->minor);
    return RSSM_ERR_INPUT;
  }
  if (file_size < 8 + len_bytes) {
    rssm_fail(err, errlen, "%s: file ends inside the header length field (version %d.0)", path,
              h->major);
    return RSSM_ERR_INPUT;
  }
  if (fread(pre + 8, 1, (size_t)len_bytes, f) != (size_t)len_bytes) {
    rssm_fail(err, errlen, "%s: read error in the header length: %s", path, strerror(errno));
    return RSSM_ERR_IO;
  }
  int64_t hlen = len_bytes == 2 ? (int64_t)(pre[8] | pre[9] << 8) : (int64_t)le32(pre + 8);
  int64_t pre_len = 8 + len_bytes;
  if (hlen > file_size - pre_len) {
    rssm_fail(err, errlen,
              "%s: header length %" PRId64 " runs past the end of the file (%" PRId64
              " bytes after the preamble)",
              path, hlen, file_size - pre_len);
    return RSSM_ERR_INPUT;
  }
  if (hlen > NPY_MAX_HEADER) {
    rssm_fail(err, errlen, "%s: header length %" PRId64 " is larger than the %d bytes accepted",
              path, hlen, NPY_MAX_HEADER);
    return RSSM_ERR_INPUT;
  }
  char *text = malloc((size_t)hlen + 1); /* [hlen + 1]: the dict text, NUL-terminated */
  if (!text) {
    rssm_fail(err, errlen, "%s: out of memory reading the header", path);
    return RSSM_ERR_IO;
  }
  if (fread(text, 1, (size_t)hlen, f) != (size_t)hlen) {
    rssm_fail(err, errlen, "%s: read error in the header: %s", path, strerror(errno));
    free(text);
    return RSSM_ERR_IO;
  }
  text[hlen] = '\0';
  int rc = npy_parse_header_dict(path, text, (size_t)hlen, h, err, errlen);
  free(text);
  h->data_offset = pre_len + hlen;
  return rc;
}
