/* The wide tensor-core GEMM (mc_gemm_wide.h): the kernel and its launcher.
 *
 * Shared memory, per stage: the block's W tile [128 rows][64 k] and the X tile [64 rows][64 k],
 * bf16, each row 128 bytes = 8 chunks of 16; chunk c of row r sits at chunk c ^ (r % 8) of the
 * row (so that the 8 rows an ldmatrix phase reads at one logical chunk fall in 8 distinct bank
 * groups). mma.sync.m16n8k16 fragments as in mc_gemm_mma.cu (A = 16 weight rows, row-major; B =
 * X^T, 8 rows of X as its columns; D[n][r] = Y[r][n]), loaded with ldmatrix.x4: for A, lane l
 * addresses row (l % 8) + 8 ((l / 8) % 2) at chunk 2 kk + l / 16 (matrices a0..a3 = rows 0-7 /
 * 8-15 at k 0-7, then at k 8-15); for a pair of X tiles, row (l % 8) + 8 (l / 16) at chunk 2 kk +
 * (l / 8) % 2 (b0, b1 of the first 8 rows, then of the next 8). */
#include <cuda_runtime.h>

#include "src/model_cuda/mc_gemm_wide.h"
#include "src/model_cuda/mc_mma_device.cuh"
#include "src/ssm_cuda/cuda_pdl.h"

namespace {

constexpr int BN = MC_GEMM_WIDE_ROWS;              /* weight rows a block */
constexpr int KT = MC_GEMM_WIDE_KT;                /* k a tile */
constexpr int XR = MC_GEMM_WIDE_MAX_R;             /* X rows a stage holds */
constexpr int STAGES = 4;                          /* tiles in the pipeline */
constexpr int THREADS = 256;                       /* 8 warps of 16 weight rows */
constexpr int W_BYTES = BN * KT * 2;               /* 16 KiB */
constexpr int STAGE_BYTES = W_BYTES + XR * KT * 2; /* + 8 KiB of X */
constexpr int SMEM_BYTES = STAGES * STAGE_BYTES;   /* 96 KiB */
static_assert(BN == 16 * (THREADS / 32), "a warp owns 16 weight rows");

/* byte offset of chunk c of row r in a swizzled tile of 128-byte rows */
__device__ __forceinline__ uint32_t swz(int r, int c) {
  return (uint32_t)(r * 128 + ((c ^ (r & 7)) << 4));
}

/* 16 bytes global -> shared, asynchronously; ok false: 16 zero bytes (src-size 0, nothing read) */
__device__ __forceinline__ void cp16(uint32_t dst, const void *src, bool ok) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(ok ? 16 : 0));
}
__device__ __forceinline__ void cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldsm_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/* d += A B for one m16n8k16 (bf16 A, B; fp32 D) */
__device__ __forceinline__ void mma_bf16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
  __trap(); /* mc_gemm_wide refuses devices before sm_80 */
#endif
}

/* The W tile kt of the block (rows n0 .. n0 + 127, k kt 64 .. + 63) into the stage at st: 1024
   chunks, 4 a thread; rows past `rows` and k past cols as zeros */
__device__ __forceinline__ void load_w(uint32_t st, const uint16_t *__restrict__ W, int n0, int kt,
                                       int rows, int cols) {
#pragma unroll
  for (int j = 0; j < BN * 8 / THREADS; j++) {
    const int c = threadIdx.x + THREADS * j, r = c >> 3, ch = c & 7;
    const int n = n0 + r, k = kt * KT + 8 * ch;
    const bool ok = n < rows && k < cols;
    cp16(st + swz(r, ch), ok ? W + (int64_t)n * cols + k : W, ok);
  }
}

/* The X tile kt (rows 0 .. 16 NP - 1, the same k) into the stage's X part: rows past R as zeros */
template <int NP>
__device__ __forceinline__ void load_x(uint32_t sx, const uint16_t *__restrict__ X, int kt, int R,
                                       int cols) {
#pragma unroll
  for (int j = 0; j < XR * 8 / THREADS; j++) {
    const int c = threadIdx.x + THREADS * j, r = c >> 3, ch = c & 7;
    if (r >= 16 * NP) break; /* rows no fragment reads */
    const int k = kt * KT + 8 * ch;
    const bool ok = r < R && k < cols;
    cp16(sx + swz(r, ch), ok ? X + (int64_t)r * cols + k : X, ok);
  }
}

