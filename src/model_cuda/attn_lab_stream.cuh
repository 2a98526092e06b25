/* Device code shared by the attention lab's variants 2-4 (attn_lab.h; private to this folder):
 * the split geometry, the lane-group mapping, the per-group online softmax in registers and the
 * block's fixed-order reduction into one partial (m, l, acc) per (row, head, split).
 *
 * Lane groups. A K or V row of one kv head is D contiguous floats = D / 4 float4. A group of
 * LP = min(32, D / 4) lanes owns one position at a time, lane `sub` of the group holding float4
 * sub, sub + LP, ... (VPL = D / (4 LP) of them): consecutive lanes read consecutive 16 bytes, so
 * a group's load of a row is fully coalesced. D = 16, 32, 64: 8, 4, 2 groups per warp (the
 * transformers fixtures have D = 16 and 32); D >= 128: one.
 *
 * Arithmetic of one group (fp32, --fmad=false), per position j in ascending order and head h of
 * the GQA group: s = (sum over the lane's 4 VPL products in ascending d, then the xor butterfly
 * over the LP lanes) * D^-1/2; online softmax: if s > m { c = expf(m - s); l *= c; acc *= c;
 * m = s }, p = expf(s - m), l += p, acc += p v_j. The block then merges its NG groups in
 * ascending group order: M = max m_g, L = sum l_g expf(m_g - M), acc = sum acc_g expf(m_g - M).
 * A group that saw no position has m = -inf, l = acc = 0 and contributes expf(-inf) = 0. */
#ifndef RSSM_MODEL_CUDA_ATTN_LAB_STREAM_CUH
#define RSSM_MODEL_CUDA_ATTN_LAB_STREAM_CUH

#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>

#include "src/ssm_cuda/cuda_pdl.h"

