/* The state of a run in progress, shared by run.c (the lockstep loop) and run_ckpt.c (its
 * checkpoint file). Private to src/driver. */
#ifndef RSSM_DRIVER_RUN_INTERNAL_H
#define RSSM_DRIVER_RUN_INTERNAL_H

#include <stdint.h>

#include "src/decode/decoder.h"
#include "src/decode/engine.h"
#include "src/driver/experiment.h"
#include "src/driver/run_data.h"

typedef struct {
  const experiment *e;
  run_data d;              /* metric buffers for this shard's K rows */
  rssm_model *m;
  int64_t V, N, K, C, B;
  int Tmax;                /* largest T of the spec configurations, 1 without any */
  int64_t rows;            /* reference rows per sequence: B + Tmax - 1 */
  int64_t *tok;            /* [K][N+1] token ids */
  rssm_decoder **ref;      /* [K]; all NULL with an engine */
  rssm_decoder **dec;      /* [K*C], NULL once a pair went non-finite; all NULL with an engine */
  float *reflp;            /* [K][rows][V] reference log-probabilities of steps base.. */
  int64_t *refam;          /* [K][rows] their argmax */
  int64_t base;            /* step of reference row 0 */
  int64_t nrows;           /* valid rows */
  int64_t *cursor;         /* [K*C] next step of each pair */
  uint32_t *round;         /* [K*C] spec rounds played */
  uint8_t *dead;           /* [K*C] non-finite logits seen */
  int64_t b0;              /* first step of the next block; every reference is there */
  int64_t written;         /* columns in the HDF5 file */
  uint64_t fingerprint;    /* of the effective experiment and shard: checkpoints must match */
  rssm_engine *engine;     /* --device cuda: advances every row; NULL on the CPU path */
  ssm_config *engine_cfgs; /* [C] the configurations handed to the engine */
} runner;

/* Checkpoint file: writes the whole state atomically / restores it into a runner whose decoders
 * were opened afresh. Return RSSM_OK, RSSM_ERR_INPUT (a checkpoint of another run, corrupt) or
 * RSSM_ERR_IO. */
int run_ckpt_save(const runner *r, const char *path, char *err, size_t errlen);
int run_ckpt_load(runner *r, const char *path, char *err, size_t errlen);

#endif
