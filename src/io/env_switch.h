/* The GPU runtime's A/B switches read from the environment (RSSM_PDL, RSSM_FUSED_STEP,
 * RSSM_GEMM_MMA16, RSSM_MAT4_ROWS, RSSM_MAT4_WARPS, RSSM_ATTN_TRIM, RSSM_L2_PREFETCH,
 * RSSM_L2_PREFETCH_STATE, RSSM_GEMM_LT: docs/gpu-runtime.md): one
 * reader, so that every switch treats an unset variable and a typo alike. */
#ifndef RSSM_IO_ENV_SWITCH_H
#define RSSM_IO_ENV_SWITCH_H

#ifdef __cplusplus
extern "C" {
#endif

/* The index in values [n] of the environment variable `name`'s value, or `unset` when it is not
 * set. Any other value gets one line on stderr naming the variable and the values expected, and
 * `unset`: a typo must neither pass unseen nor change a run. Callers read a switch once (a
 * function-local static), so that a run and the CUDA Graphs it captures launch alike. */
int rssm_env_switch(const char *name, const char *const *values, int n, int unset);

#ifdef __cplusplus
}
#endif

#endif
