/* Loading a tokenizer.json into a byte-level BPE (bpe.h, docs/tokenizer.md). Every refusal is one
 * line "FILE: FIELD: what was found (expected ...)". */
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/io/json_strict.h"
#include "src/io/status.h"
#include "src/io/atomic_file.h"
#include "src/tokens/bpe_internal.h"

/* The most ids a tokenizer may number (its id tables take ~20 bytes an id: 335 MB at most) */
#define BPE_MAX_IDS (1 << 24)

#define MAX_JSON_BYTES (INT64_C(1) << 30)
#define MAX_ID ((1u << 31) - 1)

typedef struct {
  bpe_tokenizer *t;
  char *err;
  size_t errlen;
  bpe_strmap mapped; /* vocabulary strings as written (byte-level alphabet) -> id */
} loader;

static int fail(loader *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(loader *L, const char *fmt, ...) {
  int k = snprintf(L->err, L->errlen, "%s: ", L->t->path);
  if (k < 0 || (size_t)k >= L->errlen) return RSSM_ERR_INPUT;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(L->err + k, L->errlen - (size_t)k, fmt, ap);
  va_end(ap);
  return RSSM_ERR_INPUT;
}

static int oom(loader *L) {
  snprintf(L->err, L->errlen, "%s: out of memory", L->t->path);
  return RSSM_ERR_IO;
}

/* An optional boolean member: absent or null gives def. */
static int get_bool(loader *L, const cJSON *obj, const char *field, const char *name, int def,
                    int *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
  *out = def;
  if (!v || cJSON_IsNull(v)) return RSSM_OK;
  if (!cJSON_IsBool(v)) return fail(L, "%s.%s: not a boolean (expected true or false)", field, name);
  *out = cJSON_IsTrue(v);
  return RSSM_OK;
}

static const char *type_of(const cJSON *obj) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, "type");
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A vocabulary id: an integer in [0, 2^31). */
static int get_id(const cJSON *v, uint32_t *id) {
  if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > MAX_ID ||
      v->valuedouble != (double)(int64_t)v->valuedouble)
    return -1;
  *id = (uint32_t)v->valuedouble;
  return 0;
}

/* A byte-level string's raw bytes: each code point must be one of bytes_to_unicode's 256.
 * Returns the byte count, or -1 when the string is outside that alphabet. */
static int64_t unmap(const char *s, char *out /* [strlen(s)] */) {
  size_t n = strlen(s);
  int64_t k = 0;
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    int l = bpe_utf8_next((const unsigned char *)s + i, n - i, &cp);
    int b = l ? bpe_cp_to_byte(cp) : -1;
    if (b < 0) return -1;
    out[k++] = (char)b;
    i += (size_t)l;
  }
  return k;
}

static int set_bytes(bpe_tokenizer *t, uint32_t id, const char *p, size_t n) {
  char *c = malloc(n + 1);
  if (!c) return -1;
  memcpy(c, p, n);
  c[n] = '\0';
  free(t->tok_bytes[id]);
  t->tok_bytes[id] = c;
  t->tok_len[id] = (uint32_t)n;
  return 0;
}

/* t->byte_id: the initial symbol of every byte (model: the tokenizer's "model" object). */
static void load_byte_ids(loader *L, const cJSON *model, int byte_fallback) {
  bpe_tokenizer *t = L->t;
  uint32_t id;
  /* the initial symbol of each byte: its byte-level character, else <0xNN> with byte_fallback,
   * else unk_token, else none (the library then drops the byte) */
  const cJSON *unk = cJSON_GetObjectItemCaseSensitive(model, "unk_token");
  for (unsigned b = 0; b < 256; b++) {
    char s[16];
    uint32_t cp = bpe_byte_to_cp(b);
    size_t n = cp < 0x80 ? (s[0] = (char)cp, 1)
                         : (s[0] = (char)(0xC0 | (cp >> 6)), s[1] = (char)(0x80 | (cp & 0x3F)), 2);
    t->byte_id[b] = UINT32_MAX;
    if (bpe_strmap_get(&L->mapped, s, n, &id)) {
      t->byte_id[b] = id;
      continue;
    }
    snprintf(s, sizeof s, "<0x%02X>", b);
    if (byte_fallback && bpe_strmap_get(&L->mapped, s, strlen(s), &id)) t->byte_id[b] = id;
    else if (cJSON_IsString(unk) && bpe_strmap_get(&L->mapped, unk->valuestring,
                                                  strlen(unk->valuestring), &id))
      t->byte_id[b] = id;
  }

}

