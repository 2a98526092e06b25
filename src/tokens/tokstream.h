/* The project's compressed token streams, `.tok.zst` (docs/driver.md):
 *
 *   offset  size  field (little-endian)
 *        0     8  magic "RSSMTOK\0"
 *        8     4  version (1)
 *       12     4  vocab: every token id is < vocab
 *       16    32  tokenizer id, ASCII, NUL-padded ("byte", or "hfbpe-fnv1a64:" + 16 hex digits:
 *                   a tokenizer.json's hash, bpe.h)
 *       48     8  count: number of tokens
 *       56     4  CRC-32 (zlib's crc32) of the uncompressed payload
 *       60     4  CRC-32 of header bytes 0..59
 *       64     -  one zstd frame holding the payload: count uint32 token ids, little-endian
 *
 * The frame must end the file. Reading checks every field, the frame's content size against
 * count, the payload checksum, and every id against vocab. */
#ifndef RSSM_TOKENS_TOKSTREAM_H
#define RSSM_TOKENS_TOKSTREAM_H

#include <stddef.h>
#include <stdint.h>

#define TOKSTREAM_MAGIC "RSSMTOK"          /* 7 characters plus the NUL: 8 bytes */
#define TOKSTREAM_VERSION 1u
#define TOKSTREAM_HEADER_BYTES 64
#define TOKSTREAM_TOKENIZER_MAX 32
#define TOKSTREAM_MAX_TOKENS (INT64_C(1) << 34) /* 64 GiB of payload: far beyond any corpus here */

typedef struct {
  uint32_t version;
  uint32_t vocab;
  char tokenizer[TOKSTREAM_TOKENIZER_MAX + 1];
  int64_t count;
  uint32_t crc; /* of the payload */
} tokstream_info;

/* CRC-32 of n token ids as little-endian uint32 (the payload's checksum). */
uint32_t tokstream_crc(const uint32_t *ids /* [n] */, int64_t n);

/* Write a stream atomically (compression level 19: streams are written once, read often).
 * Returns RSSM_OK, RSSM_ERR_INPUT (an id >= vocab, a tokenizer id too long) or RSSM_ERR_IO. */
int tokstream_write(const char *path, const char *tokenizer, uint32_t vocab,
                    const uint32_t *ids /* [n] */, int64_t n, char *err, size_t errlen);

/* Read and check a stream. *ids is malloc'ed ([info->count]); free it with free(). Returns
 * RSSM_OK, RSSM_ERR_INPUT (any malformation, with one line naming the file and field) or
 * RSSM_ERR_IO. */
int tokstream_read(const char *path, tokstream_info *info, uint32_t **ids, char *err,
                   size_t errlen);

#endif
