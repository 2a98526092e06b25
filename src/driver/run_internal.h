/* The state of a run in progress, shared by run.c (the lockstep loop) and run_ckpt.c (its
 * checkpoint file). Private to src/driver. */
#ifndef RSSM_DRIVER_RUN_INTERNAL_H
#define RSSM_DRIVER_RUN_INTERNAL_H

#include <stdint.h>

#include "src/decode/decoder.h"
#include "src/decode/engine.h"
#include "src/driver/experiment.h"
#include "src/driver/run_data.h"
#include "src/driver/run_progress.h"

typedef struct {
  const experiment *e;
  run_data d;              /* metric buffers for this shard's K rows */
  rssm_model *m;
  int64_t V, N, K, C, B;
  int Tmax;                /* largest T of the spec configurations, 1 without any */
  int64_t *tok;            /* [K][N+1] token ids */
  int64_t b0;              /* first step of the next block; every reference is there */
  int64_t written;         /* columns in the HDF5 file */
  uint64_t fingerprint;    /* of the effective experiment and shard: checkpoints must match */
  rssm_engine *engine;     /* advances every row: the CPU lockstep engine or the GPU's */
  ssm_config *engine_cfgs; /* [C] the configurations handed to the engine */
  run_progress *prog;      /* the progress reporter the engine counts decoder steps into */
} runner;

/* Checkpoint file: writes the whole state atomically / restores it into a runner whose engine
 * was opened afresh. Return RSSM_OK, RSSM_ERR_INPUT (a checkpoint of another run, corrupt) or
 * RSSM_ERR_IO. */
int run_ckpt_save(const runner *r, const char *path, char *err, size_t errlen);
int run_ckpt_load(runner *r, const char *path, char *err, size_t errlen);

#endif
