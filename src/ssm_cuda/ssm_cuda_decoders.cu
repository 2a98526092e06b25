/* ssm_cuda_check_decoders (ssm_cuda.h): the readouts' fast decoders against the reference
 * decoders on the device, every code. */
#include "src/ssm_cuda/ssm_cuda_internal.cuh"

namespace {

using namespace ssmc;

/* The v2 decoders against rssm_decode_elem / rssm_e8m0_decode on the device, every code: the
 * 16-bit fast path and the per-block tables of every 8-bit and 4-bit format. One thread per code;
 * mismatches (bit patterns) are counted in *bad. */
__global__ void check_decoders_kernel(unsigned long long *bad) {
  __shared__ luts lt;
  const int kinds[] = {QF_FP8_E4M3, QF_FP8_E5M2, QF_INT8, QF_MXFP8, QF_NVFP4, QF_MXFP4};
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; /* grid covers 65536 codes */
  unsigned long long n = 0;
  for (int bf = 0; bf < 2; bf++) {
    /* the register decoders of v2 and v3 (quant/decode_fast.h) */
    const float b = rssm_decode_elem(bf ? RSSM_EL_BF16 : RSSM_EL_FP16, t);
    n += rssm_f32_bits(rssm_decode16_fast(bf, t)) != rssm_f32_bits(b);
  }
  if (t < 256) {
    n += rssm_f32_bits(rssm_e4m3_fast(t)) != rssm_f32_bits(rssm_decode_elem(RSSM_EL_E4M3, t));
    n += rssm_f32_bits(rssm_e8m0_fast(t)) != rssm_f32_bits(rssm_e8m0_decode(t));
    if (t < 16) n += rssm_f32_bits(rssm_e2m1_fast(t)) != rssm_f32_bits(rssm_decode_elem(RSSM_EL_E2M1, t));
  }
  for (int ki = 0; ki < 6; ki++) {
    __syncthreads();
    fill_luts(&lt, kinds[ki]);
    __syncthreads();
    if (t < 256) {
      const int four = kinds[ki] == QF_NVFP4 || kinds[ki] == QF_MXFP4;
      if (!four || t < 16)
        n += rssm_f32_bits(lt.elem[t]) != rssm_f32_bits(rssm_decode_elem(rssm_elem_of((qformat_kind)kinds[ki]), t));
      float sc = kinds[ki] == QF_NVFP4 ? rssm_decode_elem(RSSM_EL_E4M3, t) : rssm_e8m0_decode(t);
      if (kinds[ki] == QF_NVFP4 || kinds[ki] == QF_MXFP4 || kinds[ki] == QF_MXFP8)
        n += rssm_f32_bits(lt.scale[t]) != rssm_f32_bits(sc);
    }
  }
  if (n) atomicAdd(bad, n);
}

}  // namespace

extern "C" long long ssm_cuda_check_decoders(void) {
  unsigned long long *d_bad = nullptr, bad = 0;
  if (cudaMalloc(reinterpret_cast<void **>(&d_bad), sizeof bad) != cudaSuccess) return -1;
  long long rc = -1;
  if (cudaMemset(d_bad, 0, sizeof bad) == cudaSuccess) {
    check_decoders_kernel<<<256, 256>>>(d_bad);
    if (cudaMemcpy(&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost) == cudaSuccess) rc = (long long)bad;
  }
  cudaFree(d_bad);
  return rc;
}
