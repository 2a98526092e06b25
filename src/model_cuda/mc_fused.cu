/* Fused glue of the GPU forward (mc_fused.h): the residual add with the next RMSNorm, and the
 * bf16 GEMM input written by the kernel that makes the fp32 one. The arithmetic is that of
 * mc_kernels.cu (rmsnorm_group and silu are shared through mc_device.cuh), so the outputs are
 * the unfused path's bits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_fused.h"

using namespace mc;

namespace {

constexpr int NORM_THREADS = 128; /* mc_kernels.cu's rmsnorm block */
constexpr int EW_THREADS = 256;
constexpr int QK_STAGE_MAX = 256; /* widest key head gdn_conv_prep_kernel stages */

/* Block per row r < Rpad. Rows r < R: the row's new h (every thread its elements: h + y, or the
 * token's embedding row when embed is not NULL, or h as it is), written to h and, when staged,
 * to the block's shared copy of the row (mc_norm_stage_bytes), a barrier so that the norm's lanes
 * read it, then the norm; padding rows write ub's zeros only. */
template <int CH>
__global__ void add_rmsnorm_kernel(float *h /* [R][H] */, const float *y /* [R][H] or NULL */,
                                   const float *embed /* [V][H] or NULL */,
                                   const int64_t *tok /* [R] or NULL */, float *u /* [R][H] */,
                                   __nv_bfloat16 *ub /* [Rpad][H] */, int R, int64_t H,
                                   const float *w /* [H] */, int plus_one, float eps, int staged) {
  pdl_trigger();
  const norm_w wp = load_norm_w(w, (int)H); /* weights before the wait (load_norm_w) */
  pdl_wait();
  extern __shared__ float stage[]; /* [H] when staged */
  const int r = blockIdx.x;
  __nv_bfloat16 *ubr = ub ? ub + (int64_t)r * H : nullptr; /* [H] */
  if (r >= R) {
    for (int64_t i = threadIdx.x; i < H; i += blockDim.x) ubr[i] = __float2bfloat16_rn(0.0f);
    return;
  }
  float *hr = h + (int64_t)r * H; /* [H] */
  const float *yr = y ? y + (int64_t)r * H : nullptr;     /* [H] */
  const float *er = embed ? embed + tok[r] * H : nullptr; /* [H]: the token's row */
  /* h = embed[tok] (mc_embed's copy), or h += y (the residual add: mc_add's bits); a thread's
     elements CH at a time, every load before the stores (norm_chunk_for, mc_device.cuh) */
  const int64_t nt = blockDim.x;
  for (int64_t base = threadIdx.x; base < H; base += CH * nt) {
    float a[CH], b[CH];
#pragma unroll
    for (int k = 0; k < CH; k++) {
      const int64_t i = base + k * nt;
      const bool in = i < H;
      a[k] = !in ? 0.0f : er ? er[i] : hr[i];
      b[k] = in && yr ? yr[i] : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < CH; k++) {
      const int64_t i = base + k * nt;
      if (i >= H) break;
      const float v = yr && !er ? a[k] + b[k] : a[k];
      if (er || yr) hr[i] = v;
      if (staged) stage[i] = v;
    }
  }
  __syncthreads();
  rmsnorm_group<CH>(staged ? stage : hr, u + (int64_t)r * H, ubr, (int)H, w, plus_one, eps, nullptr,
                    &wp);
}

/* One (group, row) per block, rows r < Rpad: mc_rmsnorm's grid with the gate and the bf16 copy
 * (rmsnorm_group); padding rows write yb's zeros only. */
