/* Encoding and decoding with a loaded byte-level BPE (bpe.h): added tokens, normalisation,
 * pre-tokenisation, then BPE of each pre-token through a cache, since natural text repeats the
 * same few thousand words. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/status.h"
#include "src/tokens/bpe_internal.h"

#define CACHE_MAX_PIECE 128                /* longer pre-tokens are rare: not cached */
#define CACHE_MAX_IDS (INT64_C(1) << 24)  /* 64 MiB of cached ids, then the cache starts over */

/* Encoding state passed down the stages. */
typedef struct {
  bpe_tokenizer *t;
  bpe_ids *out;
  bpe_spans a, b;  /* pieces before and after one Split step */
  bpe_spans gpt2;  /* ByteLevel's regex pieces of one piece */
  char *scratch;   /* [scratch_cap] one piece with ByteLevel's prefix space */
  int64_t scratch_cap;
  char *err;
  size_t errlen;
} enc;

static int enc_oom(enc *E) {
  snprintf(E->err, E->errlen, "out of memory while encoding");
  return RSSM_ERR_IO;
}

/* BPE of one pre-token, through the cache. */
static int piece(enc *E, const char *p, int64_t n) {
  bpe_tokenizer *t = E->t;
  uint32_t off;
  if (n <= CACHE_MAX_PIECE && bpe_strmap_get(&t->cache, p, (size_t)n, &off)) {
    for (uint32_t i = 0; i < t->cache_ids[off]; i++)
      if (bpe_ids_push(E->out, t->cache_ids[off + 1 + i]) != 0) return enc_oom(E);
    return RSSM_OK;
  }
  int64_t start = E->out->n;
  if (bpe_word(t, (const unsigned char *)p, n, E->out) != 0) {
    snprintf(E->err, E->errlen, "out of memory for a pre-token of %lld bytes", (long long)n);
    return RSSM_ERR_IO;
  }
  if (n > CACHE_MAX_PIECE) return RSSM_OK;
  int64_t k = E->out->n - start;
  if (t->cache_n + k + 1 > CACHE_MAX_IDS) { /* full: start over rather than evict */
    bpe_strmap_clear(&t->cache);
    t->cache_n = 0;
  }
  if (t->cache_n + k + 1 > t->cache_cap) {
    int64_t cap = t->cache_cap ? t->cache_cap : 1 << 16;
    while (cap < t->cache_n + k + 1) cap *= 2;
    uint32_t *c = realloc(t->cache_ids, (size_t)cap * sizeof *c);
    if (!c) return RSSM_OK; /* the cache is only an accelerator */
    t->cache_ids = c;
    t->cache_cap = cap;
  }
  if (bpe_strmap_put(&t->cache, p, (size_t)n, (uint32_t)t->cache_n) != 0) return RSSM_OK;
  t->cache_ids[t->cache_n] = (uint32_t)k;
  memcpy(t->cache_ids + t->cache_n + 1, E->out->ids + start, (size_t)k * sizeof(uint32_t));
  t->cache_n += k + 1;
  return RSSM_OK;
}

/* Pre-tokenise a normalised segment and BPE every pre-token. */
static int pretokenize(enc *E, const char *p, int64_t n) {
  bpe_tokenizer *t = E->t;
  E->a.n = 0;
  if (bpe_spans_push(&E->a, p, n) != 0) return enc_oom(E);
  for (int s = 0; s < t->nsplits; s++) {
    if (bpe_split_apply(&t->splits[s], t->md, &E->a, &E->b, E->err, E->errlen) != 0) return RSSM_ERR_IO;
    bpe_spans x = E->a;
    E->a = E->b;
    E->b = x;
  }
  for (int64_t i = 0; i < E->a.n; i++) {
    const char *q = E->a.v[i].p;
    int64_t m = E->a.v[i].n;
    if (t->add_prefix_space && q[0] != ' ') { /* the library prefixes every piece it is given */
      if (m + 1 > E->scratch_cap) {
        int64_t cap = 2 * (m + 1);
        char *sc = realloc(E->scratch, (size_t)cap);
        if (!sc) return enc_oom(E);
        E->scratch = sc;
        E->scratch_cap = cap;
      }
      E->scratch[0] = ' ';
      memcpy(E->scratch + 1, q, (size_t)m);
      q = E->scratch;
      m++;
    }
    int rc;
    if (!t->use_regex) {
      if ((rc = piece(E, q, m)) != RSSM_OK) return rc;
      continue;
    }
    E->gpt2.n = 0;
    if (bpe_regex_pieces(t->gpt2_re, t->md, q, m, &E->gpt2, E->err, E->errlen) != 0) return RSSM_ERR_IO;
    for (int64_t j = 0; j < E->gpt2.n; j++)
      if ((rc = piece(E, E->gpt2.v[j].p, E->gpt2.v[j].n)) != RSSM_OK) return rc;
  }
  return RSSM_OK;
}

