/* What fits in device memory (docs/gpu-runtime.md, "Memory budget"): the search behind the
 * batch's refusal message and the RSSM_CUDA_MEMINFO=1 report. Plain C, built with or without
 * CUDA, so that the CPU tests check it. */
#ifndef RSSM_MODEL_CUDA_MC_FIT_H
#define RSSM_MODEL_CUDA_MC_FIT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The largest n in [lo, hi] with need(ctx, n) <= budget, for need nondecreasing in n (binary
 * search, at most ~64 calls); lo - 1 when not even need(lo) fits. */
int64_t mc_fit_largest(int64_t (*need)(void *ctx, int64_t n), void *ctx, int64_t lo, int64_t hi,
                       int64_t budget);

/* One line (no newline) refusing a batch of R = C x K rows at max_ctx positions that needs
 * `need` bytes where `avail` are free, and naming what would fit: rows_fit rows at max_ctx
 * positions (as whole windows of the C configurations) and ctx_fit positions for the R rows
 * (0: none). */
void mc_fit_message(char *buf, size_t len, int64_t need, int R, int C, int64_t max_ctx,
                    int64_t avail, int64_t rows_fit, int64_t ctx_fit);

#ifdef __cplusplus
}
#endif
#endif
