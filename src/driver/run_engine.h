/* A block engine: another way for the lockstep loop of run.c to advance a block
 * (docs/gpu-runtime.md, "The seam with the driver"). The CPU path runs K + K C decoders through
 * two parallel_for phases; an engine (the GPU runtime, src/model_cuda/mc_run_engine.c) advances
 * every (sequence, configuration) row at once and fills the same runner fields:
 * d.ref_nll, d.cfg[c].{kl, nll, dp, top1, first_nonfinite}, cursor, dead.
 *
 * run_engine_open also fills r->ref [K] and r->dec [K C] with decoders whose only working
 * operations are state_bytes / save / load (each one row of the engine's batch), so that the
 * checkpoint file (run_ckpt.c) and --resume work unchanged; their step/verify/commit refuse.
 * Private to src/driver and the engines. */
#ifndef RSSM_DRIVER_RUN_ENGINE_H
#define RSSM_DRIVER_RUN_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "src/driver/run_internal.h"

typedef struct run_engine run_engine;

/* For runner r after setup's token and buffer allocation (model open, r->K, N, C, d.offset set).
 * Returns RSSM_OK, RSSM_ERR_INPUT (no device, toy model, spec configuration, MoE, too large)
 * or RSSM_ERR_IO, with one line in err. */
int run_engine_open(runner *r, run_engine **out, char *err, size_t errlen);
/* Advance every row from r->b0 to b1 (all pairs are at r->b0: no spec). */
int run_engine_block(run_engine *g, runner *r, int64_t b1, char *err, size_t errlen);
/* After the runner's decoders were freed, before the model is closed. NULL is allowed. */
void run_engine_close(run_engine *g);

#endif
