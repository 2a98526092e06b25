/* Element-wise and per-row kernels of the GPU forward (mc_kernels.h; CPU references in
 * mc_ref.c). Memory-bound glue between the cuBLAS GEMMs: each is one pass over its rows. The
 * RMSNorm and L2-norm sums use dot_f32's 8-lane order so that they are bit-identical to the
 * CPU; they are tiny next to the GEMMs, so 8 sequential lanes are fast enough for now
 * (docs/gpu-runtime.md lists the faster variants for later). */
#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_fused.h"
#include "src/model_cuda/mc_kernels.h"

using namespace mc;

namespace {

constexpr int NORM_THREADS = 128;
constexpr int EW_THREADS = 256;

/* One (group, row) per block (rmsnorm_group, mc_device.cuh; CH: norm_chunk_for). */
template <int CH>
__global__ void rmsnorm_kernel(const float *x /* [R][ld] */, float *y /* [R][ld] */, int gs,
                               int64_t ld, const float *w, int w_per_group, int plus_one, float eps,
                               int staged) {
  pdl_enter();
  extern __shared__ float stage[]; /* [gs] when staged (mc_norm_stage_bytes) */
  const int g = blockIdx.x, r = blockIdx.y;
  const float *xg = x + r * ld + (int64_t)g * gs; /* [gs] */
  float *yg = y + r * ld + (int64_t)g * gs;       /* [gs] */
  const float *wg = w ? (w_per_group ? w + (int64_t)g * gs : w) : nullptr; /* [gs] */
  rmsnorm_group<CH>(stage_group<CH>(staged ? stage : nullptr, xg, gs), yg, nullptr, gs, wg,
                    plus_one, eps, nullptr);
}

__global__ void embed_kernel(const float *embed /* [V][H] */, const int64_t *tok /* [R] */,
                             float *h /* [R][H] */, int64_t H) {
  pdl_enter();
  const int r = blockIdx.y;
  const float *src = embed + tok[r] * H; /* [H] */
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < H;
       i += (int64_t)gridDim.x * blockDim.x)
    h[r * H + i] = src[i];
}

/* Thread per (row, channel): conv_step_channel (mc_device.cuh). */
__global__ void conv_step_kernel(float *win /* [R][K-1][C] */, const float *x /* [R][ldx] */,
                                 int64_t ldx, const float *w /* [C][K] */,
                                 const float *bias /* [C] or NULL */, float *out /* [R][C] */,
                                 int64_t C, int K) {
  pdl_enter();
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int r = blockIdx.y;
  if (c >= C) return;
  out[r * C + c] = conv_step_channel(win + (int64_t)r * (K - 1) * C, x[r * ldx + c], w, bias, c,
                                     C, K);
}

/* Thread per (state row, channel): the T drafts of a spec round through the causal conv, each
 * over the row's committed window followed by the earlier drafts (conv_silu over the CPU's
 * [K-1+T] window: the same taps in the same order as conv_step_kernel), then the window advanced
 * by the accepted a[r] (0: left as it was; model_commit's memmove). Ascending writes are safe:
 * window slot i takes extended slot i + a >= i, not yet overwritten. */
__global__ void conv_spec_kernel(float *win /* [R][K-1][C] */, const float *x /* [R*T][ldx] */,
                                 int64_t ldx, const float *w /* [C][K] */,
                                 const float *bias /* [C] or NULL */, const int *a /* [R] */,
                                 float *out /* [R*T][C] */, int T, int64_t C, int K) {
  pdl_enter();
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int r = blockIdx.y;
  if (c >= C) return;
  float *wr = win + (int64_t)r * (K - 1) * C; /* [K-1][C] */
  float ext[MC_CONV_SPEC_MAX];                /* [K-1+T] window, then the drafts' inputs */
  for (int k = 0; k < K - 1; k++) ext[k] = wr[k * C + c];
  for (int j = 0; j < T; j++) ext[K - 1 + j] = x[((int64_t)r * T + j) * ldx + c];
  for (int j = 0; j < T; j++) {
    float acc = 0.0f;
    for (int k = 0; k < K; k++) acc = acc + w[c * K + k] * ext[j + k];
    if (bias) acc = acc + bias[c];
    out[((int64_t)r * T + j) * C + c] = silu(acc);
  }
  const int ar = a[r];
  if (ar > 0 && ar <= T)
    for (int k = 0; k < K - 1; k++) wr[k * C + c] = ext[k + ar];
}

