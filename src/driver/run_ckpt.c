/* Checkpoint files of a run in progress (run_internal.h):
 *   magic "RSSMCKP2" | u64 payload bytes | u32 CRC-32 of the payload | zstd frame of the payload
 * payload (host byte order: a checkpoint is resumed by the same build on the same machine kind):
 *   u64 fingerprint, u64 identity length, identity text (run_identity.h), i64 b0, written
 *   the engine's state (engine.h; its length is what the metric buffers leave)
 *   metric buffers: ref_nll [K][N]; per configuration kl, nll, dp [K][N], top1 [K][N],
 *   first_nonfinite [K]
 * The CPU engine's state starts with i64 base, nrows (cpu_engine_internal.h), so a CPU payload is
 * the one of the builds before the engine seam; a GPU state is the GPU engine's own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "src/driver/run_identity.h"
#include "src/driver/run_internal.h"
#include "src/io/byte_buf.h"
#include "src/io/status.h"
#include "src/io/atomic_file.h"

#define CKPT_MAGIC "RSSMCKP2" /* 2: the identity text after the fingerprint */

/* Appends n bytes of p to w, or with w NULL reads them from rd into p. */
static void transfer(byte_buf *w, byte_reader *rd, void *p, size_t n) {
  if (w) byte_buf_put(w, p, n);
  else byte_get(rd, p, n);
}

/* The metric buffers, in either direction (transfer). */
static void metric_buffers(const runner *r, byte_buf *w, byte_reader *rd) {
  size_t KN = (size_t)(r->K * r->N);
  transfer(w, rd, r->d.ref_nll, KN * sizeof(float));
  for (int64_t c = 0; c < r->C; c++) {
    const run_cfg_data *x = &r->d.cfg[c];
    transfer(w, rd, x->kl, KN * sizeof(float));
    transfer(w, rd, x->nll, KN * sizeof(float));
    transfer(w, rd, x->dp, KN * sizeof(float));
    transfer(w, rd, x->top1, KN);
    transfer(w, rd, x->first_nonfinite, (size_t)r->K * sizeof(int64_t));
  }
}

/* Their size. */
static size_t metric_bytes(const runner *r) {
  size_t KN = (size_t)(r->K * r->N);
  return KN * sizeof(float) + (size_t)r->C * (KN * (3 * sizeof(float) + 1) +
                                              (size_t)r->K * sizeof(int64_t));
}

static size_t crc_len(size_t n) { return n; }

int run_ckpt_save(const runner *r, const char *path, char *err, size_t errlen) {
  byte_buf b = {0};
  byte_buf_put(&b, &r->fingerprint, 8);
  uint64_t idlen = strlen(r->d.identity);
  byte_buf_put(&b, &idlen, 8);
  byte_buf_put(&b, r->d.identity, (size_t)idlen);
  byte_buf_put(&b, &r->b0, 8);
  byte_buf_put(&b, &r->written, 8);
  int64_t en = r->engine->ops->state_bytes(r->engine);
  void *at = byte_buf_grow(&b, (size_t)en);
  /* out of memory (at == NULL) is reported below */
  int rc = at ? r->engine->ops->save(r->engine, at, err, errlen) : RSSM_OK;
  metric_buffers(r, &b, NULL);
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

int run_ckpt_load(runner *r, const char *path, char *err, size_t errlen) {
  unsigned char *file;
  int64_t len;
  int rc = read_whole_file(path, INT64_C(1) << 40, &file, &len, err, errlen);
  if (rc != RSSM_OK) return rc;
  uint64_t raw = 0;
  uint32_t c32 = 0;
  if (len < 20 || memcmp(file, CKPT_MAGIC, 8) != 0) {
    int old = len >= 8 && memcmp(file, "RSSMCKP1", 8) == 0;
    free(file);
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
  byte_reader b = {p, (size_t)raw, 0, 0};
  uint64_t fp = 0, idlen = 0;
  byte_get(&b, &fp, 8);
  byte_get(&b, &idlen, 8);
  const char *id = idlen < 65536 ? byte_take(&b, (size_t)idlen) : NULL;
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
  byte_get(&b, &r->b0, 8);
  byte_get(&b, &r->written, 8);
  if (b.bad || r->b0 < 0 || r->b0 > r->N || r->written < 0 || r->written > r->b0) {
    free(p);
    snprintf(err, errlen, "%s: corrupt checkpoint counters", path);
    return RSSM_ERR_INPUT;
  }
  size_t mb = metric_bytes(r);
  size_t en = b.n - b.off >= mb ? b.n - b.off - mb : 0;
  const void *es = b.n - b.off >= mb ? byte_take(&b, en) : NULL;
  char m[1024];
  if (!es) {
    snprintf(err, errlen, "%s: corrupt checkpoint (sizes do not match this run)", path);
    rc = RSSM_ERR_INPUT;
  } else {
    rc = r->engine->ops->load(r->engine, es, (int64_t)en, m, sizeof m);
    if (rc != RSSM_OK) snprintf(err, errlen, "%s: %s", path, m);
  }
  if (rc == RSSM_OK) metric_buffers(r, NULL, &b);
  if (rc == RSSM_OK && (b.bad || b.off != b.n)) {
    snprintf(err, errlen, "%s: corrupt checkpoint (sizes do not match this run)", path);
    rc = RSSM_ERR_INPUT;
  }
  free(p);
  return rc;
}
