/* Reader and writer of `.tok.zst` token streams (layout in tokstream.h). */
#include "src/tokens/tokstream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_decompressBound (exported by libzstd 1.5) */
#include <zstd.h>

#include "src/io/status.h"
#include "src/io/atomic_file.h"

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static uint32_t get32(const unsigned char *p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
  return v;
}
static uint64_t get64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* zlib's crc32 takes a uInt length: feed large buffers in pieces. */
static uint32_t crc_bytes(uint32_t crc, const unsigned char *p, size_t n) {
  while (n > 0) {
    uInt k = n > (size_t)(1u << 30) ? (uInt)(1u << 30) : (uInt)n;
    crc = (uint32_t)crc32(crc, p, k);
    p += k;
    n -= k;
  }
  return crc;
}

/* The payload as little-endian bytes (a copy only on a big-endian host). */
static const unsigned char *le_payload(const uint32_t *ids, int64_t n, unsigned char **owned) {
  *owned = NULL;
  const uint32_t probe = 1;
  if (*(const unsigned char *)&probe == 1) return (const unsigned char *)ids;
  unsigned char *b = malloc((size_t)n * 4 + 1);
  if (!b) return NULL;
  for (int64_t i = 0; i < n; i++) put32(b + 4 * i, ids[i]);
  *owned = b;
  return b;
}

uint32_t tokstream_crc(const uint32_t *ids, int64_t n) {
  unsigned char *owned;
  const unsigned char *p = le_payload(ids, n, &owned);
  uint32_t crc = (uint32_t)crc32(0L, Z_NULL, 0);
  if (p) crc = crc_bytes(crc, p, (size_t)n * 4);
  free(owned);
  return crc;
}

int tokstream_write(const char *path, const char *tokenizer, uint32_t vocab, const uint32_t *ids,
                    int64_t n, char *err, size_t errlen) {
  if (strlen(tokenizer) > TOKSTREAM_TOKENIZER_MAX) {
    snprintf(err, errlen, "%s: tokenizer id '%s' is longer than %d characters", path, tokenizer,
             TOKSTREAM_TOKENIZER_MAX);
    return RSSM_ERR_INPUT;
  }
  if (n < 0 || n > TOKSTREAM_MAX_TOKENS) {
    snprintf(err, errlen, "%s: %lld tokens (expected 0..%lld)", path, (long long)n,
             (long long)TOKSTREAM_MAX_TOKENS);
    return RSSM_ERR_INPUT;
  }
  for (int64_t i = 0; i < n; i++)
    if (ids[i] >= vocab) {
      snprintf(err, errlen, "%s: token %lld has id %u (expected < vocab %u)", path, (long long)i,
               ids[i], vocab);
      return RSSM_ERR_INPUT;
    }
  unsigned char hdr[TOKSTREAM_HEADER_BYTES];
  memset(hdr, 0, sizeof hdr);
  memcpy(hdr, TOKSTREAM_MAGIC, strlen(TOKSTREAM_MAGIC) + 1);
  put32(hdr + 8, TOKSTREAM_VERSION);
  put32(hdr + 12, vocab);
  memcpy(hdr + 16, tokenizer, strlen(tokenizer));
  put64(hdr + 48, (uint64_t)n);
  put32(hdr + 56, tokstream_crc(ids, n));
  put32(hdr + 60, crc_bytes((uint32_t)crc32(0L, Z_NULL, 0), hdr, 60));

  unsigned char *owned;
  const unsigned char *payload = le_payload(ids, n, &owned);
  size_t raw = (size_t)n * 4;
  size_t bound = ZSTD_compressBound(raw);
  unsigned char *z = malloc(bound + 1);
  if (!payload || !z) {
    free(owned);
    free(z);
    snprintf(err, errlen, "%s: out of memory compressing %lld tokens", path, (long long)n);
    return RSSM_ERR_IO;
  }
  size_t zn = ZSTD_compress(z, bound, payload, raw, 19);
  free(owned);
  if (ZSTD_isError(zn)) {
    free(z);
    snprintf(err, errlen, "%s: zstd compression failed (%s)", path, ZSTD_getErrorName(zn));
    return RSSM_ERR_IO;
  }
  const void *parts[2] = {hdr, z};
  size_t lens[2] = {sizeof hdr, zn};
  int rc = atomic_write_parts(path, 2, parts, lens, err, errlen);
  free(z);
  return rc;
}

static int bad(char *err, size_t errlen, const char *path, const char *what) {
  snprintf(err, errlen, "%s: %s", path, what);
  return RSSM_ERR_INPUT;
}