/* t->merges from model.merges. */
static int load_merges(loader *L, const cJSON *model) {
  bpe_tokenizer *t = L->t;
  const cJSON *e;
  int rc;
  /* merges: "a b" strings (the older form) or ["a", "b"] lists; rank = position, and a pair
   * listed twice keeps its last rank (the library builds a hash map from the list) */
  const cJSON *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
  if (!cJSON_IsArray(merges)) return fail(L, "model.merges: missing (expected a list of merges)");
  int r = 0;
  char *cat = NULL;
  size_t catcap = 0;
  cJSON_ArrayForEach(e, merges) {
    const char *a, *b;
    size_t la, lb;
    if (cJSON_IsString(e)) {
      const char *sp = strchr(e->valuestring, ' ');
      if (!sp || strchr(sp + 1, ' '))
        {
      rc = fail(L, "model.merges[%d]: \"%s\" (expected \"LEFT RIGHT\": two tokens "
                                  "and one space)", r, e->valuestring);
      free(cat);
      return rc;
    }
      a = e->valuestring, la = (size_t)(sp - a), b = sp + 1, lb = strlen(b);
    } else if (cJSON_IsArray(e) && cJSON_GetArraySize(e) == 2 &&
               cJSON_IsString(cJSON_GetArrayItem(e, 0)) && cJSON_IsString(cJSON_GetArrayItem(e, 1))) {
      a = cJSON_GetArrayItem(e, 0)->valuestring, la = strlen(a);
      b = cJSON_GetArrayItem(e, 1)->valuestring, lb = strlen(b);
    } else {
      {
      rc = fail(L, "model.merges[%d]: not a merge (expected \"LEFT RIGHT\" or "
                                "[\"LEFT\", \"RIGHT\"])", r);
      free(cat);
      return rc;
    }
    }
    uint32_t ia, ib, im;
    if (la + lb + 1 > catcap) {
      catcap = 2 * (la + lb) + 64;
      free(cat);
      cat = malloc(catcap);
      if (!cat) return oom(L);
    }
    memcpy(cat, a, la);
    memcpy(cat + la, b, lb);
    cat[la + lb] = '\0';
    if (!bpe_strmap_get(&L->mapped, a, la, &ia) || !bpe_strmap_get(&L->mapped, b, lb, &ib))
      {
      rc = fail(L, "model.merges[%d]: \"%.*s\" or \"%.*s\" is not in model.vocab", r,
                             (int)la, a, (int)lb, b);
      free(cat);
      return rc;
    }
    if (!bpe_strmap_get(&L->mapped, cat, la + lb, &im))
      {
      rc = fail(L, "model.merges[%d]: the merged token \"%s\" is not in model.vocab", r,
                             cat);
      free(cat);
      return rc;
    }
    if (bpe_u64map_put(&t->merges, ((uint64_t)ia << 32) | ib, ((uint64_t)r << 32) | im) != 0)
      {
      free(cat);
      return oom(L);
    }
    r++;
  }
  free(cat);

  return RSSM_OK;
}

/* t->added from added_tokens [na]. */
static int load_added(loader *L, const cJSON *added, int na) {
  bpe_tokenizer *t = L->t;
  int rc;
  /* added tokens (after the vocabulary: their content is what decoding gives back) */
  t->added = calloc((size_t)(na ? na : 1), sizeof *t->added);
  if (!t->added) return oom(L);
  for (int i = 0; i < na; i++) {
    const cJSON *a = cJSON_GetArrayItem(added, i);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(a, "content");
    if (!cJSON_IsString(c) || c->valuestring[0] == '\0')
      return fail(L, "added_tokens[%d].content: missing or empty (expected the token's text)", i);
    const char *flags[] = {"single_word", "lstrip", "rstrip"};
    for (int f = 0; f < 3; f++) {
      int on;
      char field[64];
      snprintf(field, sizeof field, "added_tokens[%d]", i);
      if ((rc = get_bool(L, a, field, flags[f], 0, &on)) != RSSM_OK) return rc;
      if (on) return fail(L, "added_tokens[%d].%s: true is not supported (expected false)", i, flags[f]);
    }
    bpe_added *d = &t->added[t->nadded];
    char field[64];
    snprintf(field, sizeof field, "added_tokens[%d]", i);
    if ((rc = get_bool(L, a, field, "special", 0, &d->special)) != RSSM_OK) return rc;
    if ((rc = get_bool(L, a, field, "normalized", !d->special, &d->normalized)) != RSSM_OK) return rc;
    get_id(cJSON_GetObjectItemCaseSensitive(a, "id"), &d->id);
    d->len = strlen(c->valuestring);
    d->content = malloc(d->len + 1);
    if (!d->content) return oom(L);
    memcpy(d->content, c->valuestring, d->len + 1);
    t->first_byte[d->normalized][(unsigned char)d->content[0]] = 1;
    t->nadded++;
    if (set_bytes(t, d->id, d->content, d->len) != 0) return oom(L);
  }
  return RSSM_OK;
}

