/* Spec configurations on the GPU (mc_model.h, docs/gpu-runtime.md "Spec configurations"): the
 * spec batch's rounds and the reference ring their metrics read.
 *
 * A spec batch is an mc_batch with T token rows per state row (mc_batch_build_t): the GEMMs, norms,
 * gates, MLP and MoE treat token rows like any rows (the model's fixed row tiles, so a row's bits
 * do not depend on the batch); attention writes draft j's K/V at slot pos[r] + j of row r's cache
 * and attends over 0..pos[r] + j; the conv of the T drafts reads the row's committed window and the
 * earlier drafts and then advances the window by a; the SSM engine verifies n[r] (T or 0) drafts
 * and commits a[r]. a is drawn on the host before the round (ssm_accept_draw, as the CPU engine),
 * so verification and commit are one launch sequence and rollback is the per-row position moving by
 * a instead of T: nothing is copied back.
 *
 * The reference ring holds the reference rows' logits and row stats of the last `slots` steps
 * per window (slot = step % slots), copied on the device after each lockstep step: a spec row
 * lags the reference by less than Tmax steps plus the block, and its metrics are computed on the
 * device against the ring with the lockstep rows' own device code (mc_spec_metrics_launch). */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/errbuf.h"
#include "src/model_cuda/mc_model.h"
#include "src/model_cuda/mc_model_internal.cuh"

struct mc_ref_ring {
  int K, slots;
  int64_t V;
  float *lg;           /* device [K][slots][V] reference logits */
  mc_row_stats *st;    /* device [K][slots] their stats */
  cudaStream_t stream;
};

extern "C" int mc_batch_build_spec(mc_batch **out, const mc_model *g, const ssm_config *cfgs,
                                   int C, int K, uint64_t seed, const uint32_t *sequences,
                                   int64_t max_ctx, char *err, size_t errlen) {
  *out = nullptr;
  if (C < 1)
    return rssm_fail(err, errlen, "spec batch without configurations"), RSSM_ERR_INPUT;
  const int T = cfgs[0].T;
  for (int i = 0; i < C; i++)
    if (cfgs[i].strategy != SSM_SPEC || cfgs[i].T != T || T < 1)
      return rssm_fail(err, errlen, "configuration '%s': a spec batch holds spec configurations "
                       "of one T (%d)", cfgs[i].name, T),
             RSSM_ERR_INPUT;
  /* the conv of a round holds its window and drafts in registers (mc_conv_spec) */
  const model_config *c = &g->cpu->cfg;
  const int64_t kc = c->gdn_kernel > c->m_kernel ? c->gdn_kernel : c->m_kernel;
  if (kc - 1 + T > MC_CONV_SPEC_MAX)
    return rssm_fail(err, errlen, "configuration '%s': T=%d drafts do not fit the GPU's spec "
                     "conv (at most %lld with this model's conv kernel of %lld)", cfgs[0].name, T,
                     (long long)(MC_CONV_SPEC_MAX - kc + 1), (long long)kc),
           RSSM_ERR_INPUT;
  const int rc = mc_batch_build_t(out, g, cfgs, C, K, T, seed, sequences, max_ctx, err, errlen);
  if (rc == RSSM_OK) (*out)->spec = 1;
  return rc;
}

extern "C" int mc_batch_tokens_per_row(const mc_batch *b) { return b->T; }
extern "C" int mc_batch_is_spec(const mc_batch *b) { return b->spec; }

extern "C" int64_t mc_batch_row_pos(const mc_batch *b, int r) {
  if (r < 0 || r >= b->R) return -1;
  return b->spec ? b->rpos[r] : b->pos;
}

extern "C" int mc_ref_ring_build(mc_ref_ring **out, const mc_model *g, int K, int slots,
                                 char *err, size_t errlen) {
  *out = nullptr;
  if (K < 1 || slots < 1)
    return rssm_fail(err, errlen, "reference ring of %d windows x %d slots", K, slots),
           RSSM_ERR_INPUT;
  mc_ref_ring *q = (mc_ref_ring *)calloc(1, sizeof *q);
  if (!q) return rssm_fail(err, errlen, "out of host memory"), RSSM_ERR_IO;
  q->K = K;
  q->slots = slots;
  q->V = g->cpu->cfg.V;
  const size_t n = (size_t)K * (size_t)slots;
  int ok = cudaStreamCreateWithFlags(&q->stream, cudaStreamNonBlocking) == cudaSuccess &&
           cudaMalloc(&q->lg, n * (size_t)q->V * sizeof(float)) == cudaSuccess &&
           cudaMalloc(&q->st, n * sizeof(mc_row_stats)) == cudaSuccess &&
           /* zero stats read as "not finite": a slot never stored gives no metric */
           cudaMemset(q->st, 0, n * sizeof(mc_row_stats)) == cudaSuccess &&
           cudaMemset(q->lg, 0, n * (size_t)q->V * sizeof(float)) == cudaSuccess &&
           /* the memsets ran on the legacy stream, which does not order q->stream's copies */
           cudaDeviceSynchronize() == cudaSuccess;
  if (!ok) {
    mc_ref_ring_free(q);
    return rssm_fail(err, errlen, "out of device memory for the reference ring (%d x %d x %lld "
                     "floats)", K, slots, (long long)q->V),
           RSSM_ERR_IO;
  }
  *out = q;
  return RSSM_OK;
}

