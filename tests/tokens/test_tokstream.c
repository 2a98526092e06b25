/* .tok.zst streams: round trip, and every malformation rejected with a clear one-line error;
 * windows; `replayssm tokens` from text files and from a PG-19 directory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "src/io/status.h"
#include "src/tokens/token_source.h"
#include "src/tokens/tokstream.h"
#include "tests/cli/cli_test_util.h"

static const char *dir;
static void setup(void) { dir = tdir_make(); cr_assert(dir); }
static void teardown(void) { tdir_remove(dir); }

TestSuite(tokstream, .init = setup, .fini = teardown);

static uint32_t *sample(int64_t n) {
  uint32_t *ids = malloc((size_t)n * 4);
  uint64_t s = 42;
  for (int64_t i = 0; i < n; i++) ids[i] = (uint32_t)(rng_next(&s) % 1000);
  return ids;
}

Test(tokstream, round_trip) {
  char path[TPATH_MAX], err[512];
  tpath(path, dir, "a.tok.zst");
  for (int64_t n = 0; n <= 100000; n = n ? n * 10 : 1) {
    uint32_t *ids = sample(n);
    cr_assert_eq(tokstream_write(path, "test-tok", 1000, ids, n, err, sizeof err), RSSM_OK, "%s", err);
    tokstream_info info;
    uint32_t *back;
    cr_assert_eq(tokstream_read(path, &info, &back, err, sizeof err), RSSM_OK, "%s", err);
    cr_assert_eq(info.count, n);
    cr_assert_eq(info.vocab, 1000u);
    cr_assert_str_eq(info.tokenizer, "test-tok");
    cr_assert_eq(info.crc, tokstream_crc(ids, n));
    if (n) cr_assert_eq(memcmp(ids, back, (size_t)n * 4), 0);
    free(back);
    token_source src;
    cr_assert_eq(token_source_load(path, &src, err, sizeof err), RSSM_OK, "%s", err);
    cr_assert_eq(src.n, n);
    for (int64_t i = 0; i < n; i++) cr_assert_eq(src.ids[i], (int64_t)ids[i]);
    token_source_free(&src);
    free(ids);
  }
  cr_assert_eq(count_entries_containing(dir, ".tmp."), 0, "a temporary file was left behind");
}

/* Write a good stream, let `mutate` damage its bytes, and expect a rejection mentioning `what`. */
static void expect_rejected(void (*mutate)(unsigned char *buf, size_t *len), const char *what) {
  char path[TPATH_MAX], err[512];
  tpath(path, dir, "b.tok.zst");
  uint32_t *ids = sample(5000);
  cr_assert_eq(tokstream_write(path, "byte", 1000, ids, 5000, err, sizeof err), RSSM_OK, "%s", err);
  free(ids);
  size_t len;
  unsigned char *buf = (unsigned char *)slurp(path, &len);
  mutate(buf, &len);
  cr_assert_eq(write_bytes(path, buf, len), 0);
  free(buf);
  tokstream_info info;
  uint32_t *back = NULL;
  err[0] = 0;
  cr_assert_eq(tokstream_read(path, &info, &back, err, sizeof err), RSSM_ERR_INPUT,
               "a stream with %s was accepted", what);
  cr_assert_null(back);
  cr_assert(strstr(err, what), "message '%s' does not mention '%s'", err, what);
  cr_assert(strstr(err, path), "message '%s' does not name the file", err);
  cr_assert_null(strchr(err, '\n'));
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
/* Fix the header checksum after a deliberate change to another header field. */
static void reseal(unsigned char *b) { put32(b + 60, (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, 60)); }

static void m_magic(unsigned char *b, size_t *n) { (void)n; b[0] = 'X'; }
static void m_truncate_header(unsigned char *b, size_t *n) { (void)b; *n = 40; }
static void m_truncate_payload(unsigned char *b, size_t *n) { (void)b; *n -= 7; }
static void m_crc(unsigned char *b, size_t *n) { (void)n; b[56] ^= 1; reseal(b); }
static void m_header_crc(unsigned char *b, size_t *n) { (void)n; b[12] ^= 1; }
static void m_count(unsigned char *b, size_t *n) { (void)n; b[48] ^= 2; reseal(b); }
static void m_version(unsigned char *b, size_t *n) { (void)n; b[8] = 9; reseal(b); }
static void m_trailing(unsigned char *b, size_t *n) { b[*n] = 0; *n += 1; }

Test(tokstream, wrong_magic) { expect_rejected(m_magic, "magic"); }
Test(tokstream, truncated_header) { expect_rejected(m_truncate_header, "truncated"); }
Test(tokstream, truncated_payload) { expect_rejected(m_truncate_payload, "truncated"); }
Test(tokstream, checksum_mismatch) { expect_rejected(m_crc, "checksum mismatch"); }
Test(tokstream, header_checksum_mismatch) { expect_rejected(m_header_crc, "header checksum"); }
Test(tokstream, count_mismatch) { expect_rejected(m_count, "count mismatch"); }
Test(tokstream, bad_version) { expect_rejected(m_version, "version"); }
Test(tokstream, trailing_bytes) { expect_rejected(m_trailing, "trailing"); }

/* A header asking for 1.6e9 tokens in front of a zstd frame that records no content size (found
 * by fuzz_tokstream): refused from the frame's bound, before allocating 6.5 GB for the payload.
 * Without the sanitizers the address space is capped at 1 GiB, so allocating first fails. */
Test(tokstream, huge_count_unknown_content_size) {
  static const unsigned char frame[] = {0x28, 0xb5, 0x2f, 0xfd, 0x04, 0x68, 0x81, 0x00, 0x00,
                                        0x00, 0x00, 0x00, 0x00, 0x7f, 0x51, 0x02, 0x00, 0x07,
                                        0x00, 0x00, 0x00, 0xa0, 0x86, 0x01, 0x00, 0x94, 0x3a,
                                        0x1f, 0x96};
  unsigned char buf[64 + sizeof frame];
  memset(buf, 0, sizeof buf);
  memcpy(buf, "RSSMTOK", 8);
  put32(buf + 8, 1);
  put32(buf + 12, 256);
  memcpy(buf + 16, "byte", 4);
  put32(buf + 48, 1627389952u); /* count, low word; high word 0 */
  reseal(buf);
  memcpy(buf + 64, frame, sizeof frame);
  char path[TPATH_MAX], err[512];
  tpath(path, dir, "huge.tok.zst");
  cr_assert_eq(write_bytes(path, buf, sizeof buf), 0);
#if !defined(__SANITIZE_ADDRESS__)
  struct rlimit rl = {(rlim_t)1 << 30, (rlim_t)1 << 30};
  cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0); /* criterion runs each test in its own process */
#endif
  tokstream_info info;
  uint32_t *back = NULL;
  err[0] = 0;
  cr_assert_eq(tokstream_read(path, &info, &back, err, sizeof err), RSSM_ERR_INPUT, "%s", err);
  cr_assert_null(back);
  cr_assert(strstr(err, "count mismatch") && strstr(err, path), "message '%s'", err);
}

