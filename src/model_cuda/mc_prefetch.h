/* A GEMM's weights prefetched into L2 while the latency-bound kernels before it run (issue 18).
 *
 * At the 4B shapes a decode step alternates cuBLAS GEMMs that stream their weights at 75-80 % of
 * copy bandwidth with norms, activations and conv steps of 4-15 us each that move a few MB: while
 * those run, HBM is nearly idle. The batch's step therefore forks a side branch before such a
 * kernel that asks L2 for the first bytes of every weight row of the GEMM that follows (one bulk
 * prefetch per row, cp.async.bulk.prefetch.L2), and joins it before the GEMM: the GEMM's first
 * k-tiles then hit L2. A prefetch is a hint (it reads memory no kernel writes during a decode
 * and writes nothing), so the step computes the same bits with it or without it.
 *
 * The same for the SSM step: the first bytes of its stored state while the conv + prep runs.
 *
 * RSSM_L2_PREFETCH=<MiB>: the bytes prefetched ahead of one GEMM, RSSM_L2_PREFETCH_STATE=<MiB>
 * ahead of one SSM step (0 or unset: off), read once; the A/B switches of the measurement in
 * docs/gpu-results.md ("Session 38"). */
#ifndef RSSM_MODEL_CUDA_MC_PREFETCH_H
#define RSSM_MODEL_CUDA_MC_PREFETCH_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes prefetched ahead of one GEMM (RSSM_L2_PREFETCH: 0, 4, 8, 16, 32 or 64 MiB; unset or
 * another value, which gets one line on stderr: 0). Read once, through rssm_env_switch. */
int64_t mc_l2_prefetch_budget(void);
/* Bytes of an SSM layer's stored state (the engine's main checkpoint, from its start: the rows
 * the SSM step's first blocks read) prefetched while the conv + prep kernel before the step
 * runs (RSSM_L2_PREFETCH_STATE, the same values). */
int64_t mc_l2_prefetch_state_budget(void);

/* The bytes of each weight row to prefetch so that rows of row_bytes (the row stride) take at
 * most `budget` bytes in all: budget / rows rounded down to 16 (the bulk prefetch's unit), at
 * most row_bytes rounded down to 16; 0 (nothing worth a launch) below 256 bytes a row, or when
 * rows, row_bytes or budget is not positive. */
int64_t mc_l2_prefetch_span(int64_t rows, int64_t row_bytes, int64_t budget);

/* Launch the prefetch of the first `span` bytes (mc_l2_prefetch_span) of each of `rows` rows of
 * W, row stride row_bytes, on `stream` (a plain launch: it depends on nothing before it). W and
 * row_bytes must be 16-byte aligned. Returns 0, or -1 on a launch error or a bad argument. */
int mc_l2_prefetch(const void *W, int64_t rows, int64_t row_bytes, int64_t span, void *stream);

#ifdef __cplusplus
}
#endif

#endif
