/* What the model-runtime device checks share (gpu_check_mc_kernels, gpu_check_mc_spec): random
 * inputs from Philox (values in +-[0.05, 1) times a scale, never zero, reproducible without
 * another library), device/host copies, and the per-case report with its two comparisons
 * (bit-exact; |g - r| <= rel |r| + abs). Every failed case adds one to g_fail; the checks exit
 * non-zero when it is not 0. Header-only: each check is one translation unit. */
#ifndef RSSM_TESTS_GPU_MC_CHECK_UTIL_CUH
#define RSSM_TESTS_GPU_MC_CHECK_UTIL_CUH

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "quant/numerics.h"
}

#define CUDA_OK(call)                                                                          \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));   \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static int g_fail = 0;

/* Uniform [0,1) from Philox (reproducible, no other library). */
static float uniform01(uint64_t i, uint32_t salt) {
  uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), salt, 0x6d63u}, key[2] = {2026u, 7u}, out[4];
  rssm_philox4x32_10(ctr, key, out);
  return (float)(out[0] >> 8) * 5.9604644775390625e-08f;
}

/* +-[0.05, 1) * scale, never zero. */
static std::vector<float> rnd(size_t n, uint32_t salt, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) {
    float u = uniform01(i, salt), s = uniform01(i, salt + 1000u) < 0.5f ? -1.0f : 1.0f;
    v[i] = s * (0.05f + 0.95f * u) * scale;
  }
  return v;
}

template <typename T> static T *dev(const std::vector<T> &h) {
  T *d = nullptr;
  CUDA_OK(cudaMalloc(&d, h.size() * sizeof(T) + 16));
  CUDA_OK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}
template <typename T> static std::vector<T> host(const T *d, size_t n) {
  std::vector<T> h(n);
  CUDA_OK(cudaDeviceSynchronize());
  CUDA_OK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

static void report(const char *name, int ok, const char *fmt, double a, double b) {
  printf("%-34s %s  ", name, ok ? "ok  " : "FAIL");
  printf(fmt, a, b);
  printf("\n");
  if (!ok) g_fail++;
}

/* Bit-identical comparison. */
static void exact(const char *name, const std::vector<float> &g, const std::vector<float> &r) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < r.size(); i++)
    if (memcmp(&g[i], &r[i], sizeof(float)) != 0 && !bad++) first = i;
  report(name, bad == 0, "%.0f differing of %.0f (bit-exact)", (double)bad, (double)r.size());
  if (bad) printf("    first at %zu: gpu %.9g cpu %.9g\n", first, g[first], r[first]);
}

/* |g - r| <= rel |r| + abs per element. */
static void close_to(const char *name, const std::vector<float> &g, const std::vector<float> &r,
                     double rel, double abs_tol) {
  double worst = 0.0;
  size_t bad = 0;
  for (size_t i = 0; i < r.size(); i++) {
    double d = fabs((double)g[i] - (double)r[i]), lim = rel * fabs((double)r[i]) + abs_tol;
    if (!(d <= lim)) bad++;
    double q = d / (fabs((double)r[i]) + 1e-30);
    if (q > worst) worst = q;
  }
  report(name, bad == 0, "max rel err %.3g, %.0f out of tolerance", worst, (double)bad);
}

#endif

