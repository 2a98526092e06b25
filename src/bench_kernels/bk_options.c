/* `bench kernels`' shapes and command line (bk_options.h). */
#include "src/bench_kernels/bk_options.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/cli_opts.h"
#include "src/io/parse_num.h"

#define USAGE                                                                                   \
  "bench kernels [--shapes LIST] [--batches LIST] [--parts LIST] [--iters N]\n"      \
  "                        [--warmup N] [--check-batch N] [--skip-threshold X] [--quick]\n"    \
  "                        [--targets-only] [--targets FILE.csv]\n"                          \
  "                        [--out FILE.csv|FILE.json]"

#define CMD "bench kernels"

const bk_shape bk_shapes[BK_N_SHAPES] = {
    {"nano", "Nemotron-3-Nano-4B", {SSM_MAMBA2, 96, 80, 128, 8}},
    {"super", "Nemotron-3-Super-120B", {SSM_MAMBA2, 128, 64, 128, 8}},
    {"qwen4b", "Qwen3.5-4B", {SSM_GDN, 32, 128, 128, 16}},
    {"qwen122b", "Qwen3.5-122B", {SSM_GDN, 64, 128, 128, 16}},
};

/* Parses "a,b,c" of positive ints (at most 1000000) into out (at most BK_MAX_LIST). Returns the
 * count or -1. */
static int parse_int_list(const char *text, int *out /* [BK_MAX_LIST] */) {
  int64_t v[BK_MAX_LIST];
  int n = rssm_parse_int_list(text, 1, 1000000, v, BK_MAX_LIST);
  for (int i = 0; i < n; i++) out[i] = (int)v[i];
  return n;
}

/* The defaults of every option. */
static void set_defaults(bk_options *o) {
  memset(o, 0, sizeof *o);
  static const int def_b[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512};
  static const int def_w[] = {4, 8, 16, 32, 64};
  static const int def_t[] = {1, 2, 4, 6, 8};
  static const char *def_f[] = {"fp32", "bf16", "fp16", "fp8", "nvfp4", "mxfp4"};
  o->nbatches = 10;
  memcpy(o->batches, def_b, sizeof def_b);
  o->nwindows = 5;
  memcpy(o->windows, def_w, sizeof def_w);
  o->ndrafts = 5;
  memcpy(o->drafts, def_t, sizeof def_t);
  o->nlp = 6;
  for (int i = 0; i < 6; i++) o->lp_formats[i] = def_f[i];
  o->parts = BK_P_STD | BK_P_WINDOW | BK_P_SPEC | BK_P_LP | BK_P_SKIP;
  o->iters = 15;
  o->warmup = 3;
  o->check_batch = 6;
  o->skip_threshold = 1e-3;
  o->nshapes = BK_N_SHAPES;
  for (int i = 0; i < BK_N_SHAPES; i++) o->shapes[i] = i;
}

/* --targets-only: the measurements of the issue-17 targets (targets.h) and nothing else: parts
 * std (B = 1, 256), spec (T = 8) and lp (fp32, bf16, fp8, nvfp4). */
static void apply_targets_only(bk_options *o) {
  o->nbatches = 2;
  o->batches[0] = 1;
  o->batches[1] = 256;
  o->ndrafts = 1;
  o->drafts[0] = 8;
  o->nlp = 4;
  o->lp_formats[0] = "fp32";
  o->lp_formats[1] = "bf16";
  o->lp_formats[2] = "fp8";
  o->lp_formats[3] = "nvfp4";
  o->parts = BK_P_STD | BK_P_SPEC | BK_P_LP;
}

/* --quick: the short sweep. */
static void apply_quick(bk_options *o) {
  o->nbatches = 2;
  o->batches[0] = 1;
  o->batches[1] = 256;
  o->nwindows = 3;
  o->windows[0] = 8;
  o->windows[1] = 16;
  o->windows[2] = 32;
  o->ndrafts = 2;
  o->drafts[0] = 1;
  o->drafts[1] = 8;
  o->nlp = 2;
  o->lp_formats[1] = "nvfp4";
  o->iters = 5;
  o->warmup = 2;
}

