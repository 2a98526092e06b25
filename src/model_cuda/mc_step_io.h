/* Lockstep steps' inputs in and metrics out, as the first and last kernels of the step's graph
 * (issue 18), so that n consecutive steps are n graph launches back to back and one
 * synchronisation (mc_batch_steps).
 *
 * Why: a fixture model's step is ~0.2 ms of ~60 kernels, and the host's part of each step (three
 * pageable uploads of a few hundred bytes, a pageable download of the metrics, a synchronisation
 * before the next launch) left the GPU idle between steps (removing them took 2-4 % off the
 * fixture steps on an H100, ~8-10 us: docs/gpu-results.md, "Session 29"). Now the host writes
 * the tokens, positions and targets of up to MC_STEPS_MAX steps into pinned host buffers ([n][rows]
 * slots), copied to device slots by one cudaMemcpyAsync each before the submission's steps; a
 * device counter names the slot of the step in flight: step_ingest copies that slot into the
 * step's device buffers, step_egress copies the metrics into the same slot of the pinned, mapped
 * metrics buffer and advances the counter. Plain copies: the values are those the
 * cudaMemcpyAsync calls carried (bits unchanged). Both kernels are one block (the counter is read
 * and advanced by one grid in order), over at most a few thousand rows. (Until session 36 the
 * ingest read the slots in the mapped host memory: two dependent round trips, the second across
 * PCIe, 4.2-4.3 us of a fixture step's ~0.12-0.21 ms.) */
#ifndef RSSM_MODEL_CUDA_MC_STEP_IO_H
#define RSSM_MODEL_CUDA_MC_STEP_IO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "src/model_cuda/mc_kernels.h" /* mc_row_metrics */

/* With s = *slot: tok[i] = tok_h[s][i], pos[i] = pos_h[s][i] for i < R; tgt[i] = tgt_h[s][i]
 * for i < K when tgt_h is not NULL. The _h pointers are the device slots (any device-readable
 * memory: mapped host memory works too, at a PCIe round trip). */
int mc_step_ingest(const int *slot /* device [1] */, const int64_t *tok_h /* [n][R] */,
                   const int *pos_h /* [n][R] */, const int64_t *tgt_h /* [n][K] or NULL */,
                   int R, int K, int64_t *tok /* [R] */, int *pos /* [R] */,
                   int64_t *tgt /* [K] */, void *stream);

/* With s = *slot: met_h[s][r] = met[r] for r < R when met_h is not NULL; then *slot = s + 1. */
int mc_step_egress(int *slot /* device [1] */, const mc_row_metrics *met /* [R] */,
                   mc_row_metrics *met_h /* [n][R] or NULL */, int R, void *stream);

#ifdef __cplusplus
}
#endif

#endif
