/* MoE blocks on the GPU (mc_kernels.h; the CPU's moe_forward in src/model/layer_mlp.c).
 *
 * The router logits come from a cuBLAS GEMM (mc_step.cu); then
 *   moe_route_kernel    thread per row: the CPU's routing statement for statement (Qwen softmax
 *                       top-k renormalised; Nemotron-H sigmoid scores, correction bias, group
 *                       selection, norm and scaling), ties to the lower index, the selected
 *                       (expert, weight) pairs sorted by expert id (HF's index_add_ order);
 *   moe_up_kernel       warp per (row, slot, output row i): up_i (and gate_i) of the slot's
 *                       expert on the row's input, then SiLU(gate) * up or relu(up)^2;
 *   moe_down_kernel     warp per (row, slot, output o): the expert's down projection;
 *   moe_combine_kernel  thread per (row, o): acc = sum_j w_j y_j in ascending slot (= expert id)
 *                       order from 0, as the CPU.
 * Expert dot products are warp sums (lane l takes i = l + 32m, then the butterfly), not the CPU's
 * 8-lane order: like the GEMMs they differ by reassociation (docs/gpu-runtime.md). The shared
 * expert runs through the dense path (GEMMs, mc_swiglu / mc_relu2) and mc_moe_shared_add. */
#include "src/model/moe_route.h"
#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_kernels.h"

using namespace mc;

namespace {

constexpr int MOE_WARPS = 8;

__global__ void moe_route_kernel(const float *logits /* [R][ldl] */, int64_t ldl,
                                 const float *corr_bias /* [E] or NULL */, int qwen, int64_t E,
                                 int64_t k, int norm_topk, float routed_scaling, int64_t n_group,
                                 int64_t topk_group, float *scratch /* [R][4][E] */,
                                 int32_t *idx /* [R][k] */, float *wt /* [R][k] */, int R) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= R) return;
  const float *lg = logits + (int64_t)r * ldl; /* [E] */
  rssm_moe_route(lg, E, k, qwen, corr_bias, norm_topk, routed_scaling, n_group, topk_group,
                 scratch + (int64_t)r * 4 * E, idx + (int64_t)r * k, wt + (int64_t)r * k);
}

__device__ inline float warp_dot(const float *a, const float *b, int64_t n, int lane) {
  float s = 0.0f;
  for (int64_t i = lane; i < n; i += 32) s = s + a[i] * b[i];
  for (int off = 16; off >= 1; off >>= 1) s = s + __shfl_xor_sync(0xffffffffu, s, off);
  return s;
}

/* grid (ceil(I / MOE_WARPS), R * k): warp w of block (x, rs) computes row i = x MOE_WARPS + w */
__global__ void moe_up_kernel(const float *x /* [R][ldx] */, int64_t ldx,
                              const int32_t *idx /* [R][k] */, const float *w_gate,
                              const float *w_up /* [E][I][Din] */, float *h /* [R][k][I] */,
                              int64_t k, int64_t I, int64_t Din) {
  const int lane = threadIdx.x % 32;
  const int64_t i = (int64_t)blockIdx.x * MOE_WARPS + threadIdx.x / 32;
  const int64_t rs = blockIdx.y, r = rs / k;
  if (i >= I) return;
  const int64_t e = idx[rs];
  const float *xr = x + r * ldx; /* [Din] */
  const float u = warp_dot(w_up + (e * I + i) * Din, xr, Din, lane);
  float a;
  if (w_gate) {
    const float g = warp_dot(w_gate + (e * I + i) * Din, xr, Din, lane);
    a = silu(g) * u;
  } else {
    const float rl = u > 0.0f ? u : 0.0f;
    a = rl * rl;
  }
  if (lane == 0) h[rs * I + i] = a;
}