/* --shapes LIST and --batches LIST; returns 0 or 2 after the message. */
static int parse_shape_lists(const char *shapes, const char *batches, bk_options *o) {
  if (shapes) {
    o->nshapes = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", shapes);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      int found = -1;
      for (int s = 0; s < BK_N_SHAPES; s++)
        if (strcmp(t, bk_shapes[s].key) == 0) found = s;
      if (found < 0 || o->nshapes == BK_N_SHAPES) {
        cli_error(CMD, "--shapes: '%s' (expected a list of nano, super, qwen4b, qwen122b)", t);
        return 2;
      }
      o->shapes[o->nshapes++] = found;
    }
    if (o->nshapes == 0) {
      cli_error(CMD, "--shapes: empty list (expected nano, super, qwen4b, qwen122b)");
      return 2;
    }
  }
  if (batches && (o->nbatches = parse_int_list(batches, o->batches)) < 0) {
    cli_error(CMD, "--batches '%s': expected a comma-separated list of batch sizes 1..65535", batches);
    return 2;
  }
  for (int i = 0; i < o->nbatches; i++)
    if (o->batches[i] > 65535) {
      cli_error(CMD, "--batches: %d > 65535", o->batches[i]);
      return 2;
    }
  return 0;
}

/* --parts LIST; returns 0 or 2 after the message. */
static int parse_parts(const char *parts, bk_options *o) {
  if (parts) {
    o->parts = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", parts);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
      if (strcmp(t, "std") == 0) o->parts |= BK_P_STD;
      else if (strcmp(t, "window") == 0) o->parts |= BK_P_WINDOW;
      else if (strcmp(t, "spec") == 0) o->parts |= BK_P_SPEC;
      else if (strcmp(t, "lp") == 0) o->parts |= BK_P_LP;
      else if (strcmp(t, "skip") == 0) o->parts |= BK_P_SKIP;
      else {
        cli_error(CMD, "--parts: '%s' (expected a list of std, window, spec, lp, skip)", t);
        return 2;
      }
    }
    if (!o->parts) {
      cli_error(CMD, "--parts: empty list (expected std, window, spec, lp, skip)");
      return 2;
    }
  }
  return 0;
}

/* --iters, --warmup, --check-batch, --skip-threshold, --out; returns 0 or 2. */
static int parse_counts(const char *iters, const char *warm, const char *cb, const char *thr,
                        bk_options *o) {
  int one[BK_MAX_LIST];
  if (iters) {
    if (parse_int_list(iters, one) != 1 || one[0] > 10000) {
      cli_error(CMD, "--iters '%s': expected a count 1..10000", iters);
      return 2;
    }
    o->iters = one[0];
  }
  if (warm) {
    if (strcmp(warm, "0") == 0) o->warmup = 0;
    else if (parse_int_list(warm, one) != 1 || one[0] > 10000) {
      cli_error(CMD, "--warmup '%s': expected a count 0..10000", warm);
      return 2;
    } else o->warmup = one[0];
  }
  if (cb) {
    if (parse_int_list(cb, one) != 1 || one[0] > 64) {
      cli_error(CMD, "--check-batch '%s': expected 1..64 rows", cb);
      return 2;
    }
    o->check_batch = one[0];
  }
  if (thr) {
    char *end;
    errno = 0;
    double x = strtod(thr, &end);
    if (*end || errno || !(x > 0.0 && x < 1.0)) {
      cli_error(CMD, "--skip-threshold '%s': expected a number in (0, 1)", thr);
      return 2;
    }
    o->skip_threshold = x;
  }
  if (o->out && !*o->out) {
    cli_error(CMD, "--out: empty file name");
    return 2;
  }
  return 0;
}

