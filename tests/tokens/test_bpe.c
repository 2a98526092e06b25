/* Byte-level BPE from tokenizer.json (src/tokens/bpe_*.c): token-for-token agreement with the
 * Hugging Face tokenizers library on the committed references (tests/fixtures/tokenizers/,
 * README.md there), decode(encode(x)) == x, `replayssm tokens --tokenizer` / `--decode` through
 * the real executable, and one-line refusals (exit 2) of malformed tokenizer files. */
#include <criterion/criterion.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/io/status.h"
#include "src/tokens/bpe.h"
#include "src/tokens/bpe_internal.h"
#include "src/tokens/token_source.h"
#include "src/tokens/tokstream.h"
#include "tests/cli/cli_test_util.h"

#define FIX RSSM_SOURCE_DIR "/tests/fixtures/tokenizers"

static const char *dir;
static void setup(void) { dir = tdir_make(); cr_assert(dir); }
static void teardown(void) { tdir_remove(dir); }

TestSuite(bpe, .init = setup, .fini = teardown);

/* The committed tokenizers: name, and whether decode(encode(x)) == x holds for every text (not
 * with NFC on non-NFC text, ByteLevel's add_prefix_space, or a Removed split). */
static const struct { const char *name; int round_trip_unicode, round_trip_moby; } FIXTURES[] = {
    {"qwen2", 0, 1},  {"tekken", 1, 1},    {"llama3", 1, 1},
    {"gpt2", 0, 0},   {"behaviors", 0, 0}, {"inverted", 1, 1},
};
static const char *TEXTS[] = {"moby300k", "unicode"};

static char *read_text(const char *name, int64_t *len) {
  char p[TPATH_MAX];
  snprintf(p, sizeof p, FIX "/%s.txt", name);
  size_t n;
  char *t = slurp(p, &n);
  cr_assert(t, "cannot read %s", p);
  *len = (int64_t)n;
  return t;
}

Test(bpe, matches_tokenizers_library_and_round_trips) {
  char err[1024], p[TPATH_MAX];
  for (size_t f = 0; f < sizeof FIXTURES / sizeof FIXTURES[0]; f++) {
    bpe_tokenizer *t;
    snprintf(p, sizeof p, FIX "/%s", FIXTURES[f].name); /* a directory holding tokenizer.json */
    cr_assert_eq(bpe_load(p, &t, err, sizeof err), RSSM_OK, "%s", err);
    for (int k = 0; k < 2; k++) {
      int64_t len;
      char *text = read_text(TEXTS[k], &len);
      bpe_ids ids = {0};
      cr_assert_eq(bpe_encode(t, text, len, TEXTS[k], &ids, err, sizeof err), RSSM_OK, "%s", err);
      tokstream_info info;
      uint32_t *ref;
      snprintf(p, sizeof p, FIX "/%s/%s.tok.zst", FIXTURES[f].name, TEXTS[k]);
      cr_assert_eq(tokstream_read(p, &info, &ref, err, sizeof err), RSSM_OK, "%s", err);
      cr_assert_str_eq(info.tokenizer, bpe_id(t), "%s: the reference was made with another file",
                       p);
      cr_assert_eq(info.vocab, bpe_vocab(t));
      int64_t first = -1;
      for (int64_t i = 0; i < ids.n && i < info.count && first < 0; i++)
        if (ids.ids[i] != ref[i]) first = i;
      cr_assert(first < 0 && ids.n == info.count,
                "%s on %s: %lld ids, the library %lld; first difference at %lld (%u vs %u)",
                FIXTURES[f].name, TEXTS[k], (long long)ids.n, (long long)info.count,
                (long long)first, first >= 0 ? ids.ids[first] : 0, first >= 0 ? ref[first] : 0);
      int rt = k == 0 ? FIXTURES[f].round_trip_moby : FIXTURES[f].round_trip_unicode;
      if (rt) {
        char *back;
        int64_t blen;
        cr_assert_eq(bpe_decode(t, ids.ids, ids.n, &back, &blen, err, sizeof err), RSSM_OK, "%s", err);
        cr_assert(blen == len && memcmp(back, text, (size_t)len) == 0, "%s on %s: no round trip",
                  FIXTURES[f].name, TEXTS[k]);
        free(back);
      }
      free(ref);
      bpe_ids_free(&ids);
      free(text);
    }
    bpe_free(t);
  }
}

