/* A block engine: advances every (window, configuration) row of a run at once, as the other way
 * for the driver's lockstep loop to move a block forward (docs/architecture.md, "The seam";
 * docs/gpu-runtime.md). The GPU runtime (cuda_engine.c) implements it; the driver owns the
 * experiment, the loop and the files, and hands the engine only what it needs: the
 * configurations, the token windows, and the buffers the per-row metrics go to.
 *
 * Rows: row k (0 <= k < K) is window k under the reference; row (c + 1) K + k is window k under
 * configuration c. A block feeds steps [t0, t1) of every window (no spec configurations) and
 * writes, for every step t and window k, ref_nll[k][t] and per configuration kl/nll/dp/top1
 * [k][t], with the driver's non-finite rule: the first step whose logits are not finite goes to
 * first_nonfinite[k], and from there on the pair's kl = nll = inf, dp = NaN, top1 = 0 (dead
 * [k][c] set). Resume: row_bytes / row_save / row_load hold everything a row needs to continue
 * bit-identically. */
#ifndef RSSM_DECODE_ENGINE_H
#define RSSM_DECODE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "src/decode/decoder.h"
#include "src/ssm/ssm_config.h"

typedef struct rssm_engine rssm_engine;

/* What an engine is opened for. */
typedef struct {
  const rssm_model *m;          /* from rssm_model_open */
  const ssm_config *reference;  /* the reference configuration */
  const ssm_config *configs;    /* [C] */
  int64_t K, C, N;              /* windows, configurations, steps per window */
  uint64_t seed;                /* the run's seed (stochastic rounding) */
  int64_t offset;               /* global index of window 0 (the same in every shard) */
} rssm_engine_params;

/* Where a block's results go (the driver's run_data buffers). */
typedef struct {
  float *ref_nll;             /* [K][N] */
  float *const *kl;           /* [C] -> [K][N] */
  float *const *nll;          /* [C] -> [K][N] */
  float *const *dp;           /* [C] -> [K][N] */
  uint8_t *const *top1;       /* [C] -> [K][N] */
  int64_t *const *first_nonfinite; /* [C] -> [K], -1 while finite */
  uint8_t *dead;              /* [K][C] pairs that went non-finite */
} rssm_engine_out;

typedef struct {
  int (*block)(rssm_engine *g, const int64_t *tok /* [K][N+1] */, int64_t t0, int64_t t1,
               const rssm_engine_out *out, char *err, size_t errlen);
  int64_t (*row_bytes)(const rssm_engine *g, int row);
  int (*row_save)(const rssm_engine *g, int row, void *buf /* [row_bytes] */, char *err,
                  size_t errlen);
  int (*row_load)(rssm_engine *g, int row, const void *buf /* [len] */, int64_t len, char *err,
                  size_t errlen);
  void (*close)(rssm_engine *g);
} rssm_engine_ops;

struct rssm_engine {
  const rssm_engine_ops *ops;
  void *impl;
};

/* The GPU runtime's engine (cuda_engine.c). Returns RSSM_OK, RSSM_ERR_INPUT (no device, a toy
 * model, spec configurations, MoE, too many rows) or RSSM_ERR_IO, with one line in err. */
int cuda_engine_open(const rssm_engine_params *p, rssm_engine **out, char *err, size_t errlen);

static inline void rssm_engine_close(rssm_engine *g) {
  if (g) g->ops->close(g);
}

#endif