int tokstream_read(const char *path, tokstream_info *info, uint32_t **ids, char *err,
                   size_t errlen) {
  *ids = NULL;
  memset(info, 0, sizeof *info);
  unsigned char *buf;
  int64_t len;
  /* the compressed file is at most the payload bound plus the header */
  int rc = read_whole_file(path, TOKSTREAM_MAX_TOKENS * 4 + 4096, &buf, &len, err, errlen);
  if (rc != RSSM_OK) return rc;
  char msg[256];
  if (len < TOKSTREAM_HEADER_BYTES) {
    snprintf(msg, sizeof msg, "truncated: %lld bytes, shorter than the %d-byte header",
             (long long)len, TOKSTREAM_HEADER_BYTES);
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  if (memcmp(buf, TOKSTREAM_MAGIC, strlen(TOKSTREAM_MAGIC) + 1) != 0) {
    rc = bad(err, errlen, path, "not a token stream: wrong magic (expected \"RSSMTOK\\0\", a .tok.zst file)");
    goto out;
  }
  uint32_t hcrc = crc_bytes((uint32_t)crc32(0L, Z_NULL, 0), buf, 60);
  if (hcrc != get32(buf + 60)) {
    snprintf(msg, sizeof msg, "header checksum mismatch (stored %08x, computed %08x): corrupt header",
             get32(buf + 60), hcrc);
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  info->version = get32(buf + 8);
  if (info->version != TOKSTREAM_VERSION) {
    snprintf(msg, sizeof msg, "version %u is not supported (expected %u)", info->version,
             TOKSTREAM_VERSION);
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  info->vocab = get32(buf + 12);
  memcpy(info->tokenizer, buf + 16, TOKSTREAM_TOKENIZER_MAX);
  info->tokenizer[TOKSTREAM_TOKENIZER_MAX] = '\0';
  uint64_t count = get64(buf + 48);
  info->crc = get32(buf + 56);
  if (info->vocab == 0) {
    rc = bad(err, errlen, path, "vocab is 0 (expected >= 1)");
    goto out;
  }
  if (count > (uint64_t)TOKSTREAM_MAX_TOKENS) {
    snprintf(msg, sizeof msg, "count %llu is too large (at most %lld tokens)",
             (unsigned long long)count, (long long)TOKSTREAM_MAX_TOKENS);
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  info->count = (int64_t)count;
  const unsigned char *z = buf + TOKSTREAM_HEADER_BYTES;
  size_t zlen = (size_t)(len - TOKSTREAM_HEADER_BYTES);
  size_t fsz = ZSTD_findFrameCompressedSize(z, zlen);
  if (ZSTD_isError(fsz)) {
    snprintf(msg, sizeof msg, "truncated or corrupt zstd payload (%s)", ZSTD_getErrorName(fsz));
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  if (fsz != zlen) {
    snprintf(msg, sizeof msg, "%zu trailing bytes after the zstd payload (expected none)",
             zlen - fsz);
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  unsigned long long content = ZSTD_getFrameContentSize(z, zlen);
  uint64_t raw = count * 4;
  if (content != ZSTD_CONTENTSIZE_UNKNOWN && content != ZSTD_CONTENTSIZE_ERROR && content != raw) {
    snprintf(msg, sizeof msg,
             "count mismatch: the header says %llu tokens, the payload holds %llu bytes (%llu tokens)",
             (unsigned long long)count, content, content / 4);
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  /* A frame without a content size (zstd --no-content-size, streaming writers) says nothing about
   * its length: bound it by the frame's blocks before allocating what the header's count asks for,
   * so that a 100-byte file cannot make us allocate gigabytes (found by fuzz_tokstream). */
  unsigned long long bound = ZSTD_decompressBound(z, zlen);
  if (bound == ZSTD_CONTENTSIZE_ERROR || raw > bound) {
    snprintf(msg, sizeof msg,
             "count mismatch: the header says %llu tokens, the payload holds at most %llu bytes",
             (unsigned long long)count, bound == ZSTD_CONTENTSIZE_ERROR ? 0ULL : bound);
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  uint32_t *out = malloc((size_t)raw + 4);
  if (!out) {
    snprintf(err, errlen, "%s: out of memory for %llu tokens", path, (unsigned long long)count);
    rc = RSSM_ERR_IO;
    goto out;
  }
  size_t got = ZSTD_decompress(out, (size_t)raw + 4, z, zlen);
  if (ZSTD_isError(got) || got != raw) {
    if (ZSTD_isError(got))
      snprintf(msg, sizeof msg, "corrupt zstd payload (%s)", ZSTD_getErrorName(got));
    else
      snprintf(msg, sizeof msg, "count mismatch: the header says %llu tokens, the payload holds %zu bytes",
               (unsigned long long)count, got);
    free(out);
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  const uint32_t probe = 1;
  if (*(const unsigned char *)&probe != 1)
    for (int64_t i = 0; i < info->count; i++) out[i] = get32((const unsigned char *)&out[i]);
  uint32_t crc = tokstream_crc(out, info->count);
  if (crc != info->crc) {
    snprintf(msg, sizeof msg, "payload checksum mismatch (header CRC-32 %08x, data %08x): corrupt data",
             info->crc, crc);
    free(out);
    rc = bad(err, errlen, path, msg);
    goto out;
  }
  for (int64_t i = 0; i < info->count; i++)
    if (out[i] >= info->vocab) {
      snprintf(msg, sizeof msg, "token %lld has id %u (expected < vocab %u)", (long long)i, out[i],
               info->vocab);
      free(out);
      rc = bad(err, errlen, path, msg);
      goto out;
    }
  *ids = out;
  rc = RSSM_OK;
out:
  free(buf);
  return rc;
}
