/* The small-GEMM lab's entry point (gemm_lab.h): the cuBLAS handle, X's bf16 rounding (as the
 * runtime's f32_to_bf16), variant 0 (the runtime's per-tile cuBLAS calls, copied from gemm() in
 * mc_step_gemm.cu, which this lab does not change) and the dispatch to the stream kernels
 * (gemm_lab_stream.cu), to the runtime's tensor-core kernels (mc_gemm_mma.cu, mc_gemm_wide.cu) and
 * to cuBLASLt's ranked algorithms (mc_gemm_lt.cu); the device fill of random weights for the bench
 * and the check. */
#include <cublas_v2.h>
#include <cuda_bf16.h>

#include "src/model_cuda/gemm_lab.h"
#include "src/model_cuda/gemm_lab_stream.cuh"
#include "src/model_cuda/mc_gemm_lt.h"
#include "src/model_cuda/mc_gemm_mma.h"
#include "src/model_cuda/mc_gemm_wide.h"

struct gemm_lab_ctx {
  cublasHandle_t blas;
  mc_gemm_lt *lt; /* the lt variants' handle and plans */
  void *ws; /* [GEMM_LAB_WS] bytes: the handle's own workspace, as the runtime's batch */
  cudaStream_t stream;
  int sms;               /* the device's multiprocessors (variant 7's split count) */
  float *wide_scratch;   /* [mc_gemm_wide_scratch_max(sms)] variant 7's partial sums */
};

namespace {

constexpr size_t GEMM_LAB_WS = (size_t)32 << 20;

/* xb[i] = bf16(x[i]), round to nearest even (the runtime's f32_to_bf16_kernel) */
__global__ void round_bf16_kernel(const float *__restrict__ x /* [n] */,
                                  __nv_bfloat16 *__restrict__ xb /* [n] */, int64_t n) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    xb[i] = __float2bfloat16_rn(x[i]);
}

int round_bf16(const float *x, uint16_t *xb, int64_t n, cudaStream_t s) {
  if (n <= 0) return 0;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  round_bf16_kernel<<<(unsigned)blocks, 256, 0, s>>>(x, reinterpret_cast<__nv_bfloat16 *>(xb), n);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

/* splitmix64's finaliser */
__device__ inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

__global__ void fill_kernel(float *__restrict__ wf /* [n] or NULL */,
                            __nv_bfloat16 *__restrict__ wb /* [n] or NULL */, int64_t n,
                            uint32_t seed) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    const uint64_t h = mix(((uint64_t)seed << 40) ^ (uint64_t)i ^ 0x9e3779b97f4a7c15ULL);
    const float u = (float)(h >> 40) * 5.9604644775390625e-08f; /* [0, 1), 24 bits */
    float v = 0.05f + 0.95f * u;
    if (h & 1) v = -v;
    if (wf) wf[i] = v;
    else wb[i] = __float2bfloat16_rn(v);
  }
}

/* Variant 0: gemm() of mc_step_gemm.cu, one call of n = tile rows per tile of the Ra padded rows. */
int run_cublas(gemm_lab_ctx *c, gemm_lab_prec p, const void *W, const float *X, const uint16_t *xb,
               float *Y, int64_t Ra, int64_t rows, int64_t cols, int tile) {
  const float one = 1.0f, zero = 0.0f;
  for (int64_t r0 = 0; r0 < Ra; r0 += tile) {
    cublasStatus_t st;
    if (p == GEMM_LAB_BF16)
      st = cublasGemmEx(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, tile, (int)cols, &one, W,
                        CUDA_R_16BF, (int)cols, xb + r0 * cols, CUDA_R_16BF, (int)cols, &zero,
                        Y + r0 * rows, CUDA_R_32F, (int)rows, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT);
    else
      st = cublasSgemm(c->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, tile, (int)cols, &one,
                       static_cast<const float *>(W), (int)cols, X + r0 * cols, (int)cols, &zero,
                       Y + r0 * rows, (int)rows);
    if (st != CUBLAS_STATUS_SUCCESS) return -1;
  }
  return 0;
}

}  // namespace

