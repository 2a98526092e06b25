/* Attention decode with a KV cache: Qwen's gated attention (per-head (1+w) q/k norm, partial
 * half-split RoPE, sigmoid output gate; A.3.2) and Nemotron-H's plain GQA (no RoPE; B.3.2).
 * Token t of a round sits at position pos + t and attends to positions 0..pos+t; K/V of rejected
 * spec drafts are overwritten by later rounds. */
#include <math.h>
#include <string.h>

#include "src/model/layers.h"
#include "src/model/linalg.h"

int64_t attn_work_floats(const model *m, int n, int64_t max_ctx) {
  const model_config *c = &m->cfg;
  const int64_t qd = c->n_heads * c->head_dim;
  /* q with gates, scores, o, one head's norm */
  return (int64_t)n * 3 * qd + max_ctx + c->head_dim;
}

/* RoPE on dims [0, rd) of one head (half-split / NeoX style), as HF computes it: inv_freq in
 * fp32 as 1 / theta^(2i/rd), angle = pos * inv_freq in fp32, cos and sin of that angle. */
static void rope(float *x /* [D] */, int64_t rd, double theta, int64_t pos) {
  const int64_t half = rd / 2;
  for (int64_t i = 0; i < half; i++) {
    float e = (float)(2 * i) / (float)rd;
    float inv = 1.0f / powf((float)theta, e);
    float ang = (float)pos * inv;
    float cs = cosf(ang), sn = sinf(ang);
    float a = x[i], bb = x[i + half];
    x[i] = a * cs - bb * sn;
    x[i + half] = bb * cs + a * sn;
  }
}

/* After the projections, for one state: norms and RoPE of q and k, attention over its KV cache,
 * the output gate (into o [n][qd]). */
static void attn_state(model_state *s, const model_block_w *b, block_state *bs, int n) {
  const model_config *c = &s->m->cfg;
  const attn_weights *a = &b->attn;
  const int64_t nH = c->n_heads, nKV = c->n_kv_heads, D = c->head_dim;
  const int64_t qd = nH * D, kvd = nKV * D, rep = nH / nKV;
  const int gated = b->kind == BK_QATTN;
  float *qg = s->work;              /* [n][2*qd]: queries, then gates (Qwen) */
  float *sc = qg + n * 2 * qd;      /* [max_ctx] scores of one head */
  float *o = sc + s->max_ctx;       /* [n][qd] attention output */
  float *tmp = o + n * qd;          /* [D] */
  const float scale = (float)(1.0 / sqrt((double)D));

  if (gated)
    for (int t = 0; t < n; t++) {
      const int64_t pos = s->pos + t;
      float *q = qg + t * 2 * qd;            /* [2][nH][D] */
      float *kc = bs->kcache + pos * kvd;   /* [nKV][D] */
      for (int64_t h = 0; h < nH; h++) {
        rmsnorm(q + h * D, a->q_norm, 1, c->eps, tmp, D);
        memcpy(q + h * D, tmp, (size_t)D * sizeof(float));
        rope(q + h * D, c->rotary_dim, c->rope_theta, pos);
      }
      for (int64_t h = 0; h < nKV; h++) {
        rmsnorm(kc + h * D, a->k_norm, 1, c->eps, tmp, D);
        memcpy(kc + h * D, tmp, (size_t)D * sizeof(float));
        rope(kc + h * D, c->rotary_dim, c->rope_theta, pos);
      }
    }
  /* All K/V of the round are written before any token reads them: token t reads only
   * positions <= pos + t, so the order does not matter. */
  for (int t = 0; t < n; t++) {
    const int64_t pos = s->pos + t;
    const float *q = qg + t * 2 * qd; /* [2][nH][D]: queries, gates */
    float *ot = o + t * qd;           /* [nH][D] */
    for (int64_t h = 0; h < nH; h++) {
      const int64_t kh = h / rep;
      const float *qh = q + h * D; /* [D] */
      float mx = -INFINITY;
      for (int64_t j = 0; j <= pos; j++) {
        float v = dot_f32(qh, bs->kcache + j * kvd + kh * D, D) * scale;
        sc[j] = v;
        if (v > mx) mx = v;
      }
      float sum = 0.0f;
      for (int64_t j = 0; j <= pos; j++) {
        sc[j] = expf(sc[j] - mx);
        sum = sum + sc[j];
      }
      float *oh = ot + h * D; /* [D] */
      for (int64_t i = 0; i < D; i++) oh[i] = 0.0f;
      for (int64_t j = 0; j <= pos; j++) {
        const float p = sc[j] / sum;
        const float *vj = bs->vcache + j * kvd + kh * D; /* [D] */
        for (int64_t i = 0; i < D; i++) oh[i] = oh[i] + p * vj[i];
      }
    }
    if (gated)
      for (int64_t i = 0; i < qd; i++) ot[i] = ot[i] * sigmoid_f(q[qd + i]);
  }
}

void attn_forward(layer_batch *lb, int bi) {
  const model *m = lb->s[0]->m;
  const model_config *c = &m->cfg;
  const model_block_w *b = &m->blocks[bi];
  const attn_weights *a = &b->attn;
  const int64_t H = c->H, qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim;
  const int gated = b->kind == BK_QATTN;
  const int n = lb->n, nv = lb->ns * lb->n;
  const float **xp = lb->xp;
  float **yp = lb->yp;

  /* projections of every (state, token): queries (and gates) to work, K/V into the caches */
  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) {
      xp[j * n + t] = lb->s[j]->u + t * H;
      yp[j * n + t] = lb->s[j]->work + t * 2 * qd;
    }
  matvec_many(a->w_q, gated ? 2 * qd : qd, H, xp, yp, nv);
  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++)
      yp[j * n + t] = lb->s[j]->bs[bi].kcache + (lb->s[j]->pos + t) * kvd;
  matvec_many(a->w_k, kvd, H, xp, yp, nv);
  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++)
      yp[j * n + t] = lb->s[j]->bs[bi].vcache + (lb->s[j]->pos + t) * kvd;
  matvec_many(a->w_v, kvd, H, xp, yp, nv);

  for (int j = 0; j < lb->ns; j++) attn_state(lb->s[j], b, &lb->s[j]->bs[bi], n);

  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) {
      model_state *s = lb->s[j];
      xp[j * n + t] = s->work + n * 2 * qd + s->max_ctx + t * qd; /* o of token t */
      yp[j * n + t] = s->y + t * H;
    }
  matvec_many(a->w_o, H, qd, xp, yp, nv);
}