int bk_parse_args(int argc, char **argv, bk_options *o) {
  set_defaults(o);
  const char *shapes = NULL, *batches = NULL, *parts = NULL, *iters = NULL, *warm = NULL, *cb = NULL, *thr = NULL;
  const cli_opt opts[] = {
      {.name = "--shapes", .type = CLI_STR, .dest = &shapes, .meta = "LIST",
       .def = "all", .help = "nano,super,qwen4b,qwen122b"},
      {.name = "--batches", .type = CLI_STR, .dest = &batches, .meta = "LIST",
       .def = "1,2,4,8,16,32,64,128,256,512", .help = "batch sizes of the standard-decoding sweep"},
      {.name = "--parts", .type = CLI_STR, .dest = &parts, .meta = "LIST", .def = "all",
       .help = "std,window,spec,lp,skip"},
      {.name = "--iters", .type = CLI_STR, .dest = &iters, .meta = "N", .def = "15",
       .help = "timed replays per measurement"},
      {.name = "--warmup", .type = CLI_STR, .dest = &warm, .meta = "N", .def = "3",
       .help = "untimed replays first"},
      {.name = "--check-batch", .type = CLI_STR, .dest = &cb, .meta = "N", .def = "6",
       .help = "rows of each bit-identity check"},
      {.name = "--skip-threshold", .type = CLI_STR, .dest = &thr, .meta = "X", .def = "1e-3",
       .help = "Appendix F decay threshold"},
      {.name = "--quick", .type = CLI_FLAG, .dest = &o->quick,
       .help = "batches 1,256; windows 8,16,32; T 1,8; formats fp32,nvfp4; 5 replays"},
      {.name = "--targets-only", .type = CLI_FLAG, .dest = &o->targets_only,
       .help = "only what the issue-17 targets need: std at B 1,256; spec T 8;\n"
               "lp fp32,bf16,fp8,nvfp4 (after --quick, before --shapes/--batches/--parts)"},
      {.name = "--targets", .type = CLI_STR, .dest = &o->targets_out, .meta = "FILE",
       .help = "the issue-17 target verdicts (printed at the end) also as CSV"},
      {.name = "--out", .type = CLI_STR, .dest = &o->out, .meta = "FILE",
       .help = "every measurement as CSV, or JSON when FILE ends in .json"},
  };
  const cli_spec spec = {
      .cmd = CMD,
      .usage = USAGE,
      .about = "Times the GPU SSM kernels (src/ssm_cuda) on the paper's four shapes: nano\n"
               "(Nemotron-3-Nano-4B, Mamba-2 H=96 dv=80 dk=128 G=8), super (Nemotron-3-Super-120B,\n"
               "128/64/128/8), qwen4b (Qwen3.5-4B, GDN Hv=32 Hk=16 dv=dk=128), qwen122b (Qwen3.5-122B,\n"
               "Hv=64). Every timed configuration is first checked bit for bit against the CPU engine on a\n"
               "small batch of desynchronised rows; a failed check is reported and that configuration is\n"
               "not timed. Times are medians of CUDA-event timings of graph replays after warm-up, with\n"
               "enough state copies in rotation to exceed 2.5 x L2. docs/bench-kernels.md has the method\n"
               "and the byte model.",
      .epilog = "Exit status: 0 ran and every check passed; 1 a check failed or a CUDA error; 2 bad\n"
                "usage, a build without CUDA, or no CUDA device.",
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
  };
  int done;
  int prc = cli_parse_or_help(&spec, argc, argv, &done);
  if (done) return prc == 0 ? -1 : prc; /* -1: --help was answered */
  if (o->quick) apply_quick(o);
  if (o->targets_only) apply_targets_only(o);
  if (parse_shape_lists(shapes, batches, o) || parse_parts(parts, o)) return 2;
  return parse_counts(iters, warm, cb, thr, o);
}