static int load_model(loader *L, const cJSON *root) {
  bpe_tokenizer *t = L->t;
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (!cJSON_IsObject(model)) return fail(L, "model: missing (expected an object with type \"BPE\")");
  const char *type = type_of(model);
  if (!type) return fail(L, "model.type: missing (expected \"BPE\")");
  if (strcmp(type, "BPE") != 0)
    return fail(L, "model.type: \"%s\" is not supported (expected \"BPE\")", type);
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, "dropout");
  if (v && !cJSON_IsNull(v) && !(cJSON_IsNumber(v) && v->valuedouble == 0))
    return fail(L, "model.dropout: BPE dropout is random (expected null)");
  const char *affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
  for (int i = 0; i < 2; i++) {
    v = cJSON_GetObjectItemCaseSensitive(model, affixes[i]);
    if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && v->valuestring[0] == '\0'))
      return fail(L, "model.%s: not supported for byte-level BPE (expected null)", affixes[i]);
  }
  int byte_fallback, rc;
  if ((rc = get_bool(L, model, "model", "byte_fallback", 0, &byte_fallback)) != RSSM_OK) return rc;
  if ((rc = get_bool(L, model, "model", "ignore_merges", 0, &t->ignore_merges)) != RSSM_OK) return rc;
  const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab");
  if (!cJSON_IsObject(vocab)) return fail(L, "model.vocab: missing (expected an object token -> id)");
  const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
  if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added))
    return fail(L, "added_tokens: not an array (expected a list of token objects)");

  /* the vocabulary size: one past the largest id of the vocabulary and the added tokens */
  uint32_t maxid = 0, id;
  int any = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, vocab) {
    if (get_id(e, &id) != 0)
      return fail(L, "model.vocab[\"%s\"]: not an id (expected an integer in [0, 2^31))", e->string);
    if (!any || id > maxid) maxid = id;
    any = 1;
  }
  int na = added ? cJSON_GetArraySize(added) : 0;
  for (int i = 0; i < na; i++) {
    const cJSON *a = cJSON_GetArrayItem(added, i);
    if (!cJSON_IsObject(a) || get_id(cJSON_GetObjectItemCaseSensitive(a, "id"), &id) != 0)
      return fail(L, "added_tokens[%d].id: missing or not an id (expected an integer in [0, 2^31))", i);
    if (!any || id > maxid) maxid = id;
    any = 1;
  }
  if (!any) return fail(L, "model.vocab: empty (expected at least the 256 byte symbols)");
  /* the id tables below are indexed by id, so the largest id sizes them (an id of 2^31 - 1 asked
     for 16 GiB: found by fuzz_tokenizer). Ids may leave gaps (reserved ids), so the bound is a
     ceiling far above real vocabularies (~2.6e5 ids) rather than the number of tokens given. */
  if (maxid >= BPE_MAX_IDS)
    return fail(L, "model.vocab / added_tokens: id %u is too large (expected ids below %d)", maxid,
                BPE_MAX_IDS);
  t->vocab = maxid + 1;
  t->tok_bytes = calloc(t->vocab, sizeof *t->tok_bytes);
  t->tok_len = calloc(t->vocab, sizeof *t->tok_len);
  if (!t->tok_bytes || !t->tok_len) return oom(L);

  /* two tokens with one id would decode that id as whichever came last */
  const char **owner = calloc(t->vocab, sizeof *owner); /* [vocab] the token holding each id */
  if (!owner) return oom(L);
  cJSON_ArrayForEach(e, vocab) {
    get_id(e, &id);
    if (owner[id]) {
      rc = fail(L, "model.vocab: \"%s\" and \"%s\" both have id %u (expected one token per id)",
                owner[id], e->string, id);
      free(owner);
      return rc;
    }
    owner[id] = e->string;
  }
  free(owner);
  char *raw = NULL;
  size_t rawcap = 0;
  cJSON_ArrayForEach(e, vocab) {
    get_id(e, &id);
    size_t n = strlen(e->string);
    if (n + 1 > rawcap) {
      rawcap = 2 * n + 64;
      free(raw);
      raw = malloc(rawcap);
      if (!raw) return oom(L);
    }
    if (bpe_strmap_put(&L->mapped, e->string, n, id) != 0) return free(raw), oom(L);
    int64_t k = unmap(e->string, raw);
    if (k < 0) continue; /* outside the byte alphabet: BPE on bytes never produces it */
    if (bpe_strmap_put(&t->raw_vocab, raw, (size_t)k, id) != 0 || set_bytes(t, id, raw, (size_t)k) != 0)
      return free(raw), oom(L);
  }
  free(raw);

  load_byte_ids(L, model, byte_fallback);

  if ((rc = load_merges(L, model)) != RSSM_OK) return rc;
  if ((rc = load_added(L, added, na)) != RSSM_OK) return rc;
  return RSSM_OK;
}

