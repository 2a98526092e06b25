/* `replayssm run`: teacher-forced lockstep decoding of an experiment (SPEC sections 5, 7;
 * docs/driver.md, "Runs").
 *
 * K windows of N+1 tokens; the reference and every configuration decode the same tokens. Steps
 * advance in blocks of B through a block engine (src/decode/engine.h): the CPU lockstep engine
 * (--threads pthreads; results do not depend on the thread count or B) or, with --device cuda,
 * the GPU's. The driver owns the rest: after each block the completed columns go to OUT.part
 * (HDF5) and, every checkpoint_every steps, the whole run state (the engine's and the metric
 * buffers) to OUT.ckpt (atomically); at the end OUT.part is renamed to OUT and OUT.ckpt removed.
 * --resume continues from OUT.ckpt and rewrites OUT.part from its metric buffers, so the
 * datasets come out identical to an uninterrupted run. */
#ifndef RSSM_DRIVER_RUN_H
#define RSSM_DRIVER_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "src/driver/experiment.h"

typedef struct {
  const char *out;  /* final output path */
  int threads;      /* >= 1 */
  int resume, force;
  int shard_i, shard_n; /* shard I of N (0-based); 0/1 for a whole run */
  int progress;     /* draw a progress bar on stderr */
  int quiet;        /* no effective-experiment printout */
  int cuda;         /* --device cuda: the GPU block engine (src/decode/engine.h) */
} run_options;

/* Runs the experiment; returns RSSM_OK, RSSM_ERR_INPUT (bad inputs, with "FILE:LINE: ..." where
 * they come from the experiment file) or RSSM_ERR_IO, with one line in err. */
int run_experiment(const experiment *e, const run_options *o, char *err, size_t errlen);

#endif
