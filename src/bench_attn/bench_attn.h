/* `replayssm bench attention` (docs/bench-attention.md): one attention decode step of every
 * attention-lab variant (src/model_cuda/attn_lab.h) against the position, for the fixture models'
 * and the 4B shapes' attention layers, in GB/s and percent of the copy bandwidth, every variant
 * first checked against the CPU reference. Compiled with or without CUDA: without, the options
 * are still parsed (bad ones: one line, exit 2) and the command answers one line and exit 2. */
#ifndef RSSM_BENCH_ATTN_BENCH_ATTN_H
#define RSSM_BENCH_ATTN_BENCH_ATTN_H

#include <stdint.h>

#include "src/model_cuda/attn_lab.h"

#define BA_MAX_LIST 32

/* An attention layer's shape (data/shapes/NAME/config.json, data/models/NAME/config.json). */
typedef struct {
  const char *key, *name;
  int nH, nKV, D, gated;
  int rows[2], nrows; /* default row counts */
} ba_shape;

typedef struct {
  int shapes[8], nshapes;             /* indexes into ba_shapes() */
  int64_t positions[BA_MAX_LIST];     /* attended positions P (pos = P - 1) */
  int npositions;
  int rows[BA_MAX_LIST], nrows;       /* 0: each shape's defaults */
  int variants[ATTN_LAB_NVARIANTS], nvariants;
  int reps, warmup, splits;           /* splits 0: attn_lab_splits */
  const char *json;                   /* NULL: table only */
} ba_options;

/* The shapes: tiny (the fixture models), qwen4b, nano4b; *n receives the count. */
const ba_shape *ba_shapes(int *n);

/* Parses argv (argv[0] = "attention") into *o. Returns 0, -1 after --help (exit 0), or 2 after
 * one line on stderr. */
int ba_parse(int argc, char **argv, ba_options *o);

/* The timing run (bench_attn_run.c, CUDA builds): the exit status. */
int ba_run(const ba_options *o);

/* argv[0] is "attention"; returns the exit status. */
int bench_attn_main(int argc, char **argv);

#endif
