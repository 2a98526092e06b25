/* `bench kernels`' shapes and command line (docs/bench-kernels.md): the paper's four SSM shapes,
 * the options with their defaults, --quick and --targets-only, and the parse of argv with one clear
 * line for each bad value. Pure C, built with or without CUDA (tests/bench_kernels/test_bk_options.c). */
#ifndef RSSM_BENCH_KERNELS_BK_OPTIONS_H
#define RSSM_BENCH_KERNELS_BK_OPTIONS_H

#include "src/ssm/ssm_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define BK_MAX_LIST 32
#define BK_N_SHAPES 4

typedef struct {
  const char *key, *name;
  ssm_dims d;
} bk_shape;

/* The paper's four models (Table 1): Mamba-2 H = value heads, dv = head_dim, dk = d_state, G =
 * groups; GDN H = Hv, dv = dk = 128, G = Hk. [BK_N_SHAPES]: nano, super, qwen4b, qwen122b. */
extern const bk_shape bk_shapes[BK_N_SHAPES];

/* the parts, a bit each (--parts) */
enum { BK_P_STD = 1, BK_P_WINDOW = 2, BK_P_SPEC = 4, BK_P_LP = 8, BK_P_SKIP = 16 };

typedef struct {
  int shapes[BK_N_SHAPES], nshapes; /* indexes into bk_shapes */
  int batches[BK_MAX_LIST], nbatches;
  int windows[BK_MAX_LIST], nwindows;
  int drafts[BK_MAX_LIST], ndrafts;
  const char *lp_formats[BK_MAX_LIST];
  int nlp;
  int parts; /* BK_P_* bits */
  int iters, warmup, check_batch, quick;
  double skip_threshold;
  const char *out;
  const char *targets_out; /* --targets: the issue-17 verdicts as CSV */
  int targets_only;        /* --targets-only: just the measurements the targets need */
} bk_options;

/* argv[0] = "kernels" into *o (defaults first, then --quick, then --targets-only, then the lists
 * and counts). Returns 0 to run, -1 after --help (exit 0), or 2 after one line on stderr. */
int bk_parse_args(int argc, char **argv, bk_options *o);

#ifdef __cplusplus
}
#endif
#endif
