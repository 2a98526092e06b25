/* Kernels of the GPU forward (docs/gpu-runtime.md): host launchers, C linkage. Every launcher
 * is asynchronous on the caller's stream (a cudaStream_t passed as void *), allocates nothing
 * and makes no host decision from device data, so a step can be captured in a CUDA Graph.
 * All arrays are device pointers, row-major; R is the number of batch rows (configuration-major,
 * row = c K + k). Each kernel's CPU reference is the function of the same name in mc_ref.h,
 * written in the CPU runtime's order of operations (the layer files of src/model); docs/gpu-runtime.md says
 * which kernels are bit-identical to it and which differ by a few ulp (transcendentals) or by
 * summation order (attention, metrics). Launchers return 0, or -1 when the launch failed
 * (cudaGetLastError). */
#ifndef RSSM_MODEL_CUDA_MC_KERNELS_H
#define RSSM_MODEL_CUDA_MC_KERNELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = x * rsqrt(mean(x^2) + eps) * (plus_one ? 1 + w : w) over each group of gs elements; a row
 * holds ngroups groups starting at element 0, rows are ld floats apart (x and y alike). w: NULL
 * (no weight), [gs] shared by every group (w_per_group 0), or [ngroups][gs] (w_per_group 1).
 * The sum of squares is dot_f32's (8 interleaved partial sums, then the pairwise tree):
 * bit-identical to src/model/linalg.c's rmsnorm. x == y is allowed. */
int mc_rmsnorm(const float *x /* [R][ld] */, float *y /* [R][ld] */, int R, int ngroups, int gs,
               int64_t ld, const float *w, int w_per_group, int plus_one, float eps,
               void *stream);

/* h[r] = embed[tok[r]] (H floats). tok: device [R]; ids are checked by the host before upload. */
int mc_embed(const float *embed /* [V][H] */, const int64_t *tok /* [R] */, float *h /* [R][H] */,
             int R, int64_t H, void *stream);

/* One causal depthwise conv step with SiLU, then the window shift:
 * out[r][c] = silu(sum_{k<K-1} w[c][k] win[r][k][c] + w[c][K-1] x[r][c] (+ bias[c]));
 * afterwards win[r] holds its last K-2 rows followed by x[r]. Sum in ascending k from 0.0f
 * (conv_silu in layer_gdn.c with n = 1). x rows are ldx floats apart (a slice of a projection). */
int mc_conv_step(float *win /* [R][K-1][C] */, const float *x /* [R][ldx] */, int64_t ldx,
                 const float *w /* [C][K] */, const float *bias /* [C] or NULL */,
                 float *out /* [R][C] */, int R, int64_t C, int K, void *stream);

/* Spec rounds (docs/gpu-runtime.md, "Spec configurations"): token row r T + j is draft j of
 * state row r. out[r T + j][c] = silu(sum_{k<K} w[c][k] e[j + k] (+ bias[c])) with e the row's
 * window [K-1] followed by x[r T .. r T + T - 1][c] (conv_silu over a [K-1+T] window, n = T);
 * then win[r] advances by a[r] (device [R], 0..T; 0 leaves it): it holds e[a .. a+K-2].
 * K - 1 + T <= MC_CONV_SPEC_MAX. */
#define MC_CONV_SPEC_MAX 80
int mc_conv_spec(float *win /* [R][K-1][C] */, const float *x /* [R*T][ldx] */, int64_t ldx,
                 const float *w /* [C][K] */, const float *bias /* [C] or NULL */,
                 const int *a /* [R] */, float *out /* [R*T][C] */, int R, int T, int64_t C,
                 int K, void *stream);

/* GDN inputs of the engine from the conv output cv [R][2 Hk dk + Hv dv] (q | k | v) and the
 * projections ba [R][ldba] (b at column b_off, a at a_off, Hv each):
 *   q[r][hk] = l2norm(q) * dk^-1/2, k[r][hk] = l2norm(k) (x / sqrtf(dot_f32(x, x) + 1e-6f)),
 *   v[r] = the v slice (copied to a contiguous [R][Hv][dv] array for the engine),
 *   alpha = expf(-expf(A_log) * softplus(a + dt_bias)), beta = sigmoid(b). */
int mc_gdn_prep(const float *cv /* [R][conv_dim] */, const float *ba /* [R][ldba] */,
                int64_t ldba, int64_t b_off, int64_t a_off, const float *A_log /* [Hv] */,
                const float *dt_bias /* [Hv] */, float *q /* [R][Hk][dk] */,
                float *k /* [R][Hk][dk] */, float *v /* [R][Hv][dv] */,
                float *alpha /* [R][Hv] */, float *beta /* [R][Hv] */, int R, int Hk, int Hv,
                int dk, int dv, void *stream);

/* (The GDN output gate y * silu(z) is fused into its per-head norm: mc_rmsnorm_gate, mc_fused.h.) */

