/* `replayssm tokens`: build a `.tok.zst` token stream from text files or a PG-19 directory, with
 * the byte-level tokenizer or a Hugging Face tokenizer.json (byte-level BPE), and decode a stream
 * back to text (docs/driver.md, docs/tokenizer.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "src/io/cli_opts.h"
#include "src/cli/commands.h"
#include "src/io/status.h"
#include "src/io/atomic_file.h"
#include "src/tokens/bpe.h"
#include "src/tokens/byte_corpus.h"
#include "src/tokens/tokstream.h"

static const char *CMD = "tokens";

/* byte_corpus's encoder hook: a BPE over each file, timed for the summary line. */
typedef struct {
  bpe_tokenizer *t;
  int64_t bytes;
  double seconds;
} bpe_ctx;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int encode_file(void *ctx, const char *text, int64_t len, const char *path, byte_corpus *c,
                       char *err, size_t errlen) {
  bpe_ctx *b = ctx;
  /* the corpus's array is handed to the encoder and taken back: same layout, no copy */
  bpe_ids v = {c->ids, c->n, c->cap};
  double t0 = now_s();
  int rc = bpe_encode(b->t, text, len, path, &v, err, errlen);
  b->seconds += now_s() - t0;
  b->bytes += len;
  c->ids = v.ids, c->n = v.n, c->cap = v.cap;
  if (rc == RSSM_OK && c->n > TOKSTREAM_MAX_TOKENS) {
    snprintf(err, errlen, "%s: the corpus would exceed %lld tokens", path,
             (long long)TOKSTREAM_MAX_TOKENS);
    rc = RSSM_ERR_INPUT;
  }
  return rc;
}

static int decode(const char *in, const char *out, const char *tokenizer) {
  char err[1024];
  tokstream_info info;
  uint32_t *ids = NULL;
  int rc = tokstream_read(in, &info, &ids, err, sizeof err);
  char *text = NULL;
  int64_t len = 0;
  bpe_tokenizer *t = NULL;
  if (rc == RSSM_OK && strcmp(info.tokenizer, BYTE_TOKENIZER) == 0 && !tokenizer) {
    text = malloc((size_t)info.count + 1);
    if (!text) {
      snprintf(err, sizeof err, "out of memory decoding %s", in);
      rc = RSSM_ERR_IO;
    }
    for (int64_t i = 0; rc == RSSM_OK && i < info.count; i++) text[i] = (char)ids[i];
    len = info.count;
  } else if (rc == RSSM_OK) {
    if (!tokenizer) {
      snprintf(err, sizeof err, "%s: tokenizer id \"%s\" (give its tokenizer.json with --tokenizer)",
               in, info.tokenizer);
      rc = RSSM_ERR_INPUT;
    }
    if (rc == RSSM_OK) rc = bpe_load(tokenizer, &t, err, sizeof err);
    if (rc == RSSM_OK && strcmp(bpe_id(t), info.tokenizer) != 0) {
      snprintf(err, sizeof err, "%s: tokenizer id \"%s\", but --tokenizer %s is \"%s\"", in,
               info.tokenizer, tokenizer, bpe_id(t));
      rc = RSSM_ERR_INPUT;
    }
    if (rc == RSSM_OK) rc = bpe_decode(t, ids, info.count, &text, &len, err, sizeof err);
  }
  if (rc == RSSM_OK) {
    if (strcmp(out, "-") == 0) {
      if (fwrite(text, 1, (size_t)len, stdout) != (size_t)len || fflush(stdout) != 0) {
        snprintf(err, sizeof err, "writing standard output failed");
        rc = RSSM_ERR_IO;
      }
    } else {
      const void *parts[1] = {text};
      size_t lens[1] = {(size_t)len};
      rc = atomic_write_parts(out, 1, parts, lens, err, sizeof err);
    }
  }
  if (rc != RSSM_OK) cli_error(CMD, "%s", err);
  else if (strcmp(out, "-") != 0)
    printf("%s: %lld bytes from %lld tokens (%s)\n", out, (long long)len, (long long)info.count,
           info.tokenizer);
  bpe_free(t);
  free(text);
  free(ids);
  return rc;
}

/* The options of `replayssm tokens`. */
typedef struct {
  const char *out, *pg19, *split, *tokenizer, *decode_in;
  int force, ninputs;
  int64_t books;
  const char *inputs[4096];
} tokens_args;