template <int CH>
__global__ void rmsnorm_gate_kernel(const float *x /* [R][ld] */, float *y /* [R][ld] */,
                                    __nv_bfloat16 *yb /* [Rpad][ld] or NULL */,
                                    const float *z /* [R][ldz] or NULL */, int64_t ldz, int R,
                                    int gs, int64_t ld, const float *w, int w_per_group, float eps,
                                    int staged) {
  pdl_trigger();
  const int g = blockIdx.x, r = blockIdx.y;
  const float *wg = w ? (w_per_group ? w + (int64_t)g * gs : w) : nullptr; /* [gs] */
  const norm_w wp = load_norm_w(wg, gs); /* weights before the wait (load_norm_w) */
  pdl_wait();
  extern __shared__ float stage[]; /* [gs] when staged (mc_norm_stage_bytes) */
  __nv_bfloat16 *ybg = yb ? yb + r * ld + (int64_t)g * gs : nullptr; /* [gs] */
  if (r >= R) {
    for (int i = threadIdx.x; i < gs; i += blockDim.x) ybg[i] = __float2bfloat16_rn(0.0f);
    return;
  }
  const float *xg = x + r * ld + (int64_t)g * gs;                /* [gs] */
  const float *zg = z ? z + r * ldz + (int64_t)g * gs : nullptr; /* [gs] */
  rmsnorm_group<CH>(stage_group<CH>(staged ? stage : nullptr, xg, gs), y + r * ld + (int64_t)g * gs,
                    ybg, gs, wg, 0, eps, zg, &wp);
}

/* act[r][i] = the activation of the block's projection (SWIGLU: swiglu_of(gu[r][i],
 * gu[r][I + i]), rows 2 I apart; else relu2_of(up[r][i]), rows I apart) and actb = bf16(act);
 * rows R..Rpad-1 write actb's zeros only. */
template <int SWIGLU>
__global__ void act_bf16_kernel(const float *in /* [R][2 I] or [R][I] */, float *act /* [R][I] */,
                                __nv_bfloat16 *actb /* [Rpad][I] */, int R, int64_t I) {
  pdl_enter();
  const int r = blockIdx.y;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < I;
       i += (int64_t)gridDim.x * blockDim.x) {
    if (r >= R) {
      actb[r * I + i] = __float2bfloat16_rn(0.0f);
      continue;
    }
    const float a = SWIGLU ? swiglu_of(in[r * 2 * I + i], in[r * 2 * I + I + i])
                           : relu2_of(in[r * I + i]);
    act[r * I + i] = a;
    actb[r * I + i] = __float2bfloat16_rn(a);
  }
}

/* The conv width the conv + prep kernels are compiled for (every shipped model's 4: Qwen3.5,
 * Qwen3-Next, Nemotron-H); other widths take the instance with the width an argument. With the
 * width a variable, gdn_conv_prep_kernel took 128 registers for conv_step_channel2's arrays of
 * CONV2_K_MAX taps, so 4 blocks of 128 threads an SM: the qwen3.5-4b shape's 49 x 64 blocks
 * were ~6 waves, 14.3 us a GDN block (H100, session 37 trace); with 4 a constant it takes 32. The
 * same operations either way. */
constexpr int CONV_K_FIXED = 4;

/* Thread per (row, conv channel c): the conv step of c (conv_step_channel) into cv, then what
 * mamba2_prep and its two row copies make of that channel: v = delta x for the x channels
 * (c < d_inner; the channel's first of its head also writes alpha), B and C copied. delta is
 * recomputed by each of the head's P threads from the same inputs, so it has the same bits. */