/* Block per (key head, row): gdn_l2_head (mc_device.cuh). */
__global__ void gdn_l2_kernel(const float *cv /* [R][conv_dim] */, float *q /* [R][Hk][dk] */,
                              float *k /* [R][Hk][dk] */, int Hk, int dk, int64_t conv_dim,
                              float qscale) {
  pdl_enter();
  const int hk = blockIdx.x, r = blockIdx.y;
  const int64_t key_dim = (int64_t)Hk * dk;
  const float *qs = cv + r * conv_dim + (int64_t)hk * dk; /* [dk] */
  gdn_l2_head(qs, qs + key_dim, q + r * key_dim + (int64_t)hk * dk,
              k + r * key_dim + (int64_t)hk * dk, dk, qscale);
}

__global__ void gdn_gates_kernel(const float *ba /* [R][ldba] */, int64_t ldba, int64_t b_off,
                                 int64_t a_off, const float *A_log /* [Hv] */,
                                 const float *dt_bias /* [Hv] */, float *alpha /* [R][Hv] */,
                                 float *beta /* [R][Hv] */, int R, int Hv) {
  pdl_enter();
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= (int64_t)R * Hv) return;
  const int64_t r = i / Hv;
  const int h = (int)(i % Hv);
  gdn_gates_of(ba[r * ldba + a_off + h], ba[r * ldba + b_off + h], A_log[h], dt_bias[h],
               &alpha[i], &beta[i]);
}

__global__ void copy_rows_kernel(const float *src, int64_t lds, float *dst, int64_t ldd,
                                 int64_t n) {
  pdl_enter();
  const int r = blockIdx.y;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[r * ldd + i] = src[r * lds + i];
}

/* Thread per (row, head): the head's delta, alpha and its P values of v. */
__global__ void mamba2_prep_kernel(const float *zx, int64_t in_rows, int64_t dt_off,
                                   const float *cv, int64_t conv_dim, const float *A_log,
                                   const float *dt_bias, float dt_lo, float dt_hi,
                                   const int *pos /* [R] */, float *alpha /* [R][Hm] */,
                                   float *v /* [R][Hm][P] */, int R, int Hm, int P) {
  pdl_enter();
  const int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= (int64_t)R * Hm) return;
  const int64_t r = i / Hm;
  const int h = (int)(i % Hm);
  const float delta = mamba2_delta(zx[r * in_rows + dt_off + h], dt_bias[h], pos[r], dt_lo, dt_hi);
  alpha[i] = mamba2_alpha(delta, A_log[h]);
  const int64_t d_inner = (int64_t)Hm * P;
  for (int p = 0; p < P; p++) v[r * d_inner + (int64_t)h * P + p] = delta * cv[r * conv_dim + (int64_t)h * P + p];
}

__global__ void mamba2_gate_kernel(const float *o, const float *cv, int64_t conv_dim,
                                   const float *zx, int64_t in_rows, const float *D, float *t,
                                   int Hm, int P) {
  pdl_enter();
  const int r = blockIdx.y;
  const int64_t d_inner = (int64_t)Hm * P;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < d_inner;
       i += (int64_t)gridDim.x * blockDim.x) {
    const int h = (int)(i / P);
    t[r * d_inner + i] = mamba2_gate_of(o[r * d_inner + i], D[h], cv[r * conv_dim + i],
                                        zx[r * in_rows + i]);
  }
}

/* Block per (head among nH queries + nKV keys, row). Gated: the head is normed into shared
 * memory ((1+w), dot_f32 order), then rotated from the host tables. Key heads also copy their v. */
constexpr int QK_MAX_D = 1024;
__global__ void qk_prepare_kernel(const float *qkv, int64_t ldqkv, int gated, const float *q_norm,
                                  const float *k_norm, const float *rope_cos,
                                  const float *rope_sin, int rd, float eps, const int *pos,
                                  float *q, float *kcache, float *vcache, int64_t max_ctx, int nH,
                                  int nKV, int D, int tpr) {
  pdl_enter();
  __shared__ float xs[QK_MAX_D];
  __shared__ float part[8];
  __shared__ float inv_s;
  const int hh = blockIdx.x, r = blockIdx.y;
  const int64_t cr = r / tpr; /* the cache row: token row r is draft r % tpr of state row cr */
  const int64_t qd = (int64_t)nH * D, kvd = (int64_t)nKV * D;
  const int64_t k_off = gated ? 2 * qd : qd, v_off = k_off + kvd;
  const int64_t p = pos[r];
  const float *src; /* [D] */
  float *dst;       /* [D] */
  const float *wn;  /* [D] */
  if (hh < nH) {
    src = qkv + r * ldqkv + (int64_t)hh * D;
    dst = q + r * qd + (int64_t)hh * D;
    wn = q_norm;
  } else {
    const int kh = hh - nH;
    src = qkv + r * ldqkv + k_off + (int64_t)kh * D;
    dst = kcache + (cr * max_ctx + p) * kvd + (int64_t)kh * D;
    wn = k_norm;
    const float *vs = qkv + r * ldqkv + v_off + (int64_t)kh * D;
    float *vd = vcache + (cr * max_ctx + p) * kvd + (int64_t)kh * D;
    for (int i = threadIdx.x; i < D; i += blockDim.x) vd[i] = vs[i];
  }
  if (!gated) {
    for (int i = threadIdx.x; i < D; i += blockDim.x) dst[i] = src[i];
    return;
  }
  if (threadIdx.x < 8) part[threadIdx.x] = dot8_lane(src, src, D, threadIdx.x);
  __syncthreads();
  if (threadIdx.x == 0) inv_s = 1.0f / sqrtf(tree8(part) / (float)D + eps);
  __syncthreads();
  for (int i = threadIdx.x; i < D; i += blockDim.x) {
    float v = src[i] * inv_s;
    xs[i] = v * (1.0f + wn[i]);
  }
  __syncthreads();
  const int half = rd / 2;
  const float *cs = rope_cos + p * half, *sn = rope_sin + p * half; /* [rd/2] */
  for (int i = threadIdx.x; i < D; i += blockDim.x) {
    float v;
    if (i < half) v = xs[i] * cs[i] - xs[i + half] * sn[i];
    else if (i < rd) v = xs[i] * cs[i - half] + xs[i - half] * sn[i - half];
    else v = xs[i];
    dst[i] = v;
  }
}

