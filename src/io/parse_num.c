/* Strict number parsing (parse_num.h). */
#include "src/io/parse_num.h"

#include <errno.h>
#include <stdlib.h>

int rssm_parse_u64(const char *text, uint64_t *out) {
  if (!text || !*text) return -1;
  unsigned base = 10;
  const char *p = text;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
    if (!*p) return -1;
  }
  uint64_t v = 0;
  for (; *p; p++) {
    unsigned d;
    if (*p >= '0' && *p <= '9') d = (unsigned)(*p - '0');
    else if (base == 16 && *p >= 'a' && *p <= 'f') d = (unsigned)(*p - 'a' + 10);
    else if (base == 16 && *p >= 'A' && *p <= 'F') d = (unsigned)(*p - 'A' + 10);
    else return -1;
    if (v > (UINT64_MAX - d) / base) return -1;
    v = v * base + d;
  }
  *out = v;
  return 0;
}

int rssm_parse_long(const char *text, long lo, long hi, long *out) {
  char *end;
  long x = strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || x < lo || x > hi) return -1;
  *out = x;
  return 0;
}

int rssm_parse_double(const char *text, double lo, double hi, double *out) {
  char *end;
  double x = strtod(text, &end);
  if (*text == '\0' || *end != '\0' || !(x >= lo && x <= hi)) return -1;
  *out = x;
  return 0;
}

int rssm_parse_int_list(const char *text, int64_t lo, int64_t hi, int64_t *out, int max) {
  if (!text || max < 1) return -1;
  int n = 0;
  const char *p = text;
  while (*p) {
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (end == p || errno || v < lo || v > hi || n == max) return -1;
    out[n++] = (int64_t)v;
    if (*end == ',' && end[1] != '\0') p = end + 1; /* "16," is an error, not a list of one */
    else if (*end == '\0') p = end;
    else return -1;
  }
  return n > 0 ? n : -1;
}
