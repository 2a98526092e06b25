/* `replayssm bench gemm`: the models, the option table and the entry point (bench_gemm.h). Pure
 * C: the CPU build parses the options too, so its tests see the same usage errors. */
#include "src/bench_gemm/bench_gemm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/cli_opts.h"
#include "src/io/parse_num.h"

#define CMD "bench gemm"

/* The models of issue 18 (the step's GEMMs come from their config.json, bg_step_of):
 *  qwen-tiny  data/models/qwen35-gdn-tiny (H 256, 6 GDN + 2 attention layers, SwiGLU 768, V 256):
 *             the fixture model of experiments/paper_kl_vs_length.ini, 33 GEMMs per step;
 *  nemo-tiny  data/models/nemotronh-m2-tiny (H 320, 4 Mamba-2, 1 attention, 4 ReLU^2 MLP of 1920,
 *             V 256);
 *  qwen4b     data/shapes/qwen3.5-4b (H 2560, 24 GDN + 8 attention layers, SwiGLU 9216, V 248320,
 *             tied);
 *  nano4b     data/shapes/nemotron-3-nano-4b (H 3136, Mamba-2 / MLP / attention pattern of 42
 *             blocks, V 131072). */
static const bg_model models[] = {
    {"qwen-tiny", "data/models/qwen35-gdn-tiny", "qwen35-gdn-tiny (fixture model)"},
    {"nemo-tiny", "data/models/nemotronh-m2-tiny", "nemotronh-m2-tiny (fixture model)"},
    {"qwen4b", "data/shapes/qwen3.5-4b", "Qwen3.5-4B"},
    {"nano4b", "data/shapes/nemotron-3-nano-4b", "Nemotron-3-Nano-4B"},
};
#define N_MODELS ((int)(sizeof models / sizeof models[0]))

const bg_model *bg_models(int *n) {
  *n = N_MODELS;
  return models;
}

/* "a,b,c" of integers in [lo, hi] into out (at most BG_MAX_LIST); the count, or -1. */
static int int_list(const char *text, long lo, long hi, int *out /* [BG_MAX_LIST] */) {
  int64_t v[BG_MAX_LIST];
  int n = rssm_parse_int_list(text, lo, hi, v, BG_MAX_LIST);
  for (int i = 0; i < n; i++) out[i] = (int)v[i];
  return n;
}

enum { W_SHAPE, W_PREC, W_VARIANT };

/* The word lists of --shape, --prec and --variants; 0 or 2 after the message. */
static int parse_words(const char *text, bg_options *o, int which) {
  static const char *const opt[] = {"--shape", "--prec", "--variants"};
  const int cap[] = {N_MODELS, 2, GEMM_LAB_NVARIANTS};
  int *dst[] = {o->models, o->precs, o->variants};
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  int n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int found = -1;
    if (which == W_SHAPE) {
      for (int s = 0; s < N_MODELS; s++)
        if (strcmp(t, models[s].key) == 0) found = s;
    } else if (which == W_PREC) {
      found = strcmp(t, "fp32") == 0 ? GEMM_LAB_FP32 : strcmp(t, "bf16") == 0 ? GEMM_LAB_BF16 : -1;
    } else {
      found = gemm_lab_parse(t);
    }
    if (found < 0 || n == cap[which]) {
      if (which == W_SHAPE)
        cli_error(CMD, "--shape: '%s' (expected a list of qwen-tiny, nemo-tiny, qwen4b, nano4b)", t);
      else if (which == W_PREC) cli_error(CMD, "--prec: '%s' (expected a list of fp32, bf16)", t);
      else
        cli_error(CMD,
                  "--variants: '%s' (expected a list of cublas, stream, splitk, stream4, mma4, "
                  "mma8, mma16, wide, lt0..lt7 or 0..15)",
                  t);
      return 2;
    }
    dst[which][n++] = found;
  }
  if (n == 0) {
    cli_error(CMD, "%s: empty list", opt[which]);
    return 2;
  }
  if (which == W_SHAPE) o->nmodels = n;
  else if (which == W_PREC) o->nprecs = n;
  else o->nvariants = n;
  return 0;
}

