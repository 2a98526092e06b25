/* The tensor-core skinny GEMM (mc_gemm_mma.h): the kernel and its launcher.
 *
 * mma.sync.m16n8k16 (bf16 in, fp32 accumulate) fragments, per the PTX ISA, for lane = 4 g + t:
 *   A (16 x 16, row-major) regs {A[g][2t, 2t+1]}, {A[g+8][2t, 2t+1]}, {A[g][2t+8, 2t+9]},
 *     {A[g+8][2t+8, 2t+9]}, the lower index in the lower 16 bits;
 *   B (16 x 8, column-major) regs {B[2t, 2t+1][g]}, {B[2t+8, 2t+9][g]};
 *   D (16 x 8) {D[g][2t], D[g][2t+1], D[g+8][2t], D[g+8][2t+1]}.
 * A is W (16 weight rows), B is X^T (8 rows of X), D[n][r] = Y[r][n]. A lane's 16-byte load of
 * W[n][k0 + 8t .. + 7] holds four such bf16 pairs (words 0..3: k0 + 8t + {0,1}, {2,3}, {4,5},
 * {6,7}); taking words 0 and 1 as the pairs at slots 2t and 2t + 8 of one mma, and words 2 and 3
 * of the next, for W and for X alike, maps the 16 slots of each mma to 16 distinct k of the 32
 * (slot 2t + e -> 8t + e, slot 2t + 8 + e -> 8t + 2 + e; then + 4): the slot-to-k map depends
 * only on the slot, so A's and B's k agree and every product is formed once. No shared-memory
 * staging: each lane's loads are whole 16-byte pieces of W and X rows as they lie in memory. */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <string.h>

#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_gemm_mma.h"
#include "src/model_cuda/mc_mma_device.cuh"
#include "src/ssm_cuda/cuda_pdl.h"

