/* Decode state and the forward pass over the block list (see model.h):
 *   h = embed[token]; for each block: h += f(norm(h)); logits = lm_head . norm_final(h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/errbuf.h"
#include "src/model/layers.h"
#include "src/model/linalg.h"
#include "src/model/model.h"

static int64_t conv_channels(const model_config *c, int kind) {
  if (kind == BK_GDN) return 2 * c->gdn_hk * c->gdn_dk + c->gdn_hv * c->gdn_dv;
  return c->m_heads * c->m_head_dim + 2 * c->m_groups * c->m_state;
}

static int64_t conv_kernel(const model_config *c, int kind) {
  return kind == BK_GDN ? c->gdn_kernel : c->m_kernel;
}

void model_state_free(model_state *s) {
  if (!s) return;
  if (s->bs)
    for (int i = 0; s->m && i < s->m->nblocks; i++) {
      block_state *bs = &s->bs[i];
      free(bs->conv_win);
      free(bs->kcache);
      free(bs->vcache);
      if (bs->eng_built) ssm_state_free(&bs->eng);
    }
  free(s->bs);
  free(s->h);
  free(s->u);
  free(s->y);
  free(s->work);
  memset(s, 0, sizeof *s);
}

int model_state_build(model_state *s, const model *m, const ssm_config *cfg, uint64_t seed,
                      uint32_t sequence, int64_t max_ctx, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  const model_config *c = &m->cfg;
  s->m = m;
  s->cfg = *cfg;
  s->tmax = cfg->strategy == SSM_SPEC ? cfg->T : 1;
  s->max_ctx = max_ctx < 1 ? 1 : max_ctx;
  s->bs = calloc((size_t)(m->nblocks > 0 ? m->nblocks : 1), sizeof *s->bs);
  const int64_t n = s->tmax, H = c->H;
  s->h = malloc((size_t)(n * H) * sizeof(float));
  s->u = malloc((size_t)(n * H) * sizeof(float));
  s->y = malloc((size_t)(n * H) * sizeof(float));
  int64_t wl = mlp_work_floats(m, (int)n);
  for (int i = 0; i < m->nblocks; i++) {
    int64_t need = 0;
    switch (m->blocks[i].kind) {
      case BK_GDN: need = gdn_work_floats(m, (int)n); break;
      case BK_MAMBA2: need = mamba2_work_floats(m, (int)n); break;
      case BK_QATTN:
      case BK_NATTN: need = attn_work_floats(m, (int)n, s->max_ctx); break;
      default: break;
    }
    if (need > wl) wl = need;
  }
  s->work_len = wl;
  s->work = malloc((size_t)wl * sizeof(float));
  if (!s->bs || !s->h || !s->u || !s->y || !s->work) goto oom;
  for (int i = 0; i < m->nblocks; i++) {
    const model_block_w *b = &m->blocks[i];
    block_state *bs = &s->bs[i];
    if (b->kind == BK_GDN || b->kind == BK_MAMBA2) {
      const int64_t C = conv_channels(c, b->kind), K = conv_kernel(c, b->kind);
      bs->conv_win = calloc((size_t)((K - 1 + n) * C), sizeof(float));
      if (!bs->conv_win) goto oom;
      ssm_dims d;
      if (b->kind == BK_GDN)
        d = (ssm_dims){SSM_GDN, (int)c->gdn_hv, (int)c->gdn_dv, (int)c->gdn_dk, (int)c->gdn_hk};
      else
        d = (ssm_dims){SSM_MAMBA2, (int)c->m_heads, (int)c->m_head_dim, (int)c->m_state,
                       (int)c->m_groups};
      ssm_ids ids = {seed, (uint32_t)b->layer, sequence};
      char e2[512];
      if (ssm_state_build(&bs->eng, cfg, &d, &ids, e2, sizeof e2) != 0) {
        rssm_fail(err, errlen, "layer %d (%s): SSM state: %s", b->layer,
                  block_kind_name((block_kind)b->kind), e2);
        model_state_free(s);
        return RSSM_ERR_INPUT;
      }
      bs->eng_built = 1;
    } else if (b->kind == BK_QATTN || b->kind == BK_NATTN) {
      const int64_t kvd = c->n_kv_heads * c->head_dim;
      bs->kcache = malloc((size_t)(s->max_ctx * kvd) * sizeof(float));
      bs->vcache = malloc((size_t)(s->max_ctx * kvd) * sizeof(float));
      if (!bs->kcache || !bs->vcache) goto oom;
    }
  }
  return RSSM_OK;
oom:
  rssm_fail(err, errlen, "out of memory for the decode state (context %" PRId64 ")", s->max_ctx);
  model_state_free(s);
  return RSSM_ERR_IO;
}

/* The checks of model_forward for one state, before anything changes. */
static int check_forward(const model_state *s, const int64_t *tokens, int n, char *err,
                         size_t errlen) {
  const int64_t V = s->m->cfg.V;
  if (n < 1 || n > s->tmax || (s->cfg.strategy == SSM_SPEC && n != s->cfg.T)) {
    rssm_fail(err, errlen, "forward of %d tokens (expected %s%d)", n,
              s->cfg.strategy == SSM_SPEC ? "exactly T = " : "1 to ", s->tmax);
    return RSSM_ERR_INPUT;
  }
  if (s->pos + n > s->max_ctx) {
    rssm_fail(err, errlen, "context full: position %" PRId64 " + %d tokens exceeds %" PRId64,
              s->pos, n, s->max_ctx);
    return RSSM_ERR_INPUT;
  }
  for (int t = 0; t < n; t++)
    if (tokens[t] < 0 || tokens[t] >= V) {
      rssm_fail(err, errlen,
                "token id %" PRId64 " out of range (expected 0 <= id < vocab %" PRId64 ")",
                tokens[t], V);
      return RSSM_ERR_INPUT;
    }
  return RSSM_OK;
}

