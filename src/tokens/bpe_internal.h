/* Internals of the byte-level BPE (bpe.h): the hash tables, the loaded tokenizer, and the stages
 * that bpe_encode chains. Only src/tokens/bpe_*.c include this. */
#ifndef RSSM_TOKENS_BPE_INTERNAL_H
#define RSSM_TOKENS_BPE_INTERNAL_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stddef.h>
#include <stdint.h>

#include "src/tokens/bpe.h"

/* ---- bpe_table.c: open-addressing maps ---------------------------------------------------- */

/* Byte strings (any bytes, NUL included) -> uint32. Keys are copied into an arena. */
typedef struct {
  struct bpe_slot { uint64_t hash; int64_t off; uint32_t len, value; } *slots; /* [cap] */
  int64_t cap, used;  /* cap a power of two (or 0); grows at half full */
  char *keys;         /* [keys_n] the arena, capacity keys_cap */
  int64_t keys_n, keys_cap;
} bpe_strmap;

void bpe_strmap_free(bpe_strmap *m);
void bpe_strmap_clear(bpe_strmap *m); /* forget every key, keep the memory */
/* 1 and *value when present, else 0. */
int bpe_strmap_get(const bpe_strmap *m, const void *key, size_t len, uint32_t *value);
/* Insert or overwrite. Returns 0, or -1 when out of memory. */
int bpe_strmap_put(bpe_strmap *m, const void *key, size_t len, uint32_t value);

/* uint64 -> uint64 (the merges: (left id << 32 | right id) -> (rank << 32 | merged id)). */
typedef struct {
  uint64_t *keys, *vals; /* [cap]; an empty slot's key is BPE_U64_EMPTY */
  int64_t cap, used;
} bpe_u64map;
#define BPE_U64_EMPTY UINT64_MAX

void bpe_u64map_free(bpe_u64map *m);
int bpe_u64map_get(const bpe_u64map *m, uint64_t key, uint64_t *value);
int bpe_u64map_put(bpe_u64map *m, uint64_t key, uint64_t value);

/* ---- bpe_bytes.c: GPT-2's bytes_to_unicode ------------------------------------------------- */

/* The code point that byte b is shown as in a byte-level vocabulary. */
uint32_t bpe_byte_to_cp(unsigned b);
/* Inverse: the byte of code point cp, or -1 when cp is not one of the 256. */
int bpe_cp_to_byte(uint32_t cp);
/* Decode one UTF-8 sequence at s[0..n): returns its length (1..4) and *cp, or 0 when it is
 * invalid (overlong, surrogate, > U+10FFFF, truncated). */
int bpe_utf8_next(const unsigned char *s, size_t n, uint32_t *cp);
/* Offset of the first invalid UTF-8 byte in s[0..n), or -1 when all of it is valid. */
int64_t bpe_utf8_check(const unsigned char *s, int64_t n);

/* ---- the loaded tokenizer (bpe_load.c) ----------------------------------------------------- */

enum { BPE_NORM_NONE, BPE_NORM_NFC };
enum { BPE_SPLIT_REMOVED, BPE_SPLIT_ISOLATED, BPE_SPLIT_MERGED_PREV, BPE_SPLIT_MERGED_NEXT,
       BPE_SPLIT_CONTIGUOUS };

typedef struct {
  pcre2_code *re;      /* a Regex pattern, or NULL for a String pattern */
  char *literal;       /* [literal_len] a String pattern (literal bytes), or NULL */
  size_t literal_len;
  int behavior, invert;
} bpe_split;

typedef struct {
  char *content;       /* [len] UTF-8, NUL-terminated */
  size_t len;
  uint32_t id;
  int special, normalized;
} bpe_added;

struct bpe_tokenizer {
  char path[1024];
  char id[40];
  uint32_t vocab;          /* largest id + 1 */
  /* Each id's bytes: raw bytes for byte-level vocabulary entries, the content of added tokens
   * (NULL/0 for ids that are neither, or vocabulary strings outside the byte-level alphabet). */
  char **tok_bytes;        /* [vocab] */
  uint32_t *tok_len;       /* [vocab] */
  bpe_strmap raw_vocab;    /* raw bytes -> id (byte-level entries only): ignore_merges lookups */
  bpe_u64map merges;
  uint32_t byte_id[256];   /* the initial symbol of each byte; UINT32_MAX: dropped (no unk) */
  int ignore_merges;
  int normalizer;          /* BPE_NORM_* */
  bpe_added *added;        /* [nadded] */
  int nadded;
  unsigned char first_byte[2][256]; /* [normalized][b]: some added token starts with b */
  bpe_split *splits;       /* [nsplits], applied in order before the ByteLevel step */
  int nsplits;
  int add_prefix_space, use_regex; /* the ByteLevel pre-tokenizer */
  pcre2_code *gpt2_re;     /* ByteLevel's own regex when use_regex */
  int decoder_bytelevel;
  /* encode-time state */
  pcre2_match_data *md;
  bpe_strmap cache;        /* pre-token bytes -> offset in cache_ids */
  uint32_t *cache_ids;     /* [cache_n]: per entry a count then that many ids */
  int64_t cache_n, cache_cap;
};

/* ---- stages ------------------------------------------------------------------------------- */

/* A piece of text: a pointer into the segment (or the scratch buffer) and a length. */
typedef struct { const char *p; int64_t n; } bpe_span;
typedef struct { bpe_span *v; /* [n], capacity cap */ int64_t n, cap; } bpe_spans;

int bpe_spans_push(bpe_spans *s, const char *p, int64_t n);

/* bpe_pretok.c: compile a regex (errors quote PCRE2's message and the offset). */
pcre2_code *bpe_regex_compile(const char *pattern, char *msg, size_t msglen);
/* Split every span of `in` by one Split step into `out` (cleared first). Returns 0 or -1 (out of
 * memory or a PCRE2 matching failure, with a message). */
int bpe_split_apply(const bpe_split *sp, pcre2_match_data *md, const bpe_spans *in,
                    bpe_spans *out, char *err, size_t errlen);
/* Matches of re in one span as pieces (gaps included), Isolated behaviour. */
int bpe_regex_pieces(const pcre2_code *re, pcre2_match_data *md, const char *p, int64_t n,
                     bpe_spans *out, char *err, size_t errlen);

/* bpe_merge.c: BPE of one pre-token's bytes, appending ids to out. Returns 0 or -1 (no memory). */
int bpe_word(const bpe_tokenizer *t, const unsigned char *s, int64_t n, bpe_ids *out);

/* bpe_normalize.c: NFC of s[0..n) into a malloc'ed *out (*outn bytes); the text itself (no copy,
 * *out = NULL) when nothing can change. Returns 0 or -1 (no memory). */
int bpe_nfc(const char *s, int64_t n, char **out, int64_t *outn);

#endif