namespace {

/* 32-k steps whose W loads a warp issues before using the first: ~4 KB in flight per warp */
constexpr int PREFETCH = MC_GEMM_MMA_PREFETCH;

/* d += A B for one m16n8k16 (bf16 A, B; fp32 D) */
__device__ __forceinline__ void mma_bf16(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2,
                                         uint32_t a3, uint32_t b0, uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
  __trap(); /* mc_gemm_mma refuses devices before sm_80 */
#endif
}

/* two floats as a bf16 pair, each rounded to nearest even (as f32_to_bf16 / __float2bfloat16_rn),
   lo in the lower 16 bits */
__device__ __forceinline__ uint32_t bf16_pair(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  uint32_t u;
  memcpy(&u, &v, sizeof u);
  return u;
}

/* 8 consecutive values of X from element off (16-byte aligned) as 4 bf16 pairs */
template <bool XF32>
__device__ __forceinline__ uint4 load_x(const void *X, int64_t off);
template <>
__device__ __forceinline__ uint4 load_x<false>(const void *X, int64_t off) {
  return __ldg(reinterpret_cast<const uint4 *>(static_cast<const uint16_t *>(X) + off));
}
template <>
__device__ __forceinline__ uint4 load_x<true>(const void *X, int64_t off) {
  const float4 *p = reinterpret_cast<const float4 *>(static_cast<const float *>(X) + off);
  const float4 a = __ldg(p), b = __ldg(p + 1);
  return make_uint4(bf16_pair(a.x, a.y), bf16_pair(a.z, a.w), bf16_pair(b.x, b.y),
                    bf16_pair(b.z, b.w));
}

/* One round of a warp's W loads: for u < PREFETCH the 16-byte pieces W[n0 + g][k .. k + 7] and
   W[n0 + g + 8][same] of its 32-k step s0 + u KW (k = 32 s + 8 t); rows past `rows` and k past
   cols load from a valid address (row n0, k 0) and are then replaced by zeros, so the loads stay
   branch-free and the warp reaches each mma.sync converged. */
template <int KW>
__device__ __forceinline__ void load_w_round(const uint16_t *__restrict__ W, int64_t lo_row,
                                             int64_t hi_row, bool lo_ok, bool hi_ok, int s0,
                                             int nsteps, int cols, int t, uint4 (&wlo)[PREFETCH],
                                             uint4 (&whi)[PREFETCH]) {
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
  for (int u = 0; u < PREFETCH; u++) {
    const int s = s0 + u * KW, k = 32 * s + 8 * t;
    const bool k_ok = s < nsteps && k < cols;
    const int64_t kk = k_ok ? k : 0;
    const uint4 a = __ldcs(reinterpret_cast<const uint4 *>(W + lo_row + kk));
    const uint4 b = __ldcs(reinterpret_cast<const uint4 *>(W + hi_row + kk));
    wlo[u] = k_ok && lo_ok ? a : zero;
    whi[u] = k_ok && hi_ok ? b : zero;
  }
}

/* The KW warps' partial sums of output (r, fragment row n), added in warp order (a fixed order:
   the bits do not depend on which warp finished first). */
template <int KW, int ROWS>
__device__ __forceinline__ float sum_warps(const float (*part)[ROWS][17] /* [KW] */, int r, int n) {
  float y = part[0][r][n];
#pragma unroll
  for (int w = 1; w < KW; w++) y = y + part[w][r][n];
  return y;
}

/* The block's shared memory: the warps' partial sums, [KW][8 RT][17] floats (padded against
   bank conflicts). Static up to 8 warps, as before session 34; dynamic at 16, where at RT = 8 it
   is 68 KiB, past the static 48. (Session 34's call 5 ran a build with them dynamic throughout
   and the GDN fixture's step, none of whose GEMMs takes 16 warps, came out 2.5 us slower; the
   cause is not settled: docs/gpu-results.md "Session 34".) */
template <int RT, int KW>
constexpr size_t part_bytes() {
  return (size_t)KW * RT * 8 * 17 * 4;
}
template <int RT, int KW>
constexpr size_t dynamic_bytes() {
  return KW <= 8 ? 0 : part_bytes<RT, KW>();
}

/* What the kernel writes (mc_gemm_mma / mc_gemm_mma_act): Y itself, or the activation of an MLP's
   input projection as the bf16 input of its output projection. */
enum Epilogue { EPI_Y = 0, EPI_RELU2 = MC_GEMM_MMA_ACT_RELU2, EPI_SWIGLU = MC_GEMM_MMA_ACT_SWIGLU };

/* Grid: one block per 16 weight rows; KW warps per block; RT: tiles of 8 rows of X (8 RT >= R).
   A block's 16 weight rows are n0 .. n0 + 15 (n0 = 16 blockIdx.x), the fragment's rows g and
   g + 8 (lane = 4 g + t) being weight rows n0 + g and n0 + g + 8; with EPI_SWIGLU (W = gate |
   up, rows = 2 I) they are gate rows n0 .. n0 + 7 (n0 = 8 blockIdx.x) and the matching up rows
   I + n0 .. I + n0 + 7, so that each block holds both halves of its 8 outputs. The same grid
   size either way (2 I / 16 = I / 8 blocks), and each output's sum is formed by the same loads
   and mma as in EPI_Y, only in the other fragment row. */
/* At least 512 threads a multiprocessor resident (<= 128 registers a thread): with 8 warps a
   block and ~150 registers only one block would fit per SM, and a 2560-row weight's 160 blocks
   would run as 1.2 waves on 132 SMs. (KW = 16 is chosen only where the blocks fit the SMs one
   each: mc_gemm_mma_warps.) */
template <int RT, int KW, bool XF32, int EPI>
__global__ void __launch_bounds__(KW * 32, 512 / (KW * 32))
    gemm_mma_kernel(const uint16_t *__restrict__ W /* [rows][cols] */,
                    const void *__restrict__ X /* [R][cols] bf16 or fp32 */,
                    void *__restrict__ Y /* [R][ldy] fp32 (EPI_Y) or bf16 */, int64_t ldy, int R,
                    int rows, int cols) {
  pdl_trigger();
  float(*part)[RT * 8][17]; /* [KW][row of X][fragment row] */
  if constexpr (KW <= 8) {
    __shared__ float part_static[KW][RT * 8][17];
    part = part_static;
  } else {
    extern __shared__ float part_mem[]; /* part_bytes<RT, KW>() */
    part = reinterpret_cast<float(*)[RT * 8][17]>(part_mem);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  const int nsteps = (cols + 31) / 32;
  const int outs = EPI == EPI_SWIGLU ? rows / 2 : rows;     /* Y's columns */
  const int n0 = blockIdx.x * (EPI == EPI_SWIGLU ? 8 : 16); /* the block's first output */
  const int lo_n = n0 + g, hi_n = EPI == EPI_SWIGLU ? outs + n0 + g : n0 + g + 8;
  const bool lo_ok = EPI == EPI_SWIGLU ? lo_n < outs : lo_n < rows;
  const bool hi_ok = EPI == EPI_SWIGLU ? lo_ok : hi_n < rows;
  const int64_t lo_row = (int64_t)(lo_ok ? lo_n : n0) * cols;
  const int64_t hi_row = (int64_t)(hi_ok ? hi_n : n0) * cols;
  const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
  float acc[RT][4];
#pragma unroll
  for (int j = 0; j < RT; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;

  /* The first round of W is loaded before the wait for the previous kernel (cuda_pdl.h): W is a
     weight, never written during a decode. Where cols <= 32 KW PREFETCH (every GEMM of the
     fixture models but Nemotron's MLP down projection) this round is the whole of the block's
     W: the weight bytes stream while the previous kernel finishes, and after the wait only X
     (which that kernel writes) is read. */
  uint4 wlo[PREFETCH], whi[PREFETCH];
  load_w_round<KW>(W, lo_row, hi_row, lo_ok, hi_ok, warp, nsteps, cols, t, wlo, whi);
  pdl_wait();

  /* X of XG consecutive k-steps and JG tiles (XG JG <= LOADS loads a lane) is loaded
     before one __syncwarp and their mma. The warp synchronisation (mma.sync needs the warp
     converged) orders memory, so no load moves across one: with a synchronisation per (step,
     tile) the X loads were a chain of L2 round trips, 16 of them for the Mamba-2 fixture's MLP
     down projection (8 steps a warp, 2 tiles). Each acc[j] takes the same mma in the same order
     (ascending steps): the same bits. More loads in flight than 4 of bf16 X (2 of fp32: two
     float4 each) spilled registers at 4-8 tiles (ptxas, 128 registers a thread). */
  constexpr int LOADS = XF32 ? 2 : 4;
  constexpr int JG = RT < LOADS ? RT : LOADS;
  constexpr int XG = LOADS / JG < PREFETCH ? LOADS / JG : PREFETCH;
  for (int s0 = warp; s0 < nsteps; s0 += KW * PREFETCH) {
    if (s0 != warp)
      load_w_round<KW>(W, lo_row, hi_row, lo_ok, hi_ok, s0, nsteps, cols, t, wlo, whi);
#pragma unroll
    for (int u0 = 0; u0 < PREFETCH; u0 += XG) {
      if (s0 + u0 * KW >= nsteps) break; /* warp-uniform */
#pragma unroll
      for (int j0 = 0; j0 < RT; j0 += JG) {
        uint4 xv[XG][JG];
#pragma unroll
        for (int v = 0; v < XG; v++) {
          const int s = s0 + (u0 + v) * KW, k = 32 * s + 8 * t;
          const bool k_ok = s < nsteps && k < cols;
#pragma unroll
          for (int jj = 0; jj < JG; jj++) {
            const int r = 8 * (j0 + jj) + g;
            const bool x_ok = k_ok && r < R;
            const uint4 xl = load_x<XF32>(X, x_ok ? (int64_t)r * cols + k : 0);
            xv[v][jj] = x_ok ? xl : zero;
          }
        }
        __syncwarp();
#pragma unroll
        for (int v = 0; v < XG; v++) {
          const int u = u0 + v;
          if (s0 + u * KW >= nsteps) break; /* warp-uniform */
#pragma unroll
          for (int jj = 0; jj < JG; jj++) {
            float(&a)[4] = acc[j0 + jj];
            mma_bf16(a, wlo[u].x, whi[u].x, wlo[u].y, whi[u].y, xv[v][jj].x, xv[v][jj].y);
            mma_bf16(a, wlo[u].z, whi[u].z, wlo[u].w, whi[u].w, xv[v][jj].z, xv[v][jj].w);
          }
        }
      }
    }
  }

  /* the KW partial sums of each output, added in warp order (a fixed order: the bits do not
     depend on which warp finished first) */
#pragma unroll
  for (int j = 0; j < RT; j++) {
    part[warp][8 * j + 2 * t][g] = acc[j][0];
    part[warp][8 * j + 2 * t + 1][g] = acc[j][1];
    part[warp][8 * j + 2 * t][g + 8] = acc[j][2];
    part[warp][8 * j + 2 * t + 1][g + 8] = acc[j][3];
  }
  __syncthreads();
  if constexpr (EPI == EPI_SWIGLU) {
    /* output n0 + n of row r: swiglu_of(gate (fragment row n), up (fragment row n + 8)), each
       summed over the warps in warp order as in EPI_Y, then rounded to bf16 as act_bf16_kernel
       (mc_fused.cu) does */
    __nv_bfloat16 *A = static_cast<__nv_bfloat16 *>(Y);
    for (int o = threadIdx.x; o < RT * 8 * 8; o += KW * 32) {
      const int r = o >> 3, n = o & 7;
      if (r >= R || n0 + n >= outs) continue;
      const float gate = sum_warps<KW>(part, r, n), up = sum_warps<KW>(part, r, n + 8);
      A[(int64_t)r * ldy + n0 + n] = __float2bfloat16_rn(mc::swiglu_of(gate, up));
    }
  } else {
    for (int o = threadIdx.x; o < RT * 8 * 16; o += KW * 32) {
      const int r = o >> 4, n = o & 15; /* consecutive threads: consecutive columns of Y */
      if (r >= R || n0 + n >= rows) continue;
      const float y = sum_warps<KW>(part, r, n);
      if constexpr (EPI == EPI_RELU2)
        static_cast<__nv_bfloat16 *>(Y)[(int64_t)r * ldy + n0 + n] =
            __float2bfloat16_rn(mc::relu2_of(y));
      else
        static_cast<float *>(Y)[(int64_t)r * ldy + n0 + n] = y;
    }
  }
}

/* The instance's dynamic shared memory allowed past the default 48 KiB where it needs it, once
   per instance (the attribute is the function's, not the launch's). A refusal is not checked
   here: the launch then fails, and the caller's cudaGetLastError reports it. */
template <int RT, int KW, bool XF32, int EPI>
void allow_smem() {
  constexpr size_t bytes = dynamic_bytes<RT, KW>();
  static const cudaError_t e =
      bytes <= 48 * 1024
          ? cudaSuccess
          : cudaFuncSetAttribute(gemm_mma_kernel<RT, KW, XF32, EPI>,
                                 cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  (void)e;
}

template <int RT, int KW, int EPI>
void launch(const uint16_t *W, const void *X, int x_f32, void *Y, int64_t ldy, int R, int rows,
            int cols, cudaStream_t s) {
  const dim3 grid((unsigned)((rows + 15) / 16)), block(KW * 32); /* swiglu: rows / 2 / 8 */
  constexpr size_t smem = dynamic_bytes<RT, KW>();
  if (x_f32) {
    allow_smem<RT, KW, true, EPI>();
    pdl_launch(gemm_mma_kernel<RT, KW, true, EPI>, grid, block, smem, s, W, X, Y, ldy, R, rows,
               cols);
  } else {
    allow_smem<RT, KW, false, EPI>();
    pdl_launch(gemm_mma_kernel<RT, KW, false, EPI>, grid, block, smem, s, W, X, Y, ldy, R, rows,
               cols);
  }
}

template <int KW, int EPI>
void launch_kw(const uint16_t *W, const void *X, int x_f32, void *Y, int64_t ldy, int R, int rows,
               int cols, cudaStream_t s) {
  switch (mc_gemm_mma_row_tiles(R)) {
    case 1:
      launch<1, KW, EPI>(W, X, x_f32, Y, ldy, R, rows, cols, s);
      break;
    case 2:
      launch<2, KW, EPI>(W, X, x_f32, Y, ldy, R, rows, cols, s);
      break;
    case 4:
      launch<4, KW, EPI>(W, X, x_f32, Y, ldy, R, rows, cols, s);
      break;
    default:
      launch<8, KW, EPI>(W, X, x_f32, Y, ldy, R, rows, cols, s);
  }
}

template <int EPI>
void launch_epi(const uint16_t *W, const void *X, int x_f32, void *Y, int64_t ldy, int R, int rows,
                int cols, int kw, cudaStream_t s) {
  if (kw == 4)
    launch_kw<4, EPI>(W, X, x_f32, Y, ldy, R, rows, cols, s);
  else if (kw == 8)
    launch_kw<8, EPI>(W, X, x_f32, Y, ldy, R, rows, cols, s);
  else
    launch_kw<16, EPI>(W, X, x_f32, Y, ldy, R, rows, cols, s);
}

}  // namespace

extern "C" int mc_gemm_mma(const uint16_t *W, const void *X, int x_f32, float *Y, int64_t ldy,
                           int R, int64_t rows, int64_t cols, int kw, void *stream) {
  static const bool has_mma = mc_device_has_mma();
  if (!has_mma || !mc_gemm_mma_supported(W, X, R, rows, cols, ldy) ||
      (kw != 4 && kw != 8 && kw != 16))
    return -2;
  launch_epi<EPI_Y>(W, X, x_f32, Y, ldy, R, (int)rows, (int)cols, kw,
                    static_cast<cudaStream_t>(stream));
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int mc_gemm_mma_act(const uint16_t *W, const void *X, int x_f32, uint16_t *A,
                               int64_t lda, int R, int64_t rows, int64_t cols, int act, int kw,
                               void *stream) {
  static const bool has_mma = mc_device_has_mma();
  if (!has_mma || !mc_gemm_mma_act_supported(W, X, R, rows, cols, lda, act) ||
      (kw != 4 && kw != 8 && kw != 16))
    return -2;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (act == MC_GEMM_MMA_ACT_SWIGLU)
    launch_epi<EPI_SWIGLU>(W, X, x_f32, A, lda, R, (int)rows, (int)cols, kw, s);
  else
    launch_epi<EPI_RELU2>(W, X, x_f32, A, lda, R, (int)rows, (int)cols, kw, s);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
