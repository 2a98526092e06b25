/* `bench kernels`' workloads (bk_workload.h). */
#include "src/bench_kernels/bk_workload.h"

#include <cuda_profiler_api.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/format.h"
#include "src/io/cli_opts.h"
#include "src/model_cuda/mc_bandwidth.h"

#define CMD "bench kernels"

int bk_cuda_ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 1;
  cli_error(CMD, "CUDA error in %s: %s", what, cudaGetErrorString(e));
  return 0;
}

void bk_workload_free(bk_workload *w) {
  if (w->st)
    for (int c = 0; c < w->K; c++) ssm_cuda_free(&w->st[c]);
  if (w->sn)
    for (int c = 0; c < w->K; c++) bench_snap_free(&w->sn[c]);
  free(w->st);
  free(w->sn);
  if (w->in_buf) cudaFree(w->in_buf);
  if (w->o) cudaFree(w->o);
  if (w->d_a) cudaFree(w->d_a);
  if (w->s) cudaStreamDestroy(w->s);
  memset(w, 0, sizeof *w);
}

int bk_copies_for(double state_bytes) {
  int dev = 0, l2 = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
  if (l2 <= 0) l2 = 64 << 20;
  int k = (int)ceil(2.5 * (double)l2 / state_bytes);
  return k < 1 ? 1 : (k > 64 ? 64 : k);
}

int bk_workload_build(bk_workload *w, const char *cfg_text, const ssm_dims *d, int B, int snap_T, int accept,
                      float alpha_lo, float alpha_hi) {
  memset(w, 0, sizeof *w);
  char err[256];
  w->d = *d;
  w->B = B;
  if (snap_T > 0) {
    w->snap = 1;
    w->T = snap_T;
    w->n = snap_T;
  } else {
    if (ssm_config_parse(cfg_text, &w->cfg, err, sizeof err) != 0) {
      cli_error(CMD, "config '%s': %s", cfg_text, err);
      return -1;
    }
    w->spec = w->cfg.strategy == SSM_SPEC;
    w->T = w->spec ? w->cfg.T : 0;
    w->n = w->spec ? w->cfg.T : 1;
  }
  /* the state one operation touches: the read checkpoint (snapshot: T + 1 states) */
  double mat = (double)d->H * d->dv * d->dk * 4.0 * B;
  double touched = w->snap ? mat * (1 + w->T) : mat;
  if (!w->snap && w->cfg.strategy != SSM_CONVENTIONAL && w->cfg.split) {
    qlayout lay;
    if (qlayout_of(&w->cfg.lp, d->dv, d->dk, &lay) == 0) touched = (double)lay.bytes_per_matrix * d->H * B;
  }
  w->K = bk_copies_for(touched);
  if (!bk_cuda_ok(cudaStreamCreateWithFlags(&w->s, cudaStreamNonBlocking), "stream")) return -1;
  uint32_t *seqs = malloc((size_t)B * sizeof *seqs);
  if (!seqs) return -1;
  for (int b = 0; b < B; b++) seqs[b] = (uint32_t)b;
  if (w->snap) {
    w->sn = calloc((size_t)w->K, sizeof *w->sn);
    for (int c = 0; w->sn && c < w->K; c++)
      if (bench_snap_build(&w->sn[c], d, B, w->T, err, sizeof err) != 0) {
        cli_error(CMD, "snapshot state (B=%d T=%d, copy %d of %d): %s", B, w->T, c + 1, w->K, err);
        w->K = c;
        free(seqs);
        return -1;
      }
  } else {
    w->st = calloc((size_t)w->K, sizeof *w->st);
    for (int c = 0; w->st && c < w->K; c++)
      if (ssm_cuda_build(&w->st[c], &w->cfg, d, B, 0x5eedULL, 0, seqs, err, sizeof err) != 0) {
        cli_error(CMD, "'%s' state (B=%d, copy %d of %d): %s", cfg_text, B, c + 1, w->K, err);
        w->K = c;
        free(seqs);
        return -1;
      }
  }
  free(seqs);
  if (!w->st && !w->sn) return -1;
  const size_t nH = (size_t)B * w->n * d->H, nV = nH * d->dv, nK = (size_t)B * w->n * d->G * d->dk;
  const size_t total = 2 * nH + nV + 2 * nK;
  if (!bk_cuda_ok(cudaMalloc((void **)&w->in_buf, total * sizeof(float)), "input allocation") ||
      !bk_cuda_ok(cudaMalloc((void **)&w->o, nV * sizeof(float)), "output allocation") ||
      !bk_cuda_ok(cudaMalloc((void **)&w->d_a, (size_t)B * sizeof(int)), "acceptance allocation"))
    return -1;
  float *p = w->in_buf;
  w->in.alpha = p;
  w->in.beta = d->kind == SSM_GDN ? p + nH : NULL;
  w->in.v = p + 2 * nH;
  w->in.k = p + 2 * nH + nV;
  w->in.q = p + 2 * nH + nV + nK;
  /* the ranges of the first timings (decays 0.9 .. 0.9999, small keys): states stay bounded */
  int rc = mc_fill_uniform(p, nH, 1, alpha_lo, alpha_hi, w->s) | mc_fill_uniform(p + nH, nH, 2, 0.05f, 0.95f, w->s) |
           mc_fill_uniform(p + 2 * nH, nV, 3, -1.0f, 1.0f, w->s) |
           mc_fill_uniform(p + 2 * nH + nV, nK, 4, -0.1f, 0.1f, w->s) |
           mc_fill_uniform(p + 2 * nH + nV + nK, nK, 5, -0.1f, 0.1f, w->s);
  int *a = malloc((size_t)B * sizeof *a);
  if (!a) return -1;
  for (int b = 0; b < B; b++) a[b] = accept;
  cudaError_t e = cudaMemcpy(w->d_a, a, (size_t)B * sizeof(int), cudaMemcpyHostToDevice);
  free(a);
  if (rc != 0 || !bk_cuda_ok(e, "input upload") || !bk_cuda_ok(cudaDeviceSynchronize(), "workload build")) return -1;
  return 0;
}

