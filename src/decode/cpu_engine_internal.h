/* The CPU lockstep engine's state (engine.h, cpu_engine_open), shared by its files: cpu_engine.c
 * (open, close, a block's phases), cpu_engine_items.c (the work items of the phases) and
 * cpu_engine_state.c (save/load for resume). Private to src/decode. */
#ifndef RSSM_DECODE_CPU_ENGINE_INTERNAL_H
#define RSSM_DECODE_CPU_ENGINE_INTERNAL_H

#include <stdint.h>

#include "src/decode/decoder.h"
#include "src/decode/engine.h"

typedef struct {
  rssm_engine engine;      /* what cpu_engine_open hands out */
  const rssm_model *m;
  const ssm_config *configs; /* [C] the caller's, alive while the engine is */
  uint64_t seed;
  int64_t offset;
  int64_t V, N, K, C;
  int threads;
  int Tmax;                /* largest T of the spec configurations, 1 without any */
  int64_t rows;            /* reference rows per sequence: block + Tmax - 1 */
  rssm_decoder **ref;      /* [K] */
  rssm_decoder **dec;      /* [K*C], NULL once a pair went non-finite */
  float *reflp;            /* [K][rows] -> [V] reference log-probabilities of steps base.. */
  int64_t *refam;          /* [K][rows] their argmax */
  int64_t base;            /* step of reference row 0 */
  int64_t nrows;           /* valid rows */
  int64_t *cursor;         /* [K*C] next step of each pair */
  uint32_t *round;         /* [K*C] spec rounds played */
  uint8_t *dead;           /* [K*C] non-finite logits seen */
  void (*progress)(void *ctx, int64_t n);
  void *progress_ctx;
  /* how a block's phases cut the work (cpu_engine.c, plan_phases) */
  int group;               /* sequences per group_item (batched stepping); 0: not used */
  int parts;               /* > 1: group_item g is configurations part g % parts of sequence
                            * g / parts, without the reference (ref_item ran before) */
  float *scratch_logits;   /* [threads][max(Tmax, group (C + 1))][V] */
  float *scratch_lp;       /* [threads][V] */
} cpu_engine;

/* The block in progress: what the work items read and the first error they report. */
typedef struct {
  cpu_engine *g;
  const int64_t *tok;      /* [K][N+1] */
  const rssm_engine_out *out;
  int64_t b0, b1;          /* this block's steps */
  int spec_only;           /* pair_item: only spec pairs (the others went through group_item) */
  char err[1024];          /* first error of the phase (under the pool's rule: first nonzero) */
  int err_set;
} cpu_block_ctx;

/* Work items for parallel_for (parallel.h): ref_item(k) steps window k's reference over the
 * block, pair_item(k C + c) pair (k, c) (spec pairs in whole rounds), group_item(g) a group of
 * sequences or a part of one sequence's configurations together through step_many. */
int cpu_ref_item(void *ctx, int64_t k, int thread);
int cpu_pair_item(void *ctx, int64_t pi, int thread);
int cpu_group_item(void *ctx, int64_t g, int thread);

/* The engine's resume state (cpu_engine_state.c), the ops of engine.h:
 *   i64 base, nrows
 *   per sequence: i64 state bytes, reference decoder state, nrows x V floats, nrows i64 argmax
 *   per pair: i64 cursor, u32 round, u8 dead, and when alive i64 state bytes + decoder state
 * (host byte order: a checkpoint is resumed by the same build on the same machine kind). */
int64_t cpu_engine_state_bytes(const rssm_engine *e);
int cpu_engine_save(const rssm_engine *e, void *buf /* [state_bytes] */, char *err,
                    size_t errlen);
int cpu_engine_load(rssm_engine *e, const void *buf /* [len] */, int64_t len, char *err,
                    size_t errlen);

#endif
