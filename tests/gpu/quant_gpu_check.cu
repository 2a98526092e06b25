/* GPU check (run on the device machine, not in CI): quantise 2^24 random values spread over many
 * magnitudes with every format, RTN and SR, on the GPU and on the CPU, and require identical stored
 * bytes and identical decoded bits. Exit status 0 only when every format agrees.
 *
 * Usage: gpu_check_quant [log2_total_values (default 24)] */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "quant/numerics.h"
#include "quant/quant.h"

#define CUDA_OK(call)                                                                           \
  do {                                                                                          \
    cudaError_t e_ = (call);                                                                    \
    if (e_ != cudaSuccess) {                                                                    \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_));    \
      exit(1);                                                                                  \
    }                                                                                           \
  } while (0)

/* Uniform [0,1) from Philox, so the input is reproducible and needs no other library. */
static float uniform01(uint64_t i, uint32_t salt) {
  uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), salt, 0x5eedu}, key[2] = {12345u, 678u}, out[4];
  rssm_philox4x32_10(ctr, key, out);
  return (float)(out[0] >> 8) * 5.9604644775390625e-08f;
}

/* x: [nmat][rows][cols]. Each matrix gets its own magnitude (2^-140 .. 2^60, so some sit in the
 * fp32 subnormal range and some overflow fp16/bf16) and each element spans 2^-12 .. 2^12 around it.
 * A few matrices hold a NaN or an inf, to check the non-finite paths agree too. */
static void make_input(std::vector<float> &x, int64_t nmat, int64_t rows, int64_t cols) {
  for (int64_t m = 0; m < nmat; m++) {
    int mat_exp = -140 + (int)(uniform01((uint64_t)m, 1) * 200.0f);
    for (int64_t e = 0; e < rows * cols; e++) {
      uint64_t i = (uint64_t)(m * rows * cols + e);
      float u = uniform01(i, 2), v = uniform01(i, 3);
      int ex = mat_exp - 12 + (int)(u * 24.0f);
      if (ex < -149) ex = -149;
      if (ex > 127) ex = 127;
      float mant = 1.0f + v; /* [1, 2) */
      float val = mant * rssm_exp2i(ex);
      if (uniform01(i, 4) < 0.5f) val = -val;
      x[(size_t)i] = val;
    }
    if (m % 97 == 5) x[(size_t)(m * rows * cols + 17)] = rssm_nan();
    if (m % 101 == 7) x[(size_t)(m * rows * cols + 3 * cols + 1)] = -rssm_inf();
  }
}

int main(int argc, char **argv) {
  int log2n = argc > 1 ? atoi(argv[1]) : 24;
  const int64_t rows = 80, cols = 200; /* dk = 200: not a multiple of 16, 32, 64 or 128 */
  int64_t nmat = (((int64_t)1 << log2n) + rows * cols - 1) / (rows * cols);
  int64_t n = nmat * rows * cols;
  std::vector<float> x((size_t)n);
  make_input(x, nmat, rows, cols);
  std::vector<uint64_t> ids((size_t)nmat);
  std::vector<uint32_t> events((size_t)nmat);
  for (int64_t m = 0; m < nmat; m++) {
    ids[(size_t)m] = qsr_matrix_id((uint32_t)(m % 7), (uint32_t)(m % 31), (uint32_t)m);
    events[(size_t)m] = (uint32_t)(m * 2654435761u);
  }
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s; %lld values as %lld matrices of %lldx%lld\n", prop.name, (long long)n,
         (long long)nmat, (long long)rows, (long long)cols);

  float *d_x, *d_y;
  uint64_t *d_ids;
  uint32_t *d_ev;
  CUDA_OK(cudaMalloc(&d_x, (size_t)n * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_y, (size_t)n * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_ids, (size_t)nmat * sizeof(uint64_t)));
  CUDA_OK(cudaMalloc(&d_ev, (size_t)nmat * sizeof(uint32_t)));
  CUDA_OK(cudaMemcpy(d_x, x.data(), (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_ids, ids.data(), (size_t)nmat * sizeof(uint64_t), cudaMemcpyHostToDevice));
  CUDA_OK(cudaMemcpy(d_ev, events.data(), (size_t)nmat * sizeof(uint32_t), cudaMemcpyHostToDevice));

  const char *formats[] = {"fp32", "bf16", "fp16", "fp8", "fp8_e5m2", "int8", "nvfp4", "mxfp8", "mxfp4",
                           "fp8@64", "int8@32", "nvfp4@32", "mxfp4@16"};
  int failures = 0;
  printf("%-14s %12s %14s %14s\n", "format", "blob bytes", "bytes differ", "values differ");
  for (const char *base : formats) {
    for (int sr = 0; sr < 2; sr++) {
      if (sr && strcmp(base, "fp32") == 0) continue;
      char text[64];
      snprintf(text, sizeof text, "%s%s", base, sr ? "/sr" : "");
      qformat f;
      qlayout L;
      char err[256];
      if (qformat_parse(text, &f, err, sizeof err) != 0 || qlayout_of(&f, rows, cols, &L) != 0) {
        printf("%s: %s\n", text, err);
        failures++;
        continue;
      }
      size_t blob_bytes = (size_t)(nmat * L.bytes_per_matrix);
      std::vector<uint8_t> blob_cpu(blob_bytes), blob_gpu(blob_bytes);
      std::vector<float> y_cpu((size_t)n), y_gpu((size_t)n);
      qsr_params host_sr = {0x0123456789abcdefULL, ids.data(), events.data(), QSR_STREAM_HP};
      qsr_params dev_sr = {0x0123456789abcdefULL, d_ids, d_ev, QSR_STREAM_HP};
      q_encode_cpu(&f, &L, nmat, x.data(), blob_cpu.data(), &host_sr);
      q_decode_cpu(&f, &L, nmat, blob_cpu.data(), y_cpu.data());
      uint8_t *d_blob;
      CUDA_OK(cudaMalloc(&d_blob, blob_bytes));
      q_encode_cuda(&f, &L, nmat, d_x, d_blob, &dev_sr, nullptr);
      q_decode_cuda(&f, &L, nmat, d_blob, d_y, nullptr);
      CUDA_OK(cudaGetLastError());
      CUDA_OK(cudaDeviceSynchronize());
      CUDA_OK(cudaMemcpy(blob_gpu.data(), d_blob, blob_bytes, cudaMemcpyDeviceToHost));
      CUDA_OK(cudaMemcpy(y_gpu.data(), d_y, (size_t)n * sizeof(float), cudaMemcpyDeviceToHost));
      CUDA_OK(cudaFree(d_blob));
      long long bytes_diff = 0, vals_diff = 0;
      for (size_t i = 0; i < blob_bytes; i++) bytes_diff += blob_cpu[i] != blob_gpu[i];
      /* NaN payloads are not compared: x86 propagates an operand's NaN, the GPU writes its
         canonical NaN; both are NaN, which is what the format promises */
      for (size_t i = 0; i < (size_t)n; i++) {
        if (rssm_isnan(y_cpu[i]) && rssm_isnan(y_gpu[i])) continue;
        vals_diff += memcmp(&y_cpu[i], &y_gpu[i], sizeof(float)) != 0;
      }
      printf("%-14s %12zu %14lld %14lld\n", text, blob_bytes, bytes_diff, vals_diff);
      if (bytes_diff || vals_diff) failures++;
    }
  }
  printf("%s: %d format(s) differ\n", failures ? "FAIL" : "PASS", failures);
  cudaFree(d_x);
  cudaFree(d_y);
  cudaFree(d_ids);
  cudaFree(d_ev);
  return failures ? 1 : 0;
}
