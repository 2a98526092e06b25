/* Byte-level BPE tokenizers read from a Hugging Face tokenizer.json (docs/tokenizer.md), encoding
 * token for token as the `tokenizers` library does with add_special_tokens=False:
 *
 *   1. the text is split on added tokens (leftmost-longest); tokens with normalized=false are
 *      matched in the raw text, the others in each remaining segment after normalisation;
 *   2. normalizer: none or NFC (anything else is refused by name at load time);
 *   3. pre_tokenizer: Split(Regex|String, behavior, invert)* followed by ByteLevel(add_prefix_space,
 *      use_regex), or ByteLevel alone; regexes are compiled with PCRE2 (UTF, UCP);
 *   4. model BPE: every pre-token's bytes become byte-level symbols, merged lowest rank first
 *      (leftmost on ties); ignore_merges takes a pre-token that is itself in the vocabulary whole.
 *
 * The post_processor is not applied (no BOS/EOS is added). Decoding (ByteLevel decoder) maps
 * every id back to its bytes. */
#ifndef RSSM_TOKENS_BPE_H
#define RSSM_TOKENS_BPE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bpe_tokenizer bpe_tokenizer;

/* The stream header's tokenizer id of a tokenizer.json: "hfbpe-fnv1a64:" + 16 hex digits of the
 * 64-bit FNV-1a hash of the file's bytes (30 characters, within the 32 of the header). */
#define BPE_ID_PREFIX "hfbpe-fnv1a64:"

/* Load PATH (a tokenizer.json, or a directory holding one). Returns RSSM_OK, RSSM_ERR_INPUT (one
 * line naming the file, the field and what was expected) or RSSM_ERR_IO. */
int bpe_load(const char *path, bpe_tokenizer **out, char *err, size_t errlen);
void bpe_free(bpe_tokenizer *t);

/* The tokenizer id (BPE_ID_PREFIX...) and the vocabulary size (largest id + 1). */
const char *bpe_id(const bpe_tokenizer *t);
uint32_t bpe_vocab(const bpe_tokenizer *t);

/* A growing array of ids. */
typedef struct {
  uint32_t *ids; /* [n], capacity cap */
  int64_t n, cap;
} bpe_ids;

void bpe_ids_free(bpe_ids *v);
int bpe_ids_push(bpe_ids *v, uint32_t id);

/* Encode len bytes of UTF-8 text (checked: invalid UTF-8 is RSSM_ERR_INPUT naming `name` and the
 * byte offset), appending the ids to *out. Not thread-safe (the tokenizer's pre-token cache and
 * scratch buffers are shared). */
int bpe_encode(bpe_tokenizer *t, const char *text, int64_t len, const char *name, bpe_ids *out,
               char *err, size_t errlen);

/* Decode n ids to bytes: *text is malloc'ed (*len bytes plus a NUL). RSSM_ERR_INPUT for an id
 * outside the vocabulary or a tokenizer whose decoder is not ByteLevel. */
int bpe_decode(const bpe_tokenizer *t, const uint32_t *ids /* [n] */, int64_t n, char **text,
               int64_t *len, char *err, size_t errlen);

/* 64-bit FNV-1a of n bytes (the tokenizer id's hash; also the hash tables' hash). */
uint64_t bpe_fnv1a64(const void *data, size_t n);

#endif
