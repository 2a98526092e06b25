/* `replayssm bench gemm` (docs/bench-gemm.md): the GEMMs of one decode step of the fixture models
 * and the 4B shapes, each variant of the small-GEMM lab (src/model_cuda/gemm_lab.h) checked
 * first, then timed per GEMM and per step in GB/s of weight bytes and percent of the copy
 * bandwidth. Compiled with or without CUDA: without, the options are still parsed (bad ones: one
 * line, exit 2) and the command answers one line and exit 2. */
#ifndef RSSM_BENCH_GEMM_BENCH_GEMM_H
#define RSSM_BENCH_GEMM_BENCH_GEMM_H

#include <stdint.h>

#include "src/model/model_config.h"
#include "src/model_cuda/gemm_lab.h"

#define BG_MAX_LIST 16
#define BG_MAX_GEMMS 32 /* distinct (name, rows, cols) of a step */
#define BG_MAX_STEP 256 /* GEMM calls of a step */

/* A model whose step is benchmarked: its key for --shape and its config.json's directory,
 * relative to the repository root (the command runs from there, as bench e2e's --shape). */
typedef struct {
  const char *key, *dir, *name;
} bg_model;

/* One distinct GEMM of a step: Y[R][rows] = X[R][cols] W[rows][cols]^T, `count` times. */
typedef struct {
  char name[24]; /* "gdn.in", "mlp.out", "lm_head", ... */
  int64_t rows, cols;
  int count;
} bg_gemm;

/* The GEMM calls of one decode step in the runtime's order (mc_step.cu: per block its input
 * projection then its output projection, the MoE router / latent / shared-expert GEMMs, the
 * lm_head last). */
typedef struct {
  bg_gemm g[BG_MAX_GEMMS];
  int n;                 /* distinct GEMMs */
  int seq[BG_MAX_STEP];  /* the step's calls: indexes into g */
  int inst[BG_MAX_STEP]; /* which of g[seq[i]]'s count instances (its own weights) */
  int nseq;
} bg_step;

typedef struct {
  int models[4], nmodels;                       /* indexes into bg_models() */
  int rows[BG_MAX_LIST], nrows;                 /* R per GEMM call, 1..64 */
  int precs[2], nprecs;                         /* gemm_lab_prec */
  int variants[GEMM_LAB_NVARIANTS], nvariants;
  int reps, warmup, tile;                       /* tile 0: the runtime's (mc_row_tile_for) */
  int flush;                                    /* 1: read 2 x L2 bytes before each timed call */
} bg_options;

/* The models: qwen-tiny, nemo-tiny (data/models), qwen4b, nano4b (data/shapes); *n the count. */
const bg_model *bg_models(int *n);

/* The GEMMs of one step of the model of config c (pure C). Returns 0, or -1 when the step has
 * more than BG_MAX_GEMMS distinct GEMMs or BG_MAX_STEP calls. */
int bg_step_of(const model_config *c, bg_step *s);
/* Weight elements the step's GEMMs read (each call's rows x cols, summed). */
int64_t bg_step_weight_elems(const bg_step *s);

/* Parses argv (argv[0] = "gemm") into *o. Returns 0, -1 after --help (exit 0), or 2 after one
 * line on stderr. */
int bg_parse(int argc, char **argv, bg_options *o);

/* The checks and the timing run (bench_gemm_run.c, CUDA builds): the exit status. */
int bg_run(const bg_options *o);

/* argv[0] is "gemm"; returns the exit status. */
int bench_gemm_main(int argc, char **argv);

#endif