/* One operation on every copy in turn: a step, or a round (verify + commit). */
static int wl_op_all(bk_workload *w) {
  int rc = 0;
  for (int c = 0; c < w->K; c++) {
    if (w->snap) {
      rc |= bench_snap_verify(&w->sn[c], &w->in, w->o, w->s);
      rc |= bench_snap_commit(&w->sn[c], w->d_a, w->s);
    } else if (w->spec) {
      rc |= ssm_cuda_verify(&w->st[c], &w->in, NULL, w->o, w->s);
      rc |= ssm_cuda_commit(&w->st[c], w->d_a, NULL, w->s);
    } else {
      rc |= ssm_cuda_step(&w->st[c], &w->in, NULL, w->o, w->s);
    }
  }
  return rc;
}

int bk_workload_graph(bk_workload *w, int reps, cudaGraphExec_t *exec) {
  cudaGraph_t g = NULL;
  *exec = NULL;
  if (!bk_cuda_ok(cudaStreamBeginCapture(w->s, cudaStreamCaptureModeThreadLocal), "graph capture")) return -1;
  int rc = 0;
  for (int r = 0; r < reps; r++) rc |= wl_op_all(w);
  cudaError_t e = cudaStreamEndCapture(w->s, &g);
  if (rc != 0 || !bk_cuda_ok(e, "graph capture")) {
    if (g) cudaGraphDestroy(g);
    if (rc != 0) cli_error(CMD, "an operation refused to launch during capture");
    return -1;
  }
  e = cudaGraphInstantiate(exec, g, 0);
  cudaGraphDestroy(g);
  return bk_cuda_ok(e, "graph instantiation") ? 0 : -1;
}

int bk_time_graphs(bk_workload *w, cudaGraphExec_t *g /* [ng] */, int ng, int warmup, int iters,
                       double *ms /* [iters][ng] */) {
  cudaEvent_t ev[9];
  if (ng > 8) return -1;
  for (int j = 0; j <= ng; j++)
    if (!bk_cuda_ok(cudaEventCreate(&ev[j]), "event")) return -1;
  int ok = 1;
  for (int it = 0; ok && it < warmup + iters; it++) {
    /* a profiler run with --profile-from-start off (scripts/bench/kernels_profile.sh) sees only
     * the timed replays, not the CPU checks' launches nor the warm-up; without one, a no-op */
    if (it == warmup) cudaProfilerStart();
    ok &= bk_cuda_ok(cudaEventRecord(ev[0], w->s), "event record");
    for (int j = 0; ok && j < ng; j++) {
      ok &= bk_cuda_ok(cudaGraphLaunch(g[j], w->s), "graph launch");
      ok &= bk_cuda_ok(cudaEventRecord(ev[j + 1], w->s), "event record");
    }
    ok = ok && bk_cuda_ok(cudaEventSynchronize(ev[ng]), "timed replay");
    for (int j = 0; ok && j < ng && it >= warmup; j++) {
      float t = 0.0f;
      ok &= bk_cuda_ok(cudaEventElapsedTime(&t, ev[j], ev[j + 1]), "event time");
      ms[(size_t)(it - warmup) * ng + j] = t;
    }
  }
  cudaProfilerStop();
  for (int j = 0; j <= ng; j++) cudaEventDestroy(ev[j]);
  return ok ? 0 : -1;
}