static int parse_tokens_args(int argc, char **argv, tokens_args *a, int *done) {
  const cli_opt opts[] = {
      {.name = "--out", .type = CLI_STR, .dest = &a->out, .meta = "FILE",
       .help = "the .tok.zst stream (or with --decode: the text, \"-\" standard output)"},
      {.name = "--force", .type = CLI_FLAG, .dest = &a->force,
       .help = "replace an existing output"},
      {.name = "--tokenizer", .type = CLI_STR, .dest = &a->tokenizer, .meta = "JSON",
       .help = "a Hugging Face tokenizer.json (or a directory holding one); default: bytes"},
      {.name = "--decode", .type = CLI_STR, .dest = &a->decode_in, .meta = "FILE.tok.zst",
       .help = "write the stream's text instead"},
      {.name = "--pg19", .type = CLI_STR, .dest = &a->pg19, .meta = "DIR",
       .help = "the books of DIR/metadata.csv instead of text files"},
      {.name = "--split", .type = CLI_STR, .dest = &a->split, .meta = "S", .def = "test",
       .help = "--pg19 split: train, validation or test"},
      {.name = "--books", .type = CLI_I64, .dest = &a->books, .meta = "N", .lo = 1,
       .hi = INT64_MAX, .expect = "a positive integer", .help = "--pg19: the first N books only"},
  };
  const cli_spec spec = {
      .cmd = CMD,
      .usage = "tokens --out FILE.tok.zst [--force] [--tokenizer JSON] TEXT...\n"
               "       replayssm tokens --out FILE.tok.zst [--force] [--tokenizer JSON] --pg19 DIR\n"
               "                        [--split test] [--books N]\n"
               "       replayssm tokens --decode FILE.tok.zst [--tokenizer JSON] --out TEXT|- "
               "[--force]",
      .about = "Tokenises text into a zstd-compressed token stream with a checked header\n"
               "(docs/driver.md). Without --tokenizer: one token per byte (vocab 256, tokenizer id\n"
               "\"byte\"). --tokenizer PATH: a Hugging Face tokenizer.json (or a directory holding one)\n"
               "with a byte-level BPE model, encoded as the tokenizers library does without special\n"
               "tokens added; the stream's tokenizer id is \"hfbpe-fnv1a64:\" and the file's hash\n"
               "(docs/tokenizer.md). Each text file is encoded on its own and the ids concatenated in\n"
               "the order given. --pg19 DIR reads DIR/metadata.csv (id,title,year,url, no header) and\n"
               "appends DIR/SPLIT/<id>.txt of the listed books in increasing id order.\n"
               "--decode writes the stream's text; a BPE stream needs the --tokenizer whose id it\n"
               "carries. An existing output is kept unless --force is given; files are written\n"
               "atomically.",
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
      .operands = a->inputs,
      .max_operands = (int)(sizeof a->inputs / sizeof a->inputs[0]),
      .noperands = &a->ninputs,
  };
  return cli_parse_or_help(&spec, argc, argv, done);
}

int cmd_tokens(int argc, char **argv) {
  static tokens_args a;
  memset(&a, 0, sizeof a);
  a.split = "test";
  int done;
  int prc = parse_tokens_args(argc, argv, &a, &done);
  if (done) return prc;
  const char *out = a.out, *pg19 = a.pg19, *split = a.split, *tokenizer = a.tokenizer;
  const char *decode_in = a.decode_in;
  const int force = a.force, ninputs = a.ninputs;
  const int64_t books = a.books;
  const char *const *inputs = a.inputs;
  if (!out) {
    cli_error(CMD, "missing --out %s (see replayssm tokens --help)",
              decode_in ? "TEXT|-" : "FILE.tok.zst");
    return 2;
  }
  if (decode_in && (pg19 || ninputs > 0)) {
    cli_error(CMD, "--decode takes no text files or --pg19");
    return 2;
  }
  if (!decode_in && !pg19 && ninputs == 0) {
    cli_error(CMD, "no input: give text files or --pg19 DIR (see replayssm tokens --help)");
    return 2;
  }
  if (pg19 && ninputs > 0) {
    cli_error(CMD, "give either text files or --pg19 DIR, not both");
    return 2;
  }
  if (!force && strcmp(out, "-") != 0 && access(out, F_OK) == 0) {
    cli_error(CMD, "%s: exists (use --force to overwrite)", out);
    return 2;
  }
  if (decode_in) return decode(decode_in, out, tokenizer);

  byte_corpus c = {0};
  bpe_ctx bctx = {0};
  char err[1024];
  int rc = RSSM_OK;
  if (tokenizer) {
    rc = bpe_load(tokenizer, &bctx.t, err, sizeof err);
    if (rc != RSSM_OK) {
      cli_error(CMD, "%s", err);
      return rc;
    }
    c.encode = encode_file;
    c.encode_ctx = &bctx;
  }
  int64_t nbooks = 0;
  if (pg19) {
    rc = byte_corpus_add_pg19(&c, pg19, split, books, &nbooks, err, sizeof err);
  } else {
    for (int i = 0; i < ninputs && rc == RSSM_OK; i++)
      rc = byte_corpus_add_file(&c, inputs[i], err, sizeof err);
  }
  const char *id = bctx.t ? bpe_id(bctx.t) : BYTE_TOKENIZER;
  uint32_t vocab = bctx.t ? bpe_vocab(bctx.t) : BYTE_VOCAB;
  if (rc == RSSM_OK && c.n == 0) {
    /* refused here, with the inputs named, rather than as a failure to compress nothing */
    snprintf(err, sizeof err, "%s: no text (the input%s empty; expected at least one token)",
             pg19 ? pg19 : inputs[0], pg19 || ninputs == 1 ? " is" : "s are");
    rc = RSSM_ERR_INPUT;
  }
  if (rc == RSSM_OK) rc = tokstream_write(out, id, vocab, c.ids, c.n, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
  } else {
    printf("%s: %lld tokens (tokenizer %s, vocab %u, CRC-32 %08x) from %lld %s\n", out,
           (long long)c.n, id, vocab, tokstream_crc(c.ids, c.n),
           pg19 ? (long long)nbooks : (long long)ninputs, pg19 ? "books" : "files");
    if (bctx.t && bctx.seconds > 0)
      printf("encoded %lld bytes in %.3f s: %.2f MB/s\n", (long long)bctx.bytes, bctx.seconds,
             1e-6 * (double)bctx.bytes / bctx.seconds);
  }
  byte_corpus_free(&c);
  bpe_free(bctx.t);
  return rc;
}
