/* Device helpers shared by the model_cuda kernels (internal). The scalar functions are the CPU
 * runtime's (src/model/linalg.c) written for the device: the same IEEE operations in the same
 * order, compiled with --fmad=false; only expf / log1pf differ (CUDA's are within 2 ulp, glibc's
 * within 1), which is the documented source of few-ulp differences (docs/gpu-runtime.md). */
#ifndef RSSM_MODEL_CUDA_MC_DEVICE_CUH
#define RSSM_MODEL_CUDA_MC_DEVICE_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdint.h>

#include "src/model/dt_clamp.h"
#include "src/ssm_cuda/cuda_pdl.h"

namespace mc {

/* the device pass unrolls (the arrays stay in registers); the host pass of a __host__ __device__
   function would warn of an unknown pragma */
#ifdef __CUDA_ARCH__
#define MC_UNROLL _Pragma("unroll")
#else
#define MC_UNROLL
#endif

/* silu, dot8_lane and the conv steps below are __host__ __device__ so that host tests
 * (tests/model/test_conv_step2.cu, test_dot8_lane.cu) can hold conv_step_channel2 to
 * conv_step_channel and dot8_lane's lanes to the CPU's dot_f32 bit for bit. */
__host__ __device__ inline float silu(float x) { return x / (1.0f + expf(-x)); }
__device__ inline float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
__device__ inline float softplus(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
/* The MLP activations (swiglu_kernel, relu2_kernel and their fused bf16 forms, mc_fused.cu). */
__device__ inline float swiglu_of(float gate, float up) { return silu(gate) * up; }
__device__ inline float relu2_of(float x) {
  const float p = x > 0.0f ? x : 0.0f;
  return p * p;
}

/* dot_f32's combination of its 8 interleaved partial sums (linalg.c). */
__host__ __device__ inline float tree8(const float *p /* [8] */) {
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

/* Lane l (< 8) of dot_f32(a, b, n): a[i] * b[i] summed over i = l, l + 8, ... in ascending i
 * from +0, exactly the CPU's partial sum p[l] (its main loop and its tail visit the same i in
 * the same order). The terms go DOT8_BATCH at a time, every load of a batch before its sums,
 * which stay one chain in ascending i (the same operations, so the same bits): one term at a
 * time the compiler unrolled the loop by 4 only, so a lane waited a load round trip every 4
 * terms; at the 4B shapes' norms (H 2560-3136: 320-392 terms a lane, lanes 0..7 only, behind the
 * norm's barrier) that was ~80-100 round trips on the step's critical path, 65 norms a step. */
constexpr int DOT8_BATCH = 16;
__host__ __device__ inline float dot8_lane(const float *a /* [n] */, const float *b /* [n] */,
                                           int64_t n, int l) {
  float s = 0.0f;
  int64_t i = l;
  for (; i + 8 * (DOT8_BATCH - 1) < n; i += 8 * DOT8_BATCH) {
    float av[DOT8_BATCH], bv[DOT8_BATCH];
    MC_UNROLL
    for (int k = 0; k < DOT8_BATCH; k++) av[k] = a[i + 8 * k], bv[k] = b[i + 8 * k];
    MC_UNROLL
    for (int k = 0; k < DOT8_BATCH; k++) s = s + av[k] * bv[k];
  }
  for (; i < n; i += 8) s = s + a[i] * b[i];
  return s;
}

/* The first NORM_W_REGS weights a thread of rmsnorm_group scales by (elements threadIdx.x +
 * k blockDim.x, k < NORM_W_REGS; 0 past gs or without weights), which a norm kernel loads before
 * it waits for the previous kernel (cuda_pdl.h: weights are never written during a decode). In
 * rmsnorm_group's last loop, behind its barriers, they were an L2 round trip of their own on the
 * step's critical path (session 34: a norm added 2.2-3.7 us to a fixture step, a GEMM with one
 * round trip after its wait 1.5-2.3). Enough for a group of 512 at 128 threads; further elements
 * read the weight as before. */
constexpr int NORM_W_REGS = 4;
struct norm_w {
  float v[NORM_W_REGS];
};
__device__ inline norm_w load_norm_w(const float *wg /* [gs] or NULL */, int gs) {
  norm_w r;
#pragma unroll
  for (int k = 0; k < NORM_W_REGS; k++) {
    const int i = threadIdx.x + k * blockDim.x;
    r.v[k] = wg && i < gs ? wg[i] : 0.0f;
  }
  return r;
}

/* The elements a norm kernel's thread handles in one chunk: all their loads (weights, gates,
 * inputs) are issued before any of their stores. One element at a time, each store (which the
 * compiler must assume may alias the next element's loads) put an L2 round trip between
 * elements: at the 4B shapes (H 2560-3136, 20-25 elements a thread) a norm added 16-21 us to the
 * step where its bytes take ~1 (session 36, tests/gpu/kernel_trace.c). */
constexpr int NORM_CHUNK = 8;
/* The chunk a norm kernel is instantiated with for a group of gs: 1 (each element's loads, then
 * its stores, as before session 36) where a thread of NORM_THREADS has at most NORM_W_REGS
 * elements, else NORM_CHUNK. Session 36 call 3 (H100): chunks of 8 everywhere took the 4B shapes'
 * norms from 16-21 us to 8-9, but made the fixtures' steps (H 256-320, 2-3 elements a thread)
 * 13.6 / 15.8 us slower, ~0.7 us a norm launch, not located (the kernels grew from 29-30 to 48-106
 * registers, ptxas -v); with the chunk a template parameter the
 * small groups run the per-element code. The same bits either way. */
__host__ __device__ constexpr int norm_chunk_for(int64_t gs, int threads) {
  return gs <= (int64_t)NORM_W_REGS * threads ? 1 : NORM_CHUNK;
}
/* The block of a norm kernel instantiated with NORM_CHUNK: 512 threads rather than `threads`, so
 * that a group of up to 4096 is one chunk a thread (one round trip for its loads, where three
 * chunks of 128 threads at H 2560-3136 were three: session 36 call 3, a norm still 8-9 us). The
 * bits do not depend on the block size (lanes 0..7 make the sums; each element's scaling is its
 * own). */
constexpr int NORM_THREADS_WIDE = 512;
__host__ __device__ constexpr int norm_threads_for(int64_t gs, int threads) {
  return norm_chunk_for(gs, threads) == 1 ? threads : NORM_THREADS_WIDE;
}

/* One block normalises one group of gs floats (rmsnorm_kernel, and the fused add + norm of
 * mc_fused.cu, so that both compute the same bits): threads 0..7 make dot_f32's partial sums,
 * thread 0 the scale 1 / sqrt(sum / gs + eps), then every thread scales its elements,
 *   y = x * inv * (plus_one ? 1 + w : w)   (w NULL: no weight),
 *   y = y * silu(z)                        (z not NULL: the GDN output gate, mul_silu's),
 * and writes y, and yb = bf16(y) rounded to nearest even when yb is not NULL (the bf16 GEMM
 * input that f32_to_bf16 would make of y). Every thread of the block must call it. xg may be
 * the block's shared copy of the group (mc_norm_stage_bytes), made before a barrier. wp: the
 * thread's first weights already loaded (load_norm_w of wg), or NULL; the same bits either way.
 * A thread's elements go NORM_CHUNK at a time, loads first (NORM_CHUNK says why); each element's
 * operations are the same whichever chunk it is in. */
template <int CH = NORM_CHUNK>
__device__ inline void rmsnorm_group(const float *xg /* [gs] */, float *yg /* [gs] */,
                                     __nv_bfloat16 *ybg /* [gs] or NULL */, int gs,
                                     const float *wg /* [gs] or NULL */, int plus_one, float eps,
                                     const float *zg /* [gs] or NULL */,
                                     const norm_w *wp = nullptr) {
  __shared__ float part[8];
  __shared__ float inv_s;
  if (threadIdx.x < 8) part[threadIdx.x] = dot8_lane(xg, xg, gs, threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) inv_s = 1.0f / sqrtf(tree8(part) / (float)gs + eps);
  __syncthreads();
  const float inv = inv_s;
  /* element i with its weight wi, gate zi: the same operations whichever way they came */
  auto scale_one = [&](int i, float xi, float wi, float zi) {
    float v = xi * inv;
    if (wg) v = v * (plus_one ? 1.0f + wi : wi);
    if (zg) v = v * silu(zi);
    yg[i] = v;
    if (ybg) ybg[i] = __float2bfloat16_rn(v);
  };
  const int nt = blockDim.x;
  if constexpr (CH == 1) { /* the per-element code of before session 36 */
    int i = threadIdx.x;
    if (wp) {
#pragma unroll
      for (int k = 0; k < NORM_W_REGS; k++, i += nt)
        if (i < gs) scale_one(i, xg[i], wp->v[k], zg ? zg[i] : 0.0f);
    }
    for (; i < gs; i += nt) scale_one(i, xg[i], wg ? wg[i] : 0.0f, zg ? zg[i] : 0.0f);
  } else {
    static_assert(CH >= NORM_W_REGS, "wp's weights lie in the first chunk");
    for (int base = threadIdx.x, first = 1; base < gs; base += CH * nt, first = 0) {
      float xv[CH], wv[CH], zv[CH];
#pragma unroll
      for (int k = 0; k < CH; k++) {
        const int i = base + k * nt;
        const bool in = i < gs;
        const bool pre = wp && first && k < NORM_W_REGS; /* element k of the thread: wp->v[k] */
        xv[k] = in ? xg[i] : 0.0f;
        wv[k] = !wg || !in ? 0.0f : pre ? wp->v[k < NORM_W_REGS ? k : 0] : wg[i];
        zv[k] = zg && in ? zg[i] : 0.0f;
      }
#pragma unroll
      for (int k = 0; k < CH; k++) {
        const int i = base + k * nt;
        if (i >= gs) break;
        scale_one(i, xv[k], wv[k], zv[k]);
      }
    }
  }
}

/* The group a norm kernel hands to rmsnorm_group: xg copied into the block's shared copy xs
 * (every thread its elements, NORM_CHUNK loads before their stores) when the launch gave one (xs
 * not NULL), else xg itself; ends with the barrier after which lanes 0..7 may read it. Every
 * thread of the block must call it. */
template <int CH = NORM_CHUNK>
__device__ inline const float *stage_group(float *xs /* [gs] shared, or NULL */,
                                           const float *xg /* [gs] */, int gs) {
  if (xs) {
    const int nt = blockDim.x;
    for (int base = threadIdx.x; base < gs; base += CH * nt) {
      float v[CH];
#pragma unroll
      for (int k = 0; k < CH; k++) v[k] = base + k * nt < gs ? xg[base + k * nt] : 0.0f;
#pragma unroll
      for (int k = 0; k < CH; k++)
        if (base + k * nt < gs) xs[base + k * nt] = v[k];
    }
  }
  __syncthreads();
  return xs ? xs : xg;
}

/* One decode step of the causal conv for channel c of one row (conv_step_kernel, and the fused
 * conv + prep kernels of mc_fused.cu, so that both compute the same bits): the K taps over the
 * row's window and the new input xc, then the bias, then SiLU; the window is shifted by one with
 * xc appended. The channel's window column is private to its thread. Returns silu(acc). */
__host__ __device__ inline float conv_step_channel(float *wr /* [K-1][C] */, float xc,
                                                   const float *w /* [C][K] */,
                                                   const float *bias /* [C] or NULL */, int64_t c,
                                                   int64_t C, int K) {
  float acc = 0.0f;
  for (int k = 0; k < K - 1; k++) acc = acc + w[c * K + k] * wr[k * C + c];
  acc = acc + w[c * K + K - 1] * xc;
  if (bias) acc = acc + bias[c];
  for (int k = 0; k + 1 < K - 1; k++) wr[k * C + c] = wr[(k + 1) * C + c];
  if (K > 1) wr[(K - 2) * C + c] = xc;
  return silu(acc);
}

/* conv_step_channel for two channels c0 and c1 of one row at once, every load of both before any
 * store: one after the other, the second channel's loads waited behind the first's window stores
 * (which the compiler must assume may alias them), a second L2 round trip (GDN's key heads convolve
 * a q and a k channel per thread). Each channel's arithmetic is conv_step_channel's, in its order;
 * K above CONV2_K_MAX takes the two calls. Writes silu(acc) of each into *y0, *y1. */
constexpr int CONV2_K_MAX = 8;
__host__ __device__ inline void conv_step_channel2(float *wr /* [K-1][C] */, float x0, float x1,
                                                   const float *w /* [C][K] */,
                                                   const float *bias /* [C] or NULL */, int64_t c0,
                                                   int64_t c1, int64_t C, int K, float *y0,
                                                   float *y1) {
  if (K > CONV2_K_MAX) {
    *y0 = conv_step_channel(wr, x0, w, bias, c0, C, K);
    *y1 = conv_step_channel(wr, x1, w, bias, c1, C, K);
    return;
  }
  float w0[CONV2_K_MAX], w1[CONV2_K_MAX], s0[CONV2_K_MAX], s1[CONV2_K_MAX];
  MC_UNROLL
  for (int k = 0; k < CONV2_K_MAX; k++) {
    if (k < K) w0[k] = w[c0 * K + k], w1[k] = w[c1 * K + k];
    if (k < K - 1) s0[k] = wr[k * C + c0], s1[k] = wr[k * C + c1];
  }
  const float b0 = bias ? bias[c0] : 0.0f, b1 = bias ? bias[c1] : 0.0f;
  float a0 = 0.0f, a1 = 0.0f;
  MC_UNROLL
  for (int k = 0; k < CONV2_K_MAX; k++)
    if (k < K - 1) a0 = a0 + w0[k] * s0[k], a1 = a1 + w1[k] * s1[k];
  MC_UNROLL
  for (int k = 0; k < CONV2_K_MAX; k++)
    if (k == K - 1) a0 = a0 + w0[k] * x0, a1 = a1 + w1[k] * x1;
  if (bias) a0 = a0 + b0, a1 = a1 + b1;
  MC_UNROLL
  for (int k = 0; k + 1 < CONV2_K_MAX; k++)
    if (k + 1 < K - 1) wr[k * C + c0] = s0[k + 1], wr[k * C + c1] = s1[k + 1];
  if (K > 1) wr[(K - 2) * C + c0] = x0, wr[(K - 2) * C + c1] = x1;
  *y0 = silu(a0);
  *y1 = silu(a1);
}

/* Mamba-2's step size of head h, delta = softplus(dt + dt_bias) (clamped to the time-step limit
 * at prompt positions: rssm_dt_limit_at), and its decay alpha = exp(delta * -exp(A_log)), as
 * layer_mamba2.c (mamba2_prep_kernel and the fused conv + prep). */
__device__ inline float mamba2_delta(float dt, float dt_bias, int64_t pos, float lo, float hi) {
  return rssm_dt_limit_at(softplus(dt + dt_bias), pos, lo, hi);
}
__device__ inline float mamba2_alpha(float delta, float A_log) {
  float A = -expf(A_log);
  return expf(delta * A);
}

/* Mamba-2's output before its group norm: (o + D x) * silu(z) (mamba2_gate_kernel, and the
 * fused gate + norm). */
__device__ inline float mamba2_gate_of(float o, float D, float x, float z) {
  float ot = o + D * x;
  return ot * silu(z);
}

/* GDN's gates of value head h: alpha = exp(-exp(A_log) softplus(a + dt_bias)), beta =
 * sigmoid(b), as layer_gdn.c (gdn_gates_kernel and the fused conv + prep). */
__device__ inline void gdn_gates_of(float a, float b, float A_log, float dt_bias,
                                    float *alpha, float *beta) {
  float gg = -expf(A_log) * softplus(a + dt_bias);
  *alpha = expf(gg);
  *beta = sigmoid(b);
}

/* One block normalises one key head's q and k (gdn_l2_kernel, and the fused conv + prep):
 * threads 0..7 make dot_f32's partial sums of q, 8..15 those of k (the block needs 16 threads
 * or more), then q = l2norm(q) qscale and k = l2norm(k), 1 / sqrt(sum + 1e-6) as layer_gdn.c.
 * qs and ks may be global memory written by this block before a __syncthreads. Every thread of
 * the block must call it. */
__device__ inline void gdn_l2_head(const float *qs /* [dk] */, const float *ks /* [dk] */,
                                   float *qd /* [dk] */, float *kd /* [dk] */, int dk,
                                   float qscale) {
  __shared__ float part[16];
  __shared__ float inv_s[2];
  if (threadIdx.x < 8) part[threadIdx.x] = dot8_lane(qs, qs, dk, threadIdx.x);
  else if (threadIdx.x < 16) part[threadIdx.x] = dot8_lane(ks, ks, dk, threadIdx.x - 8);
  __syncthreads();
  if (threadIdx.x == 0) inv_s[0] = 1.0f / sqrtf(tree8(part) + 1e-6f);
  if (threadIdx.x == 1) inv_s[1] = 1.0f / sqrtf(tree8(part + 8) + 1e-6f);
  __syncthreads();
  for (int i = threadIdx.x; i < dk; i += blockDim.x) {
    float a = qs[i] * inv_s[0];
    qd[i] = a * qscale; /* l2norm, then the separate scaling, as layer_gdn.c */
    kd[i] = ks[i] * inv_s[1];
  }
}

inline cudaStream_t as_stream(void *s) { return (cudaStream_t)s; }
inline int launch_ok() { return cudaGetLastError() == cudaSuccess ? 0 : -1; }
inline unsigned blocks_for(int64_t n, int threads) { return (unsigned)((n + threads - 1) / threads); }
/* Blocks along a row of n elements for an element-wise kernel of `threads` threads, capped at
 * 1024: the kernels stride over the rest. */
inline unsigned row_blocks_for(int64_t n, int threads) {
  unsigned b = blocks_for(n, threads);
  return b < 1 ? 1 : (b > 1024 ? 1024 : b);
}

}  // namespace mc

#endif