template <int KC>
__global__ void mamba2_conv_prep_kernel(
    float *win /* [R][K-1][C] */, const float *zx /* [R][in_rows] */, int64_t in_rows,
    const float *cw /* [C][K] */, const float *cb /* [C] */, float *cv /* [R][C] */, int64_t C,
    int K_arg, const float *A_log /* [Hm] */, const float *dt_bias /* [Hm] */, float dt_lo,
    float dt_hi, const int *pos /* [R] */, float *alpha /* [R][Hm] */, float *v /* [R][Hm][P] */,
    float *Bm /* [R][G N] */, float *Cm /* [R][G N] */, int Hm, int P, int64_t gn) {
  pdl_enter();
  const int K = KC > 0 ? KC : K_arg; /* the conv width (CONV_K_FIXED says why a constant) */
  const int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  const int r = blockIdx.y;
  if (c >= C) return;
  const int64_t d_inner = (int64_t)Hm * P;
  const float *xr = zx + r * in_rows + d_inner; /* [C]: the conv's input slice (x, B, C) */
  /* an x channel's step-size inputs loaded with the conv's, before its stores (which the
     compiler must assume may alias them): one L2 round trip rather than two */
  const int h = c < d_inner ? (int)(c / P) : 0;
  const float dt = c < d_inner ? zx[r * in_rows + d_inner + C + h] : 0.0f;
  const float dtb = c < d_inner ? dt_bias[h] : 0.0f, alog = c < d_inner ? A_log[h] : 0.0f;
  const int p = c < d_inner ? pos[r] : 0;
  const float x = conv_step_channel(win + (int64_t)r * (K - 1) * C, xr[c], cw, cb, c, C, K);
  cv[r * C + c] = x;
  if (c < d_inner) {
    const float delta = mamba2_delta(dt, dtb, p, dt_lo, dt_hi);
    if (c % P == 0) alpha[(int64_t)r * Hm + h] = mamba2_alpha(delta, alog);
    v[r * d_inner + c] = delta * x;
  } else if (c < d_inner + gn) {
    Bm[r * gn + c - d_inner] = x;
  } else {
    Cm[r * gn + c - d_inner - gn] = x;
  }
}

/* Block per (part, row), NORM_THREADS threads; parts 0..Hk-1 are the key heads: the conv step
 * of the head's q and k channels into cv, a barrier, then gdn_l2_head on them (the same bits as
 * gdn_l2_kernel reading cv); parts Hk..Hk+nvb-1 are NORM_THREADS value channels each: the conv
 * step into cv and v; the last part is the row's Hv gates (gdn_gates_of). */
template <int KC>
__global__ void gdn_conv_prep_kernel(float *win /* [R][K-1][C] */,
                                     const float *proj /* [R][in_rows] */, int64_t in_rows,
                                     int64_t b_off, int64_t a_off, const float *cw /* [C][K] */,
                                     float *cv /* [R][C] */, int64_t C, int K_arg,
                                     const float *A_log /* [Hv] */, const float *dt_bias /* [Hv] */,
                                     float *q /* [R][Hk][dk] */, float *k /* [R][Hk][dk] */,
                                     float *v /* [R][Hv][dv] */, float *alpha /* [R][Hv] */,
                                     float *beta /* [R][Hv] */, int Hk, int Hv, int dk,
                                     int64_t value_dim, int nvb, float qscale, int stage_qk) {
  pdl_enter();
  const int K = KC > 0 ? KC : K_arg; /* the conv width (CONV_K_FIXED says why a constant) */
  const int part = blockIdx.x, r = blockIdx.y;
  const int64_t key_dim = (int64_t)Hk * dk;
  float *wr = win + (int64_t)r * (K - 1) * C; /* [K-1][C] */
  const float *xr = proj + r * in_rows;       /* [C]: the conv's input slice (q, k, v) */
  float *cvr = cv + r * C;                    /* [C] */
  if (part < Hk) {
    const int64_t q0 = (int64_t)part * dk, k0 = key_dim + q0;
    /* the head's q and k also go to shared memory, where lanes 0..15 read them in sequence for
       their sums (mc_norm_stage_bytes says why); a head wider than the copy reads cv */
    __shared__ float qk_stage[2 * QK_STAGE_MAX]; /* [2][dk]: q, then k */
    const bool staged = stage_qk != 0;           /* dk <= QK_STAGE_MAX: the launcher's check */
    float *qs = staged ? qk_stage : cvr + q0, *ks = staged ? qk_stage + dk : cvr + k0; /* [dk] */
    for (int i = threadIdx.x; i < dk; i += blockDim.x) {
      float qc, kc; /* both channels' loads before either's stores: conv_step_channel2 */
      conv_step_channel2(wr, xr[q0 + i], xr[k0 + i], cw, nullptr, q0 + i, k0 + i, C, K, &qc, &kc);
      cvr[q0 + i] = qc;
      cvr[k0 + i] = kc;
      if (staged) {
        qs[i] = qc;
        ks[i] = kc;
      }
    }
    __syncthreads(); /* the head's q and k, written by every thread, are read by lanes 0..15 */
    gdn_l2_head(qs, ks, q + r * key_dim + q0, k + r * key_dim + q0, dk, qscale);
  } else if (part < Hk + nvb) {
    const int64_t j = (int64_t)(part - Hk) * blockDim.x + threadIdx.x;
    if (j >= value_dim) return;
    const int64_t c = 2 * key_dim + j;
    const float x = conv_step_channel(wr, xr[c], cw, nullptr, c, C, K);
    cvr[c] = x;
    v[r * value_dim + j] = x;
  } else {
    for (int h = threadIdx.x; h < Hv; h += blockDim.x)
      gdn_gates_of(proj[r * in_rows + a_off + h], proj[r * in_rows + b_off + h], A_log[h],
                   dt_bias[h], &alpha[(int64_t)r * Hv + h], &beta[(int64_t)r * Hv + h]);
  }
}

