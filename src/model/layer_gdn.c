/* Gated DeltaNet decode (reference/hf-hybrid-architectures.md A.3.1). The mixer computes the
 * projections, the causal conv, the L2 norms and the gates; the recurrence itself
 * (S = alpha S + u k^T with u = beta (v - alpha S k), o = S q) is the SSM engine's, under the
 * run's state strategy. Then the gated RMSNorm (norm before gate) and out_proj. */
#include <math.h>
#include <string.h>

#include "src/model/layers.h"
#include "src/model/linalg.h"

void conv_silu(const float *win, const float *w, const float *bias, int64_t C, int64_t K, int n,
               float *out) {
  for (int t = 0; t < n; t++)
    for (int64_t c = 0; c < C; c++) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; k++) acc = acc + w[c * K + k] * win[(t + k) * C + c];
      if (bias) acc = acc + bias[c];
      out[t * C + c] = silu_f(acc);
    }
}

typedef struct {
  int64_t H, Hk, Hv, dk, dv, K, key_dim, value_dim, conv_dim;
} gdn_dims;

static gdn_dims dims_of(const model_config *c) {
  gdn_dims d;
  d.H = c->H;
  d.Hk = c->gdn_hk;
  d.Hv = c->gdn_hv;
  d.dk = c->gdn_dk;
  d.dv = c->gdn_dv;
  d.K = c->gdn_kernel;
  d.key_dim = d.Hk * d.dk;
  d.value_dim = d.Hv * d.dv;
  d.conv_dim = 2 * d.key_dim + d.value_dim;
  return d;
}

int64_t gdn_work_floats(const model *m, int n) {
  gdn_dims d = dims_of(&m->cfg);
  /* conv out, z, b, a, alpha, beta, q, k, v, o, gated o */
  return (int64_t)n * (d.conv_dim + d.value_dim + 4 * d.Hv + 2 * d.key_dim + 2 * d.value_dim) +
         d.value_dim;
}

/* x / sqrt(sum x^2 + 1e-6) (FLA's l2norm; HF: x * rsqrt(sum x^2 + 1e-6)) */
static void l2norm(float *x /* [n] */, int64_t n) {
  float inv = 1.0f / sqrtf(dot_f32(x, x, n) + 1e-6f);
  for (int64_t i = 0; i < n; i++) x[i] = x[i] * inv;
}

int gdn_forward(model_state *s, const model_block_w *b, block_state *bs, int n, const float *u,
                float *y, float *work) {
  const gdn_dims d = dims_of(&s->m->cfg);
  const gdn_weights *g = &b->gdn;
  float *cv = work;                          /* [n][conv_dim] conv + SiLU output */
  float *z = cv + n * d.conv_dim;            /* [n][Hv*dv] */
  float *bb = z + n * d.value_dim;           /* [n][Hv] beta logits */
  float *aa = bb + n * d.Hv;                 /* [n][Hv] decay input */
  float *alpha = aa + n * d.Hv;              /* [n][Hv] */
  float *beta = alpha + n * d.Hv;            /* [n][Hv] */
  float *q = beta + n * d.Hv;                /* [n][Hk][dk] */
  float *k = q + n * d.key_dim;              /* [n][Hk][dk] */
  float *v = k + n * d.key_dim;              /* [n][Hv][dv] */
  float *o = v + n * d.value_dim;            /* [n][Hv][dv] */
  float *og = o + n * d.value_dim;           /* [Hv*dv] gated norm output of one token */

  for (int t = 0; t < n; t++) {
    const float *ut = u + t * d.H; /* [H] */
    matvec(g->w_qkv, ut, bs->conv_win + (d.K - 1 + t) * d.conv_dim, d.conv_dim, d.H);
    matvec(g->w_z, ut, z + t * d.value_dim, d.value_dim, d.H);
    matvec(g->w_b, ut, bb + t * d.Hv, d.Hv, d.H);
    matvec(g->w_a, ut, aa + t * d.Hv, d.Hv, d.H);
  }
  conv_silu(bs->conv_win, g->conv_w, NULL, d.conv_dim, d.K, n, cv);

  const float qscale = (float)(1.0 / sqrt((double)d.dk));
  for (int t = 0; t < n; t++) {
    const float *c = cv + t * d.conv_dim;                    /* [conv_dim]: q | k | v */
    float *qt = q + t * d.key_dim, *kt = k + t * d.key_dim; /* [Hk][dk] each */
    memcpy(qt, c, (size_t)d.key_dim * sizeof(float));
    memcpy(kt, c + d.key_dim, (size_t)d.key_dim * sizeof(float));
    memcpy(v + t * d.value_dim, c + 2 * d.key_dim, (size_t)d.value_dim * sizeof(float));
    for (int64_t hk = 0; hk < d.Hk; hk++) {
      l2norm(qt + hk * d.dk, d.dk);
      l2norm(kt + hk * d.dk, d.dk);
      for (int64_t i = 0; i < d.dk; i++) qt[hk * d.dk + i] = qt[hk * d.dk + i] * qscale;
    }
    for (int64_t h = 0; h < d.Hv; h++) {
      /* g = -exp(A_log) * softplus(a + dt_bias); alpha = exp(g) */
      float gg = -expf(g->A_log[h]) * softplus_f(aa[t * d.Hv + h] + g->dt_bias[h]);
      alpha[t * d.Hv + h] = expf(gg);
      beta[t * d.Hv + h] = sigmoid_f(bb[t * d.Hv + h]);
    }
  }

  ssm_inputs in = {alpha, beta, v, k, q};
  int rc = s->cfg.strategy == SSM_SPEC ? ssm_verify(&bs->eng, &in, o) : ssm_step(&bs->eng, &in, o);
  if (rc != 0) return -1;

  for (int t = 0; t < n; t++) {
    const float *ot = o + t * d.value_dim, *zt = z + t * d.value_dim; /* [Hv][dv] each */
    for (int64_t h = 0; h < d.Hv; h++) {
      rmsnorm(ot + h * d.dv, g->norm, 0, s->m->cfg.eps, og + h * d.dv, d.dv);
      for (int64_t i = 0; i < d.dv; i++)
        og[h * d.dv + i] = og[h * d.dv + i] * silu_f(zt[h * d.dv + i]);
    }
    matvec(g->w_out, og, y + t * d.H, d.H, d.value_dim);
  }
  return 0;
}
