/* One row of a batched GPU SSM state as host bytes (mc_ssm_rows.cu): checkpoints of GPU runs.
 * Synchronous. mc_ssm_row_bytes is the same for every row of a state. */
#ifndef RSSM_MODEL_CUDA_MC_SSM_ROWS_H
#define RSSM_MODEL_CUDA_MC_SSM_ROWS_H

#include <stdint.h>

#include "src/ssm_cuda/ssm_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

int64_t mc_ssm_row_bytes(const ssm_cuda_state *st);
/* Returns 0, or -1 (row out of range, CUDA error). */
int mc_ssm_row_save(const ssm_cuda_state *st, int b, unsigned char *buf /* [row_bytes] */);
int mc_ssm_row_load(ssm_cuda_state *st, int b, const unsigned char *buf /* [row_bytes] */);

#ifdef __cplusplus
}
#endif
#endif