Test(tokstream, id_outside_vocab_refused_on_write) {
  char path[TPATH_MAX], err[512];
  uint32_t ids[3] = {1, 2, 300};
  cr_assert_eq(tokstream_write(tpath(path, dir, "c.tok.zst"), "byte", 256, ids, 3, err, sizeof err),
               RSSM_ERR_INPUT);
  cr_assert(strstr(err, "300"), "%s", err);
}

Test(tokstream, windows_even_deterministic) {
  /* K windows of len tokens: first at 0, last ending at the end, evenly spaced */
  cr_assert_eq(token_window_start(1000, 101, 1, 0), 0);
  cr_assert_eq(token_window_start(1000, 101, 4, 0), 0);
  cr_assert_eq(token_window_start(1000, 101, 4, 3), 899);
  cr_assert_eq(token_window_start(1000, 101, 4, 1), 299);
  int64_t big = INT64_C(1) << 40;
  cr_assert_eq(token_window_start(big, 1 << 17, 1 << 20, (1 << 20) - 1), big - (1 << 17));
}

static int run_cli(char *const argv[], const char *errfile) {
  int st = run_prog(argv, NULL, errfile);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(tokstream, cli_text_and_pg19) {
  char txt1[TPATH_MAX], txt2[TPATH_MAX], out[TPATH_MAX], errf[TPATH_MAX], err[512];
  cr_assert_eq(write_bytes(tpath(txt1, dir, "a.txt"), "Call me", 7), 0);
  cr_assert_eq(write_bytes(tpath(txt2, dir, "b.txt"), " Ishmael\xff", 9), 0);
  tpath(out, dir, "t.tok.zst");
  tpath(errf, dir, "err.txt");
  char *a1[] = {RSSM_BIN, "tokens", "--out", out, txt1, txt2, NULL};
  cr_assert_eq(run_cli(a1, errf), 0);
  token_source src;
  cr_assert_eq(token_source_load(out, &src, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(src.n, 16);
  cr_assert_str_eq(src.tokenizer, "byte");
  cr_assert_eq(src.ids[0], 'C');
  cr_assert_eq(src.ids[15], 255);
  token_source_free(&src);
  /* an existing output is kept without --force */
  cr_assert_eq(run_cli(a1, errf), 2);
  char *e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "--force"), "%s", e);
  free(e);

  /* PG-19 layout: metadata.csv lists 10 and 2 (quoted title with a comma); test/ holds 2, 10 and
   * 99 (not listed: skipped); order is by numeric id */
  char sub[TPATH_MAX], p[TPATH_MAX + 64];
  tpath(sub, dir, "test");
  cr_assert_eq(mkdir(sub, 0755), 0);
  const char *csv = "10,\"Title, with comma\",1900,http://x\n2,Plain,1850,http://y\n";
  cr_assert_eq(write_bytes(tpath(p, dir, "metadata.csv"), csv, strlen(csv)), 0);
  snprintf(p, sizeof p, "%s/2.txt", sub);
  cr_assert_eq(write_bytes(p, "two", 3), 0);
  snprintf(p, sizeof p, "%s/10.txt", sub);
  cr_assert_eq(write_bytes(p, "ten", 3), 0);
  snprintf(p, sizeof p, "%s/99.txt", sub);
  cr_assert_eq(write_bytes(p, "XX", 2), 0);
  char *a2[] = {RSSM_BIN, "tokens", "--force", "--out", out, "--pg19", (char *)dir, NULL};
  cr_assert_eq(run_cli(a2, errf), 0);
  cr_assert_eq(token_source_load(out, &src, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(src.n, 6);
  cr_assert_eq(memcmp((int64_t[]){'t', 'w', 'o', 't', 'e', 'n'}, src.ids, 6 * sizeof(int64_t)), 0);
  token_source_free(&src);
  const char *names[] = {"2.txt", "10.txt", "99.txt"};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s/%s", sub, names[i]);
    unlink(p);
  }
  rmdir(sub);
}

Test(tokstream, cli_pg19_errors) {
  char out[TPATH_MAX], errf[TPATH_MAX], p[TPATH_MAX];
  tpath(out, dir, "t.tok.zst");
  tpath(errf, dir, "err.txt");
  /* no metadata.csv */
  char *a1[] = {RSSM_BIN, "tokens", "--out", out, "--pg19", (char *)dir, NULL};
  cr_assert_eq(run_cli(a1, errf), 2);
  char *e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "metadata.csv"), "%s", e);
  free(e);
  /* a line without a numeric id names its line */
  const char *csv = "1,A,1900,u\ntitle only\n";
  cr_assert_eq(write_bytes(tpath(p, dir, "metadata.csv"), csv, strlen(csv)), 0);
  cr_assert_eq(run_cli(a1, errf), 2);
  e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "metadata.csv:2"), "%s", e);
  free(e);
  /* listed books, but none in the split */
  csv = "1,A,1900,u\n";
  cr_assert_eq(write_bytes(p, csv, strlen(csv)), 0);
  cr_assert_eq(run_cli(a1, errf), 2);
  e = slurp(errf, NULL);
  cr_assert(is_one_line(e) && strstr(e, "no book"), "%s", e);
  free(e);
  char *a2[] = {RSSM_BIN, "tokens", "--out", out, "--pg19", (char *)dir, "--split", "dev", NULL};
  cr_assert_eq(run_cli(a2, errf), 2);
  cr_assert_not(file_exists(out));
}
