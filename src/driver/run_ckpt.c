/* Checkpoint files of a run in progress (run_internal.h):
 *   magic "RSSMCKP1" | u64 payload bytes | u32 CRC-32 of the payload | zstd frame of the payload
 * payload (host byte order: a checkpoint is resumed by the same build on the same machine kind):
 *   u64 fingerprint, u64 identity length, identity text (run_identity.h), i64 b0, written, base,
 *   nrows
 *   per sequence: i64 state bytes, reference decoder state, nrows x V floats, nrows i64 argmax
 *   per pair: i64 cursor, u32 round, u8 dead, and when alive i64 state bytes + decoder state
 *   metric buffers: ref_nll [K][N]; per configuration kl, nll, dp [K][N], top1 [K][N],
 *   first_nonfinite [K] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "src/driver/run_identity.h"
#include "src/driver/run_internal.h"
#include "src/io/status.h"
#include "src/io/atomic_file.h"

#define CKPT_MAGIC "RSSMCKP2" /* 2: the identity text after the fingerprint */

typedef struct {
  unsigned char *p;
  size_t n, cap;
  int oom;
} bbuf;

static void *grow(bbuf *b, size_t more) {
  if (b->oom) return NULL;
  if (b->n + more > b->cap) {
    size_t nc = b->cap ? b->cap : 1 << 20;
    while (nc < b->n + more) nc *= 2;
    unsigned char *q = realloc(b->p, nc);
    if (!q) {
      b->oom = 1;
      return NULL;
    }
    b->p = q;
    b->cap = nc;
  }
  void *at = b->p + b->n;
  b->n += more;
  return at;
}

static void put(bbuf *b, const void *src, size_t len) {
  void *at = grow(b, len);
  if (at && len) memcpy(at, src, len);
}

/* The engine's row of decoder d: the reference of window k is row k, pair (k, c) row
 * (c + 1) K + k (engine.h). */
static int engine_row(const runner *r, int64_t k, int64_t c /* -1: the reference */) {
  return (int)((c + 1) * r->K + k);
}

/* The state of window k's reference (c = -1) or of pair (k, c): its decoder's, or with an engine
 * the engine's row. */
static int put_state(bbuf *b, const runner *r, int64_t k, int64_t c, char *err, size_t errlen) {
  const rssm_decoder *d = c < 0 ? r->ref[k] : r->dec[k * r->C + c];
  const int row = engine_row(r, k, c);
  int64_t n = r->engine ? r->engine->ops->row_bytes(r->engine, row) : d->ops->state_bytes(d);
  put(b, &n, sizeof n);
  void *at = grow(b, (size_t)n);
  if (!at) return RSSM_OK; /* reported as out of memory by the caller */
  if (r->engine) return r->engine->ops->row_save(r->engine, row, at, err, errlen);
  return d->ops->save(d, at, err, errlen);
}

static size_t crc_len(size_t n) { return n; }