/* Mamba-2 engine inputs from zx [R][in_rows] (z | xBC | dt) and the conv output cv [R][conv_dim]
 * (x | B | C): delta = softplus(dt + dt_bias), clamped to [dt_lo, dt_hi] in the rows whose
 * position pos[r] (device memory) is the prompt's (src/model/dt_clamp.h, rssm_dt_limit_at; read
 * from memory so that a captured CUDA graph sees each step's positions; [0, inf]: no clamp),
 * alpha = expf(delta * -expf(A_log)),
 * v = delta * x [R][Hm][P], Bm, Cm [R][G][N] copies. */
int mc_mamba2_prep(const float *zx /* [R][in_rows] */, int64_t in_rows, int64_t dt_off,
                   const float *cv /* [R][conv_dim] */, int64_t conv_dim,
                   const float *A_log /* [Hm] */, const float *dt_bias /* [Hm] */, float dt_lo,
                   float dt_hi, const int *pos /* [R] */, float *alpha /* [R][Hm] */,
                   float *v /* [R][Hm][P] */,
                   float *Bm /* [R][G][N] */, float *Cm /* [R][G][N] */, int R, int Hm, int P,
                   int G, int N, void *stream);

/* Mamba-2 output gate before the group norm: t[r][h][p] = (o + D[h] x) * silu(z), with x the
 * first d_inner columns of cv and z the first d_inner of zx. */
int mc_mamba2_gate(const float *o /* [R][Hm][P] */, const float *cv /* [R][conv_dim] */,
                   int64_t conv_dim, const float *zx /* [R][in_rows] */, int64_t in_rows,
                   const float *D /* [Hm] */, float *t /* [R][Hm][P] */, int R, int Hm, int P,
                   void *stream);

/* Attention inputs at each row's position pos[r] from qkv [R][ldqkv] = queries [nH][D]
 * (then gates [nH][D] when gated) | k [nKV][D] | v [nKV][D]:
 *   gated (Qwen): q and k heads get the (1+w) RMSNorm (q_norm / k_norm [D]) and half-split RoPE
 *   on dims [0, rd) with the host tables cos/sin [max_ctx][rd/2];
 *   plain (Nemotron-H): copied.
 * Queries go to q [R][nH][D]; k and v to the caches at [r][pos[r]]. */
int mc_qk_prepare(const float *qkv /* [R][ldqkv] */, int64_t ldqkv, int gated,
                  const float *q_norm /* [D] or NULL */, const float *k_norm /* [D] or NULL */,
                  const float *rope_cos /* [max_ctx][rd/2] or NULL */,
                  const float *rope_sin /* [max_ctx][rd/2] or NULL */, int rd, float eps,
                  const int *pos /* [R] */, float *q /* [R][nH][D] */,
                  float *kcache /* [R][max_ctx][nKV][D] */,
                  float *vcache /* [R][max_ctx][nKV][D] */, int64_t max_ctx, int R, int nH,
                  int nKV, int D, void *stream);

/* The same for RT token rows that share cache rows: token row r writes k and v at
 * [r / tpr][pos[r]] (spec rounds: draft j of state row r / tpr at position pos[r]); tpr = 1 is
 * mc_qk_prepare. */
int mc_qk_prepare_t(const float *qkv /* [RT][ldqkv] */, int64_t ldqkv, int gated,
                    const float *q_norm, const float *k_norm, const float *rope_cos,
                    const float *rope_sin, int rd, float eps, const int *pos /* [RT] */,
                    float *q /* [RT][nH][D] */, float *kcache /* [RT/tpr][max_ctx][nKV][D] */,
                    float *vcache /* [RT/tpr][max_ctx][nKV][D] */, int64_t max_ctx, int RT,
                    int tpr, int nH, int nKV, int D, void *stream);

/* Split-K attention decode (the attention lab's multipos variant, mc_attn.cu):
 * o[r][h] = softmax_j(q . k_j / sqrt(D)) v_j over j <= pos[r], GQA (head h reads kv head
 * h / (nH / nKV)) of cache row cache_row[r] (NULL: r; a spec batch's drafts share their state
 * row's cache); gated: o *= sigmoid(gate) with the gates at column nH*D of qkv. nsplit splits
 * per (row, kv head), each of ceil((pos[r] + 1) / nsplit) positions (at least MIN_SPLIT, 64)
 * computed on the device, so the grid is the same at every position (graph replay); nsplit is fixed
 * when the batch is built, attn_lab_splits_shipped(nKV, SM count) (attn_lab.h: it must not depend
 * on R nor max_ctx, the summation order does on it). Shapes: attn_lab_shape_ok (D in 16..256,
 * rep in {1, 2, 4, 5, 8}); q, kcache, vcache 16-byte aligned. Scratch: part_ml
 * [R][nH][nsplit][2], part_acc [R][nH][nsplit][D]. */
int mc_attn_decode(const float *q /* [R][nH][D] */,
                   const float *kcache /* [Rc][max_ctx][nKV][D] */,
                   const float *vcache /* [Rc][max_ctx][nKV][D] */, const int *pos /* [R] */,
                   const int *cache_row /* [R] or NULL */, int64_t max_ctx,
                   const float *gate_src /* qkv [R][ldgate] or NULL */, int64_t ldgate,
                   float *part_ml /* [R][nH][nsplit][2] */,
                   float *part_acc /* [R][nH][nsplit][D] */, float *o /* [R][nH][D] */, int R,
                   int nH, int nKV, int D, int nsplit, void *stream);

