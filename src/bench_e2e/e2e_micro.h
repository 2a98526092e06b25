/* The isolated measurements of `bench e2e` (docs/gpu-runtime.md, "bench e2e"): the device's
 * copy bandwidth (the byte limit's rate), the step's GEMMs as cuBLAS calls on the runtime's row
 * tile, and the SSM engine's step, so that the step time can be split. CUDA builds only. */
#ifndef RSSM_BENCH_E2E_E2E_MICRO_H
#define RSSM_BENCH_E2E_E2E_MICRO_H

#ifdef RSSM_HAVE_CUDA

#include <stdint.h>

#include "src/bench_e2e/e2e_bytes.h"
#include "src/model/model.h"
#include "src/ssm/ssm_config.h"

typedef struct {
  double gemm_s[2];      /* the step's GEMMs (fp32, bf16), summed from isolated calls; -1 unknown */
  double gemm_tflops[2]; /* their rate */
  double ssm_s;          /* the step's ssm_cuda_step calls (every SSM layer, every configuration) */
} e2e_micro;

/* 2 x bytes / time of a device-to-device cudaMemcpyAsync of `bytes` (median of 9 after one
 * warm-up), in bytes per second; 0 when the buffers cannot be allocated. */
double e2e_copy_bandwidth(int64_t bytes);

/* The step's GEMMs for R rows at both precisions, each on the row tile the runtime gives a model
 * of those GEMM weight bytes (mc_row_tile_for) over mc_rows_pad(R, tile) rows, into r. */
void e2e_micro_gemms(const e2e_weights *w, int R, e2e_micro *r);

/* Mean seconds of ssm_cuda_step over 32 steps (after 3) for B rows of one layer of m's SSM kind
 * under cfg, times the number of SSM layers; -1 when it cannot run. */
double e2e_micro_ssm(const model *m, const ssm_config *cfg, int B, uint64_t seed);

#endif /* RSSM_HAVE_CUDA */

#endif
