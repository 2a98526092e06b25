/* Device helpers shared by the model_cuda kernels (internal). The scalar functions are the CPU
 * runtime's (src/model/linalg.c) written for the device: the same IEEE operations in the same
 * order, compiled with --fmad=false; only expf / log1pf differ (CUDA's are within 2 ulp, glibc's
 * within 1), which is the documented source of few-ulp differences (docs/gpu-runtime.md). */
#ifndef RSSM_MODEL_CUDA_MC_DEVICE_CUH
#define RSSM_MODEL_CUDA_MC_DEVICE_CUH

#include <cuda_runtime.h>

#include <stdint.h>

namespace mc {

__device__ inline float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ inline float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

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

inline cudaStream_t as_stream(void *s) { return (cudaStream_t)s; }
inline int launch_ok() { return cudaGetLastError() == cudaSuccess ? 0 : -1; }
inline unsigned blocks_for(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }

}  // namespace mc

#endif
