/* Feed-forward blocks: dense SwiGLU (Qwen) and relu^2 (Nemotron-H) MLPs, and the two MoE blocks:
 * Qwen (softmax router, top-k, renormalised weights, SwiGLU experts, sigmoid-gated shared
 * expert; A.3.3) and Nemotron-H (sigmoid router, selection by sigmoid + correction bias with
 * group gating, weights from the plain sigmoid, relu^2 experts inside optional latent
 * projections, shared expert on the full-width input; B.3.4). Routed experts are summed in
 * ascending expert id, as HF's index_add_ loop does. */
#include <math.h>
#include <string.h>

#include "src/model/layers.h"
#include "src/model/linalg.h"
#include "src/model/moe_route.h"

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

int64_t mlp_work_floats(const model *m, int n) {
  const model_config *c = &m->cfg;
  int64_t I = max64(max64(c->inter, c->moe_inter), c->shared_inter);
  int64_t Din = c->latent > 0 ? c->latent : c->H;
  /* MoE: gate, up (I each), router scores (3E), latent in/out (Din each), expert out
   * (max(H,Din)), selection marks (E); dense MLP: gate and up of n tokens */
  int64_t moe = 2 * I + 4 * max64(c->n_experts, 1) + 2 * Din + max64(c->H, Din) + c->H;
  return max64(moe, 2 * (int64_t)n * I);
}

/* out[H'] = down(act(up x) [* silu(gate x)]); gate NULL -> relu^2. */
static void ffn(const float *w_gate /* [I][Din] or NULL */, const float *w_up /* [I][Din] */,
                const float *w_down /* [Dout][I] */, int64_t I, int64_t Din, int64_t Dout,
                const float *x /* [Din] */, float *out /* [Dout] */, float *gbuf /* [I] */,
                float *ubuf /* [I] */) {
  matvec(w_up, x, ubuf, I, Din);
  if (w_gate) {
    matvec(w_gate, x, gbuf, I, Din);
    for (int64_t i = 0; i < I; i++) ubuf[i] = silu_f(gbuf[i]) * ubuf[i];
  } else {
    for (int64_t i = 0; i < I; i++) {
      float r = ubuf[i] > 0.0f ? ubuf[i] : 0.0f;
      ubuf[i] = r * r;
    }
  }
  matvec(w_down, ubuf, out, Dout, I);
}

void mlp_forward(layer_batch *lb, int bi) {
  const model *m = lb->s[0]->m;
  const model_block_w *b = &m->blocks[bi];
  const int64_t H = m->cfg.H, I = b->mlp.I;
  const int n = lb->n, nv = lb->ns * lb->n;
  const float **xp = lb->xp;
  float **yp = lb->yp;
  /* per state: g = work [n][I], up = work + n I [n][I]; the single-state ffn's products, each
   * over every (state, token) */
  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) {
      xp[j * n + t] = lb->s[j]->u + t * H;
      yp[j * n + t] = lb->s[j]->work + (n + t) * I;
    }
  matvec_many(b->mlp.w_up, I, H, xp, yp, nv);
  if (b->mlp.w_gate) {
    for (int j = 0; j < lb->ns; j++)
      for (int t = 0; t < n; t++) yp[j * n + t] = lb->s[j]->work + t * I;
    matvec_many(b->mlp.w_gate, I, H, xp, yp, nv);
  }
  for (int j = 0; j < lb->ns; j++) {
    float *g = lb->s[j]->work, *up = g + n * I; /* [n][I] each */
    if (b->mlp.w_gate) {
      for (int64_t i = 0; i < n * I; i++) up[i] = silu_f(g[i]) * up[i];
    } else {
      for (int64_t i = 0; i < n * I; i++) {
        float r = up[i] > 0.0f ? up[i] : 0.0f;
        up[i] = r * r;
      }
    }
  }
  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) {
      xp[j * n + t] = lb->s[j]->work + (n + t) * I;
      yp[j * n + t] = lb->s[j]->y + t * H;
    }
  matvec_many(b->mlp.w_down, H, I, xp, yp, nv);
}

#define MOE_MAX_TOPK 1024

void moe_forward(const model *m, const model_block_w *b, int n, const float *u, float *y,
                 float *work) {
  const model_config *c = &m->cfg;
  const moe_weights *w = &b->moe;
  const int64_t H = c->H, E = c->n_experts, I = c->moe_inter, Din = w->Din;
  const int64_t k = c->topk;
  const int64_t Imax = max64(max64(c->inter, c->moe_inter), c->shared_inter);
  float *g = work;                 /* [Imax] */
  float *up = g + Imax;            /* [Imax] */
  float *r = up + Imax;            /* [E] router logits */
                                   /* r[4][E]: the routing scratch (moe_route.h) */
  float *xl = r + 4 * E;           /* [Din] expert input */
  float *acc = xl + Din;           /* [Din] routed sum */
  float *eo = acc + Din;           /* [max(H, Din)] one expert's output */
  float *sh = eo + max64(H, Din);  /* [H] shared expert output */
  int32_t idx[MOE_MAX_TOPK];
  float wt[MOE_MAX_TOPK];

  for (int t = 0; t < n; t++) {
    const float *ut = u + t * H; /* [H] */
    float *yt = y + t * H;       /* [H] */
    matvec(w->router, ut, r, E, H);
    /* r, sc, allowed, gs are the routine's [4][E] scratch; it reads the logits r first */
    rssm_moe_route(r, E, k, b->kind == BK_QMOE, w->corr_bias, c->norm_topk,
                   (float)c->routed_scaling, c->n_group, c->topk_group, r, idx, wt);

    const float *x = ut; /* [Din]: the latent input, or u itself */
    if (w->fc1_latent) {
      matvec(w->fc1_latent, ut, xl, Din, H);
      x = xl;
    }
    for (int64_t i = 0; i < Din; i++) acc[i] = 0.0f;
    for (int64_t j = 0; j < k; j++) {
      const int64_t e = idx[j];
      ffn(w->w_gate ? w->w_gate + e * I * Din : NULL, w->w_up + e * I * Din,
          w->w_down + e * Din * I, I, Din, Din, x, eo, g, up);
      for (int64_t i = 0; i < Din; i++) acc[i] = acc[i] + wt[j] * eo[i];
    }
    if (w->fc2_latent) matvec(w->fc2_latent, acc, yt, H, Din);
    else memcpy(yt, acc, (size_t)H * sizeof(float));

    if (w->shared.I > 0) {
      ffn(w->shared.w_gate, w->shared.w_up, w->shared.w_down, w->shared.I, H, H, ut, sh, g, up);
      float gate = 1.0f;
      if (w->shared_gate) gate = sigmoid_f(dot_f32(w->shared_gate, ut, H));
      for (int64_t i = 0; i < H; i++) yt[i] = yt[i] + gate * sh[i];
    }
  }
}
