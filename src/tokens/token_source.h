/* Token sources of a run: a 1-D .npy index array ('<i4'/'<i8') or a `.tok.zst` stream, and the
 * evaluation windows taken from them (docs/driver.md, "Sequences").
 *
 * Windows: K windows of N+1 consecutive tokens from a stream of M tokens (M >= N+1), evenly
 * spaced and deterministic: window k starts at floor(k * (M - N - 1) / (K - 1)) (k = 0..K-1;
 * K = 1 starts at 0). The first starts at the stream's first token, the last ends at its last.
 * Windows overlap when K (N+1) > M; that is allowed. */
#ifndef RSSM_TOKENS_TOKEN_SOURCE_H
#define RSSM_TOKENS_TOKEN_SOURCE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
  int64_t n;
  int64_t *ids;        /* [n] */
  uint32_t crc;        /* CRC-32 of the ids as little-endian uint32 (tokstream_crc) */
  int64_t max_id;      /* largest id (-1 when n = 0) */
  char tokenizer[40];  /* the stream's tokenizer id, "" for .npy */
} token_source;

/* Load by extension: ".npy" or ".tok.zst" (anything else is an error naming the path). Ids must
 * be >= 0 and < 2^32. Returns RSSM_OK, RSSM_ERR_INPUT or RSSM_ERR_IO with one line in err. */
int token_source_load(const char *path, token_source *out, char *err, size_t errlen);
void token_source_free(token_source *t);

/* Start of window k of K windows of `len` tokens in a stream of m tokens (m >= len >= 1). */
int64_t token_window_start(int64_t m, int64_t len, int64_t K, int64_t k);

#endif