/* Grid (ceil(rows / 128), nsplit); 256 threads; NP pairs of 8-row X tiles (16 NP >= R). */
template <int NP>
__global__ void __launch_bounds__(THREADS, MC_GEMM_WIDE_SM_BLOCKS)
    gemm_wide_kernel(const uint16_t *__restrict__ W /* [rows][cols] */,
                     const uint16_t *__restrict__ X /* [R][cols] */, float *Y /* [R][ldy] */,
                     int64_t ldy, int R, int rows, int cols, int tiles_per_split,
                     float *scratch /* [nsplit][R][rows] */) {
  pdl_trigger();
  extern __shared__ __align__(128) unsigned char smem[]; /* [STAGES][STAGE_BYTES] */
  const uint32_t base = (uint32_t)__cvta_generic_to_shared(smem);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int tile = blockIdx.x, split = blockIdx.y, nsplit = gridDim.y;
  const int n0 = tile * BN, nkt = (cols + KT - 1) / KT;
  const int kt0 = split * tiles_per_split;
  const int nk = min(nkt, kt0 + tiles_per_split) - kt0; /* >= 1: the launcher's check */
  /* the block's i-th tile: its range rotated by the tile index, so that the blocks running at
     once read different X tiles (all of them reading one X tile at the same moment hammer the
     same L2 lines); the order of an output's sum is then a function of its tile, cols and
     nsplit, still not of R */
  const int rot = tile % nk;
  auto ktile = [&](int i) { return kt0 + (i + rot) % nk; };

  /* the first STAGES - 1 tiles' W before the wait, their X after it; one commit group a stage
     (the first also holds the W requested before the wait) */
#pragma unroll
  for (int i = 0; i < STAGES - 1; i++)
    if (i < nk) load_w(base + i * STAGE_BYTES, W, n0, ktile(i), rows, cols);
  pdl_wait();
#pragma unroll
  for (int i = 0; i < STAGES - 1; i++) {
    if (i < nk) load_x<NP>(base + i * STAGE_BYTES + W_BYTES, X, ktile(i), R, cols);
    cp_commit();
  }

  float acc[2 * NP][4];
#pragma unroll
  for (int j = 0; j < 2 * NP; j++) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  for (int i = 0; i < nk; i++) {
    cp_wait<STAGES - 2>(); /* tile i's group has landed (for this thread) */
    __syncthreads();       /* ... for every thread; and tile i - 1's stage is free */
    const int nx = i + STAGES - 1;
    if (nx < nk) {
      const uint32_t st = base + (nx % STAGES) * STAGE_BYTES;
      load_w(st, W, n0, ktile(nx), rows, cols);
      load_x<NP>(st + W_BYTES, X, ktile(nx), R, cols);
    }
    cp_commit(); /* possibly empty: the group count stays one a tile */
    const uint32_t sw = base + (i % STAGES) * STAGE_BYTES, sx = sw + W_BYTES;
#pragma unroll
    for (int kk = 0; kk < KT / 16; kk++) {
      uint32_t a[4];
      ldsm_x4(sw + swz(16 * warp + (lane & 7) + ((lane >> 3) & 1) * 8, 2 * kk + (lane >> 4)), a);
#pragma unroll
      for (int p = 0; p < NP; p++) {
        uint32_t b[4];
        ldsm_x4(sx + swz(16 * p + (lane & 7) + ((lane >> 4) << 3), 2 * kk + ((lane >> 3) & 1)), b);
        mma_bf16(acc[2 * p], a, b[0], b[1]);
        mma_bf16(acc[2 * p + 1], a, b[2], b[3]);
      }
    }
  }
  cp_wait<0>();

  /* D[n][r]: regs 0, 1 at weight row g, X rows 2t, 2t + 1 of the tile; regs 2, 3 at row g + 8 */
  const int g = lane >> 2, t = lane & 3;
  const int na = n0 + 16 * warp + g;
  float *dst = nsplit == 1 ? Y : scratch + (int64_t)split * R * rows; /* [R][ld] */
  const int64_t ld = nsplit == 1 ? ldy : rows;
#pragma unroll
  for (int j = 0; j < 2 * NP; j++)
#pragma unroll
    for (int e = 0; e < 4; e++) {
      const int r = 8 * j + 2 * t + (e & 1), n = na + (e >> 1) * 8;
      if (r < R && n < rows) dst[(int64_t)r * ld + n] = acc[j][e];
    }
}

/* Y[r][n] = P[0][r][n] + P[1][r][n] + ... + P[nsplit - 1][r][n] (ascending split order) for
   r < R, n < rows; a thread per 4 consecutive n (rows % 4 == 0 and ldy % 4 == 0: float4 loads
   and stores) or per n; every split's load before the sum. */
