/* Building byte-level token streams (one token per byte, vocab 256, tokenizer id "byte") from
 * text files or a PG-19 directory (docs/driver.md, "Token streams"). */
#ifndef RSSM_TOKENS_BYTE_CORPUS_H
#define RSSM_TOKENS_BYTE_CORPUS_H

#include <stddef.h>
#include <stdint.h>

#define BYTE_TOKENIZER "byte"
#define BYTE_VOCAB 256u

/* A growing array of token ids. With `encode` set, each file's bytes are handed to it instead
 * of becoming one token per byte (a real tokenizer: `replayssm tokens --tokenizer`); it appends
 * the file's ids to the corpus and returns RSSM_OK or an error with one line in err. */
typedef struct byte_corpus byte_corpus;
struct byte_corpus {
  uint32_t *ids; /* [n], capacity cap */
  int64_t n, cap;
  int (*encode)(void *ctx, const char *text, int64_t len, const char *path, byte_corpus *c,
                char *err, size_t errlen);
  void *encode_ctx;
};

void byte_corpus_free(byte_corpus *c);

/* Append every byte of a file, in order (documents are joined with nothing in between). */
int byte_corpus_add_file(byte_corpus *c, const char *path, char *err, size_t errlen);

/* PG-19: DIR/metadata.csv (no header; id, title, year, url) lists the books; those whose
 * DIR/SPLIT/<id>.txt exists are appended in increasing numeric id order (at most `limit` books
 * when limit > 0). *nbooks receives how many were added. It is an error when metadata.csv is
 * missing or malformed or no book of the split is found. */
int byte_corpus_add_pg19(byte_corpus *c, const char *dir, const char *split, int64_t limit,
                         int64_t *nbooks, char *err, size_t errlen);

#endif
