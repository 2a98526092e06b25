/* Split-K attention decode over fp32 KV caches (flash-decoding style; mc_kernels.h,
 * docs/gpu-runtime.md "Attention decode").
 *
 * attn_partial_kernel: one block per (chunk of MC_ATTN_CHUNK positions, kv head, row). The rep =
 *   nH / nKV query heads of the kv head sit in shared memory, so each K and V row is read once
 *   for the whole GQA group. A warp per position computes the rep scores (lane l sums
 *   d = l + 32m, then the xor butterfly); then per head the chunk max m_c, p_j = exp(s_j - m_c),
 *   l_c = sum p_j (one warp per head, lanes strided, butterfly), and acc_c[d] = sum_j p_j v_j[d]
 *   (thread per (head, d), ascending j: consecutive threads read consecutive floats of v_j).
 * attn_combine_kernel: one block per (head, row), thread per d, chunks in ascending order:
 *   M = max m_c, L = sum l_c e^(m_c - M), o = (sum acc_c e^(m_c - M)) / L, then the Qwen gate.
 * Chunks past pos[r] do nothing and are not read by the combine, so the grid can be sized for
 * max_ctx once (graph replay at any position). fp32 throughout; the summation order differs from
 * the CPU's single sequential pass (the tolerance argument is in docs/gpu-runtime.md). */
#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_kernels.h"

using namespace mc;

namespace {

constexpr int ATTN_WARPS = 4;

__device__ inline float warp_sum(float v) {
  for (int off = 16; off >= 1; off >>= 1) v = v + __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}
__device__ inline float warp_max(float v) {
  for (int off = 16; off >= 1; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}

__global__ void __launch_bounds__(ATTN_WARPS * 32)
attn_partial_kernel(const float *q /* [R][nH][D] */, const float *kcache /* [R][max_ctx][nKV][D] */,
                    const float *vcache /* [R][max_ctx][nKV][D] */, const int *pos /* [R] */,
                    int64_t max_ctx, float *part_ml /* [R][nH][nchunk][2] */,
                    float *part_acc /* [R][nH][nchunk][D] */, int nH, int nKV, int D, int nchunk,
                    float scale, int tpr) {
  extern __shared__ float smem[];
  const int chunk = blockIdx.x, kh = blockIdx.y, r = blockIdx.z;
  const int64_t cr = r / tpr; /* cache row of token row r (spec drafts share their row's cache) */
  const int rep = nH / nKV;
  const int64_t p = pos[r];
  const int64_t j0 = (int64_t)chunk * MC_ATTN_CHUNK;
  if (j0 > p) return; /* beyond this row's context: the combine never reads it */
  const int n = (int)((p - j0 + 1) < MC_ATTN_CHUNK ? (p - j0 + 1) : MC_ATTN_CHUNK);
  float *qs = smem;                   /* [rep][D] */
  float *sc = smem + rep * D;         /* [rep][MC_ATTN_CHUNK] scores, then weights */
  const int64_t kvd = (int64_t)nKV * D;
  const float *qr = q + ((int64_t)r * nH + (int64_t)kh * rep) * D; /* [rep][D] */
  for (int i = threadIdx.x; i < rep * D; i += blockDim.x) qs[i] = qr[i];
  __syncthreads();

  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const float *kbase = kcache + (cr * max_ctx + j0) * kvd + (int64_t)kh * D; /* row j: + j kvd */
  for (int j = warp; j < n; j += ATTN_WARPS) {
    const float *kj = kbase + (int64_t)j * kvd; /* [D] */
    for (int h = 0; h < rep; h++) {
      float s = 0.0f;
      for (int d = lane; d < D; d += 32) s = s + qs[h * D + d] * kj[d];
      s = warp_sum(s);
      if (lane == 0) sc[h * MC_ATTN_CHUNK + j] = s * scale;
    }
  }
  __syncthreads();

  for (int h = warp; h < rep; h += ATTN_WARPS) {
    float *sh = sc + h * MC_ATTN_CHUNK; /* [n] */
    float m = -INFINITY;
    for (int j = lane; j < n; j += 32) m = fmaxf(m, sh[j]);
    m = warp_max(m);
    float l = 0.0f;
    for (int j = lane; j < n; j += 32) {
      float e = expf(sh[j] - m);
      sh[j] = e;
      l = l + e;
    }
    l = warp_sum(l);
    if (lane == 0) {
      float *ml = part_ml + (((int64_t)r * nH + (int64_t)kh * rep + h) * nchunk + chunk) * 2;
      ml[0] = m;
      ml[1] = l;
    }
  }
  __syncthreads();

  const float *vbase = vcache + (cr * max_ctx + j0) * kvd + (int64_t)kh * D;
  for (int i = threadIdx.x; i < rep * D; i += blockDim.x) {
    const int h = i / D, d = i % D;
    const float *sh = sc + h * MC_ATTN_CHUNK;
    float a = 0.0f;
    for (int j = 0; j < n; j++) a = a + sh[j] * vbase[(int64_t)j * kvd + d];
    part_acc[(((int64_t)r * nH + (int64_t)kh * rep + h) * nchunk + chunk) * D + d] = a;
  }
}

__global__ void attn_combine_kernel(const float *part_ml, const float *part_acc,
                                    const int *pos /* [R] */, const float *gate_src,
                                    int64_t ldgate, float *o /* [R][nH][D] */, int nH, int D,
                                    int nchunk) {
  const int h = blockIdx.x, r = blockIdx.y;
  const int used = (int)(pos[r] / MC_ATTN_CHUNK) + 1;
  const float *ml = part_ml + ((int64_t)r * nH + h) * nchunk * 2;   /* [nchunk][2] */
  const float *acc = part_acc + ((int64_t)r * nH + h) * nchunk * D; /* [nchunk][D] */
  float M = -INFINITY;
  for (int c = 0; c < used; c++) M = fmaxf(M, ml[2 * c]);
  float L = 0.0f;
  for (int c = 0; c < used; c++) L = L + ml[2 * c + 1] * expf(ml[2 * c] - M);
  const int64_t qd = (int64_t)nH * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float a = 0.0f;
    for (int c = 0; c < used; c++) a = a + acc[(int64_t)c * D + d] * expf(ml[2 * c] - M);
    float v = a / L;
    if (gate_src) v = v * sigmoid(gate_src[r * ldgate + qd + (int64_t)h * D + d]);
    o[r * qd + (int64_t)h * D + d] = v;
  }
}

}  // namespace

