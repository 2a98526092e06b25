/* The benchmarks' copy bandwidth and device fill (mc_bandwidth.h); moved here from
 * src/bench_kernels/bench_device.cu so that `bench attention` measures the copy the same way. */
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdlib.h>

#include "src/model_cuda/mc_bandwidth.h"

#include <cstdio>
#include <ctime>

#include <gsl/gsl_statistics_double.h>

extern "C" {
#include "src/io/cli_opts.h"
}

namespace {

/* Grid-stride copy, 16 bytes per thread per iteration: the reference for "% of copy bandwidth"
 * (reads + writes), beside cudaMemcpyAsync device to device. */
__global__ void copy_kernel(float4 *dst /* [n] */, const float4 *src /* [n] */, size_t n) {
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

/* Reads src and writes nothing (the store never happens for finite data, but the compiler cannot
 * know): evicts L2 without leaving dirty lines whose write-back would land in the next timed
 * interval, as a memset flush does. */
__global__ void read_kernel(const float4 *src /* [n] */, size_t n, float *sink /* [1] */) {
  float acc = 0.0f;
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
    const float4 x = src[i];
    acc = acc + x.x + x.y + x.z + x.w;
  }
  if (acc == -1.2345e-30f) *sink = acc;
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

extern "C" int mc_copy_kernel(void *dst, const void *src, size_t bytes, void *stream) {
  int sms = 0, dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  copy_kernel<<<(unsigned)(sms > 0 ? sms * 8 : 1024), 512, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<float4 *>(dst), static_cast<const float4 *>(src), bytes / 16);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int mc_read_kernel(const void *src, size_t bytes, float *sink, void *stream) {
  int sms = 0, dev = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  read_kernel<<<(unsigned)(sms > 0 ? sms * 8 : 1024), 512, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const float4 *>(src), bytes / 16, sink);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int mc_fill_uniform(float *x, size_t n, unsigned salt, float lo, float hi, void *stream) {
  if (n == 0) return 0;
  fill_kernel<<<1024, 256, 0, static_cast<cudaStream_t>(stream)>>>(x, n, salt, lo, hi);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

extern "C" double mc_copy_bandwidth(int iters, double *kernel_gbps, double *memcpy_gbps) {
  const size_t bytes = (size_t)1 << 30;
  void *a = NULL, *b = NULL;
  cudaStream_t s = NULL;
  cudaEvent_t e0 = NULL, e1 = NULL;
  double best = -1.0;
  if (iters < 1) iters = 1;
  double *ms = static_cast<double *>(malloc((size_t)iters * sizeof *ms));
  if (!ms || cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess ||
      cudaMemset(a, 1, bytes) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess ||
      cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess)
    goto done;
  for (int way = 0; way < 2; way++) {
    for (int it = -3; it < iters; it++) {
      cudaEventRecord(e0, s);
      int rc = way == 0 ? mc_copy_kernel(b, a, bytes, s)
                        : (cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, s) != cudaSuccess);
      cudaEventRecord(e1, s);
      if (rc != 0 || cudaEventSynchronize(e1) != cudaSuccess) {
        best = -1.0;
        goto done;
      }
      float t = 0.0f;
      cudaEventElapsedTime(&t, e0, e1);
      if (it >= 0) ms[it] = t;
    }
    qsort(ms, (size_t)iters, sizeof *ms, cmp_double);
    const double med = iters % 2 ? ms[iters / 2] : 0.5 * (ms[iters / 2 - 1] + ms[iters / 2]);
    const double g = 2.0 * (double)bytes / (med * 1e6);
    if (way == 0) *kernel_gbps = g;
    else *memcpy_gbps = g;
    if (g > best) best = g;
  }
done:
  free(ms);
  if (a) cudaFree(a);
  if (b) cudaFree(b);
  if (e0) cudaEventDestroy(e0);
  if (e1) cudaEventDestroy(e1);
  if (s) cudaStreamDestroy(s);
  return best;
}

extern "C" int mc_bench_device(const char *cmd, struct cudaDeviceProp *prop, char *date,
                               size_t datelen) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev < 1) {
    cli_error(cmd, "no CUDA device (cudaGetDeviceCount: %s)",
              e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 2;
  }
  e = cudaGetDeviceProperties(prop, 0);
  if (e != cudaSuccess) {
    cli_error(cmd, "CUDA error: device properties: %s", cudaGetErrorString(e));
    return 1;
  }
  time_t now = time(NULL);
  strftime(date, datelen, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
  return 0;
}

extern "C" double mc_bench_copy_line(const char *cmd, int iters) {
  double kg = 0.0, mg = 0.0;
  const double copy = mc_copy_bandwidth(iters, &kg, &mg);
  if (copy <= 0.0) {
    cli_error(cmd, "CUDA error while measuring the copy bandwidth (1 GiB device to device)");
    return -1.0;
  }
  printf("copy bandwidth (1 GiB, read + write): kernel %.1f GB/s, cudaMemcpy D2D %.1f GB/s; "
         "reference %.1f GB/s\n", kg, mg, copy);
  return copy;
}

extern "C" double mc_bench_median_us(const char *cmd, const char *what, mc_bench_launch launch,
                                     void *ctx, int warmup, int reps, void *flush,
                                     size_t flush_bytes, cudaEvent_t e0, cudaEvent_t e1) {
  double *ms = static_cast<double *>(malloc((size_t)reps * sizeof *ms)); /* [reps] */
  if (!ms) {
    cli_error(cmd, "%s: out of host memory for %d timings", what, reps);
    return -1.0;
  }
  double med = -1.0;
  for (int it = -warmup; it < reps; it++) {
    if (flush && mc_read_kernel(flush, flush_bytes, (float *)((char *)flush + flush_bytes), NULL) != 0) {
      cli_error(cmd, "CUDA error in the L2 flush (launch)");
      goto done;
    }
    cudaEventRecord(e0, NULL);
    {
      const int rc = launch(ctx);
      cudaEventRecord(e1, NULL);
      if (rc != 0) {
        cli_error(cmd, "%s failed to launch (%d)", what, rc);
        goto done;
      }
    }
    {
      const cudaError_t e = cudaEventSynchronize(e1);
      if (e != cudaSuccess) {
        cli_error(cmd, "CUDA error in %s: %s", what, cudaGetErrorString(e));
        goto done;
      }
    }
    float t = 0.0f;
    cudaEventElapsedTime(&t, e0, e1);
    if (it >= 0) ms[it] = t;
  }
  med = 1000.0 * gsl_stats_median(ms, 1, (size_t)reps); /* reorders ms */
done:
  free(ms);
  return med;
}
