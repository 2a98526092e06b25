/* `replayssm tokens`: build a byte-level `.tok.zst` token stream from text files or a PG-19
 * directory (docs/driver.md). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/cli_util.h"
#include "src/cli/commands.h"
#include "src/io/status.h"
#include "src/tokens/byte_corpus.h"
#include "src/tokens/tokstream.h"

static const char *CMD = "tokens";

static void usage(FILE *out) {
  fprintf(out,
          "usage: replayssm tokens --out FILE.tok.zst [--force] TEXT...\n"
          "       replayssm tokens --out FILE.tok.zst [--force] --pg19 DIR [--split test] [--books N]\n"
          "\n"
          "Byte-level tokenisation (one token per byte, vocab 256, tokenizer id \"byte\") into a\n"
          "zstd-compressed token stream with a checked header (docs/driver.md). Text files are\n"
          "concatenated in the order given. --pg19 DIR reads DIR/metadata.csv (id,title,year,url,\n"
          "no header) and appends DIR/SPLIT/<id>.txt of the listed books in increasing id order\n"
          "(--split train|validation|test, default test; --books N: the first N only).\n"
          "An existing output is kept unless --force is given; the file is written atomically.\n");
}

int cmd_tokens(int argc, char **argv) {
  const char *out = NULL, *pg19 = NULL, *split = "test";
  int force = 0;
  int64_t books = 0;
  const char *inputs[4096];
  int ninputs = 0;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--force") == 0) {
      force = 1;
    } else if ((m = cli_option_value(argc, argv, &i, "--out", &v)) != 0) {
      if (m < 0) goto missing;
      out = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--pg19", &v)) != 0) {
      if (m < 0) goto missing;
      pg19 = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--split", &v)) != 0) {
      if (m < 0) goto missing;
      split = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--books", &v)) != 0) {
      uint64_t n;
      if (m < 0) goto missing;
      if (cli_parse_u64(v, &n) != 0 || n < 1 || n > (uint64_t)INT64_MAX) {
        cli_error(CMD, "--books '%s' (expected a positive integer)", v);
        return 2;
      }
      books = (int64_t)n;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      cli_error(CMD, "unknown option '%s' (see replayssm tokens --help)", argv[i]);
      return 2;
    } else {
      if (ninputs == (int)(sizeof inputs / sizeof inputs[0])) {
        cli_error(CMD, "too many input files (at most %d)", ninputs);
        return 2;
      }
      inputs[ninputs++] = argv[i];
    }
    continue;
  missing:
    cli_error(CMD, "option '%s' needs a value", argv[i]);
    return 2;
  }
  if (!out) {
    cli_error(CMD, "missing --out FILE.tok.zst (see replayssm tokens --help)");
    return 2;
  }
  if (!pg19 && ninputs == 0) {
    cli_error(CMD, "no input: give text files or --pg19 DIR (see replayssm tokens --help)");
    return 2;
  }
  if (pg19 && ninputs > 0) {
    cli_error(CMD, "give either text files or --pg19 DIR, not both");
    return 2;
  }
  if (!force && access(out, F_OK) == 0) {
    cli_error(CMD, "%s: exists (use --force to overwrite)", out);
    return 2;
  }
  byte_corpus c = {0};
  char err[1024];
  int rc = RSSM_OK;
  int64_t nbooks = 0;
  if (pg19) {
    rc = byte_corpus_add_pg19(&c, pg19, split, books, &nbooks, err, sizeof err);
  } else {
    for (int i = 0; i < ninputs && rc == RSSM_OK; i++)
      rc = byte_corpus_add_file(&c, inputs[i], err, sizeof err);
  }
  if (rc == RSSM_OK) rc = tokstream_write(out, BYTE_TOKENIZER, BYTE_VOCAB, c.ids, c.n, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    byte_corpus_free(&c);
    return rc;
  }
  printf("%s: %lld tokens (byte tokenizer, CRC-32 %08x) from %lld %s\n", out, (long long)c.n,
         tokstream_crc(c.ids, c.n), pg19 ? (long long)nbooks : (long long)ninputs,
         pg19 ? "books" : "files");
  byte_corpus_free(&c);
  return 0;
}
