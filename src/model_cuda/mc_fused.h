/* Fused glue of the GPU forward (issue 18 point 2; docs/gpu-runtime.md "Fused glue"): kernels
 * that do in one launch what two or three of mc_kernels.h did, with the same IEEE operations in
 * the same order, so that the step's outputs are bit-identical to the unfused path. A decode
 * step of a tiny model is bound by its ~100 launches, not by its bytes; each launch saved is
 * ~2 us of a 0.3-0.5 ms step. CPU references: the composition of mc_ref.h's functions (the
 * device check tests/gpu/mc_kernels_check.cu compares the fused kernels with the unfused ones
 * bit for bit). Launchers as in mc_kernels.h: asynchronous, no allocation, no host decision
 * from device data; 0 or -1. bf16 outputs are `void *` (device __nv_bfloat16) for C callers. */
#ifndef RSSM_MODEL_CUDA_MC_FUSED_H
#define RSSM_MODEL_CUDA_MC_FUSED_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How a step's norms run (docs/gpu-runtime.md, "The norms"; both modes give the same bits):
 *   MC_NORMS_PLAIN    rows read from global memory by the summing lanes, mc_embed then the first
 *                     norm (session 31's step);
 *   MC_NORMS_STAGED   every norm kernel stages its row or group in shared memory before the
 *                     sums (mc_norm_stage_bytes), and the first norm copies the embedding itself
 *                     (mc_embed_rmsnorm): one launch less a step.
 * From RSSM_FUSED_NORMS at the first call: unset, MC_NORMS_DEFAULT; "0" plain, "staged" staged;
 * anything else plain (the reference path, never a guess). mc_fused_norms_set overrides it (the
 * GPU checks run each mode; an unknown mode is plain, a negative one reads the variable again at
 * the next call).
 * The default is STAGED: on an H100 (2026-12-07, session 33 call 2, bench e2e bf16 K = 16) it
 * took the GDN fixture's step from 0.262 to 0.258 ms and the Mamba-2 fixture's from 0.184 to
 * 0.179. A third mode, each block's input norm inside the tensor-core GEMM that reads it (every
 * GEMM block normalising the call's rows in its prologue), lost to it in calls 2 and 3 (0.273 /
 * 0.184 ms against 0.232 / 0.159 with the fused SSM step: the prologue on the critical path cost
 * more than the launch it saved, which PDL already overlaps) and was removed; docs/bench-gemm.md
 * keeps its figures. */
#define MC_NORMS_PLAIN 0
#define MC_NORMS_STAGED 1
#define MC_NORMS_DEFAULT MC_NORMS_STAGED
int mc_fused_norms(void);
void mc_fused_norms_set(int mode);

/* The dynamic shared memory a norm kernel of groups of gs floats is launched with: the group's
 * copy (gs floats) in the staged modes where it fits the default 48 KiB, else 0 (the kernel reads
 * the group from global memory, as in MC_NORMS_PLAIN: the same bits either way). Why stage:
 * rmsnorm_group's lanes 0..7 each load gs / 8 elements in sequence; from global memory that is a
 * chain of L2 round trips (about 5 us a norm under Nsight Compute, session 31), from shared
 * memory a few hundred cycles, while every thread loads its elements into the copy at once. */
int mc_norm_stage_bytes(int64_t gs);

/* The residual add of the previous block and the RMSNorm of the next, per row r < R:
 *   h[r] = h[r] + y[r]          (skipped when y is NULL: the first block, after the embedding)
 *   u[r] = rmsnorm(h[r]) (1 + w or w, one group of H; mc_rmsnorm with ngroups 1, ld H)
 *   ub[r] = bf16(u[r]), round to nearest even, when ub is not NULL, and ub[r] = 0 for
 *   R <= r < Rpad (the padding rows the GEMM's row tiles read: what f32_to_bf16 made of u's
 *   never-written zero rows).
 * Bit-identical to mc_add, then mc_rmsnorm, then the bf16 conversion of the GEMM. */
int mc_add_rmsnorm(float *h /* [R][H] */, const float *y /* [R][H] or NULL */,
                   float *u /* [R][H] */, void *ub /* bf16 [Rpad][H] or NULL */, int R, int Rpad,
                   int64_t H, const float *w /* [H] */, int plus_one, float eps, void *stream);

/* The embedding and the first block's norm in one launch: h[r] = embed[tok[r]] (mc_embed's
 * copy), then u and ub as mc_add_rmsnorm with y NULL. Bit-identical to mc_embed, then
 * mc_add_rmsnorm(h, NULL, ...). */
int mc_embed_rmsnorm(const float *embed /* [V][H] */, const int64_t *tok /* [R] */,
                     float *h /* [R][H] */, float *u /* [R][H] */,
                     void *ub /* bf16 [Rpad][H] or NULL */, int R, int Rpad, int64_t H,
                     const float *w /* [H] */, int plus_one, float eps, void *stream);

/* The SSM blocks' output norms: mc_rmsnorm's (groups of gs, ld apart, w shared or per group, no
 * plus-one), then y *= silu(z) when z is not NULL (GDN: z = the gate slice of the projection,
 * rows ldz apart), and yb [Rpad][ld] = bf16(y) (rows R..Rpad-1 zero) when yb is not NULL (ld is
 * the output projection's input width). x == y is allowed (Mamba-2's in-place norm).
 * Bit-identical to mc_rmsnorm, then the old mul_silu (y * silu(z)), then gemm's conversion. */
