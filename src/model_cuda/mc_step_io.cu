/* mc_step_io.h: the step's inputs in and metrics out as kernels of its graph. */
#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_step_io.h"

using namespace mc;

namespace {

constexpr int IO_THREADS = 256;

__global__ void step_ingest_kernel(const int64_t *tok_h /* [R] */, const int *pos_h /* [R] */,
                                   const int64_t *tgt_h /* [K] or NULL */, int R, int K,
                                   int64_t *tok /* [R] */, int *pos /* [R] */,
                                   int64_t *tgt /* [K] */) {
  pdl_enter();
  const int stride = gridDim.x * blockDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < R; i += stride) {
    tok[i] = tok_h[i];
    pos[i] = pos_h[i];
  }
  if (tgt_h)
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < K; i += stride) tgt[i] = tgt_h[i];
}

__global__ void metrics_egress_kernel(const mc_row_metrics *met /* [R] */,
                                      mc_row_metrics *met_h /* [R] */, int R) {
  pdl_enter();
  for (int r = blockIdx.x * blockDim.x + threadIdx.x; r < R; r += gridDim.x * blockDim.x)
    met_h[r] = met[r];
}

unsigned io_blocks(int n) { return (unsigned)((n + IO_THREADS - 1) / IO_THREADS); }

}  // namespace

extern "C" int mc_step_ingest(const int64_t *tok_h, const int *pos_h, const int64_t *tgt_h, int R,
                              int K, int64_t *tok, int *pos, int64_t *tgt, void *stream) {
  const int n = R > K ? R : K;
  if (n < 1) return 0;
  pdl_launch(step_ingest_kernel, io_blocks(n), IO_THREADS, 0, as_stream(stream), tok_h, pos_h,
             tgt_h, R, K, tok, pos, tgt);
  return launch_ok();
}

extern "C" int mc_metrics_egress(const mc_row_metrics *met, mc_row_metrics *met_h, int R,
                                 void *stream) {
  if (R < 1) return 0;
  pdl_launch(metrics_egress_kernel, io_blocks(R), IO_THREADS, 0, as_stream(stream), met, met_h, R);
  return launch_ok();
}
