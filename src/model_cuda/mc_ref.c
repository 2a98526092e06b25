/* CPU references of the GPU forward's kernels (mc_ref.h). Each loop is the CPU runtime's
 * (src/model/layer_*.c, linalg.c), rearranged only in which rows it visits. */
#include "src/model_cuda/mc_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/model/dt_clamp.h"
#include "src/model/layers.h"
#include "src/model/metrics.h"
#include "src/model/linalg.h"
#include "src/model/moe_route.h"

void mc_ref_rmsnorm(const float *x, float *y, int R, int ngroups, int gs, int64_t ld,
                    const float *w, int w_per_group, int plus_one, float eps) {
  for (int r = 0; r < R; r++)
    for (int g = 0; g < ngroups; g++) {
      const float *wg = w ? (w_per_group ? w + (int64_t)g * gs : w) : NULL; /* [gs] */
      rmsnorm(x + r * ld + (int64_t)g * gs, wg, plus_one, (double)eps, y + r * ld + (int64_t)g * gs,
              gs);
    }
}

void mc_ref_embed(const float *embed, const int64_t *tok, float *h, int R, int64_t H) {
  for (int r = 0; r < R; r++) memcpy(h + r * H, embed + tok[r] * H, (size_t)H * sizeof(float));
}

void mc_ref_conv_step(float *win, const float *x, int64_t ldx, const float *w, const float *bias,
                      float *out, int R, int64_t C, int K) {
  for (int r = 0; r < R; r++) {
    float *wr = win + (int64_t)r * (K - 1) * C; /* [K-1][C] */
    const float *xr = x + r * ldx;              /* [C] */
    for (int64_t c = 0; c < C; c++) {
      float acc = 0.0f;
      for (int k = 0; k < K - 1; k++) acc = acc + w[c * K + k] * wr[k * C + c];
      acc = acc + w[c * K + K - 1] * xr[c];
      if (bias) acc = acc + bias[c];
      out[r * C + c] = silu_f(acc);
    }
    /* the window keeps the last K-1 inputs (model_commit's memmove) */
    if (K > 2) memmove(wr, wr + C, (size_t)((K - 2) * C) * sizeof(float));
    if (K > 1) memcpy(wr + (K - 2) * C, xr, (size_t)C * sizeof(float));
  }
}

/* layer_gdn.c l2norm */
static void l2norm_ref(float *x /* [n] */, int64_t n) {
  float inv = 1.0f / sqrtf(dot_f32(x, x, n) + 1e-6f);
  for (int64_t i = 0; i < n; i++) x[i] = x[i] * inv;
}

void mc_ref_gdn_prep(const float *cv, const float *ba, int64_t ldba, int64_t b_off,
                     int64_t a_off, const float *A_log, const float *dt_bias, float *q, float *k,
                     float *v, float *alpha, float *beta, int R, int Hk, int Hv, int dk, int dv) {
  const int64_t key_dim = (int64_t)Hk * dk, value_dim = (int64_t)Hv * dv;
  const int64_t conv_dim = 2 * key_dim + value_dim;
  const float qscale = (float)(1.0 / sqrt((double)dk));
  for (int r = 0; r < R; r++) {
    const float *c = cv + r * conv_dim;                     /* [conv_dim]: q | k | v */
    float *qt = q + r * key_dim, *kt = k + r * key_dim;     /* [Hk][dk] */
    memcpy(qt, c, (size_t)key_dim * sizeof(float));
    memcpy(kt, c + key_dim, (size_t)key_dim * sizeof(float));
    memcpy(v + r * value_dim, c + 2 * key_dim, (size_t)value_dim * sizeof(float));
    for (int hk = 0; hk < Hk; hk++) {
      l2norm_ref(qt + hk * dk, dk);
      l2norm_ref(kt + hk * dk, dk);
      for (int i = 0; i < dk; i++) qt[hk * dk + i] = qt[hk * dk + i] * qscale;
    }
    const float *br = ba + r * ldba + b_off, *ar = ba + r * ldba + a_off; /* [Hv] each */
    for (int h = 0; h < Hv; h++) {
      float gg = -expf(A_log[h]) * softplus_f(ar[h] + dt_bias[h]);
      alpha[r * Hv + h] = expf(gg);
      beta[r * Hv + h] = sigmoid_f(br[h]);
    }
  }
}