__global__ void moe_down_kernel(const float *h /* [R][k][I] */, const int32_t *idx /* [R][k] */,
                                const float *w_down /* [E][Din][I] */,
                                float *y /* [R][k][Din] */, int64_t I, int64_t Din) {
  const int lane = threadIdx.x % 32;
  const int64_t o = (int64_t)blockIdx.x * MOE_WARPS + threadIdx.x / 32;
  const int64_t rs = blockIdx.y;
  if (o >= Din) return;
  const int64_t e = idx[rs];
  const float v = warp_dot(w_down + (e * Din + o) * I, h + rs * I, I, lane);
  if (lane == 0) y[rs * Din + o] = v;
}

__global__ void moe_combine_kernel(const float *y /* [R][k][Din] */, const float *wt /* [R][k] */,
                                   float *acc /* [R][Din] */, int64_t k, int64_t Din) {
  const int64_t r = blockIdx.y;
  for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < Din;
       o += (int64_t)gridDim.x * blockDim.x) {
    float a = 0.0f;
    for (int64_t j = 0; j < k; j++) a = a + wt[r * k + j] * y[(r * k + j) * Din + o];
    acc[r * Din + o] = a;
  }
}

__global__ void moe_shared_add_kernel(float *y /* [R][H] */, const float *sh /* [R][H] */,
                                      const float *gate_src /* [R][ldg] or NULL */, int64_t ldg,
                                      int64_t H) {
  const int64_t r = blockIdx.y;
  const float gate = gate_src ? sigmoid(gate_src[r * ldg]) : 1.0f;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < H;
       i += (int64_t)gridDim.x * blockDim.x)
    y[r * H + i] = y[r * H + i] + gate * sh[r * H + i];
}

unsigned cap_blocks(int64_t n, int threads) {
  unsigned b = blocks_for(n, threads);
  return b < 1 ? 1 : (b > 1024 ? 1024 : b);
}

}  // namespace

extern "C" int mc_moe_route(const float *logits, int64_t ldl, const float *corr_bias, int qwen,
                            int64_t E, int64_t k, int norm_topk, float routed_scaling,
                            int64_t n_group, int64_t topk_group, float *scratch, int32_t *idx,
                            float *wt, int R, void *stream) {
  if (R < 1) return 0;
  if (k < 1 || k > E || topk_group > 64 || n_group < 1) return -1;
  moe_route_kernel<<<blocks_for(R, 64), 64, 0, as_stream(stream)>>>(
      logits, ldl, corr_bias, qwen, E, k, norm_topk, routed_scaling, n_group, topk_group, scratch,
      idx, wt, R);
  return launch_ok();
}

extern "C" int mc_moe_experts(const float *x, int64_t ldx, const int32_t *idx, const float *wt,
                              const float *w_gate, const float *w_up, const float *w_down,
                              float *h, float *y, float *acc, int R, int64_t k, int64_t I,
                              int64_t Din, void *stream) {
  if (R < 1) return 0;
  if ((int64_t)R * k > 65535) return -1; /* grid.y; split the batch (not needed at our sizes) */
  cudaStream_t s = as_stream(stream);
  const unsigned rk = (unsigned)(R * k);
  moe_up_kernel<<<dim3(blocks_for(I, MOE_WARPS), rk), MOE_WARPS * 32, 0, s>>>(
      x, ldx, idx, w_gate, w_up, h, k, I, Din);
  if (launch_ok() != 0) return -1;
  moe_down_kernel<<<dim3(blocks_for(Din, MOE_WARPS), rk), MOE_WARPS * 32, 0, s>>>(h, idx, w_down,
                                                                                  y, I, Din);
  if (launch_ok() != 0) return -1;
  moe_combine_kernel<<<dim3(cap_blocks(Din, 256), (unsigned)R), 256, 0, s>>>(y, wt, acc, k, Din);
  return launch_ok();
}

extern "C" int mc_moe_shared_add(float *y, const float *sh, const float *gate_src, int64_t ldg,
                                 int R, int64_t H, void *stream) {
  if (R < 1) return 0;
  moe_shared_add_kernel<<<dim3(cap_blocks(H, 256), (unsigned)R), 256, 0, as_stream(stream)>>>(
      y, sh, gate_src, ldg, H);
  return launch_ok();
}
