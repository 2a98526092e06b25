/* `bench kernels`' workloads (docs/bench-kernels.md, "Method"): K copies of a batched GPU SSM state
 * (or of the snapshot baseline's), so that the states in rotation exceed 2.5 x L2 and none sits in
 * L2 between its uses, with device-filled inputs shared by the copies; CUDA Graphs of whole
 * operations (a step, or a round of verify + commit) over every copy in turn, and their replays
 * timed with CUDA events. CUDA builds only. */
#ifndef RSSM_BENCH_KERNELS_BK_WORKLOAD_H
#define RSSM_BENCH_KERNELS_BK_WORKLOAD_H

#include <cuda_runtime_api.h>

#include "src/bench_kernels/snapshot.h"
#include "src/ssm/ssm_config.h"
#include "src/ssm/ssm_engine.h"
#include "src/ssm_cuda/ssm_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  ssm_config cfg;
  ssm_dims d;
  int B, n, K, spec, snap, T;
  ssm_cuda_state *st;     /* [K] (engine workloads) */
  bench_snap_state *sn;   /* [K] (snapshot baseline) */
  float *in_buf;          /* device: alpha, beta, v, k, q of [B][n][...] back to back */
  ssm_cuda_inputs in;
  float *o;               /* device [B][n][H][dv] */
  int *d_a;               /* device [B] acceptance lengths */
  cudaStream_t s;
} bk_workload;

/* 1 when e is cudaSuccess; else 0 after one line naming `what`. */
int bk_cuda_ok(cudaError_t e, const char *what);

/* Copies so that the states in rotation exceed 2.5 x L2 (at most 64). */
int bk_copies_for(double state_bytes);

/* Builds K copies of cfg_text (snap_T > 0: the snapshot baseline with T drafts instead) at batch
 * B, with device-filled inputs: decays alpha ~ U(alpha_lo, alpha_hi), the same at every step of a
 * graph (0.9 .. 0.9999 keeps the states bounded; part skip times its threshold on faster decays);
 * a[b] = accept for spec and snapshot rounds. Returns 0 or -1 (one line printed); w is then for
 * bk_workload_free either way. */
int bk_workload_build(bk_workload *w, const char *cfg_text, const ssm_dims *d, int B, int snap_T, int accept,
                      float alpha_lo, float alpha_hi);
void bk_workload_free(bk_workload *w);

/* A graph of `reps` operations on every copy. Returns 0 or -1. */
int bk_workload_graph(bk_workload *w, int reps, cudaGraphExec_t *exec);

/* Replays the ng graphs in order, warmup + iters times; ms[i * ng + j] = graph j's time in replay
 * i (after warm-up). Returns 0 or -1. */
int bk_time_graphs(bk_workload *w, cudaGraphExec_t *g /* [ng] */, int ng, int warmup, int iters,
                   double *ms /* [iters][ng] */);

#ifdef __cplusplus
}
#endif
#endif