void mc_ref_mul_silu(float *y, const float *z, int64_t ldz, int R, int64_t n) {
  for (int r = 0; r < R; r++)
    for (int64_t i = 0; i < n; i++) y[r * n + i] = y[r * n + i] * silu_f(z[r * ldz + i]);
}

void mc_ref_mamba2_prep(const float *zx, int64_t in_rows, int64_t dt_off, const float *cv,
                        int64_t conv_dim, const float *A_log, const float *dt_bias, float dt_lo,
                        float dt_hi, const int *pos, float *alpha, float *v, float *Bm, float *Cm,
                        int R, int Hm, int P, int G, int N) {
  const int64_t d_inner = (int64_t)Hm * P, gn = (int64_t)G * N;
  for (int r = 0; r < R; r++) {
    const float *c = cv + r * conv_dim;           /* [conv_dim]: x | B | C */
    const float *dt = zx + r * in_rows + dt_off;  /* [Hm] */
    memcpy(Bm + r * gn, c + d_inner, (size_t)gn * sizeof(float));
    memcpy(Cm + r * gn, c + d_inner + gn, (size_t)gn * sizeof(float));
    for (int h = 0; h < Hm; h++) {
      float delta = rssm_dt_limit_at(softplus_f(dt[h] + dt_bias[h]), pos[r], dt_lo, dt_hi);
      float A = -expf(A_log[h]);
      alpha[r * Hm + h] = expf(delta * A);
      for (int p = 0; p < P; p++) v[r * d_inner + h * P + p] = delta * c[h * P + p];
    }
  }
}

void mc_ref_mamba2_gate(const float *o, const float *cv, int64_t conv_dim, const float *zx,
                        int64_t in_rows, const float *D, float *t, int R, int Hm, int P) {
  const int64_t d_inner = (int64_t)Hm * P;
  for (int r = 0; r < R; r++)
    for (int h = 0; h < Hm; h++)
      for (int p = 0; p < P; p++) {
        int64_t i = (int64_t)h * P + p;
        float ot = o[r * d_inner + i] + D[h] * cv[r * conv_dim + i];
        t[r * d_inner + i] = ot * silu_f(zx[r * in_rows + i]);
      }
}

void mc_ref_rope_tables(double theta, int rd, int64_t max_ctx, float *cos_t, float *sin_t) {
  const int half = rd / 2;
  for (int i = 0; i < half; i++) {
    float e = (float)(2 * i) / (float)rd;
    float inv = 1.0f / powf((float)theta, e);
    for (int64_t pos = 0; pos < max_ctx; pos++) {
      float ang = (float)pos * inv;
      cos_t[pos * half + i] = cosf(ang);
      sin_t[pos * half + i] = sinf(ang);
    }
  }
}

/* layer_attn.c rope() with the angle's cos and sin read from the tables */
static void rope_ref(float *x /* [D] */, int rd, const float *cs /* [rd/2] */,
                     const float *sn /* [rd/2] */) {
  const int half = rd / 2;
  for (int i = 0; i < half; i++) {
    float a = x[i], bb = x[i + half];
    x[i] = a * cs[i] - bb * sn[i];
    x[i + half] = bb * cs[i] + a * sn[i];
  }
}

void mc_ref_qk_prepare(const float *qkv, int64_t ldqkv, int gated, const float *q_norm,
                       const float *k_norm, const float *rope_cos, const float *rope_sin, int rd,
                       float eps, const int *pos, float *q, float *kcache, float *vcache,
                       int64_t max_ctx, int R, int nH, int nKV, int D) {
  mc_ref_qk_prepare_t(qkv, ldqkv, gated, q_norm, k_norm, rope_cos, rope_sin, rd, eps, pos, q,
                      kcache, vcache, max_ctx, R, 1, nH, nKV, D);
}