/* Pointer lists of this many entries live on the stack; larger batches allocate theirs. */
#define FWD_STACK_PTRS 256

int model_forward_many(model_state *const *ss, int ns, const int64_t *tokens, int n,
                       float *const *logits, int *failed, char *err, size_t errlen) {
  int dummy;
  if (!failed) failed = &dummy;
  *failed = -1;
  if (ns < 1) return RSSM_OK;
  const model *m = ss[0]->m;
  const model_config *c = &m->cfg;
  const int64_t H = c->H, V = c->V;
  for (int j = 0; j < ns; j++) {
    if (ss[j]->m != m) {
      *failed = j;
      rssm_fail(err, errlen, "forward of states of different models together");
      return RSSM_ERR_INPUT;
    }
    int rc = check_forward(ss[j], tokens + (int64_t)j * n, n, err, errlen);
    if (rc != RSSM_OK) {
      *failed = j;
      return rc;
    }
  }
  const int64_t nv = (int64_t)ns * n;
  const float *xs_stack[FWD_STACK_PTRS];
  float *ys_stack[FWD_STACK_PTRS];
  const float **xp = xs_stack;
  float **yp = ys_stack;
  if (nv > FWD_STACK_PTRS) {
    xp = malloc((size_t)nv * sizeof *xp);
    yp = malloc((size_t)nv * sizeof *yp);
    if (!xp || !yp) {
      free(xp);
      free(yp);
      rssm_fail(err, errlen, "out of memory for a forward of %d states", ns);
      return RSSM_ERR_IO;
    }
  }
  layer_batch lb = {ss, ns, n, xp, yp};
  int rc = RSSM_OK;

  for (int j = 0; j < ns; j++)
    for (int t = 0; t < n; t++)
      memcpy(ss[j]->h + t * H, m->embed + tokens[(int64_t)j * n + t] * H,
             (size_t)H * sizeof(float));
  for (int i = 0; i < m->nblocks && rc == RSSM_OK; i++) {
    const model_block_w *b = &m->blocks[i];
    for (int j = 0; j < ns; j++)
      for (int t = 0; t < n; t++)
        rmsnorm(ss[j]->h + t * H, b->norm, c->norm_plus_one, c->eps, ss[j]->u + t * H, H);
    int bad = 0;
    switch (b->kind) {
      case BK_GDN: bad = gdn_forward(&lb, i, failed); break;
      case BK_MAMBA2: bad = mamba2_forward(&lb, i, failed); break;
      case BK_QATTN:
      case BK_NATTN: attn_forward(&lb, i); break;
      case BK_SWIGLU:
      case BK_RELU2: mlp_forward(&lb, i); break;
      case BK_QMOE:
      case BK_NMOE:
        for (int j = 0; j < ns; j++) moe_forward(m, b, n, ss[j]->u, ss[j]->y, ss[j]->work);
        break;
      default: bad = -1; *failed = 0; break;
    }
    if (bad != 0) {
      rssm_fail(err, errlen, "layer %d (%s): the SSM engine refused the step", b->layer,
                block_kind_name((block_kind)b->kind));
      rc = RSSM_ERR_IO;
      break;
    }
    for (int j = 0; j < ns; j++)
      for (int64_t q = 0; q < n * H; q++) ss[j]->h[q] = ss[j]->h[q] + ss[j]->y[q];
  }
  if (rc == RSSM_OK) {
    for (int j = 0; j < ns; j++)
      for (int t = 0; t < n; t++) {
        rmsnorm(ss[j]->h + t * H, m->final_norm, c->norm_plus_one, c->eps, ss[j]->u + t * H, H);
        xp[j * n + t] = ss[j]->u + t * H;
        yp[j * n + t] = logits[j] + t * V;
      }
    matvec_many(m->lm_head, V, H, xp, yp, (int)nv);
  }
  if (xp != xs_stack) {
    free(xp);
    free(yp);
  }
  return rc;
}

int model_forward(model_state *s, const int64_t *tokens, int n, float *logits, char *err,
                  size_t errlen) {
  return model_forward_many(&s, 1, tokens, n, &logits, NULL, err, errlen);
}

int model_commit(model_state *s, int a) {
  const model *m = s->m;
  const model_config *c = &m->cfg;
  if (a < 1 || a > s->tmax) return -1;
  for (int i = 0; i < m->nblocks; i++) {
    const model_block_w *b = &m->blocks[i];
    block_state *bs = &s->bs[i];
    if (b->kind != BK_GDN && b->kind != BK_MAMBA2) continue;
    /* the conv window keeps the last K-1 committed inputs: rows a .. a+K-2 */
    const int64_t C = conv_channels(c, b->kind), K = conv_kernel(c, b->kind);
    memmove(bs->conv_win, bs->conv_win + a * C, (size_t)((K - 1) * C) * sizeof(float));
    if (s->cfg.strategy == SSM_SPEC && ssm_commit(&bs->eng, a) != 0) return -1;
  }
  s->pos += a;
  return 0;
}
