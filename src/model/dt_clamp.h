/* The Mamba-2 dt clamp to config.json's time_step_limit [lo, hi] (transformers' and mamba_ssm's
 * dt_limit, applied after the softplus), shared by the CPU runtime (layer_mamba2.c), the GPU
 * kernel (src/model_cuda/mc_kernels.cu) and its CPU reference (mc_ref.c): `__host__ __device__`
 * under nvcc. As torch.clamp: a NaN stays NaN (the comparisons are false); with the default
 * [0, inf] every softplus value (>= 0) comes back unchanged, so models without a limit keep their
 * bits. */
#ifndef RSSM_MODEL_DT_CLAMP_H
#define RSSM_MODEL_DT_CLAMP_H

#include "quant/rssm_hd.h"

RSSM_HD float rssm_dt_clamp(float delta, float lo, float hi) {
  if (delta < lo) return lo;
  if (delta > hi) return hi;
  return delta;
}

#endif