/* Block per (group g, row r < Rpad), NORM_THREADS threads: the group's gs values of the gate
 * (mamba2_gate_of) into the block's shared copy (or, unstaged, into t), a barrier, then
 * rmsnorm_group into t with the group's own weight and the bf16 copy; padding rows write tb's
 * zeros only (rmsnorm_gate_kernel's rows). */
template <int CH>
__global__ void mamba2_gate_norm_kernel(const float *o /* [R][di] */,
                                        const float *cv /* [R][conv_dim] */, int64_t conv_dim,
                                        const float *zx /* [R][in_rows] */, int64_t in_rows,
                                        const float *D /* [Hm] */, float *t /* [R][di] */,
                                        __nv_bfloat16 *tb /* [Rpad][di] or NULL */, int R, int P,
                                        int gs, int64_t di, const float *w /* [G][gs] */, float eps,
                                        int staged) {
  pdl_trigger();
  const int g = blockIdx.x, r = blockIdx.y;
  const int64_t g0 = (int64_t)g * gs;
  const norm_w wp = load_norm_w(w + g0, gs); /* weights before the wait (load_norm_w) */
  pdl_wait();
  extern __shared__ float stage[];                      /* [gs] when staged (mc_norm_stage_bytes) */
  __nv_bfloat16 *tbg = tb ? tb + r * di + g0 : nullptr; /* [gs] */
  if (r >= R) {
    for (int i = threadIdx.x; i < gs; i += blockDim.x) tbg[i] = __float2bfloat16_rn(0.0f);
    return;
  }
  float *tg = t + r * di + g0;        /* [gs] */
  float *gated = staged ? stage : tg; /* [gs]: the gate's values before the norm */
  /* CH elements a thread at a time, every load before the stores (norm_chunk_for) */
  const int nt = blockDim.x;
  for (int base = threadIdx.x; base < gs; base += CH * nt) {
    float ov[CH], dv[CH], cvv[CH], zv[CH];
#pragma unroll
    for (int k = 0; k < CH; k++) {
      const int j = base + k * nt;
      const int64_t i = g0 + (j < gs ? j : 0);
      ov[k] = o[r * di + i];
      dv[k] = D[i / P];
      cvv[k] = cv[r * conv_dim + i];
      zv[k] = zx[r * in_rows + i];
    }
#pragma unroll
    for (int k = 0; k < CH; k++) {
      const int j = base + k * nt;
      if (j >= gs) break;
      gated[j] = mamba2_gate_of(ov[k], dv[k], cvv[k], zv[k]);
    }
  }
  __syncthreads(); /* the group's values, written by every thread, are read by lanes 0..7 */
  rmsnorm_group<CH>(gated, tg, tbg, gs, w + g0, 0, eps, nullptr, &wp);
}

unsigned row_blocks(int64_t n) { return row_blocks_for(n, EW_THREADS); }

template <int SWIGLU>
int launch_act_bf16(const float *in, float *act, void *actb, int R, int Rpad, int64_t I,
                    void *stream) {
  if (R < 1) return 0;
  pdl_launch(act_bf16_kernel<SWIGLU>, dim3(row_blocks(I), (unsigned)(Rpad > R ? Rpad : R)),
             EW_THREADS, 0, as_stream(stream), in, act, (__nv_bfloat16 *)actb, R, I);
  return launch_ok();
}

}  // namespace

