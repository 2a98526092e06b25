/* The isolated measurements of `bench e2e` (e2e_micro.h). CUDA builds only. */
#ifdef RSSM_HAVE_CUDA

#include "src/bench_e2e/e2e_micro.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <gsl/gsl_statistics_double.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/model/model.h"
#include "src/model_cuda/mc_tile.h"
#include "src/ssm_cuda/ssm_cuda.h"

/* 2 x bytes / time of a device-to-device copy of `bytes` (median of 9 after one warm-up), in
 * bytes per second; 0 when the buffers cannot be allocated. */
double e2e_copy_bandwidth(int64_t bytes) {
  void *a = NULL, *b = NULL; /* [bytes] each */
  cudaStream_t s = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  double bw = 0;
  if (cudaMalloc(&a, (size_t)bytes) == cudaSuccess &&
      cudaMalloc(&b, (size_t)bytes) == cudaSuccess &&
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
      cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess &&
      cudaMemsetAsync(a, 1, (size_t)bytes, s) == cudaSuccess) {
    double t[9]; /* seconds per copy */
    int ok = cudaMemcpyAsync(b, a, (size_t)bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess;
    for (int i = 0; ok && i < 9; i++) {
      float ms = 0;
      ok = cudaEventRecord(e0, s) == cudaSuccess &&
           cudaMemcpyAsync(b, a, (size_t)bytes, cudaMemcpyDeviceToDevice, s) == cudaSuccess &&
           cudaEventRecord(e1, s) == cudaSuccess && cudaEventSynchronize(e1) == cudaSuccess &&
           cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
      t[i] = (double)ms * 1e-3;
    }
    if (ok) bw = 2.0 * (double)bytes / gsl_stats_median(t, 1, (size_t)9);
  }
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (s) cudaStreamDestroy(s);
  cudaFree(a);
  cudaFree(b);
  cudaGetLastError();
  return bw;
}

/* Seconds of one cuBLAS call Y[tile][rows] = X[tile][cols] W[rows][cols]^T as mc_step_gemm.cu
 * issues it (CUBLAS_OP_T, CUBLAS_OP_N, m = rows, n = tile, the model's row tile, k = cols), median
 * of 10 after 3 warm-ups. bf16: W and X bf16, fp32 accumulation and output (cublasGemmEx,
 * CUBLAS_COMPUTE_32F). Returns -1 when it cannot run. */
static double time_gemm(cublasHandle_t h, cudaStream_t s, int64_t rows, int64_t cols, int tile,
                        int bf16) {
  const size_t es = bf16 ? 2 : 4;
  void *W = NULL;  /* [rows][cols] fp32 or bf16 */
  void *X = NULL;  /* [tile][cols] fp32 or bf16 */
  float *Y = NULL; /* [tile][rows] */
  cudaEvent_t e0 = NULL, e1 = NULL;
  double out = -1;
  if (cudaMalloc(&W, (size_t)(rows * cols) * es) == cudaSuccess &&
      cudaMalloc(&X, (size_t)(tile * cols) * es) == cudaSuccess &&
      cudaMalloc((void **)&Y, (size_t)(tile * rows) * sizeof(float)) == cudaSuccess &&
      cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess &&
      cudaMemsetAsync(W, 0x3c, (size_t)(rows * cols) * es, s) == cudaSuccess && /* ~0.0115 */
      cudaMemsetAsync(X, 0x3c, (size_t)(tile * cols) * es, s) == cudaSuccess) {
    const float one = 1.0f, zero = 0.0f;
    double t[10]; /* seconds per call */
    int ok = 1;
    for (int i = 0; ok && i < 13; i++) {
      if (i >= 3) ok = cudaEventRecord(e0, s) == cudaSuccess;
      cublasStatus_t st;
      if (bf16)
        st = cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, tile, (int)cols, &one, W,
                          CUDA_R_16BF, (int)cols, X, CUDA_R_16BF, (int)cols, &zero, Y, CUDA_R_32F,
                          (int)rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
      else
        st = cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, tile, (int)cols, &one,
                         (const float *)W, (int)cols, (const float *)X, (int)cols, &zero, Y,
                         (int)rows);
      ok = ok && st == CUBLAS_STATUS_SUCCESS;
      if (ok && i >= 3) {
        float ms = 0;
        ok = cudaEventRecord(e1, s) == cudaSuccess && cudaEventSynchronize(e1) == cudaSuccess &&
             cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
        t[i - 3] = (double)ms * 1e-3;
      }
    }
    if (ok) out = gsl_stats_median(t, 1, (size_t)10);
  }
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  cudaFree(W);
  cudaFree(X);
  cudaFree(Y);
  cudaGetLastError();
  return out;
}

/* The step's GEMMs for R rows at both precisions, each on the row tile the runtime gives a model
 * of those GEMM weight bytes (mc_row_tile_for; the tile can differ between fp32 and bf16) over
 * mc_rows_pad(R, tile) rows. */