extern "C" int mc_attn_decode(const float *q, const float *kcache, const float *vcache,
                              const int *pos, int64_t max_ctx, const float *gate_src,
                              int64_t ldgate, float *part_ml, float *part_acc, float *o, int R,
                              int nH, int nKV, int D, void *stream) {
  return mc_attn_decode_t(q, kcache, vcache, pos, max_ctx, gate_src, ldgate, part_ml, part_acc,
                          o, R, 1, nH, nKV, D, stream);
}

extern "C" int mc_attn_decode_t(const float *q, const float *kcache, const float *vcache,
                                const int *pos, int64_t max_ctx, const float *gate_src,
                                int64_t ldgate, float *part_ml, float *part_acc, float *o, int R,
                                int tpr, int nH, int nKV, int D, void *stream) {
  if (R < 1) return 0;
  if (tpr < 1) return -1;
  if (nKV < 1 || nH % nKV != 0 || D < 1 || D > 1024) return -1;
  const int rep = nH / nKV;
  const size_t smem = (size_t)rep * (size_t)(D + MC_ATTN_CHUNK) * sizeof(float);
  if (smem > 48 * 1024) return -1; /* would need cudaFuncSetAttribute; no such shape yet */
  const int nchunk = (int)((max_ctx + MC_ATTN_CHUNK - 1) / MC_ATTN_CHUNK);
  const float scale = (float)(1.0 / sqrt((double)D)); /* as layer_attn.c */
  cudaStream_t s = as_stream(stream);
  attn_partial_kernel<<<dim3((unsigned)nchunk, (unsigned)nKV, (unsigned)R), ATTN_WARPS * 32, smem,
                        s>>>(q, kcache, vcache, pos, max_ctx, part_ml, part_acc, nH, nKV, D,
                             nchunk, scale, tpr);
  if (launch_ok() != 0) return -1;
  attn_combine_kernel<<<dim3((unsigned)nH, (unsigned)R), D < 256 ? D : 256, 0, s>>>(
      part_ml, part_acc, pos, gate_src, ldgate, o, nH, D, nchunk);
  return launch_ok();
}
