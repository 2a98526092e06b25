/* mc_step_io.h: the steps' inputs in and metrics out as kernels of the step's graph. */
#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_step_io.h"

using namespace mc;

namespace {

constexpr int IO_THREADS = 256;

__global__ void step_ingest_kernel(const int *slot /* [1] */, const int64_t *tok_h /* [n][R] */,
                                   const int *pos_h /* [n][R] */,
                                   const int64_t *tgt_h /* [n][K] or NULL */, int R, int K,
                                   int64_t *tok /* [R] */, int *pos /* [R] */,
                                   int64_t *tgt /* [K] */) {
  pdl_enter();
  const int64_t s = *slot;
  for (int i = threadIdx.x; i < R; i += blockDim.x) {
    tok[i] = tok_h[s * R + i];
    pos[i] = pos_h[s * R + i];
  }
  if (tgt_h)
    for (int i = threadIdx.x; i < K; i += blockDim.x) tgt[i] = tgt_h[s * K + i];
}

__global__ void step_egress_kernel(int *slot /* [1] */, const mc_row_metrics *met /* [R] */,
                                   mc_row_metrics *met_h /* [n][R] or NULL */, int R) {
  pdl_enter();
  const int s = *slot;
  if (met_h)
    for (int r = threadIdx.x; r < R; r += blockDim.x) met_h[(int64_t)s * R + r] = met[r];
  __syncthreads(); /* every thread has read the slot before it moves on */
  if (threadIdx.x == 0) *slot = s + 1;
}

}  // namespace

extern "C" int mc_step_ingest(const int *slot, const int64_t *tok_h, const int *pos_h,
                              const int64_t *tgt_h, int R, int K, int64_t *tok, int *pos,
                              int64_t *tgt, void *stream) {
  pdl_launch(step_ingest_kernel, 1, IO_THREADS, 0, as_stream(stream), slot, tok_h, pos_h, tgt_h, R,
             K, tok, pos, tgt);
  return launch_ok();
}

extern "C" int mc_step_egress(int *slot, const mc_row_metrics *met, mc_row_metrics *met_h, int R,
                              void *stream) {
  pdl_launch(step_egress_kernel, 1, IO_THREADS, 0, as_stream(stream), slot, met, met_h, R);
  return launch_ok();
}
