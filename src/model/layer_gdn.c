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
  return (int64_t)n * (d.conv_dim + d.value_dim + 4 * d.Hv + 2 * d.key_dim + 3 * d.value_dim);
}

/* x / sqrt(sum x^2 + 1e-6) (FLA's l2norm; HF: x * rsqrt(sum x^2 + 1e-6)) */
static void l2norm(float *x /* [n] */, int64_t n) {
  float inv = 1.0f / sqrtf(dot_f32(x, x, n) + 1e-6f);
  for (int64_t i = 0; i < n; i++) x[i] = x[i] * inv;
}

/* The scratch of one state (work), for n tokens. */
typedef struct {
  float *cv;    /* [n][conv_dim] conv + SiLU output */
  float *z;     /* [n][Hv*dv] */
  float *bb;    /* [n][Hv] beta logits */
  float *aa;    /* [n][Hv] decay input */
  float *alpha; /* [n][Hv] */
  float *beta;  /* [n][Hv] */
  float *q;     /* [n][Hk][dk] */
  float *k;     /* [n][Hk][dk] */
  float *v;     /* [n][Hv][dv] */
  float *o;     /* [n][Hv][dv] */
  float *og;    /* [n][Hv*dv] gated norm output */
} gdn_bufs;

static gdn_bufs bufs_of(const gdn_dims *d, int n, float *work) {
  gdn_bufs w;
  w.cv = work;
  w.z = w.cv + n * d->conv_dim;
  w.bb = w.z + n * d->value_dim;
  w.aa = w.bb + n * d->Hv;
  w.alpha = w.aa + n * d->Hv;
  w.beta = w.alpha + n * d->Hv;
  w.q = w.beta + n * d->Hv;
  w.k = w.q + n * d->key_dim;
  w.v = w.k + n * d->key_dim;
  w.o = w.v + n * d->value_dim;
  w.og = w.o + n * d->value_dim;
  return w;
}

/* Between the input projections and out_proj, for one state: conv, norms, gates, the engine,
 * the gated norm (into og). */
static int gdn_state(model_state *s, const model_block_w *b, block_state *bs, int n,
                     const gdn_dims *dp, const gdn_bufs *w) {
  const gdn_dims d = *dp;
  const gdn_weights *g = &b->gdn;
  conv_silu(bs->conv_win, g->conv_w, NULL, d.conv_dim, d.K, n, w->cv);

  const float qscale = (float)(1.0 / sqrt((double)d.dk));
  for (int t = 0; t < n; t++) {
    const float *c = w->cv + t * d.conv_dim;                       /* [conv_dim]: q | k | v */
    float *qt = w->q + t * d.key_dim, *kt = w->k + t * d.key_dim; /* [Hk][dk] each */
    memcpy(qt, c, (size_t)d.key_dim * sizeof(float));
    memcpy(kt, c + d.key_dim, (size_t)d.key_dim * sizeof(float));
    memcpy(w->v + t * d.value_dim, c + 2 * d.key_dim, (size_t)d.value_dim * sizeof(float));
    for (int64_t hk = 0; hk < d.Hk; hk++) {
      l2norm(qt + hk * d.dk, d.dk);
      l2norm(kt + hk * d.dk, d.dk);
      for (int64_t i = 0; i < d.dk; i++) qt[hk * d.dk + i] = qt[hk * d.dk + i] * qscale;
    }
    for (int64_t h = 0; h < d.Hv; h++) {
      /* g = -exp(A_log) * softplus(a + dt_bias); alpha = exp(g) */
      float gg = -expf(g->A_log[h]) * softplus_f(w->aa[t * d.Hv + h] + g->dt_bias[h]);
      w->alpha[t * d.Hv + h] = expf(gg);
      w->beta[t * d.Hv + h] = sigmoid_f(w->bb[t * d.Hv + h]);
    }
  }

  ssm_inputs in = {w->alpha, w->beta, w->v, w->k, w->q};
  int rc = s->cfg.strategy == SSM_SPEC ? ssm_verify(&bs->eng, &in, w->o)
                                       : ssm_step(&bs->eng, &in, w->o);
  if (rc != 0) return -1;

  for (int t = 0; t < n; t++) {
    const float *ot = w->o + t * d.value_dim, *zt = w->z + t * d.value_dim; /* [Hv][dv] each */
    float *og = w->og + t * d.value_dim;                                   /* [Hv][dv] */
    for (int64_t h = 0; h < d.Hv; h++) {
      rmsnorm(ot + h * d.dv, g->norm, 0, s->m->cfg.eps, og + h * d.dv, d.dv);
      for (int64_t i = 0; i < d.dv; i++)
        og[h * d.dv + i] = og[h * d.dv + i] * silu_f(zt[h * d.dv + i]);
    }
  }
  return 0;
}

int gdn_forward(layer_batch *lb, int bi, int *failed) {
  const model *m = lb->s[0]->m;
  const model_block_w *b = &m->blocks[bi];
  const gdn_dims d = dims_of(&m->cfg);
  const gdn_weights *g = &b->gdn;
  const int n = lb->n, nv = lb->ns * lb->n;
  const float **xp = lb->xp;
  float **yp = lb->yp;

  /* input projections of every (state, token): qkv straight into the conv window */
  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) {
      xp[j * n + t] = lb->s[j]->u + t * d.H;
      yp[j * n + t] = lb->s[j]->bs[bi].conv_win + (d.K - 1 + t) * d.conv_dim;
    }
  matvec_many(g->w_qkv, d.conv_dim, d.H, xp, yp, nv);
  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) yp[j * n + t] = bufs_of(&d, n, lb->s[j]->work).z + t * d.value_dim;
  matvec_many(g->w_z, d.value_dim, d.H, xp, yp, nv);
  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) yp[j * n + t] = bufs_of(&d, n, lb->s[j]->work).bb + t * d.Hv;
  matvec_many(g->w_b, d.Hv, d.H, xp, yp, nv);
  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) yp[j * n + t] = bufs_of(&d, n, lb->s[j]->work).aa + t * d.Hv;
  matvec_many(g->w_a, d.Hv, d.H, xp, yp, nv);

  for (int j = 0; j < lb->ns; j++) {
    model_state *s = lb->s[j];
    gdn_bufs w = bufs_of(&d, n, s->work);
    if (gdn_state(s, b, &s->bs[bi], n, &d, &w) != 0) {
      *failed = j;
      return -1;
    }
  }

  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) {
      xp[j * n + t] = bufs_of(&d, n, lb->s[j]->work).og + t * d.value_dim;
      yp[j * n + t] = lb->s[j]->y + t * d.H;
    }
  matvec_many(g->w_out, d.H, d.value_dim, xp, yp, nv);
  return 0;
}
