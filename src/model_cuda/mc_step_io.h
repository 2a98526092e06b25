/* A lockstep step's inputs in and metrics out, as two kernels of the step's graph (issue 18).
 *
 * Why kernels and not cudaMemcpyAsync: a fixture model's step is ~0.2 ms of ~60 kernels, and the
 * host's part of a step (three pageable uploads of a few hundred bytes, a pageable download of
 * the metrics, each a synchronous staging copy) left the GPU idle for tens of microseconds per
 * step. The host now writes the step's tokens, positions and targets into pinned, mapped host
 * buffers; step_ingest copies them into the device buffers as the first kernel of the step, and
 * metrics_egress copies the metrics back into a pinned, mapped host buffer as the last, so that a
 * step is one graph launch and one synchronisation. Plain copies: the values are those the
 * cudaMemcpyAsync calls carried (bits unchanged). */
#ifndef RSSM_MODEL_CUDA_MC_STEP_IO_H
#define RSSM_MODEL_CUDA_MC_STEP_IO_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif
#include "src/model_cuda/mc_kernels.h" /* mc_row_metrics */

/* tok[i] = tok_h[i], pos[i] = pos_h[i] for i < R; tgt[i] = tgt_h[i] for i < K when tgt_h is
 * not NULL. The _h pointers are device views of pinned, mapped host memory. */
int mc_step_ingest(const int64_t *tok_h /* [R] */, const int *pos_h /* [R] */,
                   const int64_t *tgt_h /* [K] or NULL */, int R, int K, int64_t *tok /* [R] */,
                   int *pos /* [R] */, int64_t *tgt /* [K] */, void *stream);

/* met_h[r] = met[r] for r < R (met_h: device view of pinned, mapped host memory) */
int mc_metrics_egress(const mc_row_metrics *met /* [R] */, mc_row_metrics *met_h /* [R] */, int R,
                      void *stream);

#ifdef __cplusplus
}
#endif

#endif