void mc_ref_qk_prepare_t(const float *qkv, int64_t ldqkv, int gated, const float *q_norm,
                         const float *k_norm, const float *rope_cos, const float *rope_sin,
                         int rd, float eps, const int *pos, float *q, float *kcache,
                         float *vcache, int64_t max_ctx, int R, int tpr, int nH, int nKV,
                         int D) {
  const int64_t qd = (int64_t)nH * D, kvd = (int64_t)nKV * D;
  const int64_t k_off = gated ? 2 * qd : qd, v_off = k_off + kvd;
  const int half = rd / 2;
  for (int r = 0; r < R; r++) {
    const float *src = qkv + r * ldqkv;                                 /* [ldqkv] */
    float *qr = q + r * qd;                                             /* [nH][D] */
    const int64_t cr = r / tpr; /* the cache row of token row r */
    float *kc = kcache + (cr * max_ctx + pos[r]) * kvd;                 /* [nKV][D] */
    float *vc = vcache + (cr * max_ctx + pos[r]) * kvd;                 /* [nKV][D] */
    memcpy(qr, src, (size_t)qd * sizeof(float));
    memcpy(kc, src + k_off, (size_t)kvd * sizeof(float));
    memcpy(vc, src + v_off, (size_t)kvd * sizeof(float));
    if (!gated) continue;
    const float *cs = rope_cos + (int64_t)pos[r] * half, *sn = rope_sin + (int64_t)pos[r] * half;
    for (int h = 0; h < nH; h++) {
      rmsnorm(qr + h * D, q_norm, 1, (double)eps, qr + h * D, D);
      rope_ref(qr + h * D, rd, cs, sn);
    }
    for (int h = 0; h < nKV; h++) {
      rmsnorm(kc + h * D, k_norm, 1, (double)eps, kc + h * D, D);
      rope_ref(kc + h * D, rd, cs, sn);
    }
  }
}

void mc_ref_attn_decode(const float *q, const float *kcache, const float *vcache, const int *pos,
                        int64_t max_ctx, const float *gate_src, int64_t ldgate, float *o, int R,
                        int nH, int nKV, int D) {
  mc_ref_attn_decode_t(q, kcache, vcache, pos, max_ctx, gate_src, ldgate, o, R, 1, nH, nKV, D);
}

void mc_ref_attn_decode_t(const float *q, const float *kcache, const float *vcache,
                          const int *pos, int64_t max_ctx, const float *gate_src, int64_t ldgate,
                          float *o, int R, int tpr, int nH, int nKV, int D) {
  const int64_t qd = (int64_t)nH * D, kvd = (int64_t)nKV * D, rep = nH / nKV;
  const float scale = (float)(1.0 / sqrt((double)D));
  float *sc = malloc((size_t)max_ctx * sizeof(float)); /* [max_ctx] scores of one head */
  if (!sc) return;
  for (int r = 0; r < R; r++) {
    const int64_t cr = r / tpr; /* the cache row of token row r */
    const float *kr = kcache + cr * max_ctx * kvd, *vr = vcache + cr * max_ctx * kvd;
    for (int h = 0; h < nH; h++) {
      const int64_t kh = h / rep;
      const float *qh = q + r * qd + (int64_t)h * D; /* [D] */
      float mx = -INFINITY;
      for (int64_t j = 0; j <= pos[r]; j++) {
        float v = dot_f32(qh, kr + j * kvd + kh * D, D) * scale;
        sc[j] = v;
        if (v > mx) mx = v;
      }
      float sum = 0.0f;
      for (int64_t j = 0; j <= pos[r]; j++) {
        sc[j] = expf(sc[j] - mx);
        sum = sum + sc[j];
      }
      float *oh = o + r * qd + (int64_t)h * D; /* [D] */
      for (int i = 0; i < D; i++) oh[i] = 0.0f;
      for (int64_t j = 0; j <= pos[r]; j++) {
        const float p = sc[j] / sum;
        const float *vj = vr + j * kvd + kh * D;
        for (int i = 0; i < D; i++) oh[i] = oh[i] + p * vj[i];
      }
    }
    if (gate_src)
      for (int64_t i = 0; i < qd; i++)
        o[r * qd + i] = o[r * qd + i] * sigmoid_f(gate_src[r * ldgate + qd + i]);
  }
  free(sc);
}

