/* Bit-identity checks of the GPU SSM kernels against the CPU engine (src/ssm), shared by
 * gpu_check_ssm (tests/gpu/ssm_gpu_check.cu) and `replayssm bench kernels`, which checks every
 * kernel configuration it times (docs/bench-kernels.md).
 *
 * ssm_check_run: the batched CUDA engine (src/ssm_cuda) against B independent CPU ssm_state
 * objects fed the same Philox inputs, rows desynchronised (row b inactive for its first b % L
 * steps and whenever (7 step + 3 b) % 23 == 0), spec rows drawing their own acceptance lengths
 * (ssm_accept_draw, the same a on both sides), replay and spec runs flushed explicitly once.
 * Compared bit for bit: every output of every active row at every step; every 16 steps and at
 * the end every row's checkpoint blob(s), quantisation events, h, base, pending, flush count and
 * flushed flag.
 *
 * ssm_check_snapshot: the per-draft snapshot baseline of speculative verification
 * (src/bench_kernels/snapshot.h) against the conventional fp32 CPU engine: round r's draft s must
 * give the output of conventional step s after the accepted prefix, and its snapshot must be the
 * CPU's stored state after that step, byte for byte.
 *
 * Both are synchronous, need a CUDA device, and use all cores for the CPU side. */
#ifndef RSSM_BENCH_KERNELS_SSM_CHECK_H
#define RSSM_BENCH_KERNELS_SSM_CHECK_H

#include <stdint.h>

#include "src/ssm/ssm_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  long long outputs, out_diff;     /* output values compared, and how many differ */
  long long ckpt_bytes, ckpt_diff; /* checkpoint (or snapshot) bytes compared, differing */
  long long state_diff;            /* row comparisons whose bookkeeping differs */
  long long flushes;               /* stores made by the CPU rows (shows the flushes ran) */
  double max_rel;                  /* largest relative output difference (0 when identical) */
  int error;                       /* 1: the run could not complete (text says why) */
  char text[256];                  /* the error, or the first mismatch */
} ssm_check_tally;

/* Whether a tally shows complete agreement. */
int ssm_check_ok(const ssm_check_tally *t);

/* Runs `steps` operations (standard steps, or spec rounds of verify + commit) of configuration
 * cfg_text on a batch of B rows of shape dims, through captured CUDA Graphs when use_graph; the
 * active rows of replay and spec runs are flushed explicitly after operation flush_at (< 0:
 * never). Fills *t; returns 0 when everything agrees, 1 otherwise. */
int ssm_check_run(const char *cfg_text, const ssm_dims *dims, int B, int steps, int flush_at,
                  int use_graph, ssm_check_tally *t);

/* The same; with mixed_t (spec only) row b verifies its own n = (5 b + 3 step) % (T + 1) drafts
 * each round (ssm_cuda_verify_n against ssm_verify_n; 0 included: such a row must change
 * nothing and commits nothing), acceptance drawn within n, and every output a row did not write
 * must keep the sentinel it was filled with. */
int ssm_check_run_mixed(const char *cfg_text, const ssm_dims *dims, int B, int steps, int flush_at,
                        int use_graph, int mixed_t, ssm_check_tally *t);

/* `rounds` spec rounds of T drafts of the snapshot baseline on B rows; row b accepts
 * a = 1 + (b + round) % T drafts, so every acceptance length is exercised. Returns 0 when
 * every output and every snapshot byte agrees, 1 otherwise. */
int ssm_check_snapshot(const ssm_dims *dims, int B, int T, int rounds, ssm_check_tally *t);

#ifdef __cplusplus
}
#endif
#endif