static int load_normalizer(loader *L, const cJSON *root) {
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
  L->t->normalizer = BPE_NORM_NONE;
  if (!n || cJSON_IsNull(n)) return RSSM_OK;
  const char *type = type_of(n);
  if (type && strcmp(type, "NFC") == 0) {
    L->t->normalizer = BPE_NORM_NFC;
    return RSSM_OK;
  }
  if (type && strcmp(type, "Sequence") == 0) { /* a Sequence of NFC only (or empty) */
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(n, "normalizers"), *e;
    if (!cJSON_IsArray(list)) return fail(L, "normalizer.normalizers: missing (expected a list)");
    int i = 0;
    cJSON_ArrayForEach(e, list) {
      const char *et = type_of(e);
      if (!et || strcmp(et, "NFC") != 0)
        return fail(L, "normalizer.normalizers[%d]: type \"%s\" is not supported (expected NFC)", i,
                    et ? et : "(missing)");
      L->t->normalizer = BPE_NORM_NFC;
      i++;
    }
    return RSSM_OK;
  }
  return fail(L, "normalizer: type \"%s\" is not supported (expected null or NFC)",
              type ? type : "(missing)");
}

static int load_split(loader *L, const cJSON *s, const char *field, bpe_split *sp) {
  const cJSON *pat = cJSON_GetObjectItemCaseSensitive(s, "pattern");
  const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex");
  const cJSON *str = cJSON_GetObjectItemCaseSensitive(pat, "String");
  if (cJSON_IsString(re)) {
    char msg[512];
    sp->re = bpe_regex_compile(re->valuestring, msg, sizeof msg);
    if (!sp->re) return fail(L, "%s.pattern.Regex: %s", field, msg);
  } else if (cJSON_IsString(str)) {
    sp->literal_len = strlen(str->valuestring);
    sp->literal = malloc(sp->literal_len + 1);
    if (!sp->literal) return oom(L);
    memcpy(sp->literal, str->valuestring, sp->literal_len + 1);
  } else {
    return fail(L, "%s.pattern: missing (expected {\"Regex\": ...} or {\"String\": ...})", field);
  }
  const cJSON *b = cJSON_GetObjectItemCaseSensitive(s, "behavior");
  static const char *names[] = {"Removed", "Isolated", "MergedWithPrevious", "MergedWithNext",
                                "Contiguous"};
  sp->behavior = -1;
  for (int i = 0; i < 5; i++)
    if (cJSON_IsString(b) && strcmp(b->valuestring, names[i]) == 0) sp->behavior = i;
  if (sp->behavior < 0)
    return fail(L, "%s.behavior: %s%s%s (expected Removed, Isolated, MergedWithPrevious, "
                   "MergedWithNext or Contiguous)", field, cJSON_IsString(b) ? "\"" : "",
                cJSON_IsString(b) ? b->valuestring : "missing", cJSON_IsString(b) ? "\"" : "");
  return get_bool(L, s, field, "invert", 0, &sp->invert);
}

static int load_bytelevel(loader *L, const cJSON *s, const char *field) {
  int rc = get_bool(L, s, field, "add_prefix_space", 1, &L->t->add_prefix_space);
  if (rc == RSSM_OK) rc = get_bool(L, s, field, "use_regex", 1, &L->t->use_regex);
  if (rc == RSSM_OK && L->t->use_regex) {
    /* GPT-2's pattern, which ByteLevel applies itself when use_regex is true */
    char msg[512];
    L->t->gpt2_re = bpe_regex_compile(
        "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+", msg,
        sizeof msg);
    if (!L->t->gpt2_re) return fail(L, "%s: GPT-2 regex: %s", field, msg);
  }
  return rc;
}

