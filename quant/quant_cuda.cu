/* Batched quantisation on the GPU. One thread encodes one scale block of one row with the same
 * rssm_encode_block() that the CPU loop calls, so the bytes are identical (docs/gpu-results.md).
 * NVFP4 first reduces each matrix's amax (a max over finite values is exact in any order). */
#include <cuda_runtime.h>

#include "quant/numerics.h"
#include "quant/quant.h"

namespace {

__device__ float atomic_max_nonneg(float *addr, float v) {
  /* for non-negative floats the IEEE order equals the unsigned order of their bits */
  return __uint_as_float(atomicMax(reinterpret_cast<unsigned int *>(addr), __float_as_uint(v)));
}

/* s_dec_out: [nmat]; one block of threads per matrix reduces amax, then writes S_dec to the blob. */
__global__ void nvfp4_tensor_scale_kernel(const float *x /* [nmat][rows*cols] */, int64_t n_per_mat,
                                          uint8_t *blob /* [nmat][stride] */, int64_t stride,
                                          int64_t tscale_off, float *s_enc_out /* [nmat] */) {
  __shared__ float amax;
  if (threadIdx.x == 0) amax = 0.0f;
  __syncthreads();
  const float *m = x + blockIdx.x * n_per_mat;
  float local = 0.0f;
  for (int64_t i = threadIdx.x; i < n_per_mat; i += blockDim.x) {
    float a = rssm_fabs(m[i]);
    if (rssm_isfinite(a) && a > local) local = a;
  }
  atomic_max_nonneg(&amax, local);
  __syncthreads();
  if (threadIdx.x == 0) {
    float s_enc = rssm_nvfp4_senc(amax);
    float s_dec = 1.0f / s_enc;
    *reinterpret_cast<float *>(blob + blockIdx.x * stride + tscale_off) = s_dec;
    s_enc_out[blockIdx.x] = s_enc; /* S_dec = 1/S_enc cannot give S_enc back exactly */
  }
}

struct launch_geom {
  int64_t rows, cols, block_w, blocks_per_row, code_row, scale_elem, codes_off, scales_off,
      tscale_off, stride;
};

__global__ void encode_kernel(qformat_kind kind, launch_geom g, int64_t nmat,
                              const float *x /* [nmat][rows][cols] */,
                              uint8_t *blob /* [nmat][stride] */,
                              const float *s_enc_all /* [nmat], NVFP4 only */, int sr_on, uint64_t seed,
                              const uint64_t *matrix_id /* [nmat] or NULL */,
                              const uint32_t *event /* [nmat] or NULL */, uint32_t stream) {
  int64_t per_mat = g.rows * g.blocks_per_row;
  int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (tid >= nmat * per_mat) return;
  int64_t i = tid / per_mat, rb = tid % per_mat, r = rb / g.blocks_per_row, b = rb % g.blocks_per_row;
  uint8_t *m = blob + i * g.stride;
  float s_enc = 1.0f, s_dec = 1.0f;
  if (kind == QF_NVFP4) {
    s_dec = *reinterpret_cast<const float *>(m + g.tscale_off);
    s_enc = s_enc_all[i];
  }
  rssm_sr_ctx ctx = {seed, matrix_id ? matrix_id[i] : (uint64_t)i, event ? event[i] : 0u, stream, sr_on};
  int64_t c0 = b * g.block_w;
  int64_t n = (g.cols - c0 < g.block_w) ? g.cols - c0 : g.block_w;
  uint8_t *scale = g.scales_off >= 0 ? m + g.scales_off + (r * g.blocks_per_row + b) * g.scale_elem : nullptr;
  rssm_encode_block(kind, x + (i * g.rows + r) * g.cols, c0, n, r * g.cols,
                    m + g.codes_off + r * g.code_row, scale, s_enc, s_dec, &ctx);
}

__global__ void decode_kernel(qformat_kind kind, launch_geom g, int64_t nmat,
                              const uint8_t *blob /* [nmat][stride] */, float *y /* [nmat][rows][cols] */) {
  int64_t tid = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t per_mat = g.rows * g.cols;
  if (tid >= nmat * per_mat) return;
  int64_t i = tid / per_mat, e = tid % per_mat, r = e / g.cols, c = e % g.cols;
  const uint8_t *m = blob + i * g.stride;
  float s_dec = kind == QF_NVFP4 ? *reinterpret_cast<const float *>(m + g.tscale_off) : 1.0f;
  const uint8_t *scale =
      g.scales_off >= 0 ? m + g.scales_off + (r * g.blocks_per_row + c / g.block_w) * g.scale_elem : nullptr;
  y[tid] = rssm_decode_at(kind, m + g.codes_off + r * g.code_row, scale, s_dec, c);
}

launch_geom geom_of(const qformat *f, const qlayout *L) {
  launch_geom g;
  g.rows = L->rows;
  g.cols = L->cols;
  g.block_w = f->block > 0 ? f->block : L->cols;
  g.blocks_per_row = (L->cols + g.block_w - 1) / g.block_w;
  g.code_row = L->code_bytes_per_row;
  g.scale_elem = L->scale_elem_bytes;
  g.codes_off = L->codes_off;
  g.scales_off = L->scales_off;
  g.tscale_off = L->tscale_off;
  g.stride = L->bytes_per_matrix;
  return g;
}

}  // namespace

extern "C" void q_encode_cuda(const qformat *f, const qlayout *L, int64_t nmat, const float *x,
                              void *blob, const qsr_params *sr, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  launch_geom g = geom_of(f, L);
  /* padding bytes zeroed, as on the CPU, so blobs compare equal byte for byte */
  cudaMemsetAsync(blob, 0, (size_t)(nmat * L->bytes_per_matrix), s);
  float *s_enc = nullptr;
  if (f->kind == QF_NVFP4) {
    cudaMallocAsync(reinterpret_cast<void **>(&s_enc), (size_t)nmat * sizeof(float), s);
    nvfp4_tensor_scale_kernel<<<(unsigned)nmat, 256, 0, s>>>(
        x, L->rows * L->cols, static_cast<uint8_t *>(blob), g.stride, g.tscale_off, s_enc);
  }
  int64_t threads = nmat * g.rows * g.blocks_per_row;
  int bs = 128;
  int sr_on = f->rounding == QR_SR;
  encode_kernel<<<(unsigned)((threads + bs - 1) / bs), bs, 0, s>>>(
      f->kind, g, nmat, x, static_cast<uint8_t *>(blob), s_enc, sr_on, sr ? sr->seed : 0u,
      sr ? sr->matrix_id : nullptr, sr ? sr->event : nullptr, sr ? sr->stream : 0u);
  if (s_enc) cudaFreeAsync(s_enc, s);
}

extern "C" void q_decode_cuda(const qformat *f, const qlayout *L, int64_t nmat, const void *blob,
                              float *y, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  launch_geom g = geom_of(f, L);
  int64_t n = nmat * g.rows * g.cols;
  int bs = 256;
  decode_kernel<<<(unsigned)((n + bs - 1) / bs), bs, 0, s>>>(f->kind, g, nmat,
                                                             static_cast<const uint8_t *>(blob), y);
}
