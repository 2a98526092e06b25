/* Token sources and evaluation windows (token_source.h). */
#include "src/tokens/token_source.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/npy.h"
#include "src/io/status.h"
#include "src/tokens/tokstream.h"

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static void finish(token_source *t) {
  t->max_id = -1;
  for (int64_t i = 0; i < t->n; i++)
    if (t->ids[i] > t->max_id) t->max_id = t->ids[i];
}

int token_source_load(const char *path, token_source *out, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (ends_with(path, ".npy")) {
    npy_index a;
    int rc = npy_load_index(path, &a, err, errlen);
    if (rc != RSSM_OK) return rc;
    uint32_t *u = malloc((size_t)a.n * sizeof(uint32_t) + 1);
    if (!u) {
      npy_index_free(&a);
      snprintf(err, errlen, "%s: out of memory", path);
      return RSSM_ERR_IO;
    }
    for (int64_t i = 0; i < a.n; i++) {
      if (a.data[i] < 0 || a.data[i] > (int64_t)UINT32_MAX) {
        snprintf(err, errlen, "%s: token %lld has id %lld (expected 0 <= id < 2^32)", path,
                 (long long)i, (long long)a.data[i]);
        free(u);
        npy_index_free(&a);
        return RSSM_ERR_INPUT;
      }
      u[i] = (uint32_t)a.data[i];
    }
    out->n = a.n;
    out->ids = a.data; /* ownership moves here; npy_index_free is not called */
    out->crc = tokstream_crc(u, a.n);
    free(u);
    finish(out);
    return RSSM_OK;
  }
  if (ends_with(path, ".tok.zst")) {
    tokstream_info info;
    uint32_t *u;
    int rc = tokstream_read(path, &info, &u, err, errlen);
    if (rc != RSSM_OK) return rc;
    out->ids = malloc((size_t)info.count * sizeof(int64_t) + 1);
    if (!out->ids) {
      free(u);
      snprintf(err, errlen, "%s: out of memory", path);
      return RSSM_ERR_IO;
    }
    for (int64_t i = 0; i < info.count; i++) out->ids[i] = u[i];
    free(u);
    out->n = info.count;
    out->crc = info.crc;
    snprintf(out->tokenizer, sizeof out->tokenizer, "%s", info.tokenizer);
    finish(out);
    return RSSM_OK;
  }
  snprintf(err, errlen, "%s: unknown token file type (expected a .npy or .tok.zst file)", path);
  return RSSM_ERR_INPUT;
}

void token_source_free(token_source *t) {
  free(t->ids);
  memset(t, 0, sizeof *t);
}

int64_t token_window_start(int64_t m, int64_t len, int64_t K, int64_t k) {
  if (K <= 1) return 0;
  int64_t span = m - len, d = K - 1;
  /* k * span / d without overflowing: split span into quotient and remainder */
  return k * (span / d) + (k * (span % d)) / d;
}