int run_ckpt_save(const runner *r, const char *path, char *err, size_t errlen) {
  bbuf b = {0};
  size_t KN = (size_t)(r->K * r->N);
  put(&b, &r->fingerprint, 8);
  uint64_t idlen = strlen(r->d.identity);
  put(&b, &idlen, 8);
  put(&b, r->d.identity, (size_t)idlen);
  put(&b, &r->b0, 8);
  put(&b, &r->written, 8);
  put(&b, &r->base, 8);
  put(&b, &r->nrows, 8);
  int rc = RSSM_OK;
  for (int64_t k = 0; k < r->K && rc == RSSM_OK; k++) {
    rc = put_state(&b, r, k, -1, err, errlen);
    put(&b, r->reflp + (size_t)k * (size_t)r->rows * (size_t)r->V,
        (size_t)r->nrows * (size_t)r->V * sizeof(float));
    put(&b, r->refam + (size_t)k * (size_t)r->rows, (size_t)r->nrows * sizeof(int64_t));
  }
  for (int64_t i = 0; i < r->K * r->C && rc == RSSM_OK; i++) {
    put(&b, &r->cursor[i], 8);
    put(&b, &r->round[i], 4);
    put(&b, &r->dead[i], 1);
    if (!r->dead[i]) rc = put_state(&b, r, i / r->C, i % r->C, err, errlen);
  }
  put(&b, r->d.ref_nll, KN * sizeof(float));
  for (int64_t c = 0; c < r->C; c++) {
    const run_cfg_data *x = &r->d.cfg[c];
    put(&b, x->kl, KN * sizeof(float));
    put(&b, x->nll, KN * sizeof(float));
    put(&b, x->dp, KN * sizeof(float));
    put(&b, x->top1, KN);
    put(&b, x->first_nonfinite, (size_t)r->K * sizeof(int64_t));
  }
  if (rc != RSSM_OK || b.oom) {
    free(b.p);
    if (rc == RSSM_OK) snprintf(err, errlen, "%s: out of memory for the checkpoint", path);
    return rc == RSSM_OK ? RSSM_ERR_IO : rc;
  }
  size_t bound = ZSTD_compressBound(b.n);
  unsigned char *z = malloc(bound + 20);
  if (!z) {
    free(b.p);
    snprintf(err, errlen, "%s: out of memory for the checkpoint", path);
    return RSSM_ERR_IO;
  }
  memcpy(z, CKPT_MAGIC, 8);
  uint64_t raw = b.n;
  memcpy(z + 8, &raw, 8);
  uLong crc = crc32(0L, Z_NULL, 0);
  for (size_t off = 0; off < b.n; off += 1u << 30) {
    size_t k = b.n - off < (1u << 30) ? b.n - off : (1u << 30);
    crc = crc32(crc, b.p + off, (uInt)crc_len(k));
  }
  uint32_t c32 = (uint32_t)crc;
  memcpy(z + 16, &c32, 4);
  /* level 1: checkpoints are written often and read at most once */
  size_t zn = ZSTD_compress(z + 20, bound, b.p, b.n, 1);
  free(b.p);
  if (ZSTD_isError(zn)) {
    free(z);
    snprintf(err, errlen, "%s: compressing the checkpoint failed", path);
    return RSSM_ERR_IO;
  }
  const void *parts[1] = {z};
  size_t lens[1] = {zn + 20};
  rc = atomic_write_parts(path, 1, parts, lens, err, errlen);
  free(z);
  return rc;
}

typedef struct {
  const unsigned char *p;
  size_t n, off;
  int bad;
} rbuf;

static const void *take(rbuf *b, size_t len) {
  if (b->bad || len > b->n - b->off) {
    b->bad = 1;
    return NULL;
  }
  const void *at = b->p + b->off;
  b->off += len;
  return at;
}

static void get(rbuf *b, void *dst, size_t len) {
  const void *at = take(b, len);
  if (at && len) memcpy(dst, at, len);
}

/* put_state's counterpart. */
static int get_state(rbuf *b, runner *r, int64_t k, int64_t c, char *err, size_t errlen) {
  int64_t n = -1;
  get(b, &n, sizeof n);
  if (b->bad || n < 0) {
    b->bad = 1;
    return RSSM_OK;
  }
  const void *at = take(b, (size_t)n);
  if (!at) return RSSM_OK;
  if (r->engine) return r->engine->ops->row_load(r->engine, engine_row(r, k, c), at, n, err, errlen);
  rssm_decoder *d = c < 0 ? r->ref[k] : r->dec[k * r->C + c];
  return d->ops->load(d, at, n, err, errlen);
}

