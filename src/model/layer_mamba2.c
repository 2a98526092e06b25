/* Nemotron-H Mamba-2 mixer decode (reference/hf-hybrid-architectures.md B.3.1). The mixer
 * computes in_proj, the causal conv (with bias) over xBC, dt = softplus(dt + dt_bias) clamped to
 * config.json's time_step_limit [lo, hi] (transformers' and mamba_ssm's dt_limit; the default
 * [0, inf] changes nothing, so with it dt has no lower clamp, the CUDA decode kernel's
 * behaviour), alpha = exp(dt A) and v = dt x; the engine
 * does S = alpha S + v B^T, y = S C under the run's strategy; then y += D x, the gated group
 * RMSNorm (gate before norm) and out_proj. */
#include <math.h>
#include <string.h>

#include "src/model/dt_clamp.h"
#include "src/model/layers.h"
#include "src/model/linalg.h"

typedef struct {
  int64_t H, Hm, P, G, N, K, d_inner, conv_dim, in_rows;
} m2_dims;

static m2_dims dims_of(const model_config *c) {
  m2_dims d;
  d.H = c->H;
  d.Hm = c->m_heads;
  d.P = c->m_head_dim;
  d.G = c->m_groups;
  d.N = c->m_state;
  d.K = c->m_kernel;
  d.d_inner = d.Hm * d.P;
  d.conv_dim = d.d_inner + 2 * d.G * d.N;
  d.in_rows = d.d_inner + d.conv_dim + d.Hm;
  return d;
}

int64_t mamba2_work_floats(const model *m, int n) {
  m2_dims d = dims_of(&m->cfg);
  /* in_proj out, conv out, alpha, v, B, C, y */
  return (int64_t)n * (d.in_rows + d.conv_dim + d.Hm + 3 * d.d_inner + 2 * d.G * d.N);
}

/* After in_proj, for one state (work as in mamba2_forward): conv, dt, the engine, D skip, gate
 * and group norm (into tg [n][d_inner]). */
static int mamba2_state(model_state *s, const model_block_w *b, block_state *bs, int n,
                        const m2_dims *dp) {
  const m2_dims d = *dp;
  const mamba2_weights *w = &b->mamba;
  float *zx = s->work;                    /* [n][in_rows]: z | xBC | dt */
  float *cv = zx + n * d.in_rows;         /* [n][conv_dim] conv + SiLU: x | B | C */
  float *alpha = cv + n * d.conv_dim;     /* [n][Hm] */
  float *v = alpha + n * d.Hm;            /* [n][Hm][P] dt * x */
  float *Bm = v + n * d.d_inner;          /* [n][G][N] */
  float *Cm = Bm + n * d.G * d.N;         /* [n][G][N] */
  float *o = Cm + n * d.G * d.N;          /* [n][Hm][P] */
  float *tg = o + n * d.d_inner;          /* [n][d_inner] gated, normed output */

  for (int t = 0; t < n; t++)
    memcpy(bs->conv_win + (d.K - 1 + t) * d.conv_dim, zx + t * d.in_rows + d.d_inner,
           (size_t)d.conv_dim * sizeof(float));
  conv_silu(bs->conv_win, w->conv_w, w->conv_b, d.conv_dim, d.K, n, cv);

  const float lo = (float)s->m->cfg.dt_limit_lo, hi = (float)s->m->cfg.dt_limit_hi;
  for (int t = 0; t < n; t++) {
    const float *c = cv + t * d.conv_dim;                           /* [conv_dim]: x | B | C */
    const float *dt = zx + t * d.in_rows + d.d_inner + d.conv_dim; /* [Hm] */
    memcpy(Bm + t * d.G * d.N, c + d.d_inner, (size_t)(d.G * d.N) * sizeof(float));
    memcpy(Cm + t * d.G * d.N, c + d.d_inner + d.G * d.N, (size_t)(d.G * d.N) * sizeof(float));
    for (int64_t h = 0; h < d.Hm; h++) {
      float delta = rssm_dt_limit_at(softplus_f(dt[h] + w->dt_bias[h]), s->pos + t, lo, hi);
      float A = -expf(w->A_log[h]);
      alpha[t * d.Hm + h] = expf(delta * A);
      for (int64_t p = 0; p < d.P; p++)
        v[t * d.d_inner + h * d.P + p] = delta * c[h * d.P + p];
    }
  }

  ssm_inputs in = {alpha, NULL, v, Bm, Cm};
  int rc = s->cfg.strategy == SSM_SPEC ? ssm_verify(&bs->eng, &in, o) : ssm_step(&bs->eng, &in, o);
  if (rc != 0) return -1;

  const int64_t gs = d.d_inner / d.G; /* norm group size: the heads of one B/C group */
  for (int t = 0; t < n; t++) {
    const float *x = cv + t * d.conv_dim; /* [Hm][P] (first d_inner of x | B | C) */
    const float *z = zx + t * d.in_rows;  /* [d_inner] */
    float *ot = o + t * d.d_inner;        /* [Hm][P] */
    float *tt = tg + t * d.d_inner;       /* [d_inner] */
    for (int64_t h = 0; h < d.Hm; h++)
      for (int64_t p = 0; p < d.P; p++)
        ot[h * d.P + p] = ot[h * d.P + p] + w->D[h] * x[h * d.P + p];
    for (int64_t i = 0; i < d.d_inner; i++) tt[i] = ot[i] * silu_f(z[i]);
    for (int64_t gi = 0; gi < d.G; gi++)
      rmsnorm(tt + gi * gs, w->norm + gi * gs, 0, s->m->cfg.eps, tt + gi * gs, gs);
  }
  return 0;
}

int mamba2_forward(layer_batch *lb, int bi, int *failed) {
  const model *m = lb->s[0]->m;
  const model_block_w *b = &m->blocks[bi];
  const m2_dims d = dims_of(&m->cfg);
  const int n = lb->n, nv = lb->ns * lb->n;
  const float **xp = lb->xp;
  float **yp = lb->yp;
  /* offset of tg in a state's work (mamba2_state's layout) */
  const int64_t tg_off = n * (d.in_rows + d.conv_dim + d.Hm + 2 * d.d_inner + 2 * d.G * d.N);

  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) {
      xp[j * n + t] = lb->s[j]->u + t * d.H;
      yp[j * n + t] = lb->s[j]->work + t * d.in_rows;
    }
  matvec_many(b->mamba.w_in, d.in_rows, d.H, xp, yp, nv);

  for (int j = 0; j < lb->ns; j++)
    if (mamba2_state(lb->s[j], b, &lb->s[j]->bs[bi], n, &d) != 0) {
      *failed = j;
      return -1;
    }

  for (int j = 0; j < lb->ns; j++)
    for (int t = 0; t < n; t++) {
      xp[j * n + t] = lb->s[j]->work + tg_off + t * d.d_inner;
      yp[j * n + t] = lb->s[j]->y + t * d.H;
    }
  matvec_many(b->mamba.w_out, d.H, d.d_inner, xp, yp, nv);
  return 0;
}
