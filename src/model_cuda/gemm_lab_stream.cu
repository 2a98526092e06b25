/* The small-GEMM lab's stream kernels (gemm_lab.h, variants 1 and 2): THE FIXED ORDER on the
 * device.
 *
 * Two shapes (template NW, RB; NW RB = 32): variants 1 and 2 use NW = 2 weight rows and RB = 16
 * rows of X per warp, variant 3 (stream4) NW = 4 and RB = 8 (each X load feeds 4 weight rows,
 * twice the weight bytes in flight per lane, but twice the row groups re-reading the weights from
 * L2 at large R). Grid (ceil(R / RB), ceil(rows / (NW WARPS)), nsplit), WARPS warps per block. Warp w of block
 * (g, b, s) owns the weight rows n0 = (b WARPS + w) NW .. n0 + NW - 1 and the rows of X
 * r0 = g RB .. r0 + RB - 1 (those < R), and computes range s of THE FIXED ORDER for those
 * NW x RB outputs: lane l holds the NW RB chain sums of its chunks (l, l + 32, ... of the range),
 * loading each weight chunk once (16 bytes, ld.global.cs: streamed, not kept in L1) and reusing it
 * for RB rows of X (ld.global.nc: X is R cols values, read by every warp, so it stays in L1/L2).
 * Two chunks per lane are loaded before the first is used (more bytes in flight per warp); they
 * are still consumed in ascending order. blockIdx.x, the row group, varies fastest, so the
 * ceil(R / RB) blocks that read the same weight rows are scheduled together and the later ones
 * find them in L2: the weights cross DRAM about once whatever R is.
 *
 * Why the bits do not depend on R: the chain of output (r, n) in lane l is the same sequence of
 * fmaf whatever else the warp computes (other rows r' only add accumulators, other weight rows
 * other registers), the butterfly is the same 5 xor steps, and nsplit comes from the weight's
 * shape. Rows past R are never loaded (the guard is warp-uniform), weight rows past `rows` are
 * loaded as zeros into accumulators that are never stored. */
#include <cuda_bf16.h>

#include "src/model_cuda/gemm_lab_stream.cuh"