/* The leftmost-longest added token of the given kind (normalized or not) in s[from..n): 1 with
 * its position and index, or 0. */
static int find_added(const bpe_tokenizer *t, const char *s, int64_t n, int64_t from, int normalized,
                      int64_t *pos, int *which) {
  const unsigned char *first = t->first_byte[normalized];
  for (int64_t i = from; i < n; i++) {
    if (!first[(unsigned char)s[i]]) continue;
    int best = -1;
    for (int k = 0; k < t->nadded; k++) {
      const bpe_added *a = &t->added[k];
      if (a->normalized != normalized || a->content[0] != s[i] || (int64_t)a->len > n - i) continue;
      if (memcmp(a->content, s + i, a->len) == 0 && (best < 0 || a->len > t->added[best].len)) best = k;
    }
    if (best >= 0) {
      *pos = i;
      *which = best;
      return 1;
    }
  }
  return 0;
}

/* A segment between non-normalized added tokens: normalise, then split on the normalized ones. */
static int segment(enc *E, const char *s, int64_t n) {
  bpe_tokenizer *t = E->t;
  char *norm = NULL;
  if (t->normalizer == BPE_NORM_NFC && bpe_nfc(s, n, &norm, &n) != 0) return enc_oom(E);
  if (norm) s = norm;
  int rc = RSSM_OK;
  int64_t at = 0, pos;
  int k;
  while (rc == RSSM_OK && at < n) {
    int found = find_added(t, s, n, at, 1, &pos, &k);
    int64_t end = found ? pos : n;
    if (end > at) rc = pretokenize(E, s + at, end - at);
    if (!found || rc != RSSM_OK) break;
    if (bpe_ids_push(E->out, t->added[k].id) != 0) rc = enc_oom(E);
    at = pos + (int64_t)t->added[k].len;
  }
  free(norm);
  return rc;
}

int bpe_encode(bpe_tokenizer *t, const char *text, int64_t len, const char *name, bpe_ids *out,
               char *err, size_t errlen) {
  int64_t bad = bpe_utf8_check((const unsigned char *)text, len);
  if (bad >= 0) {
    snprintf(err, errlen, "%s: invalid UTF-8 at byte %lld (expected UTF-8 text)", name,
             (long long)bad);
    return RSSM_ERR_INPUT;
  }
  enc E = {.t = t, .out = out, .err = err, .errlen = errlen};
  int rc = RSSM_OK;
  int64_t at = 0, pos;
  int k;
  while (rc == RSSM_OK && at < len) {
    int found = find_added(t, text, len, at, 0, &pos, &k);
    int64_t end = found ? pos : len;
    if (end > at) rc = segment(&E, text + at, end - at);
    if (!found || rc != RSSM_OK) break;
    if (bpe_ids_push(out, t->added[k].id) != 0) rc = enc_oom(&E);
    at = pos + (int64_t)t->added[k].len;
  }
  free(E.a.v);
  free(E.b.v);
  free(E.gpt2.v);
  free(E.scratch);
  if (rc != RSSM_OK && rc != RSSM_ERR_INPUT) {
    /* prefix the input's name to the stage's message */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", err);
    snprintf(err, errlen, "%s: %s", name, msg);
  }
  return rc;
}

int bpe_decode(const bpe_tokenizer *t, const uint32_t *ids /* [n] */, int64_t n, char **text,
               int64_t *len, char *err, size_t errlen) {
  *text = NULL;
  *len = 0;
  if (!t->decoder_bytelevel) {
    snprintf(err, errlen, "%s: decoder: only the ByteLevel decoder is supported for --decode", t->path);
    return RSSM_ERR_INPUT;
  }
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    if (ids[i] >= t->vocab || !t->tok_bytes[ids[i]]) {
      snprintf(err, errlen, "token %lld: id %u has no byte-level text in %s", (long long)i, ids[i],
               t->path);
      return RSSM_ERR_INPUT;
    }
    total += t->tok_len[ids[i]];
  }
  char *buf = malloc((size_t)total + 1);
  if (!buf) {
    snprintf(err, errlen, "out of memory decoding %lld tokens", (long long)n);
    return RSSM_ERR_IO;
  }
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    memcpy(buf + k, t->tok_bytes[ids[i]], t->tok_len[ids[i]]);
    k += t->tok_len[ids[i]];
  }
  buf[k] = '\0';
  *text = buf;
  *len = k;
  return RSSM_OK;
}
