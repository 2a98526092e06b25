/* BPE of one pre-token (bpe_internal.h): its bytes become symbols (byte_id), then the pair of
 * adjacent symbols with the lowest merge rank is merged, the leftmost first on equal ranks,
 * until no adjacent pair has a merge. As in the tokenizers library (Word::merge_all): a min-heap
 * of candidate merges keyed (rank, position), symbols in a doubly linked list, and entries made
 * stale by an earlier merge skipped when popped (the pair at the position no longer matches). */
#include <stdlib.h>

#include "src/tokens/bpe_internal.h"

typedef struct { uint32_t rank, pos; } cand;

static int cand_less(cand a, cand b) { return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos); }

static void heap_push(cand *h /* [n + 1] */, int64_t *n, cand c) {
  int64_t i = (*n)++;
  while (i > 0 && cand_less(c, h[(i - 1) / 2])) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = c;
}

static cand heap_pop(cand *h /* [n] */, int64_t *n) {
  cand top = h[0], last = h[--(*n)];
  int64_t i = 0;
  for (;;) {
    int64_t l = 2 * i + 1, m = i;
    cand best = last;
    if (l < *n && cand_less(h[l], best)) m = l, best = h[l];
    if (l + 1 < *n && cand_less(h[l + 1], best)) m = l + 1;
    if (m == i) break;
    h[i] = h[m];
    i = m;
  }
  if (*n > 0) h[i] = last;
  return top;
}

/* The merge of the pair (a, b): 1 with its rank and merged id, or 0. */
static int lookup(const bpe_tokenizer *t, uint32_t a, uint32_t b, uint32_t *rank, uint32_t *id) {
  uint64_t v;
  if (!bpe_u64map_get(&t->merges, ((uint64_t)a << 32) | b, &v)) return 0;
  *rank = (uint32_t)(v >> 32);
  *id = (uint32_t)v;
  return 1;
}

int bpe_word(const bpe_tokenizer *t, const unsigned char *s, int64_t n, bpe_ids *out) {
  if (t->ignore_merges) {
    uint32_t whole;
    if (bpe_strmap_get(&t->raw_vocab, s, (size_t)n, &whole)) return bpe_ids_push(out, whole);
  }
  /* Small words (nearly all of them) use stack arrays; long ones (runs of spaces or dashes)
   * the heap. Every merge removes a symbol and pushes at most two candidates, so the heap never
   * holds more than 3n entries. */
  if (n >= (int64_t)UINT32_MAX / 3) return -1; /* positions are uint32; one pre-token > 1 GiB */
  enum { SMALL = 64 };
  uint32_t sid_s[SMALL], nxt_s[SMALL], prv_s[SMALL];
  cand heap_s[3 * SMALL];
  uint32_t *sid = sid_s, *nxt = nxt_s, *prv = prv_s; /* [m] symbol id, next, previous */
  cand *heap = heap_s;                             /* [3m] */
  if (n > SMALL) {
    sid = malloc((size_t)n * sizeof *sid);
    nxt = malloc((size_t)n * sizeof *nxt);
    prv = malloc((size_t)n * sizeof *prv);
    heap = malloc((size_t)n * 3 * sizeof *heap);
    if (!sid || !nxt || !prv || !heap) {
      free(sid), free(nxt), free(prv), free(heap);
      return -1;
    }
  }
  /* Symbols: bytes without a symbol (a vocabulary missing part of the byte alphabet and no
   * unk_token) are dropped, as the library does. */
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    uint32_t id = t->byte_id[s[i]];
    if (id == UINT32_MAX) continue;
    sid[m] = id;
    m++;
  }
  const uint32_t NONE = UINT32_MAX;
  for (int64_t i = 0; i < m; i++) {
    nxt[i] = i + 1 < m ? (uint32_t)(i + 1) : NONE;
    prv[i] = i > 0 ? (uint32_t)(i - 1) : NONE;
  }
  int64_t hn = 0;
  uint32_t rank, id;
  for (int64_t i = 0; i + 1 < m; i++)
    if (lookup(t, sid[i], sid[i + 1], &rank, &id)) heap_push(heap, &hn, (cand){rank, (uint32_t)i});
  while (hn > 0) {
    cand c = heap_pop(heap, &hn);
    uint32_t p = c.pos, q = nxt[p];
    /* stale: p was merged away (its id is NONE), has no right neighbour any more, or the pair at
     * p changed so that its merge is no longer this rank */
    if (sid[p] == NONE || q == NONE) continue;
    if (!lookup(t, sid[p], sid[q], &rank, &id) || rank != c.rank) continue;
    sid[p] = id;
    sid[q] = NONE;
    nxt[p] = nxt[q];
    if (nxt[q] != NONE) prv[nxt[q]] = p;
    if (prv[p] != NONE && lookup(t, sid[prv[p]], sid[p], &rank, &id))
      heap_push(heap, &hn, (cand){rank, prv[p]});
    if (nxt[p] != NONE && lookup(t, sid[p], sid[nxt[p]], &rank, &id))
      heap_push(heap, &hn, (cand){rank, p});
  }
  int rc = 0;
  for (uint32_t i = m > 0 ? 0 : NONE; i != NONE && rc == 0; i = nxt[i]) rc = bpe_ids_push(out, sid[i]);
  if (sid != sid_s) free(sid), free(nxt), free(prv), free(heap);
  return rc;
}