int run_ckpt_load(runner *r, const char *path, char *err, size_t errlen) {
  unsigned char *file;
  int64_t len;
  int rc = read_whole_file(path, INT64_C(1) << 40, &file, &len, err, errlen);
  if (rc != RSSM_OK) return rc;
  uint64_t raw = 0;
  uint32_t c32 = 0;
  if (len < 20 || memcmp(file, CKPT_MAGIC, 8) != 0) {
    free(file);
    int old = len >= 8 && memcmp(file, "RSSMCKP1", 8) == 0;
    snprintf(err, errlen, "%s: %s", path, old ? "checkpoint of an older build (format RSSMCKP1; "
             "use --force to start over)" : "not a replayssm checkpoint (wrong magic)");
    return RSSM_ERR_INPUT;
  }
  memcpy(&raw, file + 8, 8);
  memcpy(&c32, file + 16, 4);
  unsigned char *p = raw < ((uint64_t)1 << 40) ? malloc((size_t)raw + 1) : NULL;
  if (!p) {
    free(file);
    snprintf(err, errlen, "%s: out of memory or corrupt size (%llu bytes)", path,
             (unsigned long long)raw);
    return RSSM_ERR_IO;
  }
  size_t got = ZSTD_decompress(p, (size_t)raw, file + 20, (size_t)len - 20);
  free(file);
  uLong crc = crc32(0L, Z_NULL, 0);
  if (!ZSTD_isError(got))
    for (size_t off = 0; off < got; off += 1u << 30) {
      size_t k = got - off < (1u << 30) ? got - off : (1u << 30);
      crc = crc32(crc, p + off, (uInt)k);
    }
  if (ZSTD_isError(got) || got != raw || (uint32_t)crc != c32) {
    free(p);
    snprintf(err, errlen, "%s: corrupt checkpoint (truncated or checksum mismatch); remove it or "
             "use --force to start over", path);
    return RSSM_ERR_INPUT;
  }
  rbuf b = {p, (size_t)raw, 0, 0};
  uint64_t fp = 0, idlen = 0;
  get(&b, &fp, 8);
  get(&b, &idlen, 8);
  const char *id = idlen < 65536 ? take(&b, (size_t)idlen) : NULL;
  if (fp != r->fingerprint || !id) {
    char *have = id ? strndup(id, (size_t)idlen) : NULL;
    char diff[1400] = "";
    if (have) run_identity_diff(have, r->d.identity, "the checkpoint", diff, sizeof diff);
    free(have);
    free(p);
    snprintf(err, errlen, "%s: checkpoint of another experiment: %s (use --force to start over)",
             path, diff[0] ? diff : "the same identity, other settings (block, checkpoint_every "
             "or file paths of the effective experiment)");
    return RSSM_ERR_INPUT;
  }
  get(&b, &r->b0, 8);
  get(&b, &r->written, 8);
  get(&b, &r->base, 8);
  get(&b, &r->nrows, 8);
  if (b.bad || r->b0 < 0 || r->b0 > r->N || r->written < 0 || r->written > r->b0 ||
      r->nrows < 0 || r->nrows > r->rows) {
    free(p);
    snprintf(err, errlen, "%s: corrupt checkpoint counters", path);
    return RSSM_ERR_INPUT;
  }
  size_t KN = (size_t)(r->K * r->N);
  for (int64_t k = 0; k < r->K && rc == RSSM_OK && !b.bad; k++) {
    rc = get_state(&b, r, k, -1, err, errlen);
    get(&b, r->reflp + (size_t)k * (size_t)r->rows * (size_t)r->V,
        (size_t)r->nrows * (size_t)r->V * sizeof(float));
    get(&b, r->refam + (size_t)k * (size_t)r->rows, (size_t)r->nrows * sizeof(int64_t));
  }
  for (int64_t i = 0; i < r->K * r->C && rc == RSSM_OK && !b.bad; i++) {
    get(&b, &r->cursor[i], 8);
    get(&b, &r->round[i], 4);
    get(&b, &r->dead[i], 1);
    if (r->cursor[i] < 0 || r->cursor[i] > r->N) b.bad = 1;
    if (!r->dead[i]) {
      rc = get_state(&b, r, i / r->C, i % r->C, err, errlen);
    } else {
      rssm_decoder_free(r->dec[i]);
      r->dec[i] = NULL;
    }
  }
  get(&b, r->d.ref_nll, KN * sizeof(float));
  for (int64_t c = 0; c < r->C; c++) {
    run_cfg_data *x = &r->d.cfg[c];
    get(&b, x->kl, KN * sizeof(float));
    get(&b, x->nll, KN * sizeof(float));
    get(&b, x->dp, KN * sizeof(float));
    get(&b, x->top1, KN);
    get(&b, x->first_nonfinite, (size_t)r->K * sizeof(int64_t));
  }
  if (rc == RSSM_OK && (b.bad || b.off != b.n)) {
    snprintf(err, errlen, "%s: corrupt checkpoint (sizes do not match this run)", path);
    rc = RSSM_ERR_INPUT;
  }
  free(p);
  return rc;
}