static int load_pretokenizer(loader *L, const cJSON *root) {
  bpe_tokenizer *t = L->t;
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer");
  const char *expect = "expected ByteLevel, or a Sequence of Split steps ending in ByteLevel";
  if (!p || cJSON_IsNull(p)) return fail(L, "pre_tokenizer: missing (%s)", expect);
  const char *type = type_of(p);
  if (type && strcmp(type, "ByteLevel") == 0) return load_bytelevel(L, p, "pre_tokenizer");
  if (!type || strcmp(type, "Sequence") != 0)
    return fail(L, "pre_tokenizer: type \"%s\" is not supported (%s)", type ? type : "(missing)", expect);
  const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers");
  if (!cJSON_IsArray(list)) return fail(L, "pre_tokenizer.pretokenizers: missing (expected a list)");
  int n = cJSON_GetArraySize(list);
  t->splits = calloc((size_t)(n ? n : 1), sizeof *t->splits);
  if (!t->splits) return oom(L);
  for (int i = 0; i < n; i++) {
    const cJSON *s = cJSON_GetArrayItem(list, i);
    const char *st = type_of(s);
    char field[64];
    snprintf(field, sizeof field, "pre_tokenizer.pretokenizers[%d]", i);
    if (st && strcmp(st, "Split") == 0 && i < n - 1) {
      int rc = load_split(L, s, field, &t->splits[t->nsplits]);
      t->nsplits++; /* counted even on failure, so bpe_free releases what was compiled */
      if (rc != RSSM_OK) return rc;
    } else if (st && strcmp(st, "ByteLevel") == 0 && i == n - 1) {
      return load_bytelevel(L, s, field);
    } else {
      return fail(L, "%s: type \"%s\" is not supported here (%s)", field, st ? st : "(missing)",
                  expect);
    }
  }
  return fail(L, "pre_tokenizer.pretokenizers: no ByteLevel step (%s)", expect);
}

int bpe_load(const char *path, bpe_tokenizer **out, char *err, size_t errlen) {
  *out = NULL;
  bpe_tokenizer *t = calloc(1, sizeof *t);
  if (!t) {
    snprintf(err, errlen, "%s: out of memory", path);
    return RSSM_ERR_IO;
  }
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    snprintf(t->path, sizeof t->path, "%s/tokenizer.json", path);
  else
    snprintf(t->path, sizeof t->path, "%s", path);
  loader L = {t, err, errlen, {0}};
  unsigned char *buf;
  int64_t len;
  int rc = read_whole_file(t->path, MAX_JSON_BYTES, &buf, &len, err, errlen);
  if (rc != RSSM_OK) {
    bpe_free(t);
    return rc;
  }
  snprintf(t->id, sizeof t->id, BPE_ID_PREFIX "%016llx",
           (unsigned long long)bpe_fnv1a64(buf, (size_t)len));
  cJSON *root = cJSON_ParseWithLength((const char *)buf, (size_t)len);
  char why[512];
  if (json_strict_check(root, (const char *)buf, (size_t)len, why, sizeof why))
    rc = fail(&L, "%s", why);
  else if (!cJSON_IsObject(root))
    rc = fail(&L, "not a JSON object (expected a tokenizer.json)");
  free(buf);
  if (rc == RSSM_OK) rc = load_model(&L, root);
  if (rc == RSSM_OK) rc = load_normalizer(&L, root);
  if (rc == RSSM_OK) rc = load_pretokenizer(&L, root);
  if (rc == RSSM_OK) {
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    const char *dt = d ? type_of(d) : NULL;
    t->decoder_bytelevel = !d || cJSON_IsNull(d) || (dt && strcmp(dt, "ByteLevel") == 0);
  }
  cJSON_Delete(root);
  bpe_strmap_free(&L.mapped);
  if (rc == RSSM_OK) {
    t->md = pcre2_match_data_create(1, NULL);
    if (!t->md) rc = oom(&L);
  }
  if (rc != RSSM_OK) {
    bpe_free(t);
    return rc;
  }
  *out = t;
  return RSSM_OK;
}

void bpe_free(bpe_tokenizer *t) {
  if (!t) return;
  for (uint32_t i = 0; t->tok_bytes && i < t->vocab; i++) free(t->tok_bytes[i]);
  free(t->tok_bytes);
  free(t->tok_len);
  bpe_strmap_free(&t->raw_vocab);
  bpe_u64map_free(&t->merges);
  for (int i = 0; i < t->nadded; i++) free(t->added[i].content);
  free(t->added);
  for (int i = 0; i < t->nsplits; i++) {
    pcre2_code_free(t->splits[i].re);
    free(t->splits[i].literal);
  }
  free(t->splits);
  pcre2_code_free(t->gpt2_re);
  pcre2_match_data_free(t->md);
  bpe_strmap_free(&t->cache);
  free(t->cache_ids);
  free(t);
}

const char *bpe_id(const bpe_tokenizer *t) { return t->id; }
uint32_t bpe_vocab(const bpe_tokenizer *t) { return t->vocab; }