void mc_ref_swiglu(const float *gu, float *act, int R, int64_t I) {
  for (int r = 0; r < R; r++)
    for (int64_t i = 0; i < I; i++)
      act[r * I + i] = silu_f(gu[r * 2 * I + i]) * gu[r * 2 * I + I + i];
}

void mc_ref_relu2(const float *up, float *act, int R, int64_t I) {
  for (int64_t i = 0; i < (int64_t)R * I; i++) {
    float x = up[i] > 0.0f ? up[i] : 0.0f;
    act[i] = x * x;
  }
}

void mc_ref_add(float *h, const float *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) h[i] = h[i] + y[i];
}

void mc_ref_row_metrics(const float *logits, const int64_t *target, int R, int K, int64_t V,
                        mc_row_stats *stats, mc_row_metrics *out) {
  float *lp = malloc((size_t)R * (size_t)V * sizeof(float)); /* [R][V] */
  if (!lp) return;
  for (int r = 0; r < R; r++) {
    const float *x = logits + (int64_t)r * V;
    int64_t am = 0;
    float m = x[0];
    for (int64_t i = 1; i < V; i++)
      if (x[i] > m) m = x[i];
    stats[r].max = m;
    stats[r].finite = metrics_log_softmax(x, V, lp + (int64_t)r * V, &am) == 0;
    stats[r].argmax = (int32_t)am;
    /* lse as metrics_log_softmax computes it (it does not return it) */
    double s = 0.0;
    for (int64_t i = 0; i < V; i++) s += (double)expf(x[i] - m);
    stats[r].lse = (float)log(s);
  }
  for (int r = 0; r < R; r++) {
    const int k = r % K;
    mc_row_metrics *o = &out[r];
    memset(o, 0, sizeof *o);
    o->finite = stats[r].finite;
    o->argmax = stats[r].argmax;
    if (!o->finite) continue;
    const float *lr = lp + (int64_t)r * V, *lref = lp + (int64_t)k * V; /* [V] each */
    if (r < K) {
      o->nll = -lr[target[k]];
      o->top1 = 1;
      continue;
    }
    step_metrics m;
    metrics_step(lref, stats[k].argmax, lr, stats[r].argmax, V, target[k], &m);
    o->kl = m.kl;
    o->nll = m.nll;
    o->dp = m.dp;
    o->top1 = m.top1;
  }
  free(lp);
}

/* ---- MoE: layer_mlp.c's routing and expert loop, per row ------------------------------------ */

void mc_ref_moe_route(const float *logits, int64_t ldl, const float *corr_bias, int qwen,
                      int64_t E, int64_t k, int norm_topk, float routed_scaling, int64_t n_group,
                      int64_t topk_group, int32_t *idx, float *wt, int R) {
  float *scratch = malloc((size_t)(4 * E) * sizeof(float)); /* [4][E] */
  if (!scratch) return;
  for (int r = 0; r < R; r++)
    rssm_moe_route(logits + r * ldl, E, k, qwen, corr_bias, norm_topk, routed_scaling, n_group,
                   topk_group, scratch, idx + r * k, wt + r * k);
  free(scratch);
}