int bg_parse(int argc, char **argv, bg_options *o) {
  memset(o, 0, sizeof *o);
  o->nmodels = N_MODELS;
  for (int s = 0; s < N_MODELS; s++) o->models[s] = s;
  o->rows[0] = 16, o->rows[1] = 64, o->nrows = 2;
  o->precs[0] = GEMM_LAB_FP32, o->precs[1] = GEMM_LAB_BF16, o->nprecs = 2;
  o->nvariants = GEMM_LAB_NVARIANTS;
  for (int v = 0; v < GEMM_LAB_NVARIANTS; v++) o->variants[v] = v;
  o->reps = 20;
  o->warmup = 3;
  o->flush = 1;
  const char *shape = NULL, *rows = NULL, *prec = NULL, *variants = NULL, *flush = NULL;
  const cli_opt opts[] = {
      {.name = "--shape", .type = CLI_STR, .dest = &shape, .meta = "LIST",
       .def = "qwen-tiny,nemo-tiny,qwen4b,nano4b",
       .help = "the models whose step's GEMMs are timed (config.json from data/models/ and\n"
               "data/shapes/, read from the current directory: run from the repository root)"},
      {.name = "--rows", .type = CLI_STR, .dest = &rows, .meta = "LIST", .def = "16,64",
       .help = "rows R of each GEMM call, 1..64"},
      {.name = "--prec", .type = CLI_STR, .dest = &prec, .meta = "LIST", .def = "fp32,bf16",
       .help = "GEMM precisions: fp32 (cublasSgemm without TF32), bf16 (bf16 W and X, fp32\n"
               "accumulation)"},
      {.name = "--variants", .type = CLI_STR, .dest = &variants, .meta = "LIST", .def = "all",
       .help = "cublas,stream,splitk,stream4,mma4,mma8,mma16,wide,lt0..lt7 (or 0..15; mma, wide,\n"
               "lt: bf16 only); docs/bench-gemm.md"},
      {.name = "--reps", .type = CLI_INT, .dest = &o->reps, .meta = "N", .def = "20", .lo = 1,
       .hi = 10000, .help = "timed launches per point (the median is reported)"},
      {.name = "--warmup", .type = CLI_INT, .dest = &o->warmup, .meta = "N", .def = "3", .lo = 0,
       .hi = 1000, .help = "untimed launches first"},
      {.name = "--tile", .type = CLI_INT, .dest = &o->tile, .meta = "N", .def = "0", .lo = 0,
       .hi = 64, .help = "rows per call of the cublas and lt variants (0: the runtime's row tile,\n"
               "mc_row_tile_for of the model's GEMM bytes: 16 or 64)"},
      {.name = "--flush", .type = CLI_STR, .dest = &flush, .meta = "on|off", .def = "on",
       .help = "on: read 2 x L2 bytes before each timed GEMM and step (weights from DRAM);\n"
               "off: back to back (the tiny models' weights then stay in L2, as they may in\n"
               "a run)"},
  };
  const cli_spec spec = {
      .cmd = CMD,
      .usage = "bench gemm [--shape LIST] [--rows LIST] [--prec LIST] [--variants LIST]\n"
               "                   [--reps N] [--warmup N] [--tile N] [--flush on|off]",
      .about = "Times the GEMMs of one decode step Y[R][rows] = X[R][cols] W[rows][cols]^T of the\n"
               "fixture models and the 4B shapes with each small-GEMM-lab variant (the runtime's\n"
               "per-tile cuBLAS calls, a weight-streaming kernel in two warp shapes, its split-K\n"
               "form, the tensor-core kernel with 4 or 8 warps a block), per GEMM and per step,\n"
               "in microseconds, GB/s of weight bytes and percent of the copy bandwidth measured\n"
               "in the same run. Every variant is first checked\n"
               "against an fp64 evaluation within its error bound; the stream variants also bit\n"
               "for bit against the CPU reference of their summation order and for row\n"
               "invariance (a row alone, and in a reversed batch, gives the bits it has in the\n"
               "batch). A variant that fails is not timed. L2 is flushed before each timed GEMM\n"
               "and each timed step (--flush). docs/bench-gemm.md has the byte model and the\n"
               "variants.",
      .epilog = "Exit status: 0 ran and every check passed; 1 a check failed, a CUDA error or a\n"
                "model's config.json could not be read; 2 bad usage, a build without CUDA, or no\n"
                "CUDA device.",
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
  };
  int done;
  int prc = cli_parse_or_help(&spec, argc, argv, &done);
  if (done) return prc == 0 ? -1 : prc;
  if (shape && parse_words(shape, o, W_SHAPE)) return 2;
  if (prec && parse_words(prec, o, W_PREC)) return 2;
  if (variants && parse_words(variants, o, W_VARIANT)) return 2;
  if (flush) {
    if (strcmp(flush, "on") == 0) o->flush = 1;
    else if (strcmp(flush, "off") == 0) o->flush = 0;
    else {
      cli_error(CMD, "--flush '%s': expected on or off", flush);
      return 2;
    }
  }
  if (rows && (o->nrows = int_list(rows, 1, GEMM_LAB_MAX_R, o->rows)) < 0) {
    cli_error(CMD, "--rows '%s': expected a comma-separated list of row counts 1..64", rows);
    return 2;
  }
  return 0;
}

int bench_gemm_main(int argc, char **argv) {
  bg_options o;
  int rc = bg_parse(argc, argv, &o);
  if (rc < 0) return 0; /* --help */
  if (rc != 0) return rc;
#ifdef RSSM_HAVE_CUDA
  return bg_run(&o);
#else
  cli_error(CMD, "this replayssm was built without CUDA (rebuild with nvcc available and -DRSSM_CUDA=ON)");
  return 2;
#endif
}
