/* A block engine: advances every (window, configuration) row of a run at once; the driver's
 * lockstep loop moves a block forward only through it (docs/architecture.md, "The seam";
 * docs/gpu-runtime.md). Two implement it: the CPU lockstep engine over decoders (cpu_engine.c)
 * and the GPU runtime (cuda_engine.c). The driver owns the experiment, the loop and the files,
 * and hands an engine only what it needs: the configurations, the token windows, and the
 * buffers the per-row metrics go to.
 *
 * Rows: window k under the reference, and window k under each configuration c (the pair (k, c)).
 * A block is called with [t0, t1) after the previous block's [., t0): it feeds steps [t0, t1) of
 * every window and writes, for every step t it completes and window k, ref_nll[k][t] and per
 * configuration kl/nll/dp/top1[k][t], with the driver's non-finite rule: the first step whose
 * logits are not finite goes to first_nonfinite[c][k], and from there on the pair's kl = nll =
 * inf, dp = NaN, top1 = 0. A spec pair plays whole rounds, so it may stop short of t1 and finish
 * those steps in the next block; *done is the step before which every row is complete. Resume:
 * state_bytes / save / load hold everything the engine needs to continue bit-identically (the
 * metric buffers are the driver's and are saved by it). */
#ifndef RSSM_DECODE_ENGINE_H
#define RSSM_DECODE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "src/decode/decoder.h"
#include "src/ssm/ssm_config.h"

typedef struct rssm_engine rssm_engine;

/* What an engine is opened for. */
typedef struct {
  rssm_model *m;                /* from rssm_model_open (the CPU engine sets its threads) */
  const ssm_config *reference;  /* the reference configuration */
  const ssm_config *configs;    /* [C] */
  int64_t K, C, N;              /* windows, configurations, steps per window */
  uint64_t seed;                /* the run's seed (stochastic rounding) */
  int64_t offset;               /* global index of window 0 (the same in every shard) */
  int64_t block;                /* the most steps one block call feeds (t1 - t0) */
  int threads;                  /* worker threads of the CPU engine; results do not depend on it */
  /* Optional (NULL: not reported): n more decoder steps done, for progress reports between the
   * blocks' ends. Called from worker threads. */
  void (*progress)(void *ctx, int64_t n);
  void *progress_ctx;
} rssm_engine_params;

/* Where a block's results go (the driver's run_data buffers). */
typedef struct {
  float *ref_nll;             /* [K][N] */
  float *const *kl;           /* [C] -> [K][N] */
  float *const *nll;          /* [C] -> [K][N] */
  float *const *dp;           /* [C] -> [K][N] */
  uint8_t *const *top1;       /* [C] -> [K][N] */
  int64_t *const *first_nonfinite; /* [C] -> [K], -1 while finite */
} rssm_engine_out;

typedef struct {
  int (*block)(rssm_engine *g, const int64_t *tok /* [K][N+1] */, int64_t t0, int64_t t1,
               const rssm_engine_out *out, int64_t *done, char *err, size_t errlen);
  int64_t (*state_bytes)(const rssm_engine *g);
  int (*save)(const rssm_engine *g, void *buf /* [state_bytes] */, char *err, size_t errlen);
  /* Only what save() of an engine opened with the same parameters wrote; RSSM_ERR_INPUT for
   * anything else (a checkpoint's sizes that do not match). */
  int (*load)(rssm_engine *g, const void *buf /* [len] */, int64_t len, char *err,
              size_t errlen);
  void (*close)(rssm_engine *g);
} rssm_engine_ops;

struct rssm_engine {
  const rssm_engine_ops *ops;
  void *impl;
};

/* The CPU lockstep engine (cpu_engine.c): one decoder per window and reference or configuration,
 * stepped in parallel phases on p->threads threads. Returns RSSM_OK, RSSM_ERR_INPUT or
 * RSSM_ERR_IO with one line in err; *failed is then -1 for the reference, c when configuration
 * c's decoder could not be opened, -2 for anything else. */
int cpu_engine_open(const rssm_engine_params *p, rssm_engine **out, int *failed, char *err,
                    size_t errlen);

/* The GPU runtime's engine (cuda_engine.c). Returns RSSM_OK, RSSM_ERR_INPUT (no device, a toy
 * model, spec configurations, MoE, too many rows) or RSSM_ERR_IO, with one line in err. */
int cuda_engine_open(const rssm_engine_params *p, rssm_engine **out, char *err, size_t errlen);

static inline void rssm_engine_close(rssm_engine *g) {
  if (g) g->ops->close(g);
}

#endif
