/* Device helpers of `replayssm bench kernels`: the copy kernel that measures the reference
 * bandwidth, and a device fill for the (large) timing inputs. */
#include <cuda_runtime.h>

#include <stdint.h>

#include "src/bench_kernels/bench_kernels.h"

namespace {

/* Grid-stride copy, 16 bytes per thread per iteration: the reference for "% of copy bandwidth"
 * (reads + writes), beside cudaMemcpyAsync device to device. */
__global__ void copy_kernel(float4 *dst /* [n] */, const float4 *src /* [n] */, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

__global__ void fill_kernel(float *x /* [n] */, size_t n, uint32_t salt, float lo, float hi) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)i * 0x9e3779b9u ^ (uint32_t)(i >> 32) ^ salt * 0x85ebca6bu;
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    h *= 0x846ca68bu;
    h ^= h >> 16;
    x[i] = lo + (hi - lo) * (((float)(h >> 8) + 0.5f) * 5.9604644775390625e-08f);
  }
}

}  // namespace

extern "C" int bench_copy_kernel(void *dst, const void *src, size_t bytes, void *stream) {
  int sms = 0, dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  copy_kernel<<<(unsigned)(sms > 0 ? sms * 8 : 1024), 512, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<float4 *>(dst), static_cast<const float4 *>(src), bytes / 16);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int bench_fill_uniform(float *x, size_t n, unsigned salt, float lo, float hi, void *stream) {
  if (n == 0) return 0;
  fill_kernel<<<1024, 256, 0, static_cast<cudaStream_t>(stream)>>>(x, n, salt, lo, hi);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