void e2e_micro_gemms(const e2e_weights *w, int R, e2e_micro *r) {
  cublasHandle_t h = NULL;
  cudaStream_t s = NULL;
  r->gemm_s[0] = r->gemm_s[1] = -1;
  r->gemm_tflops[0] = r->gemm_tflops[1] = 0;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess ||
      cublasCreate(&h) != CUBLAS_STATUS_SUCCESS || cublasSetStream(h, s) != CUBLAS_STATUS_SUCCESS ||
      cublasSetMathMode(h, CUBLAS_DEFAULT_MATH) != CUBLAS_STATUS_SUCCESS) {
    if (h) cublasDestroy(h);
    if (s) cudaStreamDestroy(s);
    return;
  }
  for (int p = 0; p < 2; p++) {
    const int tile = mc_row_tile_for(w->gemm_floats * (p ? 2 : 4), p);
    const int64_t tiles = mc_rows_pad(R, tile) / tile;
    double total = 0, flops = 0;
    for (int i = 0; i < w->nshape && total >= 0; i++) {
      const double t = time_gemm(h, s, w->rows[i], w->cols[i], tile, p);
      if (t < 0)
        total = -1;
      else {
        total += t * (double)(w->count[i] * tiles);
        flops += 2.0 * (double)(w->rows[i] * w->cols[i]) * tile * (double)(w->count[i] * tiles);
      }
    }
    r->gemm_s[p] = total;
    r->gemm_tflops[p] = total > 0 ? flops / total * 1e-12 : 0;
  }
  cublasDestroy(h);
  cudaStreamDestroy(s);
}

/* Mean seconds of ssm_cuda_step over 32 steps (after 3) for B rows of one layer of m's SSM kind
 * under cfg, times the number of SSM layers; -1 when it cannot run. */
double e2e_micro_ssm(const model *m, const ssm_config *cfg, int B, uint64_t seed) {
  const model_config *c = &m->cfg;
  int kind = -1;
  for (int i = 0; i < m->nblocks && kind < 0; i++)
    if (m->blocks[i].kind == BK_GDN || m->blocks[i].kind == BK_MAMBA2) kind = m->blocks[i].kind;
  if (kind < 0 || m->n_ssm == 0) return 0;
  ssm_dims d;
  if (kind == BK_GDN)
    d = (ssm_dims){SSM_GDN, (int)c->gdn_hv, (int)c->gdn_dv, (int)c->gdn_dk, (int)c->gdn_hk};
  else
    d = (ssm_dims){SSM_MAMBA2, (int)c->m_heads, (int)c->m_head_dim, (int)c->m_state,
                   (int)c->m_groups};
  uint32_t *seqs = malloc((size_t)B * sizeof *seqs); /* [B] */
  if (!seqs) return -1;
  for (int b = 0; b < B; b++) seqs[b] = (uint32_t)b;
  ssm_cuda_state st;
  char err[256];
  memset(&st, 0, sizeof st);
  if (ssm_cuda_build(&st, cfg, &d, B, seed, 0, seqs, err, sizeof err) != 0) {
    free(seqs);
    fprintf(stderr, "replayssm bench e2e: SSM micro-benchmark skipped: %s\n", err);
    return -1;
  }
  free(seqs);
  const int64_t H = d.H, G = d.G, dv = d.dv, dk = d.dk;
  float *alpha = NULL, *beta = NULL, *v = NULL, *k = NULL, *q = NULL, *o = NULL; /* device */
  cudaStream_t s = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  double out = -1;
  if (cudaMalloc((void **)&alpha, (size_t)(B * H) * 4) == cudaSuccess &&  /* [B][H] */
      cudaMalloc((void **)&beta, (size_t)(B * H) * 4) == cudaSuccess &&   /* [B][H] */
      cudaMalloc((void **)&v, (size_t)(B * H * dv) * 4) == cudaSuccess && /* [B][H][dv] */
      cudaMalloc((void **)&k, (size_t)(B * G * dk) * 4) == cudaSuccess && /* [B][G][dk] */
      cudaMalloc((void **)&q, (size_t)(B * G * dk) * 4) == cudaSuccess && /* [B][G][dk] */
      cudaMalloc((void **)&o, (size_t)(B * H * dv) * 4) == cudaSuccess && /* [B][H][dv] */
      cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess &&
      cudaEventCreate(&e0) == cudaSuccess && cudaEventCreate(&e1) == cudaSuccess &&
      cudaMemsetAsync(alpha, 0x3f, (size_t)(B * H) * 4, s) == cudaSuccess && /* ~0.747 */
      cudaMemsetAsync(beta, 0x3f, (size_t)(B * H) * 4, s) == cudaSuccess &&
      cudaMemsetAsync(v, 0x3c, (size_t)(B * H * dv) * 4, s) == cudaSuccess && /* ~0.0115 */
      cudaMemsetAsync(k, 0x3c, (size_t)(B * G * dk) * 4, s) == cudaSuccess &&
      cudaMemsetAsync(q, 0x3c, (size_t)(B * G * dk) * 4, s) == cudaSuccess) {
    ssm_cuda_inputs in = {alpha, kind == BK_GDN ? beta : NULL, v, k, q};
    int ok = 1;
    for (int i = 0; ok && i < 3; i++) ok = ssm_cuda_step(&st, &in, NULL, o, s) == 0;
    float ms = 0;
    ok = ok && cudaEventRecord(e0, s) == cudaSuccess;
    for (int i = 0; ok && i < 32; i++) ok = ssm_cuda_step(&st, &in, NULL, o, s) == 0;
    ok = ok && cudaEventRecord(e1, s) == cudaSuccess && cudaEventSynchronize(e1) == cudaSuccess &&
         cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess;
    if (ok) out = (double)ms * 1e-3 / 32.0 * (double)m->n_ssm;
  }
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (s) cudaStreamDestroy(s);
  void *ps[] = {alpha, beta, v, k, q, o};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) cudaFree(ps[i]);
  ssm_cuda_free(&st);
  cudaGetLastError();
  return out;
}

#endif /* RSSM_HAVE_CUDA */
