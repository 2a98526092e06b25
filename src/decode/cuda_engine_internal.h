/* The GPU block engine's state (engine.h, cuda_engine_open), shared by its files: cuda_engine.c
 * (open, close, the batches), cuda_engine_block.c (a block: lockstep steps, then spec rounds)
 * and cuda_engine_state.c (save/load for resume). Private to src/decode; CUDA builds only.
 *
 * Batches: `std`, one lockstep mc_batch of (1 + Cs) x K rows (configuration 0 the reference, then
 * the experiment's non-spec configurations in order: row (s + 1) K + k is window k under the
 * s-th of them); and one spec batch per distinct T of the spec configurations (its configurations
 * in experiment order: row i K + k), each row at its own position. The reference ring keeps the
 * reference's logits of the last block + Tmax steps for the spec rows' metrics. */
#ifndef RSSM_DECODE_CUDA_ENGINE_INTERNAL_H
#define RSSM_DECODE_CUDA_ENGINE_INTERNAL_H

#include <stdint.h>

#include "src/decode/engine.h"
#include "src/model_cuda/mc_model.h"

typedef struct {
  mc_batch *b;
  int T, C;                /* tokens per row, configurations */
  int64_t *cfg;            /* [C] experiment index of each configuration */
  int64_t *drafts, *targets; /* [C K][T] a round's drafts and their next tokens */
  int *accept;             /* [C K] a of each row this round, -1 sitting out */
  mc_row_metrics *met;     /* [C K][T] */
} ce_spec_group;

typedef struct {
  rssm_engine base;
  mc_model *g;
  mc_batch *std;
  const ssm_config *configs; /* [C] the caller's */
  uint64_t seed;
  int64_t K, C, N, offset;
  int64_t *batch_of;       /* [C] -1: the lockstep batch; else the spec group */
  int64_t *row_cfg;        /* [C] configuration index inside its batch (lockstep: 1 + s) */
  int nspec;               /* spec groups */
  ce_spec_group *spec;     /* [nspec] */
  int Tmax;                /* largest spec T, 1 without any */
  mc_ref_ring *ring;       /* NULL without spec configurations */
  int64_t ring_slots;
  int64_t tref;            /* steps the reference has done */
  int64_t *x, *y;          /* [MC_STEPS_MAX][K] a submission's tokens and targets */
  mc_row_metrics *met;     /* [MC_STEPS_MAX][(1 + Cs) K] its metrics */
  uint8_t *dead;           /* [K][C] pairs that went non-finite */
  int64_t *cursor;         /* [K][C] next step of each pair (spec pairs lag) */
  uint32_t *round;         /* [K][C] spec rounds played */
} cuda_engine;

/* The batch and row of window k under the reference (c = -1) or pair (k, c). */
mc_batch *ce_batch_of(const cuda_engine *g, int64_t c);
int ce_row_of(const cuda_engine *g, int64_t k, int64_t c);

int ce_block(rssm_engine *e, const int64_t *tok /* [K][N+1] */, int64_t t0, int64_t t1,
             const rssm_engine_out *o, int64_t *done, char *err, size_t errlen);

/* Resume state (cuda_engine_state.c), host byte order:
 *   u8 dead [K][C];
 *   with spec configurations: i64 tref, i64 lo, per pair i64 cursor + u32 round, then per window
 *     the ring entries of steps lo..tref-1 (mc_ref_ring_entry_bytes each);
 *   per window k, i64 bytes + the reference's row; per pair (k, c) still alive, i64 bytes + its
 *   row (mc_batch_row_save). Without spec configurations this is the layout of the lockstep
 *   engine before spec rounds existed. */
int64_t ce_state_bytes(const rssm_engine *e);
int ce_save(const rssm_engine *e, void *buf /* [state_bytes] */, char *err, size_t errlen);
int ce_load(rssm_engine *e, const void *buf /* [len] */, int64_t len, char *err, size_t errlen);

#endif