void mc_ref_moe_experts(const float *x, int64_t ldx, const int32_t *idx, const float *wt,
                        const float *w_gate, const float *w_up, const float *w_down, float *acc,
                        int R, int64_t k, int64_t I, int64_t Din) {
  float *h = malloc((size_t)I * sizeof(float));   /* [I] */
  float *eo = malloc((size_t)Din * sizeof(float)); /* [Din] */
  if (!h || !eo) {
    free(h);
    free(eo);
    return;
  }
  for (int r = 0; r < R; r++) {
    const float *xr = x + r * ldx;
    float *ar = acc + r * Din;
    for (int64_t o = 0; o < Din; o++) ar[o] = 0.0f;
    for (int64_t j = 0; j < k; j++) {
      const int64_t e = idx[r * k + j];
      for (int64_t i = 0; i < I; i++) {
        float u = dot_f32(w_up + (e * I + i) * Din, xr, Din);
        if (w_gate) {
          h[i] = silu_f(dot_f32(w_gate + (e * I + i) * Din, xr, Din)) * u;
        } else {
          float rl = u > 0.0f ? u : 0.0f;
          h[i] = rl * rl;
        }
      }
      for (int64_t o = 0; o < Din; o++) eo[o] = dot_f32(w_down + (e * Din + o) * I, h, I);
      for (int64_t o = 0; o < Din; o++) ar[o] = ar[o] + wt[r * k + j] * eo[o];
    }
  }
  free(h);
  free(eo);
}

void mc_ref_moe_shared_add(float *y, const float *sh, const float *gate_src, int64_t ldg, int R,
                           int64_t H) {
  for (int r = 0; r < R; r++) {
    const float gate = gate_src ? sigmoid_f(gate_src[r * ldg]) : 1.0f;
    for (int64_t i = 0; i < H; i++) y[r * H + i] = y[r * H + i] + gate * sh[r * H + i];
  }
}

void mc_ref_conv_spec(float *win, const float *x, int64_t ldx, const float *w, const float *bias,
                      const int *a, float *out, int R, int T, int64_t C, int K) {
  /* the CPU model's spec round: the window [K-1+T] of committed inputs then the drafts'
   * (forward.c writes them at rows K-1..), conv_silu with n = T, model_commit's memmove */
  float *ext = malloc((size_t)((K - 1 + T) * C) * sizeof(float)); /* [K-1+T][C] */
  if (!ext) return;
  for (int r = 0; r < R; r++) {
    float *wr = win + (int64_t)r * (K - 1) * C; /* [K-1][C] */
    memcpy(ext, wr, (size_t)((K - 1) * C) * sizeof(float));
    for (int j = 0; j < T; j++)
      memcpy(ext + (K - 1 + j) * C, x + ((int64_t)r * T + j) * ldx, (size_t)C * sizeof(float));
    conv_silu(ext, w, bias, C, K, T, out + (int64_t)r * T * C);
    if (a[r] > 0 && a[r] <= T)
      memcpy(wr, ext + (int64_t)a[r] * C, (size_t)((K - 1) * C) * sizeof(float));
  }
  free(ext);
}

void mc_ref_spec_metrics(const float *logits, const float *ref_logits, const int *ref_row,
                         const int64_t *target, int RT, int64_t V, mc_row_stats *stats,
                         mc_row_metrics *out) {
  /* each token row as configuration row 1 of a two-row batch whose row 0 is its reference */
  float *pair = malloc((size_t)(2 * V) * sizeof(float)); /* [2][V] */
  if (!pair) return;
  for (int i = 0; i < RT; i++) {
    mc_row_stats st[2];
    mc_row_metrics m[2];
    memcpy(pair, ref_logits + (int64_t)ref_row[i] * V, (size_t)V * sizeof(float));
    memcpy(pair + V, logits + (int64_t)i * V, (size_t)V * sizeof(float));
    mc_ref_row_metrics(pair, &target[i], 2, 1, V, st, m);
    stats[i] = st[1];
    out[i] = m[1];
  }
  free(pair);
}