extern "C" {

/* -1 until the first call reads RSSM_FUSED_NORMS (one host thread builds and launches a step) */
static int fused_norms_mode = -1;

int mc_fused_norms(void) {
  if (fused_norms_mode < 0) {
    const char *v = getenv("RSSM_FUSED_NORMS");
    fused_norms_mode = !v                         ? MC_NORMS_DEFAULT
                       : strcmp(v, "staged") == 0 ? MC_NORMS_STAGED
                                                  : MC_NORMS_PLAIN;
    if (v && strcmp(v, "0") != 0 && strcmp(v, "staged") != 0) /* a typo must not pass unseen */
      fprintf(stderr, "RSSM_FUSED_NORMS=%s: expected 0 or staged; the norms run plain\n", v);
  }
  return fused_norms_mode;
}

void mc_fused_norms_set(int mode) {
  fused_norms_mode = mode < 0 ? -1 : mode == MC_NORMS_STAGED ? mode : MC_NORMS_PLAIN;
}

int mc_norm_stage_bytes(int64_t gs) {
  const int64_t bytes = gs * (int64_t)sizeof(float);
  return mc_fused_norms() == MC_NORMS_STAGED && gs > 0 && bytes <= 48 * 1024 ? (int)bytes : 0;
}

int mc_add_rmsnorm(float *h, const float *y, float *u, void *ub, int R, int Rpad, int64_t H,
                   const float *w, int plus_one, float eps, void *stream) {
  if (R < 1) return 0;
  const int rows = ub ? (Rpad > R ? Rpad : R) : R;
  const int stage = mc_norm_stage_bytes(H);
  pdl_launch(
      norm_chunk_for(H, NORM_THREADS) == 1 ? add_rmsnorm_kernel<1> : add_rmsnorm_kernel<NORM_CHUNK>,
      (unsigned)rows, norm_threads_for(H, NORM_THREADS), (size_t)stage, as_stream(stream), h, y,
      (const float *)nullptr, (const int64_t *)nullptr, u, (__nv_bfloat16 *)ub, R, H, w, plus_one,
      eps, stage > 0);
  return launch_ok();
}

int mc_embed_rmsnorm(const float *embed, const int64_t *tok, float *h, float *u, void *ub, int R,
                     int Rpad, int64_t H, const float *w, int plus_one, float eps, void *stream) {
  if (R < 1) return 0;
  const int rows = ub ? (Rpad > R ? Rpad : R) : R;
  const int stage = mc_norm_stage_bytes(H);
  pdl_launch(
      norm_chunk_for(H, NORM_THREADS) == 1 ? add_rmsnorm_kernel<1> : add_rmsnorm_kernel<NORM_CHUNK>,
      (unsigned)rows, norm_threads_for(H, NORM_THREADS), (size_t)stage, as_stream(stream), h,
      (const float *)nullptr, embed, tok, u, (__nv_bfloat16 *)ub, R, H, w, plus_one, eps,
      stage > 0);
  return launch_ok();
}

int mc_rmsnorm_gate(const float *x, float *y, void *yb, const float *z, int64_t ldz, int R,
                    int Rpad, int ngroups, int gs, int64_t ld, const float *w, int w_per_group,
                    float eps, void *stream) {
  if (R < 1 || ngroups < 1) return 0;
  const int rows = yb ? (Rpad > R ? Rpad : R) : R;
  const int stage = mc_norm_stage_bytes(gs);
  pdl_launch(norm_chunk_for(gs, NORM_THREADS) == 1 ? rmsnorm_gate_kernel<1>
                                                   : rmsnorm_gate_kernel<NORM_CHUNK>,
             dim3((unsigned)ngroups, (unsigned)rows), norm_threads_for(gs, NORM_THREADS),
             (size_t)stage, as_stream(stream), x, y, (__nv_bfloat16 *)yb, z, ldz, R, gs, ld, w,
             w_per_group, eps, stage > 0);
  return launch_ok();
}

int mc_swiglu_bf16(const float *gu, float *act, void *actb, int R, int Rpad, int64_t I,
                   void *stream) {
  return launch_act_bf16<1>(gu, act, actb, R, Rpad, I, stream);
}

int mc_relu2_bf16(const float *up, float *act, void *actb, int R, int Rpad, int64_t I,
                  void *stream) {
  return launch_act_bf16<0>(up, act, actb, R, Rpad, I, stream);
}

int mc_mamba2_conv_prep(float *win, const float *zx, int64_t in_rows, const float *conv_w,
                        const float *conv_b, float *cv, int64_t conv_dim, int K,
                        const float *A_log, const float *dt_bias, float dt_lo, float dt_hi,
                        const int *pos, float *alpha, float *v, float *Bm, float *Cm, int R,
                        int Hm, int P, int G, int N, void *stream) {
  if (R < 1) return 0;
  const int64_t gn = (int64_t)G * N;
  if (K < 1 || conv_dim != (int64_t)Hm * P + 2 * gn) return -1;
  pdl_launch(K == CONV_K_FIXED ? mamba2_conv_prep_kernel<CONV_K_FIXED> : mamba2_conv_prep_kernel<0>,
             dim3(blocks_for(conv_dim, EW_THREADS), (unsigned)R), EW_THREADS, 0, as_stream(stream),
             win, zx, in_rows, conv_w, conv_b, cv, conv_dim, K, A_log, dt_bias, dt_lo, dt_hi, pos,
             alpha, v, Bm, Cm, Hm, P, gn);
  return launch_ok();
}

int mc_gdn_conv_prep(float *win, const float *proj, int64_t in_rows, int64_t b_off,
                     int64_t a_off, const float *conv_w, float *cv, int K, const float *A_log,
                     const float *dt_bias, float *q, float *k, float *v, float *alpha,
                     float *beta, int R, int Hk, int Hv, int dk, int dv, void *stream) {
  if (R < 1) return 0;
  if (K < 1) return -1;
  const int64_t key_dim = (int64_t)Hk * dk, value_dim = (int64_t)Hv * dv;
  const int64_t conv_dim = 2 * key_dim + value_dim;
  const int nvb = (int)blocks_for(value_dim, NORM_THREADS);
  const float qscale = (float)(1.0 / sqrt((double)dk)); /* as mc_gdn_prep, layer_gdn.c */
  pdl_launch(K == CONV_K_FIXED ? gdn_conv_prep_kernel<CONV_K_FIXED> : gdn_conv_prep_kernel<0>,
             dim3((unsigned)(Hk + nvb + 1), (unsigned)R), NORM_THREADS, 0, as_stream(stream), win,
             proj, in_rows, b_off, a_off, conv_w, cv, conv_dim, K, A_log, dt_bias, q, k, v, alpha,
             beta, Hk, Hv, dk, value_dim, nvb, qscale,
             mc_fused_norms() == MC_NORMS_STAGED && dk <= QK_STAGE_MAX);
  return launch_ok();
}

int mc_mamba2_gate_norm(const float *o, const float *cv, int64_t conv_dim, const float *zx,
                        int64_t in_rows, const float *D, float *t, void *tb, int R, int Rpad,
                        int Hm, int P, int G, const float *w, float eps, void *stream) {
  if (R < 1) return 0;
  const int64_t di = (int64_t)Hm * P;
  if (G < 1 || di % G != 0) return -1;
  const int rows = tb ? (Rpad > R ? Rpad : R) : R;
  const int stage = mc_norm_stage_bytes(di / G);
  const int64_t gs = di / G;
  pdl_launch(norm_chunk_for(gs, NORM_THREADS) == 1 ? mamba2_gate_norm_kernel<1>
                                                   : mamba2_gate_norm_kernel<NORM_CHUNK>,
             dim3((unsigned)G, (unsigned)rows), norm_threads_for(gs, NORM_THREADS), (size_t)stage,
             as_stream(stream), o, cv, conv_dim, zx, in_rows, D, t, (__nv_bfloat16 *)tb, R, P,
             (int)(di / G), di, w, eps, stage > 0);
  return launch_ok();
}

}  // extern "C"
