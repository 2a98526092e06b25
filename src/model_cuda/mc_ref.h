/* CPU references of the GPU forward's kernels (src/model_cuda/mc_kernels.h), one function per
 * kernel with the same arguments on host arrays, written with the CPU runtime's own building
 * blocks (src/model/linalg.h) and in its order of operations, so that a kernel check compares a
 * kernel with what `replayssm logits` on the CPU computes. Built with or without CUDA. */
#ifndef RSSM_MODEL_CUDA_MC_REF_H
#define RSSM_MODEL_CUDA_MC_REF_H

#include <stdint.h>

#include "src/model_cuda/mc_kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

void mc_ref_rmsnorm(const float *x /* [R][ld] */, float *y /* [R][ld] */, int R, int ngroups,
                    int gs, int64_t ld, const float *w, int w_per_group, int plus_one, float eps);
void mc_ref_embed(const float *embed /* [V][H] */, const int64_t *tok /* [R] */,
                  float *h /* [R][H] */, int R, int64_t H);
void mc_ref_conv_step(float *win /* [R][K-1][C] */, const float *x /* [R][ldx] */, int64_t ldx,
                      const float *w /* [C][K] */, const float *bias /* [C] or NULL */,
                      float *out /* [R][C] */, int R, int64_t C, int K);
void mc_ref_gdn_prep(const float *cv, const float *ba, int64_t ldba, int64_t b_off,
                     int64_t a_off, const float *A_log, const float *dt_bias, float *q, float *k,
                     float *v, float *alpha, float *beta, int R, int Hk, int Hv, int dk, int dv);
void mc_ref_mul_silu(float *y /* [R][n] */, const float *z /* [R][ldz] */, int64_t ldz, int R,
                     int64_t n);
void mc_ref_mamba2_prep(const float *zx, int64_t in_rows, int64_t dt_off, const float *cv,
                        int64_t conv_dim, const float *A_log, const float *dt_bias, float dt_lo,
                        float dt_hi, const int *pos /* [R] */, float *alpha, float *v, float *Bm,
                        float *Cm, int R, int Hm, int P, int G, int N);
void mc_ref_mamba2_gate(const float *o, const float *cv, int64_t conv_dim, const float *zx,
                        int64_t in_rows, const float *D, float *t, int R, int Hm, int P);
void mc_ref_qk_prepare(const float *qkv, int64_t ldqkv, int gated, const float *q_norm,
                       const float *k_norm, const float *rope_cos, const float *rope_sin, int rd,
                       float eps, const int *pos, float *q, float *kcache, float *vcache,
                       int64_t max_ctx, int R, int nH, int nKV, int D);
/* The CPU runtime's attention (layer_attn.c): scores by dot_f32, one sequential max, sum and
 * weighted sum; then the gate. */
void mc_ref_attn_decode(const float *q, const float *kcache, const float *vcache, const int *pos,
                        int64_t max_ctx, const float *gate_src, int64_t ldgate, float *o, int R,
                        int nH, int nKV, int D);
/* tpr token rows per cache row (mc_qk_prepare_t; mc_attn_decode with cache_row[r] = r / tpr, as
 * a spec batch passes it); tpr = 1: the above. */
void mc_ref_qk_prepare_t(const float *qkv, int64_t ldqkv, int gated, const float *q_norm,
                         const float *k_norm, const float *rope_cos, const float *rope_sin,
                         int rd, float eps, const int *pos, float *q, float *kcache,
                         float *vcache, int64_t max_ctx, int R, int tpr, int nH, int nKV, int D);
void mc_ref_attn_decode_t(const float *q, const float *kcache, const float *vcache,
                          const int *pos, int64_t max_ctx, const float *gate_src, int64_t ldgate,
                          float *o, int R, int tpr, int nH, int nKV, int D);
/* mc_conv_spec: the CPU model's conv over [K-1+T] rows (conv_silu, n = T), then its commit. */
void mc_ref_conv_spec(float *win /* [R][K-1][C] */, const float *x /* [R*T][ldx] */, int64_t ldx,
                      const float *w /* [C][K] */, const float *bias, const int *a /* [R] */,
                      float *out /* [R*T][C] */, int R, int T, int64_t C, int K);
/* mc_spec_metrics_launch: token row i as a configuration row against ref_logits[ref_row[i]]
 * (mc_ref_row_metrics of the pair); stats [RT] of the token rows. */
void mc_ref_spec_metrics(const float *logits /* [RT][V] */, const float *ref_logits /* [*][V] */,
                         const int *ref_row /* [RT] */, const int64_t *target /* [RT] */, int RT,
                         int64_t V, mc_row_stats *stats /* [RT] */,
                         mc_row_metrics *out /* [RT] */);
void mc_ref_swiglu(const float *gu, float *act, int R, int64_t I);
void mc_ref_relu2(const float *up, float *act, int R, int64_t I);
void mc_ref_add(float *h, const float *y, int64_t n);

/* MoE (mc_moe.cu): routing as layer_mlp.c's moe_forward (qwen: softmax top-k; else sigmoid,
 * correction bias, groups), experts with dot_f32 (the kernel uses warp sums: compare with a
 * tolerance), the shared-expert add. Same arguments as the kernels. */
void mc_ref_moe_route(const float *logits, int64_t ldl, const float *corr_bias, int qwen,
                      int64_t E, int64_t k, int norm_topk, float routed_scaling, int64_t n_group,
                      int64_t topk_group, int32_t *idx /* [R][k] */, float *wt /* [R][k] */,
                      int R);
void mc_ref_moe_experts(const float *x, int64_t ldx, const int32_t *idx, const float *wt,
                        const float *w_gate, const float *w_up, const float *w_down,
                        float *acc /* [R][Din] */, int R, int64_t k, int64_t I, int64_t Din);
void mc_ref_moe_shared_add(float *y, const float *sh, const float *gate_src, int64_t ldg, int R,
                           int64_t H);

/* metrics_log_softmax / metrics_step of src/model/metrics.c, per row, in the kernel's output
 * form. */
void mc_ref_row_metrics(const float *logits /* [R][V] */, const int64_t *target /* [K] */, int R,
                        int K, int64_t V, mc_row_stats *stats /* [R] */,
                        mc_row_metrics *out /* [R] */);

/* RoPE tables as the CPU runtime computes the angle (layer_attn.c rope()):
 * inv = 1 / powf(theta, (2i)/rd), ang = pos * inv, cos[pos][i] = cosf(ang), sin likewise.
 * Uploading these makes the GPU RoPE bit-identical to the CPU's. */
void mc_ref_rope_tables(double theta, int rd, int64_t max_ctx, float *cos_t /* [max_ctx][rd/2] */,
                        float *sin_t /* [max_ctx][rd/2] */);

#ifdef __cplusplus
}
#endif
#endif