namespace attn_lab {

constexpr int WARPS = 8;      /* warps per block of variants 2-4 */
/* Positions of a split at least: two of a block's steps at D = 128-256 (NG NPOS = 32 positions a
 * step). Below MIN_SPLIT nsplit positions the splits are MIN_SPLIT long, so a short context uses
 * few of them: at one block an SM (the kernel's registers) each used split of every (row, kv
 * head) is a block in a wave, and at 16 the 4B shapes' 64 rows at ~20-40 positions made 768
 * blocks, ~6 waves of one short step each: 25 us an attention layer for ~11 MB of K/V (H100,
 * session 37 trace); at 64 they are 256 blocks, 2 waves of two steps. A long context (p + 1 >
 * MIN_SPLIT nsplit: 2112 positions at 33 splits) is split as before. */
constexpr int MIN_SPLIT = 64;

/* Positions per split at position p (p + 1 positions): ceil((p + 1) / nsplit), at least
 * MIN_SPLIT; splits used = ceil((p + 1) / len) <= nsplit. Device-side, so a graph captured once
 * replays at any position. */
__host__ __device__ inline int64_t split_len(int64_t p, int nsplit) {
  const int64_t len = (p + nsplit) / nsplit;
  return len < MIN_SPLIT ? MIN_SPLIT : len;
}
__host__ __device__ inline int splits_used(int64_t p, int nsplit) {
  const int64_t len = split_len(p, nsplit);
  return (int)((p + len) / len);
}

/* The splits a grid launches for positions below max_ctx: the most splits_used gives at any of
 * them. Below p = MIN_SPLIT nsplit a split is MIN_SPLIT long, so splits_used(p) = p / MIN_SPLIT
 * + 1, rising to nsplit at p = MIN_SPLIT nsplit - 1, and it never exceeds nsplit: hence
 * min(nsplit, (max_ctx - 1) / MIN_SPLIT + 1) (test_attn_splits holds it to the maximum taken
 * position by position). A block past splits_used(pos[r]) returns before it reads or writes
 * anything, so the others are empty blocks: the same bits without them. */
__host__ __device__ inline int splits_launched(int64_t max_ctx, int nsplit) {
  if (max_ctx < 1) return 1;
  const int64_t most = (max_ctx - 1) / MIN_SPLIT + 1;
  return most < nsplit ? (int)most : nsplit;
}

/* Whether the stream kernel's grid is trimmed to splits_launched: when the full grid, nsplit x
 * nKV x R blocks, is more than ATTN_TRIM_BLOCKS. At one block an SM (the kernel's registers) the
 * empty blocks of a short context are scheduled in waves: the 4B shapes at K = 64 (33 splits x 4
 * kv heads x 64 rows = 8448 blocks at ~20-40 positions) spent ~50 us an attention layer on them
 * (H100, session 36, tests/gpu/kernel_trace.c), where the trimmed grid is a few waves. The
 * fixtures' 2112 blocks stay whole: trimmed, their stream kernel was faster but their steps 1.5-2.5
 * us slower (session 35). RSSM_ATTN_TRIM=0 / =1 forces it off / on (an A/B switch). */
constexpr int64_t ATTN_TRIM_BLOCKS = 4096;
__host__ __device__ inline bool trim_grid(int nsplit, int nKV, int R, int forced) {
  if (forced >= 0) return forced != 0;
  return (int64_t)nsplit * nKV * R > ATTN_TRIM_BLOCKS;
}

template <int D> struct Geo {
  static constexpr int F4 = D / 4;               /* float4 per row */
  static constexpr int LP = F4 < 32 ? F4 : 32;   /* lanes per position */
  static constexpr int PPW = 32 / LP;            /* positions (groups) per warp */
  static constexpr int VPL = F4 / LP;            /* float4 per lane */
  static constexpr int NG = WARPS * PPW;         /* groups per block */
  static_assert(F4 % LP == 0 && 32 % LP == 0, "D must be 16, 32, 64, 128 or 256");
};

/* One group's state for REP heads: its query slices, running max, sum and accumulator. */
template <int D, int REP> struct Acc {
  float4 q[REP][Geo<D>::VPL];
  float4 a[REP][Geo<D>::VPL];
  float m[REP], l[REP];
};

__device__ inline float4 f4_scale(float4 x, float c) {
  return make_float4(x.x * c, x.y * c, x.z * c, x.w * c);
}
__device__ inline float4 f4_axpy(float4 acc, float p, float4 v) {
  return make_float4(acc.x + p * v.x, acc.y + p * v.y, acc.z + p * v.z, acc.w + p * v.w);
}

template <int D, int REP>
__device__ inline void acc_init(Acc<D, REP> &A, const float *q /* [REP][D] */, int sub) {
  using G = Geo<D>;
#pragma unroll
  for (int h = 0; h < REP; h++) {
    const float4 *qh = reinterpret_cast<const float4 *>(q + h * D); /* [F4] */
#pragma unroll
    for (int v = 0; v < G::VPL; v++) {
      A.q[h][v] = qh[sub + G::LP * v];
      A.a[h][v] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    A.m[h] = -INFINITY;
    A.l[h] = 0.0f;
  }
}

/* s[h] = q_h . k * scale for the group's position; every lane of the warp must call it (the
 * butterfly's shuffles), whether or not its position is valid. */
template <int D, int REP>
__device__ inline void acc_scores(const Acc<D, REP> &A, const float4 *k /* [VPL] */, float scale,
                                  float *s /* [REP] */) {
  using G = Geo<D>;
#pragma unroll
  for (int h = 0; h < REP; h++) {
    float t = 0.0f;
#pragma unroll
    for (int v = 0; v < G::VPL; v++) {
      t = t + A.q[h][v].x * k[v].x;
      t = t + A.q[h][v].y * k[v].y;
      t = t + A.q[h][v].z * k[v].z;
      t = t + A.q[h][v].w * k[v].w;
    }
#pragma unroll
    for (int off = G::LP / 2; off >= 1; off >>= 1) t = t + __shfl_xor_sync(0xffffffffu, t, off);
    s[h] = t * scale;
  }
}

/* The online-softmax step of one valid position with scores s and value slice vv. The branch is
 * uniform within a group (every lane holds the same s after the butterfly). */
template <int D, int REP>
__device__ inline void acc_update(Acc<D, REP> &A, const float *s /* [REP] */,
                                  const float4 *vv /* [VPL] */) {
  using G = Geo<D>;
#pragma unroll
  for (int h = 0; h < REP; h++) {
    if (s[h] > A.m[h]) {
      const float c = expf(A.m[h] - s[h]); /* 0 at the first position (m = -inf) */
      A.l[h] = A.l[h] * c;
#pragma unroll
      for (int v = 0; v < G::VPL; v++) A.a[h][v] = f4_scale(A.a[h][v], c);
      A.m[h] = s[h];
    }
    const float p = expf(s[h] - A.m[h]);
    A.l[h] = A.l[h] + p;
#pragma unroll
    for (int v = 0; v < G::VPL; v++) A.a[h][v] = f4_axpy(A.a[h][v], p, vv[v]);
  }
}

/* Shared memory of the block reduction. */
template <int D, int REP> struct FinishSmem {
  float gm[Geo<D>::NG][REP], gl[Geo<D>::NG][REP]; /* each group's m and l */
  float M[REP], L[REP];                           /* the block's */
  float acc[REP][D];                              /* the merged accumulator */
};

/* Merges the block's groups in ascending group order and writes the split's partial:
 * ml = part_ml + ((r nH + kh REP) nsplit + split) 2 (head h at + h nsplit 2), acc likewise with
 * D floats. Every thread of the block calls it. */
template <int D, int REP>
__device__ inline void acc_finish(const Acc<D, REP> &A, FinishSmem<D, REP> &S, int group, int sub,
                                  float *part_ml /* [R][nH][nsplit][2] */,
                                  float *part_acc /* [R][nH][nsplit][D] */, int64_t head0,
                                  int nsplit, int split) {
  using G = Geo<D>;
  if (sub == 0)
    for (int h = 0; h < REP; h++) {
      S.gm[group][h] = A.m[h];
      S.gl[group][h] = A.l[h];
    }
  for (int i = threadIdx.x; i < REP * D; i += blockDim.x) (&S.acc[0][0])[i] = 0.0f;
  __syncthreads();
  if (threadIdx.x < REP) {
    const int h = threadIdx.x;
    float M = -INFINITY;
    for (int g = 0; g < G::NG; g++) M = fmaxf(M, S.gm[g][h]);
    float L = 0.0f;
    for (int g = 0; g < G::NG; g++) L = L + S.gl[g][h] * expf(S.gm[g][h] - M);
    S.M[threadIdx.x] = M;
    S.L[threadIdx.x] = L;
  }
  __syncthreads();
  /* one group at a time: every group covers all D of every head, so their adds would collide */
  for (int g = 0; g < G::NG; g++) {
    if (g == group)
#pragma unroll
      for (int h = 0; h < REP; h++) {
        const float f = expf(A.m[h] - S.M[h]);
#pragma unroll
        for (int v = 0; v < G::VPL; v++) {
          float *dst = &S.acc[h][4 * (sub + G::LP * v)];
          const float4 x = A.a[h][v];
          dst[0] = dst[0] + x.x * f;
          dst[1] = dst[1] + x.y * f;
          dst[2] = dst[2] + x.z * f;
          dst[3] = dst[3] + x.w * f;
        }
      }
    __syncthreads();
  }
  for (int i = threadIdx.x; i < REP * D; i += blockDim.x) {
    const int h = i / D, d = i % D;
    part_acc[((head0 + h) * nsplit + split) * D + d] = S.acc[h][d];
  }
  if (threadIdx.x < REP) {
    float *ml = part_ml + ((head0 + threadIdx.x) * nsplit + split) * 2;
    ml[0] = S.M[threadIdx.x];
    ml[1] = S.L[threadIdx.x];
  }
}

/* The arguments every variant-2-4 kernel takes. */
struct Args {
  const float *q;         /* [R][nH][D] */
  const float *kcache;    /* [Rc][max_ctx][nKV][D] */
  const float *vcache;    /* [Rc][max_ctx][nKV][D] */
  const int *pos;         /* [R] */
  const int *cache_row;   /* [R] or NULL */
  int64_t max_ctx;
  float *part_ml;         /* [R][nH][nsplit][2] */
  float *part_acc;        /* [R][nH][nsplit][D] */
  int nH, nKV, nsplit;
  float scale;
};

/* This block's split: positions j0 .. j0 + n - 1 of row r; false when it starts past pos[r]. */
__device__ inline bool block_split(const Args &a, int r, int64_t *j0, int *n) {
  const int64_t p = a.pos[r];
  const int64_t len = split_len(p, a.nsplit);
  *j0 = (int64_t)blockIdx.x * len;
  if (*j0 > p) return false;
  const int64_t left = p - *j0 + 1;
  *n = (int)(left < len ? left : len);
  return true;
}

/* Where a block of variants 2-4 works: its split (n positions from j0), this thread's lane group
 * and place in it, its first head and the offset of its first K/V row (kv head blockIdx.y of
 * cache row cache_row[r], position j0; position j0 + j at + j kvd floats). */
struct Place {
  int n, group, sub;
  int64_t head0, row0, kvd;
};
template <int D, int REP> __device__ inline bool block_place(const Args &a, Place *pl) {
  using G = Geo<D>;
  const int kh = blockIdx.y, r = blockIdx.z;
  int64_t j0;
  if (!block_split(a, r, &j0, &pl->n)) return false;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  pl->group = warp * G::PPW + lane / G::LP;
  pl->sub = lane % G::LP;
  const int64_t cr = a.cache_row ? a.cache_row[r] : r;
  pl->kvd = (int64_t)a.nKV * D;
  pl->head0 = (int64_t)r * a.nH + (int64_t)kh * REP;
  pl->row0 = (cr * a.max_ctx + j0) * pl->kvd + (int64_t)kh * D;
  return true;
}

}  // namespace attn_lab

/* Launchers of the variant files (attn_lab_v2.cu, attn_lab_v3.cu); 0, -1 launch error, -2 no
 * instance for (D, rep). */
int attn_lab_launch_stream(const attn_lab::Args &a, int D, int rep, int R, int npos,
                           cudaStream_t s);
int attn_lab_launch_cpasync(const attn_lab::Args &a, int D, int rep, int R, cudaStream_t s);

/* Instantiates LAUNCH(D, REP) for every supported (D, rep) (attn_lab_shape_ok); returns -2 from
 * the enclosing function otherwise. */
#define ATTN_LAB_DISPATCH_REP(D_, rep, LAUNCH)                                                  \
  switch (rep) {                                                                               \
    case 1: return LAUNCH(D_, 1);                                                              \
    case 2: return LAUNCH(D_, 2);                                                              \
    case 4: return LAUNCH(D_, 4);                                                              \
    case 5: return LAUNCH(D_, 5);                                                              \
    case 8: return LAUNCH(D_, 8);                                                              \
    default: return -2;                                                                        \
  }
#define ATTN_LAB_DISPATCH(D, rep, LAUNCH)                                                       \
  switch (D) {                                                                                 \
    case 16: ATTN_LAB_DISPATCH_REP(16, rep, LAUNCH)                                            \
    case 32: ATTN_LAB_DISPATCH_REP(32, rep, LAUNCH)                                            \
    case 64: ATTN_LAB_DISPATCH_REP(64, rep, LAUNCH)                                            \
    case 128: ATTN_LAB_DISPATCH_REP(128, rep, LAUNCH)                                          \
    case 256: ATTN_LAB_DISPATCH_REP(256, rep, LAUNCH)                                          \
    default: return -2;                                                                        \
  }

#endif
