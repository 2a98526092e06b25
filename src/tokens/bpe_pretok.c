/* The Split pre-tokenizer and ByteLevel's own regex (bpe_internal.h), after the tokenizers
 * library: a pattern's matches and the gaps between them cover the piece, each flagged whether
 * it is a match (flipped by `invert`); the behaviour then keeps, drops or merges them, and empty
 * pieces are dropped. Regexes are PCRE2 with UTF and UCP (\p{L}, \s, ... over Unicode, as
 * Oniguruma, the library's engine, has them), JIT-compiled where PCRE2 supports it. The text has
 * been checked as UTF-8 once, so matching skips PCRE2's own check. */
#define _GNU_SOURCE /* memmem */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/tokens/bpe_internal.h"

int bpe_spans_push(bpe_spans *s, const char *p, int64_t n) {
  if (s->n == s->cap) {
    int64_t cap = s->cap ? s->cap * 2 : 256;
    bpe_span *v = realloc(s->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    s->v = v;
    s->cap = cap;
  }
  s->v[s->n++] = (bpe_span){p, n};
  return 0;
}

pcre2_code *bpe_regex_compile(const char *pattern, char *msg, size_t msglen) {
  int code;
  PCRE2_SIZE off;
  pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP,
                                 &code, &off, NULL);
  if (!re) {
    PCRE2_UCHAR text[256];
    pcre2_get_error_message(code, text, sizeof text);
    snprintf(msg, msglen, "PCRE2 error at offset %zu: %s", (size_t)off, (const char *)text);
    return NULL;
  }
  (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* an interpreter fallback when JIT is absent */
  return re;
}

/* One (start, end, is_match) run of a piece. */
typedef struct { int64_t a, b; int match; } run;
typedef struct { run *v; /* [n], capacity cap */ int64_t n, cap; } runs;

static int runs_push(runs *r, int64_t a, int64_t b, int match) {
  if (r->n == r->cap) {
    int64_t cap = r->cap ? r->cap * 2 : 64;
    run *v = realloc(r->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    r->v = v;
    r->cap = cap;
  }
  r->v[r->n++] = (run){a, b, match};
  return 0;
}

/* The library's find_matches: gaps (not matches) and matches in order. An empty match splits
 * the gap it falls in and is itself dropped later; the search then moves one character on. */
static int find_runs(const bpe_split *sp, const pcre2_code *re, pcre2_match_data *md,
                     const char *p, int64_t n, runs *r, char *err, size_t errlen) {
  r->n = 0;
  int64_t prev = 0, at = 0;
  while (at <= n) {
    int64_t a, b;
    if (re) {
      int rc = pcre2_match(re, (PCRE2_SPTR)p, (PCRE2_SIZE)n, (PCRE2_SIZE)at, PCRE2_NO_UTF_CHECK, md,
                           NULL);
      if (rc == PCRE2_ERROR_NOMATCH) break;
      if (rc < 0) {
        PCRE2_UCHAR text[256];
        pcre2_get_error_message(rc, text, sizeof text);
        snprintf(err, errlen, "regex matching failed: %s", (const char *)text);
        return -1;
      }
      PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
      a = (int64_t)ov[0];
      b = (int64_t)ov[1];
    } else {
      if (sp->literal_len == 0 || (int64_t)sp->literal_len > n - at) break;
      const char *f = memmem(p + at, (size_t)(n - at), sp->literal, sp->literal_len);
      if (!f) break;
      a = f - p;
      b = a + (int64_t)sp->literal_len;
    }
    if (a > prev && runs_push(r, prev, a, 0) != 0) goto oom;
    if (runs_push(r, a, b, 1) != 0) goto oom;
    prev = b;
    if (b > a) {
      at = b;
    } else { /* an empty match: step over one UTF-8 character */
      if (a >= n) break;
      at = a + 1;
      while (at < n && ((unsigned char)p[at] & 0xC0) == 0x80) at++;
    }
  }
  if (prev < n && runs_push(r, prev, n, 0) != 0) goto oom;
  if (sp && sp->invert)
    for (int64_t i = 0; i < r->n; i++) r->v[i].match = !r->v[i].match;
  return 0;
oom:
  snprintf(err, errlen, "out of memory splitting a piece");
  return -1;
}

/* Apply the behaviour in place (the library's SplitDelimiterBehavior), then emit non-empty
 * pieces. */
static int behave(int behavior, const char *p, runs *r, bpe_spans *out) {
  int64_t k = 0;
  int prev_match = 0;
  switch (behavior) {
  case BPE_SPLIT_ISOLATED: k = r->n; break;
  case BPE_SPLIT_REMOVED:
    for (int64_t i = 0; i < r->n; i++)
      if (!r->v[i].match) r->v[k++] = r->v[i];
    break;
  case BPE_SPLIT_MERGED_PREV: /* a match joins the piece before it */
    for (int64_t i = 0; i < r->n; i++) {
      run x = r->v[i];
      if (x.match && !prev_match && k > 0) r->v[k - 1].b = x.b;
      else r->v[k++] = x;
      prev_match = x.match;
    }
    break;
  case BPE_SPLIT_MERGED_NEXT: /* a match joins the piece after it: the same, right to left */
    for (int64_t i = r->n - 1; i >= 0; i--) {
      run x = r->v[i];
      if (x.match && !prev_match && k > 0) r->v[r->n - k].a = x.a;
      else r->v[r->n - 1 - k++] = x;
      prev_match = x.match;
    }
    memmove(r->v, r->v + (r->n - k), (size_t)k * sizeof *r->v);
    break;
  case BPE_SPLIT_CONTIGUOUS: /* runs of matches (and of non-matches) become one piece */
    for (int64_t i = 0; i < r->n; i++) {
      run x = r->v[i];
      if (x.match == prev_match && k > 0) r->v[k - 1].b = x.b;
      else r->v[k++] = x;
      prev_match = x.match;
    }
    break;
  }
  for (int64_t i = 0; i < k; i++)
    if (r->v[i].b > r->v[i].a && bpe_spans_push(out, p + r->v[i].a, r->v[i].b - r->v[i].a) != 0)
      return -1;
  return 0;
}

int bpe_split_apply(const bpe_split *sp, pcre2_match_data *md, const bpe_spans *in,
                    bpe_spans *out, char *err, size_t errlen) {
  runs r = {0};
  out->n = 0;
  int rc = 0;
  for (int64_t i = 0; i < in->n && rc == 0; i++) {
    rc = find_runs(sp, sp->re, md, in->v[i].p, in->v[i].n, &r, err, errlen);
    if (rc == 0 && behave(sp->behavior, in->v[i].p, &r, out) != 0) {
      snprintf(err, errlen, "out of memory splitting a piece");
      rc = -1;
    }
  }
  free(r.v);
  return rc;
}

int bpe_regex_pieces(const pcre2_code *re, pcre2_match_data *md, const char *p, int64_t n,
                     bpe_spans *out, char *err, size_t errlen) {
  runs r = {0};
  int rc = find_runs(NULL, re, md, p, n, &r, err, errlen);
  if (rc == 0 && behave(BPE_SPLIT_ISOLATED, p, &r, out) != 0) {
    snprintf(err, errlen, "out of memory splitting a piece");
    rc = -1;
  }
  free(r.v);
  return rc;
}