/* The pre-token cache must not change anything: the same text encoded twice in one tokenizer
 * (second time from the cache) and in a fresh one gives the same ids; so does encoding it in
 * two halves cut at a newline that both pre-tokenizers split at. */
Test(bpe, cache_and_repeat_are_identical) {
  char err[1024];
  bpe_tokenizer *t;
  cr_assert_eq(bpe_load(FIX "/qwen2/tokenizer.json", &t, err, sizeof err), RSSM_OK, "%s", err);
  int64_t len;
  char *text = read_text("moby300k", &len);
  bpe_ids a = {0}, b = {0};
  cr_assert_eq(bpe_encode(t, text, len, "a", &a, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(bpe_encode(t, text, len, "b", &b, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(a.n, b.n);
  cr_assert_eq(memcmp(a.ids, b.ids, (size_t)a.n * 4), 0);
  bpe_ids_free(&a);
  bpe_ids_free(&b);
  free(text);
  bpe_free(t);
}

/* bpe_nfc hands GLib only windows around characters NFC might change: on random strings built
 * from stable characters, starters that compose, combining marks in every order, Hangul jamo
 * and singletons, it must equal GLib's NFC of the whole string. */
Test(bpe, windowed_nfc_equals_whole_text_nfc) {
  static const char *palette[] = {
      "a", "e", "A", " ", "\n", ">", "\xc3\xa9" /* é */, "\xcc\x81" /* U+0301 */,
      "\xcc\xa3" /* U+0323 */, "\xcc\x87" /* U+0307 */, "\xcc\xb8" /* U+0338 */,
      "\xe2\x80\x94" /* em dash */, "\xe2\x80\x99" /* right quote */,
      "\xe2\x84\xa6" /* Ohm sign */, "\xe2\x84\xab" /* Angstrom sign */,
      "\xe1\x84\x80" /* Hangul L */, "\xe1\x85\xa1" /* Hangul V */, "\xe1\x86\xa8" /* T */,
      "\xea\xb0\x80" /* 가 */, "\xe3\x81\x8b" /* か */, "\xe3\x82\x99" /* dakuten */,
      "\xe4\xb8\xad" /* 中 */, "\xef\xa4\x80" /* CJK compatibility U+F900 */,
      "\xe1\xba\x9b" /* ẛ */, "\xcd\x84" /* U+0344 */, "\xe2\x80\x80" /* U+2000 */};
  const int np = (int)(sizeof palette / sizeof palette[0]);
  uint64_t rng = 11;
  for (int trial = 0; trial < 3000; trial++) {
    char s[512];
    int64_t n = 0;
    int m = 1 + (int)(rng_next(&rng) % 40);
    for (int i = 0; i < m; i++) {
      const char *c = palette[rng_next(&rng) % (uint64_t)np];
      memcpy(s + n, c, strlen(c));
      n += (int64_t)strlen(c);
    }
    s[n] = '\0';
    char *mine;
    int64_t mlen;
    cr_assert_eq(bpe_nfc(s, n, &mine, &mlen), 0);
    gchar *ref = g_utf8_normalize(s, (gssize)n, G_NORMALIZE_NFC);
    const char *got = mine ? mine : s;
    cr_assert(ref && (int64_t)strlen(ref) == mlen && memcmp(ref, got, (size_t)mlen) == 0,
              "trial %d: NFC differs for '%s'", trial, s);
    g_free(ref);
    free(mine);
  }
}

static int run_cli(char *const argv[], const char *outfile, const char *errfile) {
  int st = run_prog(argv, outfile, errfile);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(bpe, cli_encode_decode_and_pg19) {
  char out[TPATH_MAX], errf[TPATH_MAX], txt[TPATH_MAX], back[TPATH_MAX], err[1024];
  tpath(out, dir, "m.tok.zst");
  tpath(errf, dir, "err.txt");
  tpath(back, dir, "back.txt");
  char *enc[] = {RSSM_BIN, "tokens", "--tokenizer", FIX "/tekken", "--out", out,
                 FIX "/moby300k.txt", NULL};
  cr_assert_eq(run_cli(enc, NULL, errf), 0);
  token_source src, ref;
  cr_assert_eq(token_source_load(out, &src, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(token_source_load(FIX "/tekken/moby300k.tok.zst", &ref, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(src.n, ref.n);
  cr_assert_eq(memcmp(src.ids, ref.ids, (size_t)src.n * sizeof(int64_t)), 0);
  cr_assert_str_eq(src.tokenizer, ref.tokenizer);
  cr_assert_eq(strncmp(src.tokenizer, BPE_ID_PREFIX, strlen(BPE_ID_PREFIX)), 0, "%s", src.tokenizer);
  token_source_free(&src);
  token_source_free(&ref);

  /* --decode gives the text back; the byte-level stream decodes without --tokenizer */
  char *dec[] = {RSSM_BIN, "tokens", "--decode", out, "--tokenizer", FIX "/tekken/tokenizer.json",
                 "--out", back, NULL};
  cr_assert_eq(run_cli(dec, NULL, errf), 0);
  size_t n1, n2;
  char *a = slurp(back, &n1), *b = slurp(FIX "/moby300k.txt", &n2);
  cr_assert(a && b && n1 == n2 && memcmp(a, b, n1) == 0, "decoded text differs");
  free(a);
  /* a stream of one tokenizer is refused with another, and without any */
  char *wrong[] = {RSSM_BIN, "tokens", "--decode", out, "--tokenizer", FIX "/qwen2",
                   "--out", back, "--force", NULL};
  cr_assert_eq(run_cli(wrong, NULL, errf), 2);
  char *e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "tokenizer id"), "%s", e);
  free(e);
  char *none[] = {RSSM_BIN, "tokens", "--decode", out, "--out", "-", NULL};
  cr_assert_eq(run_cli(none, NULL, errf), 2);
  e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "--tokenizer"), "%s", e);
  free(e);

  /* a byte-level stream decodes without --tokenizer, to standard output */
  char *benc[] = {RSSM_BIN, "tokens", "--force", "--out", out, FIX "/unicode.txt", NULL};
  cr_assert_eq(run_cli(benc, NULL, errf), 0);
  char *bdec[] = {RSSM_BIN, "tokens", "--decode", out, "--out", "-", NULL};
  cr_assert_eq(run_cli(bdec, back, errf), 0);
  int64_t ul;
  char *u0 = read_text("unicode", &ul), *u1 = slurp(back, &n1);
  cr_assert(u0 && u1 && (int64_t)n1 == ul && memcmp(u0, u1, n1) == 0, "byte stream decode differs");
  free(u0);
  free(u1);

  /* PG-19: each book encoded on its own, ids concatenated in id order */
  char sub[TPATH_MAX], p[TPATH_MAX + 64];
  tpath(sub, dir, "test");
  cr_assert_eq(mkdir(sub, 0755), 0);
  const char *csv = "7,Moby,1851,http://x\n3,Uni,2000,http://y\n";
  cr_assert_eq(write_bytes(tpath(p, dir, "metadata.csv"), csv, strlen(csv)), 0);
  snprintf(p, sizeof p, "%s/7.txt", sub);
  cr_assert_eq(write_bytes(p, b, n2), 0);
  free(b);
  int64_t ulen;
  char *uni = read_text("unicode", &ulen);
  snprintf(p, sizeof p, "%s/3.txt", sub);
  cr_assert_eq(write_bytes(p, uni, (size_t)ulen), 0);
  free(uni);
  char *pg[] = {RSSM_BIN, "tokens", "--tokenizer", FIX "/llama3", "--force", "--out", out,
                "--pg19", (char *)dir, NULL};
  cr_assert_eq(run_cli(pg, NULL, errf), 0);
  cr_assert_eq(token_source_load(out, &src, err, sizeof err), RSSM_OK, "%s", err);
  token_source r1, r2;
  cr_assert_eq(token_source_load(FIX "/llama3/unicode.tok.zst", &r1, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(token_source_load(FIX "/llama3/moby300k.tok.zst", &r2, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(src.n, r1.n + r2.n);
  cr_assert_eq(memcmp(src.ids, r1.ids, (size_t)r1.n * sizeof(int64_t)), 0);
  cr_assert_eq(memcmp(src.ids + r1.n, r2.ids, (size_t)r2.n * sizeof(int64_t)), 0);
  token_source_free(&src);
  token_source_free(&r1);
  token_source_free(&r2);
  snprintf(p, sizeof p, "%s/7.txt", sub);
  unlink(p);
  snprintf(p, sizeof p, "%s/3.txt", sub);
  unlink(p);
  rmdir(sub);

  /* invalid UTF-8 is refused with its byte offset */
  tpath(txt, dir, "bad.txt");
  cr_assert_eq(write_bytes(txt, "abc\xff", 4), 0);
  char *bad[] = {RSSM_BIN, "tokens", "--tokenizer", FIX "/qwen2", "--force", "--out", out, txt, NULL};
  cr_assert_eq(run_cli(bad, NULL, errf), 2);
  e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "invalid UTF-8 at byte 3"), "%s", e);
  free(e);
}

/* A small well-formed tokenizer.json with a hole punched in by `edit`: the file is built from
 * pieces so that each malformation replaces exactly one of them. */
static const char *PIECES[] = {
    /* 0: model */
    "\"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"ignore_merges\": false, "
    "\"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2, \"\\u0120\": 3}, \"merges\": [\"a b\", [\"a\", \"b\"]]}",
    /* 1: normalizer */
    "\"normalizer\": {\"type\": \"NFC\"}",
    /* 2: pre_tokenizer */
    "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
    "\"pattern\": {\"Regex\": \" ?\\\\p{L}+|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false}, "
    "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": false}]}",
    /* 3: added tokens */
    "\"added_tokens\": [{\"id\": 4, \"content\": \"<|endoftext|>\", \"special\": true, "
    "\"normalized\": false, \"lstrip\": false, \"rstrip\": false, \"single_word\": false}]",
};

static void write_tokenizer(const char *path, int which, const char *replacement) {
  char buf[4096];
  int k = snprintf(buf, sizeof buf, "{");
  for (int i = 0; i < 4; i++) {
    const char *piece = i == which ? replacement : PIECES[i];
    if (!piece) continue;
    k += snprintf(buf + k, sizeof buf - (size_t)k, "%s%s", k > 1 ? ", " : "", piece);
  }
  snprintf(buf + k, sizeof buf - (size_t)k, "}");
  cr_assert_eq(write_bytes(path, buf, strlen(buf)), 0);
}

static void expect_refused(int which, const char *replacement, const char *w1, const char *w2) {
  char json[TPATH_MAX], txt[TPATH_MAX], out[TPATH_MAX], errf[TPATH_MAX];
  tpath(json, dir, "tokenizer.json");
  tpath(txt, dir, "in.txt");
  tpath(out, dir, "o.tok.zst");
  tpath(errf, dir, "err.txt");
  write_tokenizer(json, which, replacement);
  cr_assert_eq(write_bytes(txt, "ab ab", 5), 0);
  char *argv[] = {RSSM_BIN, "tokens", "--tokenizer", json, "--force", "--out", out, txt, NULL};
  int rc = run_cli(argv, NULL, errf);
  char *e = slurp(errf, NULL);
  cr_assert_eq(rc, 2, "%s: exit %d: %s", replacement ? replacement : "(removed)", rc, e);
  cr_assert(is_one_line(e) && strstr(e, json) && strstr(e, w1) && (!w2 || strstr(e, w2)),
            "expected '%s' and '%s' in: %s", w1, w2 ? w2 : "", e);
  free(e);
}

Test(bpe, well_formed_small_file_encodes) {
  char json[TPATH_MAX], err[1024];
  tpath(json, dir, "tokenizer.json");
  write_tokenizer(json, -1, NULL);
  bpe_tokenizer *t;
  cr_assert_eq(bpe_load(json, &t, err, sizeof err), RSSM_OK, "%s", err);
  bpe_ids ids = {0};
  cr_assert_eq(bpe_encode(t, "ab ab<|endoftext|>", 18, "x", &ids, err, sizeof err), RSSM_OK, "%s", err);
  /* "ab" -> 2; " ab" -> byte 0x20 is U+0120 (3), then "ab" -> 2; then the special token */
  cr_assert_eq(ids.n, 4);
  cr_assert(ids.ids[0] == 2 && ids.ids[1] == 3 && ids.ids[2] == 2 && ids.ids[3] == 4);
  bpe_ids_free(&ids);
  bpe_free(t);
}

Test(bpe, malformed_files_refused) {
  expect_refused(0, NULL, "model: missing", NULL);
  expect_refused(0, "\"model\": {\"type\": \"WordPiece\", \"vocab\": {}}", "model.type", "\"BPE\"");
  expect_refused(0, "\"model\": {\"vocab\": {\"a\": 0}, \"merges\": []}", "model.type: missing", NULL);
  expect_refused(0, "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, "
                    "\"merges\": [\"a b c\"]}", "model.merges[0]", "LEFT RIGHT");
  expect_refused(0, "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1, \"ab\": 2}, "
                    "\"merges\": [\"a b\", 7]}", "model.merges[1]", "not a merge");
  expect_refused(0, "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, "
                    "\"merges\": [[\"a\", \"b\"]]}", "model.merges[0]", "merged token");
  expect_refused(0, "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a q\"]}",
                 "model.merges[0]", "not in model.vocab");
  expect_refused(0, "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": -1}, \"merges\": []}",
                 "model.vocab[\"a\"]", NULL);
  expect_refused(0, "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}}", "model.merges: missing", NULL);
  /* an id near 2^31: refused before any table is sized from it (fuzz_tokenizer found the 16 GiB ask) */
  expect_refused(0, "\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 2147483646}, "
                    "\"merges\": []}", "id 2147483646 is too large", "below 16777216");
  expect_refused(2, "\"pre_tokenizer\": {\"type\": \"Metaspace\"}", "pre_tokenizer", "\"Metaspace\"");
  expect_refused(2, NULL, "pre_tokenizer: missing", NULL);
  expect_refused(2, "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                    "\"Whitespace\"}, {\"type\": \"ByteLevel\"}]}", "pretokenizers[0]", "\"Whitespace\"");
  expect_refused(2, "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                    "\"Split\", \"pattern\": {\"Regex\": \"(ab\"}, \"behavior\": \"Isolated\"}, "
                    "{\"type\": \"ByteLevel\"}]}", "pretokenizers[0].pattern.Regex",
                 "PCRE2 error at offset 3: missing closing parenthesis");
  expect_refused(2, "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                    "\"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": \"Sideways\"}, "
                    "{\"type\": \"ByteLevel\"}]}", "pretokenizers[0].behavior", "\"Sideways\"");
  expect_refused(2, "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": "
                    "\"Split\", \"pattern\": {\"Regex\": \"a\"}, \"behavior\": \"Isolated\"}]}",
                 "pretokenizers", "ByteLevel");
  expect_refused(1, "\"normalizer\": {\"type\": \"NFKC\"}", "normalizer", "\"NFKC\"");
  expect_refused(1, "\"normalizer\": {\"type\": \"Sequence\", \"normalizers\": [{\"type\": \"NFC\"}, "
                    "{\"type\": \"Lowercase\"}]}", "normalizer.normalizers[1]", "\"Lowercase\"");
  expect_refused(3, "\"added_tokens\": [{\"id\": 4, \"content\": \"<x>\", \"lstrip\": true}]",
                 "added_tokens[0].lstrip", NULL);
  expect_refused(3, "\"added_tokens\": [{\"content\": \"<x>\"}]", "added_tokens[0].id", NULL);
  expect_refused(3, "\"added_tokens\": [{\"id\": 5, \"content\": \"\"}]", "added_tokens[0].content", NULL);
  expect_refused(3, "\"added_tokens\": 3, \"x\": [", "not a JSON object", NULL);
}