__global__ void swiglu_kernel(const float *gu, float *act, int64_t I) {
  pdl_enter();
  const int r = blockIdx.y;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < I;
       i += (int64_t)gridDim.x * blockDim.x)
    act[r * I + i] = swiglu_of(gu[r * 2 * I + i], gu[r * 2 * I + I + i]);
}

__global__ void relu2_kernel(const float *up, float *act, int64_t n) {
  pdl_enter();
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    act[i] = relu2_of(up[i]);
}

unsigned row_blocks(int64_t n) { return row_blocks_for(n, EW_THREADS); }

}  // namespace

extern "C" {

int mc_rmsnorm(const float *x, float *y, int R, int ngroups, int gs, int64_t ld, const float *w,
               int w_per_group, int plus_one, float eps, void *stream) {
  if (R < 1 || ngroups < 1) return 0;
  const int stage = mc_norm_stage_bytes(gs);
  pdl_launch(norm_chunk_for(gs, NORM_THREADS) == 1 ? rmsnorm_kernel<1> : rmsnorm_kernel<NORM_CHUNK>,
             dim3((unsigned)ngroups, (unsigned)R), norm_threads_for(gs, NORM_THREADS),
             (size_t)stage, as_stream(stream), x, y, gs, ld, w, w_per_group, plus_one, eps,
             stage > 0);
  return launch_ok();
}

int mc_embed(const float *embed, const int64_t *tok, float *h, int R, int64_t H, void *stream) {
  if (R < 1) return 0;
  pdl_launch(embed_kernel, dim3(row_blocks(H), (unsigned)R), EW_THREADS, 0, as_stream(stream),
             embed, tok, h, H);
  return launch_ok();
}

int mc_conv_step(float *win, const float *x, int64_t ldx, const float *w, const float *bias,
                 float *out, int R, int64_t C, int K, void *stream) {
  if (R < 1) return 0;
  pdl_launch(conv_step_kernel, dim3(blocks_for(C, EW_THREADS), (unsigned)R), EW_THREADS, 0,
             as_stream(stream), win, x, ldx, w, bias, out, C, K);
  return launch_ok();
}

int mc_copy_rows(const float *src, int64_t lds, float *dst, int64_t ldd, int R, int64_t n,
                 void *stream) {
  if (R < 1 || n < 1) return 0;
  pdl_launch(copy_rows_kernel, dim3(row_blocks(n), (unsigned)R), EW_THREADS, 0, as_stream(stream),
             src, lds, dst, ldd, n);
  return launch_ok();
}

int mc_gdn_prep(const float *cv, const float *ba, int64_t ldba, int64_t b_off, int64_t a_off,
                const float *A_log, const float *dt_bias, float *q, float *k, float *v,
                float *alpha, float *beta, int R, int Hk, int Hv, int dk, int dv, void *stream) {
  if (R < 1) return 0;
  const int64_t key_dim = (int64_t)Hk * dk, value_dim = (int64_t)Hv * dv;
  const int64_t conv_dim = 2 * key_dim + value_dim;
  const float qscale = (float)(1.0 / sqrt((double)dk)); /* as layer_gdn.c */
  cudaStream_t s = as_stream(stream);
  pdl_launch(gdn_l2_kernel, dim3((unsigned)Hk, (unsigned)R), 64, 0, s, cv, q, k, Hk, dk, conv_dim,
             qscale);
  if (launch_ok() != 0) return -1;
  pdl_launch(gdn_gates_kernel, blocks_for((int64_t)R * Hv, EW_THREADS), EW_THREADS, 0, s, ba, ldba,
             b_off, a_off, A_log, dt_bias, alpha, beta, R, Hv);
  if (launch_ok() != 0) return -1;
  return mc_copy_rows(cv + 2 * key_dim, conv_dim, v, value_dim, R, value_dim, stream);
}

int mc_mamba2_prep(const float *zx, int64_t in_rows, int64_t dt_off, const float *cv,
                   int64_t conv_dim, const float *A_log, const float *dt_bias, float dt_lo,
                   float dt_hi, const int *pos, float *alpha, float *v, float *Bm, float *Cm, int R,
                   int Hm, int P, int G, int N, void *stream) {
  if (R < 1) return 0;
  const int64_t d_inner = (int64_t)Hm * P, gn = (int64_t)G * N;
  pdl_launch(mamba2_prep_kernel, blocks_for((int64_t)R * Hm, EW_THREADS), EW_THREADS, 0,
             as_stream(stream), zx, in_rows, dt_off, cv, conv_dim, A_log, dt_bias, dt_lo, dt_hi,
             pos, alpha, v, R, Hm, P);
  if (launch_ok() != 0) return -1;
  if (mc_copy_rows(cv + d_inner, conv_dim, Bm, gn, R, gn, stream) != 0) return -1;
  return mc_copy_rows(cv + d_inner + gn, conv_dim, Cm, gn, R, gn, stream);
}

int mc_mamba2_gate(const float *o, const float *cv, int64_t conv_dim, const float *zx,
                   int64_t in_rows, const float *D, float *t, int R, int Hm, int P,
                   void *stream) {
  if (R < 1) return 0;
  pdl_launch(mamba2_gate_kernel, dim3(row_blocks((int64_t)Hm * P), (unsigned)R), EW_THREADS, 0,
             as_stream(stream), o, cv, conv_dim, zx, in_rows, D, t, Hm, P);
  return launch_ok();
}

int mc_qk_prepare(const float *qkv, int64_t ldqkv, int gated, const float *q_norm,
                  const float *k_norm, const float *rope_cos, const float *rope_sin, int rd,
                  float eps, const int *pos, float *q, float *kcache, float *vcache,
                  int64_t max_ctx, int R, int nH, int nKV, int D, void *stream) {
  return mc_qk_prepare_t(qkv, ldqkv, gated, q_norm, k_norm, rope_cos, rope_sin, rd, eps, pos, q,
                         kcache, vcache, max_ctx, R, 1, nH, nKV, D, stream);
}

int mc_qk_prepare_t(const float *qkv, int64_t ldqkv, int gated, const float *q_norm,
                    const float *k_norm, const float *rope_cos, const float *rope_sin, int rd,
                    float eps, const int *pos, float *q, float *kcache, float *vcache,
                    int64_t max_ctx, int RT, int tpr, int nH, int nKV, int D, void *stream) {
  if (RT < 1) return 0;
  if (D > QK_MAX_D || rd > D || rd % 2 != 0 || tpr < 1) return -1;
  pdl_launch(qk_prepare_kernel, dim3((unsigned)(nH + nKV), (unsigned)RT), 128, 0, as_stream(stream),
             qkv, ldqkv, gated, q_norm, k_norm, rope_cos, rope_sin, rd, eps, pos, q, kcache, vcache,
             max_ctx, nH, nKV, D, tpr);
  return launch_ok();
}

int mc_conv_spec(float *win, const float *x, int64_t ldx, const float *w, const float *bias,
                 const int *a, float *out, int R, int T, int64_t C, int K, void *stream) {
  if (R < 1) return 0;
  if (T < 1 || K < 1 || K - 1 + T > MC_CONV_SPEC_MAX) return -1;
  pdl_launch(conv_spec_kernel, dim3(blocks_for(C, EW_THREADS), (unsigned)R), EW_THREADS, 0,
             as_stream(stream), win, x, ldx, w, bias, a, out, T, C, K);
  return launch_ok();
}

int mc_swiglu(const float *gu, float *act, int R, int64_t I, void *stream) {
  if (R < 1) return 0;
  pdl_launch(swiglu_kernel, dim3(row_blocks(I), (unsigned)R), EW_THREADS, 0, as_stream(stream), gu,
             act, I);
  return launch_ok();
}

int mc_relu2(const float *up, float *act, int R, int64_t I, void *stream) {
  if (R < 1) return 0;
  const int64_t n = (int64_t)R * I;
  pdl_launch(relu2_kernel, row_blocks(n), EW_THREADS, 0, as_stream(stream), up, act, n);
  return launch_ok();
}

}  // extern "C"
