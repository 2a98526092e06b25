/* Byte-level corpora from text files and PG-19 directories (byte_corpus.h). */
#include "src/tokens/byte_corpus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/io/status.h"
#include "src/io/atomic_file.h"
#include "src/tokens/tokstream.h"

void byte_corpus_free(byte_corpus *c) {
  free(c->ids);
  c->ids = NULL;
  c->n = c->cap = 0;
}

static int reserve(byte_corpus *c, int64_t more, const char *path, char *err, size_t errlen) {
  if (more > TOKSTREAM_MAX_TOKENS - c->n) {
    snprintf(err, errlen, "%s: the corpus would exceed %lld tokens", path,
             (long long)TOKSTREAM_MAX_TOKENS);
    return RSSM_ERR_INPUT;
  }
  int64_t need = c->n + more;
  if (need <= c->cap) return RSSM_OK;
  int64_t cap = c->cap ? c->cap : 1 << 16;
  while (cap < need) cap *= 2;
  uint32_t *p = realloc(c->ids, (size_t)cap * sizeof(uint32_t));
  if (!p) {
    snprintf(err, errlen, "%s: out of memory for %lld tokens", path, (long long)need);
    return RSSM_ERR_IO;
  }
  c->ids = p;
  c->cap = cap;
  return RSSM_OK;
}

int byte_corpus_add_file(byte_corpus *c, const char *path, char *err, size_t errlen) {
  unsigned char *buf;
  int64_t len;
  int rc = read_whole_file(path, TOKSTREAM_MAX_TOKENS, &buf, &len, err, errlen);
  if (rc != RSSM_OK) return rc;
  if (c->encode) {
    rc = c->encode(c->encode_ctx, (const char *)buf, len, path, c, err, errlen);
    free(buf);
    return rc;
  }
  rc = reserve(c, len, path, err, errlen);
  if (rc == RSSM_OK) {
    for (int64_t i = 0; i < len; i++) c->ids[c->n + i] = buf[i];
    c->n += len;
  }
  free(buf);
  return rc;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int byte_corpus_add_pg19(byte_corpus *c, const char *dir, const char *split, int64_t limit,
                         int64_t *nbooks, char *err, size_t errlen) {
  *nbooks = 0;
  if (strcmp(split, "train") != 0 && strcmp(split, "validation") != 0 && strcmp(split, "test") != 0) {
    snprintf(err, errlen, "--split '%s' (expected train, validation or test)", split);
    return RSSM_ERR_INPUT;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s/metadata.csv", dir);
  unsigned char *csv;
  int64_t len;
  int rc = read_whole_file(path, INT64_C(1) << 30, &csv, &len, err, errlen);
  if (rc != RSSM_OK) return rc;
  /* Each line starts with the numeric id, then a comma; titles may hold quoted commas, which the
   * id field never does, so only the first field is parsed. */
  int64_t nid = 0, capid = 1024;
  int64_t *idv = malloc((size_t)capid * sizeof(int64_t));
  int64_t lineno = 0;
  int oom = idv == NULL;
  const char *p = (const char *)csv, *end = (const char *)csv + len;
  while (rc == RSSM_OK && !oom && p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    lineno++;
    if (eol > p && !(eol == p + 1 && *p == '\r')) {
      int64_t id = 0;
      const char *q = p;
      int digits = 0;
      while (q < eol && *q >= '0' && *q <= '9' && digits < 18) id = id * 10 + (*q++ - '0'), digits++;
      if (digits == 0 || q >= eol || *q != ',') {
        snprintf(err, errlen, "%s:%lld: expected 'id,title,year,url' with a numeric id", path,
                 (long long)lineno);
        rc = RSSM_ERR_INPUT;
        break;
      }
      if (nid == capid) {
        capid *= 2;
        int64_t *np = realloc(idv, (size_t)capid * sizeof(int64_t));
        if (!np) {
          oom = 1;
          break;
        }
        idv = np;
      }
      idv[nid++] = id;
    }
    p = eol + 1;
  }
  free(csv);
  if (oom) {
    free(idv);
    snprintf(err, errlen, "%s: out of memory", path);
    return RSSM_ERR_IO;
  }
  if (rc != RSSM_OK) {
    free(idv);
    return rc;
  }
  qsort(idv, (size_t)nid, sizeof(int64_t), cmp_i64);
  for (int64_t i = 0; i < nid && (limit <= 0 || *nbooks < limit); i++) {
    if (i > 0 && idv[i] == idv[i - 1]) continue;
    snprintf(path, sizeof path, "%s/%s/%lld.txt", dir, split, (long long)idv[i]);
    if (access(path, F_OK) != 0) continue;
    rc = byte_corpus_add_file(c, path, err, errlen);
    if (rc != RSSM_OK) break;
    (*nbooks)++;
  }
  free(idv);
  if (rc == RSSM_OK && *nbooks == 0) {
    snprintf(err, errlen, "%s/%s: no book listed in metadata.csv has a <id>.txt here", dir, split);
    rc = RSSM_ERR_INPUT;
  }
  return rc;
}