/* act[r][i] = silu(gu[r][i]) * gu[r][I + i] (SwiGLU; gu = gate | up) or, relu2, with gu = up:
 * act = max(up, 0)^2. */
int mc_swiglu(const float *gu /* [R][2I] */, float *act /* [R][I] */, int R, int64_t I,
              void *stream);
int mc_relu2(const float *up /* [R][I] */, float *act /* [R][I] */, int R, int64_t I,
             void *stream);

/* (The residual add h += y is fused into the next RMSNorm: mc_add_rmsnorm, mc_fused.h.) */

/* Copy n floats of each row: dst[r][i] = src[r][i], rows lds / ldd floats apart. */
int mc_copy_rows(const float *src, int64_t lds, float *dst, int64_t ldd, int R, int64_t n,
                 void *stream);

/* ---- MoE (mc_moe.cu; the CPU's moe_forward). References in mc_ref.c (gpu_check_mc_kernels),
 * and end to end against the CPU runtime by gpu_check_mc_forward on the MoE fixtures. */
/* Routing of every row from its router logits (row r at logits + r ldl, E values): idx [R][k]
 * expert ids in ascending order and their weights wt [R][k]. qwen: softmax top-k (renormalised
 * when norm_topk); else Nemotron-H's sigmoid + corr_bias [E] selection with n_group groups keeping
 * topk_group (<= 64), weights normalised (norm_topk) and scaled. scratch: [R][4][E]. */
int mc_moe_route(const float *logits, int64_t ldl, const float *corr_bias, int qwen, int64_t E,
                 int64_t k, int norm_topk, float routed_scaling, int64_t n_group,
                 int64_t topk_group, float *scratch, int32_t *idx /* [R][k] */,
                 float *wt /* [R][k] */, int R, void *stream);
/* acc[r] = sum_j wt[r][j] down_e(act(up_e x[r])) over the k selected experts e = idx[r][j]:
 * w_gate / w_up [E][I][Din] (w_gate NULL: relu^2), w_down [E][Din][I]; scratch h [R][k][I],
 * y [R][k][Din]; acc [R][Din]. x rows are ldx floats apart. */
int mc_moe_experts(const float *x, int64_t ldx, const int32_t *idx, const float *wt,
                   const float *w_gate, const float *w_up, const float *w_down, float *h, float *y,
                   float *acc, int R, int64_t k, int64_t I, int64_t Din, void *stream);
/* y[r] += g_r sh[r] with g_r = sigmoid(gate_src[r ldg]) (Qwen's shared-expert gate) or 1. */
int mc_moe_shared_add(float *y /* [R][H] */, const float *sh /* [R][H] */,
                      const float *gate_src /* [R][ldg] or NULL */, int64_t ldg, int R, int64_t H,
                      void *stream);

/* ---- metrics (mc_metrics.cu) ---------------------------------------------------------------
 * Rows are configuration-major with K windows: row c K + k; c = 0 is the reference. */
typedef struct {
  float lse;      /* log sum exp(x - max) as metrics_log_softmax computes it */
  float max;      /* largest logit */
  int32_t argmax; /* first index of the largest logit */
  int32_t finite; /* 0 when some logit is not finite (then the rest is unset) */
} mc_row_stats;

typedef struct {
  float kl, nll, dp;  /* SPEC section 5; kl = 0, dp = 0 on reference rows */
  int32_t top1;       /* argmax agreement with the reference row; 1 on reference rows */
  int32_t finite;     /* this row's logits were finite */
  int32_t argmax;
} mc_row_metrics;

/* stats[r] of logits [R][V]. */
int mc_row_stats_launch(const float *logits /* [R][V] */, int R, int64_t V,
                        mc_row_stats *stats /* [R] */, void *stream);
/* out[r] for every row: nll against target[k] (k = r % K), and for c > 0 kl, dp, top1 against
 * row k. A reference row that is not finite leaves its configuration rows' kl etc. meaningless
 * (the driver refuses a non-finite reference). */
int mc_row_metrics_launch(const float *logits /* [R][V] */, const mc_row_stats *stats /* [R] */,
                          const int64_t *target /* [K] */, int R, int K, int64_t V,
                          mc_row_metrics *out /* [R] */, void *stream);

/* Spec rounds: out[i] for token row i against the reference row ref_row[i] of the reference
 * ring (ref_logits [*][V] with their ref_stats, stored from the reference's own rows): nll
 * against target[i], kl, dp, top1 exactly as a configuration row of mc_row_metrics_launch (the
 * same device code). stats [RT] of logits from mc_row_stats_launch. */
int mc_spec_metrics_launch(const float *logits /* [RT][V] */, const mc_row_stats *stats /* [RT] */,
                           const float *ref_logits /* [*][V] */,
                           const mc_row_stats *ref_stats /* [*] */, const int *ref_row /* [RT] */,
                           const int64_t *target /* [RT] */, int RT, int64_t V,
                           mc_row_metrics *out /* [RT] */, void *stream);

#ifdef __cplusplus
}
#endif
#endif