namespace {

constexpr int WARPS = GEMM_LAB_WARPS, LANES = GEMM_LAB_LANES;

template <bool BF16> struct Prec;
template <> struct Prec<true> {
  static constexpr int CH = 8;
  typedef uint16_t T;
};
template <> struct Prec<false> {
  static constexpr int CH = 4;
  typedef float T;
};

/* The 8 floats of a 16-byte chunk of bf16 (element 2j in the low half of word j). */
__device__ inline void unpack_bf16(uint4 q, float (&v)[8]) {
  const uint32_t w[4] = {q.x, q.y, q.z, q.w};
#pragma unroll
  for (int j = 0; j < 4; j++) {
    v[2 * j] = __uint_as_float(w[j] << 16);
    v[2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
  }
}

template <bool BF16> __device__ inline float elem(const typename Prec<BF16>::T *p, int64_t i);
template <> __device__ inline float elem<true>(const uint16_t *p, int64_t i) {
  return __uint_as_float((uint32_t)__ldg(p + i) << 16);
}
template <> __device__ inline float elem<false>(const float *p, int64_t i) { return __ldg(p + i); }

/* Chunk c of a row (row: the index of its first element in base). VEC: one 16-byte load (cols is
 * a multiple of CH, so the chunk is whole and aligned); otherwise element by element, the k past
 * cols left at 0 (never used: the FMAs skip them). STREAM: ld.global.cs (the weights) instead of
 * ld.global.nc (X). */
template <bool BF16, bool VEC, bool STREAM>
__device__ inline void load_chunk(const typename Prec<BF16>::T *base, int64_t row, int64_t c,
                                  int64_t cols, float (&v)[Prec<BF16>::CH]) {
  constexpr int CH = Prec<BF16>::CH;
  if constexpr (VEC) {
    const void *at = base + row + c * CH;
    if constexpr (BF16) {
      const uint4 q = STREAM ? __ldcs(reinterpret_cast<const uint4 *>(at))
                             : __ldg(reinterpret_cast<const uint4 *>(at));
      unpack_bf16(q, reinterpret_cast<float(&)[8]>(v));
    } else {
      const float4 f = STREAM ? __ldcs(reinterpret_cast<const float4 *>(at))
                              : __ldg(reinterpret_cast<const float4 *>(at));
      v[0] = f.x, v[1] = f.y, v[2] = f.z, v[3] = f.w;
    }
  } else {
#pragma unroll
    for (int e = 0; e < CH; e++) {
      const int64_t k = c * CH + e;
      v[e] = k < cols ? elem<BF16>(base, row + k) : 0.0f;
    }
  }
}

template <bool BF16, bool VEC, int NW, int RB>
__global__ void __launch_bounds__(WARPS * 32)
order_kernel(const typename Prec<BF16>::T *__restrict__ W /* [rows][cols] */,
             const typename Prec<BF16>::T *__restrict__ x /* [R][cols] */,
             float *__restrict__ out /* [nsplit][R][rows] (Y itself when nsplit = 1) */, int R,
             int64_t rows, int64_t cols, int64_t len /* chunks per range */) {
  static_assert(NW * RB == LANES, "one output per lane at the store");
  constexpr int CH = Prec<BF16>::CH;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int r0 = blockIdx.x * RB, nr = R - r0 < RB ? R - r0 : RB;
  const int64_t n0 = ((int64_t)blockIdx.y * WARPS + warp) * NW;
  if (n0 >= rows) return; /* the whole warp: nothing below synchronises the block */
  const int64_t nchunks = (cols + CH - 1) / CH;
  const int64_t c0 = (int64_t)blockIdx.z * len;
  const int64_t c1 = c0 + len < nchunks ? c0 + len : nchunks;
  float acc[NW][RB];
#pragma unroll
  for (int i = 0; i < NW; i++)
#pragma unroll
    for (int r = 0; r < RB; r++) acc[i][r] = 0.0f;

  /* chunk c of every owned weight row into w (zeros for rows past `rows`) */
  auto load_w = [&](int64_t c, float (&w)[NW][CH]) {
#pragma unroll
    for (int i = 0; i < NW; i++) {
      if (n0 + i < rows) load_chunk<BF16, VEC, true>(W, (n0 + i) * cols, c, cols, w[i]);
      else
#pragma unroll
        for (int e = 0; e < CH; e++) w[i][e] = 0.0f;
    }
  };
  /* the FMAs of chunk c: for each row of X (in any order: different accumulators), each weight
     row, k ascending within the chunk */
  auto use = [&](int64_t c, const float (&w)[NW][CH]) {
    const int kmax = VEC ? CH : (int)(cols - c * CH < CH ? cols - c * CH : CH);
#pragma unroll
    for (int r = 0; r < RB; r++) {
      if (r < nr) { /* warp-uniform */
        float xv[CH];
        load_chunk<BF16, VEC, false>(x, (int64_t)(r0 + r) * cols, c, cols, xv);
#pragma unroll
        for (int i = 0; i < NW; i++)
#pragma unroll
          for (int e = 0; e < CH; e++)
            if (VEC || e < kmax) acc[i][r] = fmaf(xv[e], w[i][e], acc[i][r]);
      }
    }
  };

  for (int64_t c = c0 + lane; c < c1; c += 2 * LANES) {
    float wa[NW][CH], wb[NW][CH];
    const bool second = c + LANES < c1;
    load_w(c, wa);
    if (second) load_w(c + LANES, wb);
    use(c, wa);
    if (second) use(c + LANES, wb);
  }

  /* the fixed tree: after step h every lane holds p[l] + p[l ^ h], the same bits in both
     partners (fp addition commutes), so lane 0's value is p[0] + p[16], ... exactly the CPU's */
#pragma unroll
  for (int i = 0; i < NW; i++)
#pragma unroll
    for (int r = 0; r < RB; r++)
#pragma unroll
      for (int h = LANES / 2; h >= 1; h /= 2)
        acc[i][r] = acc[i][r] + __shfl_xor_sync(0xffffffffu, acc[i][r], h);

  float *o = out + (int64_t)blockIdx.z * R * rows; /* [R][rows] of this range */
#pragma unroll
  for (int i = 0; i < NW; i++)
#pragma unroll
    for (int r = 0; r < RB; r++)
      if (lane == i * RB + r && r < nr && n0 + i < rows) o[(int64_t)(r0 + r) * rows + n0 + i] = acc[i][r];
}

/* Y[i] = part[0][i] + part[1][i] + ... in ascending split order (variant 2's second pass). */
__global__ void splits_add_kernel(const float *__restrict__ part /* [nsplit][n] */,
                                  float *__restrict__ Y /* [n] */, int64_t n, int nsplit) {
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float y = part[i];
    for (int s = 1; s < nsplit; s++) y = y + part[(int64_t)s * n + i];
    Y[i] = y;
  }
}

template <bool BF16, int NW, int RB>
int launch(const void *W, const void *x, float *out, int R, int64_t rows, int64_t cols,
           int nsplit, cudaStream_t s) {
  typedef typename Prec<BF16>::T T;
  constexpr int CH = Prec<BF16>::CH;
  const int64_t nchunks = (cols + CH - 1) / CH, per = (nchunks + nsplit - 1) / nsplit;
  const int64_t len = (per + LANES - 1) / LANES * LANES; /* gemm_lab.h: whole lane rounds */
  const int64_t groups = (rows + NW * WARPS - 1) / (NW * WARPS);
  if (groups > 65535) return -1;
  const dim3 grid((unsigned)((R + RB - 1) / RB), (unsigned)groups, (unsigned)nsplit);
  const bool vec = cols % CH == 0 && (reinterpret_cast<uintptr_t>(W) & 15) == 0 &&
                   (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  if (vec)
    order_kernel<BF16, true, NW, RB><<<grid, WARPS * 32, 0, s>>>(
        static_cast<const T *>(W), static_cast<const T *>(x), out, R, rows, cols, len);
  else
    order_kernel<BF16, false, NW, RB><<<grid, WARPS * 32, 0, s>>>(
        static_cast<const T *>(W), static_cast<const T *>(x), out, R, rows, cols, len);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

}  // namespace

int gemm_lab_launch_order(gemm_lab_prec p, int wide, const void *W, const void *x, float *part,
                          float *Y, int R, int64_t rows, int64_t cols, int nsplit, cudaStream_t s) {
  float *out = nsplit == 1 ? Y : part;
  constexpr int NW = GEMM_LAB_NW, RB = GEMM_LAB_RB, NW4 = GEMM_LAB_NW_WIDE, RB4 = GEMM_LAB_RB_WIDE;
  int rc;
  if (wide)
    rc = p == GEMM_LAB_BF16 ? launch<true, NW4, RB4>(W, x, out, R, rows, cols, nsplit, s)
                            : launch<false, NW4, RB4>(W, x, out, R, rows, cols, nsplit, s);
  else
    rc = p == GEMM_LAB_BF16 ? launch<true, NW, RB>(W, x, out, R, rows, cols, nsplit, s)
                            : launch<false, NW, RB>(W, x, out, R, rows, cols, nsplit, s);
  if (rc != 0 || nsplit == 1) return rc;
  const int64_t n = (int64_t)R * rows;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 4096) blocks = 4096;
  splits_add_kernel<<<(unsigned)blocks, 256, 0, s>>>(part, Y, n, nsplit);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
