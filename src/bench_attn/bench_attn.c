/* `replayssm bench attention`: the shapes, the option table and the entry point (bench_attn.h).
 * Pure C: the CPU build parses the options too, so its tests see the same usage errors. */
#include "src/bench_attn/bench_attn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/cli_opts.h"
#include "src/io/parse_num.h"

#define CMD "bench attention"

/* The attention layers of the models of issue 18, from their config.json:
 *  tiny   data/models/qwen35-gdn-tiny and nemotronh-m2-tiny (the fixture models of
 *         experiments/paper_kl_vs_length.ini): 4 heads, 2 kv heads, head_dim 64; the Qwen one is
 *         gated (BK_QATTN), the Nemotron-H one not (the gate costs nH D floats of the q bytes);
 *         36 rows = 9 state configurations x 4 windows;
 *  qwen4b data/shapes/qwen3.5-4b: 16 heads, 4 kv heads, head_dim 256, attn_output_gate;
 *  nano4b data/shapes/nemotron-3-nano-4b: 40 heads, 8 kv heads, head_dim 128, no gate. */
static const ba_shape shapes[] = {
    {"tiny", "fixture models (qwen35-gdn-tiny)", 4, 2, 64, 1, {36, 0}, 1},
    {"qwen4b", "Qwen3.5-4B", 16, 4, 256, 1, {1, 36}, 2},
    {"nano4b", "Nemotron-3-Nano-4B", 40, 8, 128, 0, {1, 36}, 2},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

const ba_shape *ba_shapes(int *n) {
  *n = N_SHAPES;
  return shapes;
}

/* The word list of --shape and --variants; 0 or 2 after the message. */
static int parse_words(const char *text, ba_options *o, int shapes_not_variants) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  int n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    int found = 0;
    if (shapes_not_variants) {
      for (int s = 0; s < N_SHAPES; s++)
        if (strcmp(t, shapes[s].key) == 0) found = s + 1;
    } else {
      found = attn_lab_parse(t);
    }
    if (!found || n == (shapes_not_variants ? 8 : ATTN_LAB_NVARIANTS)) {
      cli_error(CMD, shapes_not_variants ? "--shape: '%s' (expected a list of tiny, qwen4b, nano4b)"
                                         : "--variants: '%s' (expected a list of shipped, stream, "
                                           "cpasync, multipos or 1..4)",
                t);
      return 2;
    }
    if (shapes_not_variants) o->shapes[n++] = found - 1;
    else o->variants[n++] = found;
  }
  if (n == 0) {
    cli_error(CMD, "%s: empty list", shapes_not_variants ? "--shape" : "--variants");
    return 2;
  }
  if (shapes_not_variants) o->nshapes = n;
  else o->nvariants = n;
  return 0;
}