extern "C" void mc_ref_ring_free(mc_ref_ring *q) {
  if (!q) return;
  cudaFree(q->lg);
  cudaFree(q->st);
  if (q->stream) cudaStreamDestroy(q->stream);
  free(q);
}

extern "C" int64_t mc_ref_ring_bytes(int64_t K, int64_t slots, int64_t V) {
  return K * slots * (V * (int64_t)sizeof(float) + (int64_t)sizeof(mc_row_stats));
}

extern "C" int mc_ref_ring_store(mc_ref_ring *q, const mc_batch *b, int64_t step, char *err,
                                 size_t errlen) {
  if (b->spec || b->K != q->K)
    return rssm_fail(err, errlen, "reference ring: not the lockstep batch of its windows"),
           RSSM_ERR_INPUT;
  const int64_t slot = step % q->slots, V = q->V;
  /* b's last step is complete (mc_batch_step synchronises), and its rows 0..K-1 are the
   * reference's: K strided copies of one row each */
  int ok = cudaMemcpy2DAsync(q->lg + slot * V, (size_t)(q->slots * V) * sizeof(float), b->logits,
                             (size_t)V * sizeof(float), (size_t)V * sizeof(float), (size_t)q->K,
                             cudaMemcpyDeviceToDevice, q->stream) == cudaSuccess &&
           cudaMemcpy2DAsync(q->st + slot, (size_t)q->slots * sizeof(mc_row_stats), b->stats,
                             sizeof(mc_row_stats), sizeof(mc_row_stats), (size_t)q->K,
                             cudaMemcpyDeviceToDevice, q->stream) == cudaSuccess &&
           /* before the next lockstep step overwrites the logits */
           cudaStreamSynchronize(q->stream) == cudaSuccess;
  if (!ok)
    return rssm_fail(err, errlen, "reference ring store: %s",
                     cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  return RSSM_OK;
}

extern "C" int64_t mc_ref_ring_entry_bytes(const mc_ref_ring *q) {
  return q->V * (int64_t)sizeof(float) + (int64_t)sizeof(mc_row_stats);
}

/* One (window, step) entry to host bytes (logits [V], then the stats) or back. */
static int ring_io(const mc_ref_ring *q, int k, int64_t step, void *buf, int to_device) {
  if (k < 0 || k >= q->K || step < 0) return -1;
  const int64_t row = (int64_t)k * q->slots + step % q->slots;
  unsigned char *p = (unsigned char *)buf;
  const size_t lb = (size_t)q->V * sizeof(float);
  /* a pageable H2D cudaMemcpy may return before its DMA lands, and the rounds that read the
   * ring run on non-blocking streams: wait for it */
  if (to_device)
    return cudaMemcpy(q->lg + row * q->V, p, lb, cudaMemcpyHostToDevice) == cudaSuccess &&
                   cudaMemcpy(q->st + row, p + lb, sizeof(mc_row_stats),
                              cudaMemcpyHostToDevice) == cudaSuccess &&
                   cudaDeviceSynchronize() == cudaSuccess
               ? 0
               : -1;
  return cudaMemcpy(p, q->lg + row * q->V, lb, cudaMemcpyDeviceToHost) == cudaSuccess &&
                 cudaMemcpy(p + lb, q->st + row, sizeof(mc_row_stats),
                            cudaMemcpyDeviceToHost) == cudaSuccess
             ? 0
             : -1;
}

extern "C" int mc_ref_ring_save(const mc_ref_ring *q, int k, int64_t step, void *buf) {
  return ring_io(q, k, step, buf, 0);
}

extern "C" int mc_ref_ring_load(mc_ref_ring *q, int k, int64_t step, const void *buf) {
  return ring_io(q, k, step, (void *)buf, 1);
}

extern "C" int mc_batch_spec_round(mc_batch *b, const mc_ref_ring *q, const int64_t *drafts,
                                   const int64_t *targets, const int *accept,
                                   mc_row_metrics *metrics, char *err, size_t errlen) {
  const int R = b->R, T = b->T, RT = b->RT;
  const int64_t V = b->g->cpu->cfg.V;
  if (!b->spec) return rssm_fail(err, errlen, "not a spec batch"), RSSM_ERR_INPUT;
  if (metrics && !q)
    return rssm_fail(err, errlen, "spec round metrics need the reference ring"), RSSM_ERR_INPUT;
  if (q && q->K != b->K)
    return rssm_fail(err, errlen, "reference ring of %d windows for %d", q->K, b->K),
           RSSM_ERR_INPUT;
  int any = 0;
  for (int r = 0; r < R; r++) {
    const int a = accept[r];
    if (a < -1 || a == 0 || a > T)
      return rssm_fail(err, errlen, "row %d: %d accepted drafts (expected 1..%d, or -1)", r, a,
                       T),
             RSSM_ERR_INPUT;
    if (a > 0 && b->rpos[r] + T > b->max_ctx)
      return rssm_fail(err, errlen, "row %d: context full (position %lld + %d drafts of %lld)", r,
                       (long long)b->rpos[r], T, (long long)b->max_ctx),
             RSSM_ERR_INPUT;
    b->h_n[r] = a > 0 ? T : 0;
    b->h_a[r] = a > 0 ? a : 0;
    any |= a > 0;
    const int k = r % b->K;
    for (int j = 0; j < T; j++) {
      const int i = r * T + j;
      const int64_t x = drafts[i], y = targets[i];
      if (a > 0 && (x < 0 || x >= V || y < 0 || y >= V))
        return rssm_fail(err, errlen, "row %d: token id out of range (expected 0 <= id < vocab "
                         "%lld)", r, (long long)V),
               RSSM_ERR_INPUT;
      /* a row sitting out runs garbage-free: its drafts are token 0 at its own (uncommitted)
       * slots, and n = a = 0 keeps its conv window and SSM state as they are */
      b->h_tok[i] = a > 0 ? x : 0;
      b->h_tgt[i] = a > 0 ? y : 0;
      const int64_t p = b->rpos[r] + j;
      b->h_pos[i] = (int)(p < b->max_ctx ? p : b->max_ctx - 1);
      b->h_ref[i] = q ? (int)((int64_t)k * q->slots + p % q->slots) : 0;
    }
  }
  if (!any) return RSSM_OK;
  cudaStream_t s = b->stream;
  int ok =
      cudaMemcpyAsync(b->tok, b->h_tok, (size_t)RT * 8, cudaMemcpyHostToDevice, s) == cudaSuccess &&
      cudaMemcpyAsync(b->tgt, b->h_tgt, (size_t)RT * 8, cudaMemcpyHostToDevice, s) == cudaSuccess &&
      cudaMemcpyAsync(b->pos_d, b->h_pos, (size_t)RT * 4, cudaMemcpyHostToDevice, s) ==
          cudaSuccess &&
      cudaMemcpyAsync(b->ref_row_d, b->h_ref, (size_t)RT * 4, cudaMemcpyHostToDevice, s) ==
          cudaSuccess &&
      cudaMemcpyAsync(b->n_d, b->h_n, (size_t)R * 4, cudaMemcpyHostToDevice, s) == cudaSuccess &&
      cudaMemcpyAsync(b->a_d, b->h_a, (size_t)R * 4, cudaMemcpyHostToDevice, s) == cudaSuccess;
  if (!ok)
    return rssm_fail(err, errlen, "spec round upload: %s",
                     cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  b->ring_lg = q ? q->lg : nullptr;
  b->ring_st = q ? q->st : nullptr;
  if (mc_batch_launches(b, metrics != nullptr, err, errlen) != 0) return RSSM_ERR_IO;
  if (metrics)
    ok = cudaMemcpyAsync(metrics, b->met, (size_t)RT * sizeof(mc_row_metrics),
                         cudaMemcpyDeviceToHost, s) == cudaSuccess;
  cudaError_t e = cudaStreamSynchronize(s);
  if (!ok || e != cudaSuccess)
    return rssm_fail(err, errlen, "spec round: %s",
                     cudaGetErrorString(e != cudaSuccess ? e : cudaGetLastError())),
           RSSM_ERR_IO;
  for (int r = 0; r < R; r++) b->rpos[r] += b->h_a[r]; /* rollback: the position moves by a */
  return RSSM_OK;
}

extern "C" int mc_batch_spec_logits(const mc_batch *b, float *logits, char *err, size_t errlen) {
  const int64_t V = b->g->cpu->cfg.V;
  if (cudaMemcpy(logits, b->logits, (size_t)b->RT * (size_t)V * sizeof(float),
                 cudaMemcpyDeviceToHost) != cudaSuccess)
    return rssm_fail(err, errlen, "logits download: %s", cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  return RSSM_OK;
}
