/* The byte model of `bench e2e` (docs/gpu-runtime.md, "bench e2e"): the bytes one decode step must
 * move at least (weights once, SSM state traffic per configuration, K/V reads), from a model's
 * config alone; the denominator of the "fraction of the byte limit" that issue 18's bar is stated
 * in. Pure C, built with or without CUDA. */
#ifndef RSSM_BENCH_E2E_E2E_BYTES_H
#define RSSM_BENCH_E2E_E2E_BYTES_H

#include <stdint.h>

#include "src/model/model_config.h"
#include "src/ssm/ssm_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Floats of the model that the GEMMs read (each projection once per row tile), of the MoE
 * experts, and of everything else (norms, conv weights, gates: read by element-wise kernels). */
typedef struct {
  int64_t rows[64], cols[64], count[64]; /* distinct GEMM shapes [nshape] */
  int nshape;
  int64_t gemm_floats, expert_floats, other_floats;
} e2e_weights;

typedef struct {
  double weight, state, kv, total; /* bytes per step */
} e2e_bytes;

/* The GEMMs of one step, as mc_step.cu issues them (one per block input, one per block output,
 * the MoE router / latent / shared-expert GEMMs, the lm_head), from the config alone; n_params:
 * the model's floats (model_load's count, equal to model_random_floats). */
void e2e_weights_of(const model_config *c, int64_t n_params, e2e_weights *w);

/* Bytes of one step of R = C K rows (C configurations x K streams) at mean position mean_pos:
 * the weights once (GEMM weights at wbytes an element, the rest fp32) plus the residual rows, each
 * configuration's SSM state traffic per row and layer (conventional: read + write; replay: the
 * checkpoint read every step, rewritten and read again every L steps; the ring not counted), the
 * conv windows read and written, and K/V rows 0..pos read and one written per attention layer. */
e2e_bytes e2e_bytes_per_step(const model_config *c, const e2e_weights *w, int wbytes,
                             const ssm_config *cfgs /* [C] */, int C, int K, double mean_pos);

#ifdef __cplusplus
}
#endif

#endif