int ba_parse(int argc, char **argv, ba_options *o) {
  memset(o, 0, sizeof *o);
  o->nshapes = N_SHAPES;
  for (int s = 0; s < N_SHAPES; s++) o->shapes[s] = s;
  o->npositions = 0;
  for (int64_t p = 1024; p <= 131072; p *= 2) o->positions[o->npositions++] = p;
  o->nvariants = ATTN_LAB_NVARIANTS;
  for (int v = 0; v < ATTN_LAB_NVARIANTS; v++) o->variants[v] = v + 1;
  o->reps = 10;
  o->warmup = 3;
  const char *shape = NULL, *pos = NULL, *rows = NULL, *variants = NULL;
  const cli_opt opts[] = {
      {.name = "--shape", .type = CLI_STR, .dest = &shape, .meta = "LIST", .def = "tiny,qwen4b,nano4b",
       .help = "tiny (fixture models, 36 rows), qwen4b (Qwen3.5-4B, 1 and 36 rows),\n"
               "nano4b (Nemotron-3-Nano-4B, 1 and 36 rows)"},
      {.name = "--positions", .type = CLI_STR, .dest = &pos, .meta = "LIST",
       .def = "1024,2048,...,131072", .help = "attended positions P (every row at pos = P - 1), 1..1048576"},
      {.name = "--rows", .type = CLI_STR, .dest = &rows, .meta = "LIST",
       .help = "row counts 1..4096 instead of each shape's"},
      {.name = "--variants", .type = CLI_STR, .dest = &variants, .meta = "LIST", .def = "all",
       .help = "shipped,stream,cpasync,multipos (or 1..4); docs/bench-attention.md"},
      {.name = "--reps", .type = CLI_INT, .dest = &o->reps, .meta = "N", .def = "10", .lo = 1,
       .hi = 10000, .help = "timed launches per point (the median is reported)"},
      {.name = "--warmup", .type = CLI_INT, .dest = &o->warmup, .meta = "N", .def = "3", .lo = 0,
       .hi = 1000, .help = "untimed launches first"},
      {.name = "--splits", .type = CLI_INT, .dest = &o->splits, .meta = "N", .def = "0", .lo = 0,
       .hi = 65536, .help = "split count of variants 2-4 (0: attn_lab_splits' choice; the shipped\n"
               "variant always runs at the runtime's count, attn_lab_splits_shipped)"},
      {.name = "--json", .type = CLI_STR, .dest = &o->json, .meta = "FILE",
       .help = "every point also as JSON"},
  };
  const cli_spec spec = {
      .cmd = CMD,
      .usage = "bench attention [--shape LIST] [--positions LIST] [--rows LIST] [--variants LIST]\n"
               "                        [--reps N] [--warmup N] [--splits N] [--json FILE]",
      .about = "Times one attention decode step (fp32 K/V) of each attention-lab variant against the\n"
               "position, reporting microseconds, the bytes of K and V up to the position plus q and\n"
               "out, GB/s and percent of the copy bandwidth measured in the same run (1 GiB device to\n"
               "device). Every variant is first checked against the CPU reference mc_ref_attn_decode\n"
               "(and fp64) on random inputs; a variant that fails is not timed. L2 is flushed before\n"
               "each timed launch. docs/bench-attention.md has the byte model and the variants.",
      .epilog = "Exit status: 0 ran and every check passed; 1 a check failed or a CUDA error; 2 bad\n"
                "usage, a build without CUDA, or no CUDA device.",
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
  };
  int done;
  int prc = cli_parse_or_help(&spec, argc, argv, &done);
  if (done) return prc == 0 ? -1 : prc;
  if (shape && parse_words(shape, o, 1)) return 2;
  if (variants && parse_words(variants, o, 0)) return 2;
  if (pos && (o->npositions = rssm_parse_int_list(pos, 1, 1048576, o->positions, BA_MAX_LIST)) < 0) {
    cli_error(CMD, "--positions '%s': expected a comma-separated list of positions 1..1048576", pos);
    return 2;
  }
  if (rows) {
    int64_t r[BA_MAX_LIST];
    if ((o->nrows = rssm_parse_int_list(rows, 1, 4096, r, BA_MAX_LIST)) < 0) {
      cli_error(CMD, "--rows '%s': expected a comma-separated list of row counts 1..4096", rows);
      return 2;
    }
    for (int i = 0; i < o->nrows; i++) o->rows[i] = (int)r[i];
  }
  if (o->json && !*o->json) {
    cli_error(CMD, "--json: empty file name");
    return 2;
  }
  return 0;
}

int bench_attn_main(int argc, char **argv) {
  ba_options o;
  int rc = ba_parse(argc, argv, &o);
  if (rc < 0) return 0; /* --help */
  if (rc != 0) return rc;
#ifdef RSSM_HAVE_CUDA
  return ba_run(&o);
#else
  cli_error(CMD, "this replayssm was built without CUDA (rebuild with nvcc available and -DRSSM_CUDA=ON)");
  return 2;
#endif
}
