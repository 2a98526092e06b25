/* The Mamba-2 dt limit: config.json's time_step_limit [lo, hi] clamps delta = softplus(dt +
 * dt_bias), as the reference implementations apply it, shared by the CPU runtime
 * (layer_mamba2.c), the GPU kernel (src/model_cuda/mc_kernels.cu) and its CPU reference
 * (mc_ref.c): `__host__ __device__` under nvcc, so CPU and GPU give the same bits.
 *
 * Where the limit applies (docs/contract.md, "Mamba-2 dt limit"): transformers and mamba_ssm pass
 * dt_limit to the chunked scan that processes a prompt (mamba_chunk_scan_combined), but their
 * single-token decode takes none (mamba_ssm's selective_state_update has no limit argument; the
 * cached decode of transformers 5.17.0 does not clamp: tests/fixtures/nemotron_h_dtlimit matches
 * only that). The harness compares against transformers fed a one-token prompt and then decoding
 * token by token, so position 0 is the prompt and every later position a decode step: the limit
 * applies to positions below RSSM_DT_LIMIT_POSITIONS only.
 *
 * As torch.clamp: a NaN stays NaN (the comparisons are false); with the default [0, inf] every
 * softplus value (>= 0) comes back unchanged, so models without a limit keep their bits. */
#ifndef RSSM_MODEL_DT_CLAMP_H
#define RSSM_MODEL_DT_CLAMP_H

#include <stdint.h>

#include "quant/rssm_hd.h"

/* Positions processed as the prompt (the reference's chunked scan, which applies the limit). */
#define RSSM_DT_LIMIT_POSITIONS 1

RSSM_HD float rssm_dt_clamp(float delta, float lo, float hi) {
  if (delta < lo) return lo;
  if (delta > hi) return hi;
  return delta;
}

/* delta at sequence position pos: clamped in the prompt, unchanged in single-token decode. */
RSSM_HD float rssm_dt_limit_at(float delta, int64_t pos, float lo, float hi) {
  return pos < RSSM_DT_LIMIT_POSITIONS ? rssm_dt_clamp(delta, lo, hi) : delta;
}

#endif
