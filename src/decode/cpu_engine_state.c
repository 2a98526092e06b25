/* The CPU lockstep engine's resume state (layout in cpu_engine_internal.h): its decoders' states
 * and what the block loop keeps between blocks (the reference rows a lagging spec pair still
 * needs, every pair's cursor, spec round and non-finite flag). */
#include <stdio.h>
#include <string.h>

#include "src/decode/cpu_engine_internal.h"
#include "src/io/byte_buf.h"
#include "src/io/status.h"

/* A decoder's state, prefixed by its size. */
static int64_t decoder_bytes(const rssm_decoder *d) { return 8 + d->ops->state_bytes(d); }

int64_t cpu_engine_state_bytes(const rssm_engine *e) {
  const cpu_engine *g = e->impl;
  int64_t n = 16;
  for (int64_t k = 0; k < g->K; k++)
    n += decoder_bytes(g->ref[k]) + g->nrows * g->V * (int64_t)sizeof(float) + g->nrows * 8;
  for (int64_t i = 0; i < g->K * g->C; i++)
    n += 8 + 4 + 1 + (g->dead[i] ? 0 : decoder_bytes(g->dec[i]));
  return n;
}

/* Appends len bytes at *at. */
static void put(unsigned char **at, const void *src, size_t len) {
  if (len) memcpy(*at, src, len);
  *at += len;
}

static int put_decoder(unsigned char **at, const rssm_decoder *d, char *err, size_t errlen) {
  int64_t n = d->ops->state_bytes(d);
  put(at, &n, sizeof n);
  int rc = d->ops->save(d, *at, err, errlen);
  *at += n;
  return rc;
}

int cpu_engine_save(const rssm_engine *e, void *buf, char *err, size_t errlen) {
  const cpu_engine *g = e->impl;
  unsigned char *at = buf;
  put(&at, &g->base, 8);
  put(&at, &g->nrows, 8);
  int rc = RSSM_OK;
  for (int64_t k = 0; k < g->K && rc == RSSM_OK; k++) {
    rc = put_decoder(&at, g->ref[k], err, errlen);
    put(&at, g->reflp + (size_t)k * (size_t)g->rows * (size_t)g->V,
        (size_t)g->nrows * (size_t)g->V * sizeof(float));
    put(&at, g->refam + (size_t)k * (size_t)g->rows, (size_t)g->nrows * sizeof(int64_t));
  }
  for (int64_t i = 0; i < g->K * g->C && rc == RSSM_OK; i++) {
    put(&at, &g->cursor[i], 8);
    put(&at, &g->round[i], 4);
    put(&at, &g->dead[i], 1);
    if (!g->dead[i]) rc = put_decoder(&at, g->dec[i], err, errlen);
  }
  return rc;
}

/* put_decoder's counterpart. */
static int get_decoder(byte_reader *b, rssm_decoder *d, char *err, size_t errlen) {
  int64_t n = -1;
  byte_get(b, &n, sizeof n);
  if (b->bad || n < 0) {
    b->bad = 1;
    return RSSM_OK;
  }
  const void *at = byte_take(b, (size_t)n);
  if (!at) return RSSM_OK;
  return d->ops->load(d, at, n, err, errlen);
}

int cpu_engine_load(rssm_engine *e, const void *buf, int64_t len, char *err, size_t errlen) {
  cpu_engine *g = e->impl;
  byte_reader b = {buf, len > 0 ? (size_t)len : 0, 0, 0};
  byte_get(&b, &g->base, 8);
  byte_get(&b, &g->nrows, 8);
  if (b.bad || g->nrows < 0 || g->nrows > g->rows) {
    snprintf(err, errlen, "corrupt checkpoint counters");
    return RSSM_ERR_INPUT;
  }
  int rc = RSSM_OK;
  for (int64_t k = 0; k < g->K && rc == RSSM_OK && !b.bad; k++) {
    rc = get_decoder(&b, g->ref[k], err, errlen);
    byte_get(&b, g->reflp + (size_t)k * (size_t)g->rows * (size_t)g->V,
        (size_t)g->nrows * (size_t)g->V * sizeof(float));
    byte_get(&b, g->refam + (size_t)k * (size_t)g->rows, (size_t)g->nrows * sizeof(int64_t));
  }
  for (int64_t i = 0; i < g->K * g->C && rc == RSSM_OK && !b.bad; i++) {
    byte_get(&b, &g->cursor[i], 8);
    byte_get(&b, &g->round[i], 4);
    byte_get(&b, &g->dead[i], 1);
    if (g->cursor[i] < 0 || g->cursor[i] > g->N) b.bad = 1;
    if (!g->dead[i]) {
      rc = get_decoder(&b, g->dec[i], err, errlen);
    } else {
      /* a pair that went non-finite keeps no decoder */
      rssm_decoder_free(g->dec[i]);
      g->dec[i] = NULL;
    }
  }
  if (rc == RSSM_OK && (b.bad || b.off != b.n)) {
    snprintf(err, errlen, "corrupt checkpoint (sizes do not match this run)");
    rc = RSSM_ERR_INPUT;
  }
  return rc;
}