extern "C" gemm_lab_ctx *gemm_lab_create(void *stream) {
  gemm_lab_ctx *c = new gemm_lab_ctx();
  c->stream = static_cast<cudaStream_t>(stream);
  bool ok = cublasCreate(&c->blas) == CUBLAS_STATUS_SUCCESS;
  if (!ok) c->blas = nullptr;
  ok = ok && cublasSetStream(c->blas, c->stream) == CUBLAS_STATUS_SUCCESS;
  ok = ok && (c->lt = mc_gemm_lt_create()) != nullptr;
  ok = ok && cublasSetMathMode(c->blas, CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS; /* no TF32 */
  ok = ok && cudaMalloc(&c->ws, GEMM_LAB_WS) == cudaSuccess;
  ok = ok && cublasSetWorkspace(c->blas, c->ws, GEMM_LAB_WS) == CUBLAS_STATUS_SUCCESS;
  int dev = 0;
  ok = ok && cudaGetDevice(&dev) == cudaSuccess &&
       cudaDeviceGetAttribute(&c->sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess;
  ok = ok &&
       cudaMalloc((void **)&c->wide_scratch, mc_gemm_wide_scratch_max(c->sms) * sizeof(float)) ==
           cudaSuccess;
  (void)mc_gemm_wide_prepare(); /* before any capture; a device without it: variant 7 refuses */
  if (!ok) {
    gemm_lab_destroy(c);
    return nullptr;
  }
  return c;
}

extern "C" void gemm_lab_destroy(gemm_lab_ctx *c) {
  if (!c) return;
  mc_gemm_lt_destroy(c->lt);
  if (c->blas) cublasDestroy(c->blas);
  if (c->ws) cudaFree(c->ws);
  cudaFree(c->wide_scratch);
  delete c;
}

extern "C" int gemm_lab_run(gemm_lab_ctx *c, int variant, gemm_lab_prec p, const void *W,
                            const float *X, uint16_t *xb, float *scratch, float *Y, int R,
                            int64_t rows, int64_t cols, int tile, int nsplit) {
  if (!c || R < 1 || R > GEMM_LAB_MAX_R || rows < 1 || cols < 1 || tile < 1 ||
      rows > INT32_MAX || cols > INT32_MAX)
    return -2;
  if (variant == GEMM_LAB_STREAM || variant == GEMM_LAB_STREAM4) nsplit = 1;
  if (nsplit < 1 || nsplit > GEMM_LAB_MAX_SPLITS) return -2;
  if (variant < 0 || variant >= GEMM_LAB_NVARIANTS) return -2;
  if (variant == GEMM_LAB_SPLITK && nsplit > 1 && !scratch) return -2;
  if (!gemm_lab_has_prec(variant, p)) return -2;
  if (const int kw = gemm_lab_mma_warps(variant)) /* fp32 X, rounded in the kernel */
    return mc_gemm_mma(static_cast<const uint16_t *>(W), X, 1, Y, rows, R, rows, cols, kw,
                       c->stream);
  const int64_t Ra = gemm_lab_rows_alloc(variant, R, tile);
  if (variant == GEMM_LAB_WIDE && !mc_gemm_wide_supported(W, xb, R, rows, cols, rows)) return -2;
  if (p == GEMM_LAB_BF16 && round_bf16(X, xb, Ra * cols, c->stream) != 0) return -1;
  if (variant == GEMM_LAB_WIDE) /* xb, as the runtime's gemm_xb */
    return mc_gemm_wide(static_cast<const uint16_t *>(W), xb, Y, rows, R, rows, cols,
                        mc_gemm_wide_splits(rows, cols, c->sms), c->wide_scratch,
                        c->stream);
  if (variant == GEMM_LAB_CUBLAS) return run_cublas(c, p, W, X, xb, Y, Ra, rows, cols, tile);
  if (const int rank = gemm_lab_lt_rank(variant); rank >= 0) /* ldy = rows; -2 when unaligned */
    return mc_gemm_lt_run(c->lt, rank, W, xb, Y, rows, Ra, rows, cols, tile, c->ws, GEMM_LAB_WS,
                          c->stream);
  const void *x = p == GEMM_LAB_BF16 ? static_cast<const void *>(xb) : static_cast<const void *>(X);
  return gemm_lab_launch_order(p, variant == GEMM_LAB_STREAM4, W, x, scratch, Y, R, rows, cols,
                               nsplit, c->stream);
}

extern "C" int gemm_lab_fill(gemm_lab_prec p, void *W, int64_t n, uint32_t seed, void *stream) {
  if (n <= 0) return 0;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  const bool bf = p == GEMM_LAB_BF16;
  fill_kernel<<<(unsigned)blocks, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      bf ? nullptr : static_cast<float *>(W), bf ? static_cast<__nv_bfloat16 *>(W) : nullptr, n,
      seed);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