template <int V>
__global__ void wide_reduce_kernel(const float *__restrict__ P /* [nsplit][R][rows] */,
                                   float *Y /* [R][ldy] */, int64_t ldy, int R, int rows,
                                   int nsplit) {
  pdl_enter();
  const int64_t per_row = rows / V, n_items = (int64_t)R * per_row, stride = (int64_t)R * rows;
  for (int64_t it = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; it < n_items;
       it += (int64_t)gridDim.x * blockDim.x) {
    const int64_t r = it / per_row, n = (it % per_row) * V;
    const float *p = P + r * rows + n;
    if constexpr (V == 4) {
      float4 y = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      for (int s0 = 0; s0 < nsplit; s0 += 8) { /* 8 splits' loads at a time, then their sums */
        float4 v[8];
#pragma unroll
        for (int u = 0; u < 8; u++)
          if (s0 + u < nsplit)
            v[u] = __ldcg(reinterpret_cast<const float4 *>(p + (s0 + u) * stride));
#pragma unroll
        for (int u = 0; u < 8; u++) {
          if (s0 + u >= nsplit) break;
          if (s0 + u == 0)
            y = v[u];
          else
            y.x = y.x + v[u].x, y.y = y.y + v[u].y, y.z = y.z + v[u].z, y.w = y.w + v[u].w;
        }
      }
      *reinterpret_cast<float4 *>(Y + r * ldy + n) = y;
    } else {
      float y = __ldcg(p);
      for (int s = 1; s < nsplit; s++) y = y + __ldcg(p + s * stride);
      Y[r * ldy + n] = y;
    }
  }
}

/* the kernels' 96 KiB of dynamic shared memory (over the default 48), set once per process */
bool allow_smem() {
  static const bool ok =
      cudaFuncSetAttribute(gemm_wide_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           SMEM_BYTES) == cudaSuccess &&
      cudaFuncSetAttribute(gemm_wide_kernel<2>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           SMEM_BYTES) == cudaSuccess &&
      cudaFuncSetAttribute(gemm_wide_kernel<4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                           SMEM_BYTES) == cudaSuccess;
  return ok;
}

template <int NP>
void launch(const uint16_t *W, const uint16_t *X, float *Y, int64_t ldy, int R, int rows, int cols,
            int nsplit, int per, float *scratch, cudaStream_t s) {
  const dim3 grid((unsigned)((rows + BN - 1) / BN), (unsigned)nsplit);
  pdl_launch(gemm_wide_kernel<NP>, grid, dim3(THREADS), (size_t)SMEM_BYTES, s, W, X, Y, ldy, R,
             rows, cols, per, scratch);
  if (nsplit == 1) return;
  const bool v4 = rows % 4 == 0 && ldy % 4 == 0;
  const int64_t items = (int64_t)R * (v4 ? rows / 4 : rows);
  const unsigned blocks = (unsigned)((items + 255) / 256 < 4096 ? (items + 255) / 256 : 4096);
  pdl_launch(v4 ? wide_reduce_kernel<4> : wide_reduce_kernel<1>, dim3(blocks), dim3(256), 0, s,
             (const float *)scratch, Y, ldy, R, rows, nsplit);
}

}  // namespace

extern "C" int mc_gemm_wide_prepare(void) {
  static const bool ok = mc_device_has_mma() && allow_smem(); /* once per process */
  return ok ? 0 : -1;
}

extern "C" int mc_gemm_wide(const uint16_t *W, const uint16_t *X, float *Y, int64_t ldy, int R,
                            int64_t rows, int64_t cols, int nsplit, float *scratch, void *stream) {
  if (mc_gemm_wide_prepare() != 0 || !mc_gemm_wide_supported(W, X, R, rows, cols, ldy) ||
      nsplit < 1 || nsplit > MC_GEMM_WIDE_MAX_SPLITS || (nsplit > 1 && !scratch))
    return -2;
  const int64_t nkt = (cols + KT - 1) / KT, per = mc_gemm_wide_tiles_per_split(cols, nsplit);
  if ((int64_t)(nsplit - 1) * per >= nkt) return -2; /* an empty split */
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  const int r = (int)rows, c = (int)cols, p = (int)per;
  if (R <= 16)
    launch<1>(W, X, Y, ldy, R, r, c, nsplit, p, scratch, s);
  else if (R <= 32)
    launch<2>(W, X, Y, ldy, R, r, c, nsplit, p, scratch, s);
  else
    launch<4>(W, X, Y, ldy, R, r, c, nsplit, p, scratch, s);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}