int mc_rmsnorm_gate(const float *x /* [R][ld] */, float *y /* [R][ld] */,
                    void *yb /* bf16 [Rpad][ld] or NULL */, const float *z /* [R][ldz] or NULL */,
                    int64_t ldz, int R, int Rpad, int ngroups, int gs, int64_t ld,
                    const float *w /* [gs] or [ngroups][gs] */, int w_per_group, float eps,
                    void *stream);

/* mc_swiglu (act[r][i] = silu(gu[r][i]) gu[r][I + i]) and mc_relu2 (act = max(up, 0)^2) that
 * also write the bf16 GEMM input actb [Rpad][I] (rows R..Rpad-1 zero), for the block's output
 * projection. */
int mc_swiglu_bf16(const float *gu /* [R][2 I] */, float *act /* [R][I] */,
                   void *actb /* bf16 [Rpad][I] */, int R, int Rpad, int64_t I, void *stream);
int mc_relu2_bf16(const float *up /* [R][I] */, float *act /* [R][I] */,
                  void *actb /* bf16 [Rpad][I] */, int R, int Rpad, int64_t I, void *stream);

/* Mamba-2's conv step and its prep in one launch (decode steps; a spec round keeps
 * mc_conv_spec then mc_mamba2_prep): zx = the block's projection [R][in_rows] with the conv's
 * input x|B|C at column d_inner = Hm P and dt at d_inner + conv_dim (conv_dim = d_inner + 2 G N),
 * as the runtime lays it out. Bit-identical to
 *   mc_conv_step(win, zx + d_inner, in_rows, conv_w, conv_b, cv, R, conv_dim, K), then
 *   mc_mamba2_prep(zx, in_rows, d_inner + conv_dim, cv, conv_dim, A_log, dt_bias, dt_lo, dt_hi,
 *                  pos, alpha, v, Bm, Cm, R, Hm, P, G, N)
 * (win and cv included). -1 when conv_dim is not d_inner + 2 G N or K < 1. */
int mc_mamba2_conv_prep(float *win /* [R][K-1][conv_dim] */, const float *zx /* [R][in_rows] */,
                        int64_t in_rows, const float *conv_w /* [conv_dim][K] */,
                        const float *conv_b /* [conv_dim] or NULL */, float *cv /* [R][conv_dim] */,
                        int64_t conv_dim, int K, const float *A_log /* [Hm] */,
                        const float *dt_bias /* [Hm] */, float dt_lo, float dt_hi,
                        const int *pos /* [R] */, float *alpha /* [R][Hm] */,
                        float *v /* [R][Hm][P] */, float *Bm /* [R][G N] */,
                        float *Cm /* [R][G N] */, int R, int Hm, int P, int G, int N,
                        void *stream);

/* GDN's conv step (no bias) and its prep in one launch (decode steps; a spec round keeps
 * mc_conv_spec then mc_gdn_prep): proj [R][in_rows] with the conv's input q|k|v at column 0
 * (conv_dim = 2 Hk dk + Hv dv) and the gates' b and a at b_off and a_off. Bit-identical to
 *   mc_conv_step(win, proj, in_rows, conv_w, NULL, cv, R, conv_dim, K), then
 *   mc_gdn_prep(cv, proj, in_rows, b_off, a_off, A_log, dt_bias, q, k, v, alpha, beta, R, Hk,
 *               Hv, dk, dv)
 * (win and cv included). */
int mc_gdn_conv_prep(float *win /* [R][K-1][conv_dim] */, const float *proj /* [R][in_rows] */,
                     int64_t in_rows, int64_t b_off, int64_t a_off,
                     const float *conv_w /* [conv_dim][K] */, float *cv /* [R][conv_dim] */, int K,
                     const float *A_log /* [Hv] */, const float *dt_bias /* [Hv] */,
                     float *q /* [R][Hk][dk] */, float *k /* [R][Hk][dk] */,
                     float *v /* [R][Hv][dv] */, float *alpha /* [R][Hv] */,
                     float *beta /* [R][Hv] */, int R, int Hk, int Hv, int dk, int dv,
                     void *stream);

/* Mamba-2's output gate and its group norm in one launch: t = (o + D x) silu(z) (x = cv's first
 * Hm P columns, z = zx's), then t normalised in place per group of Hm P / G with the group's own
 * weight w (no plus-one), and tb [Rpad][Hm P] = bf16(t) (rows R..Rpad-1 zero) when tb is not
 * NULL. Bit-identical to mc_mamba2_gate(o, cv, conv_dim, zx, in_rows, D, t, R, Hm, P), then
 * mc_rmsnorm_gate(t, t, tb, NULL, 0, R, Rpad, G, Hm P / G, Hm P, w, 1, eps). -1 when G does
 * not divide Hm P. */
int mc_mamba2_gate_norm(const float *o /* [R][Hm][P] */, const float *cv /* [R][conv_dim] */,
                        int64_t conv_dim, const float *zx /* [R][in_rows] */, int64_t in_rows,
                        const float *D /* [Hm] */, float *t /* [R][Hm][P] */,
                        void *tb /* bf16 [Rpad][Hm P] or NULL */, int R, int Rpad, int Hm, int P,
                        int G, const float *w /* [G][Hm P / G] */, float eps, void *stream);

#ifdef __cplusplus
}
#endif

#endif
