/* Device helpers shared by the model_cuda kernels (internal). The scalar functions are the CPU
 * runtime's (src/model/linalg.c) written for the device: the same IEEE operations in the same
 * order, compiled with --fmad=false; only expf / log1pf differ (CUDA's are within 2 ulp, glibc's
 * within 1), which is the documented source of few-ulp differences (docs/gpu-runtime.md). */
#ifndef RSSM_MODEL_CUDA_MC_DEVICE_CUH
#define RSSM_MODEL_CUDA_MC_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdint.h>

namespace mc {

__device__ inline float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ inline float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
/* The MLP activations (swiglu_kernel, relu2_kernel and their fused bf16 forms, mc_fused.cu). */
__device__ inline float swiglu_of(float gate, float up) { return silu(gate) * up; }
__device__ inline float relu2_of(float x) {
  const float p = x > 0.0f ? x : 0.0f;
  return p * p;
}

/* dot_f32's combination of its 8 interleaved partial sums (linalg.c). */
__device__ inline float tree8(const float *p /* [8] */) {
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

/* Lane l (< 8) of dot_f32(a, b, n): a[i] * b[i] summed over i = l, l + 8, ... in ascending i
 * from +0, exactly the CPU's partial sum p[l] (its main loop and its tail visit the same i in
 * the same order). */
__device__ inline float dot8_lane(const float *a, const float *b, int64_t n, int l) {
  float s = 0.0f;
  for (int64_t i = l; i < n; i += 8) s = s + a[i] * b[i];
  return s;
}

/* One block normalises one group of gs floats (rmsnorm_kernel, and the fused add + norm of
 * mc_fused.cu, so that both compute the same bits): threads 0..7 make dot_f32's partial sums,
 * thread 0 the scale 1 / sqrt(sum / gs + eps), then every thread scales its elements,
 *   y = x * inv * (plus_one ? 1 + w : w)   (w NULL: no weight),
 *   y = y * silu(z)                        (z not NULL: the GDN output gate, mul_silu's),
 * and writes y, and yb = bf16(y) rounded to nearest even when yb is not NULL (the bf16 GEMM
 * input that f32_to_bf16 would make of y). Every thread of the block must call it. */
__device__ inline void rmsnorm_group(const float *xg /* [gs] */, float *yg /* [gs] */,
                                     __nv_bfloat16 *ybg /* [gs] or NULL */, int gs,
                                     const float *wg /* [gs] or NULL */, int plus_one, float eps,
                                     const float *zg /* [gs] or NULL */) {
  __shared__ float part[8];
  __shared__ float inv_s;
  if (threadIdx.x < 8) part[threadIdx.x] = dot8_lane(xg, xg, gs, threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) inv_s = 1.0f / sqrtf(tree8(part) / (float)gs + eps);
  __syncthreads();
  const float inv = inv_s;
  for (int i = threadIdx.x; i < gs; i += blockDim.x) {
    float v = xg[i] * inv;
    if (wg) v = v * (plus_one ? 1.0f + wg[i] : wg[i]);
    if (zg) v = v * silu(zg[i]);
    yg[i] = v;
    if (ybg) ybg[i] = __float2bfloat16_rn(v);
  }
}

inline cudaStream_t as_stream(void *s) { return (cudaStream_t)s; }
inline int launch_ok() { return cudaGetLastError() == cudaSuccess ? 0 : -1; }
inline unsigned blocks_for(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }
/* Blocks along a row of n elements for an element-wise kernel of `threads` threads, capped at
 * 1024: the kernels stride over the rest. */
inline unsigned row_blocks_for(int64_t n, int threads) {
  unsigned b = blocks_for(n, threads);
  return b < 1 ? 1 : (b > 1024 ? 1024 : b);
}

}  // namespace mc

#endif
