/* One block of the GPU engine (cuda_engine_internal.h): the lockstep steps of the reference and
 * the non-spec configurations over [t0, t1) (each step's reference logits stored in the ring),
 * then the spec configurations' rounds, as the CPU engine plays them (cpu_pair_item): per row
 * a = ssm_accept_draw(cfg, seed, offset + k, round), cut at the window's end; drafts
 * x[t .. t+T-1] (past the window's end the last token repeated); metrics of the a accepted
 * positions; commit a. A round whose accepted drafts would pass t1 waits for the next block,
 * whole. Every row of a spec batch plays its own rounds: a round of the batch is one round of
 * every row that can play one, the others sit it out (untouched), so a row's results do not
 * depend on the others, the block size or the resume point. */
#ifdef RSSM_HAVE_CUDA

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "src/decode/cuda_engine_internal.h"
#include "src/io/status.h"
#include "src/ssm/ssm_accept.h"

/* From step `from` to `to` the dead values of pair (k, c): kl = nll = inf, dp = NaN, top1 = 0. */
static void fill_dead(const cuda_engine *g, const rssm_engine_out *o, int64_t k, int64_t c,
                      int64_t from, int64_t to) {
  for (int64_t t = from; t < to; t++) {
    const size_t i = (size_t)(k * g->N + t);
    o->kl[c][i] = INFINITY;
    o->nll[c][i] = INFINITY;
    o->dp[c][i] = NAN;
    o->top1[c][i] = 0;
  }
}

/* Step t of pair (k, c) from its row's metrics, with the driver's non-finite rule; returns 1
 * when the pair went non-finite at t (its values from t on are the dead ones). */
static int record(cuda_engine *g, const rssm_engine_out *o, int64_t k, int64_t c, int64_t t,
                  const mc_row_metrics *mm) {
  const int64_t pi = k * g->C + c;
  const size_t i = (size_t)(k * g->N + t);
  if (!g->dead[pi] && !mm->finite) {
    if (o->first_nonfinite[c][k] < 0) o->first_nonfinite[c][k] = t;
    g->dead[pi] = 1;
    return 1;
  }
  if (g->dead[pi]) {
    fill_dead(g, o, k, c, t, t + 1);
    return 0;
  }
  o->kl[c][i] = mm->kl;
  o->nll[c][i] = mm->nll;
  o->dp[c][i] = mm->dp;
  o->top1[c][i] = (uint8_t)mm->top1;
  return 0;
}

/* The lockstep steps [t0, t1), up to MC_STEPS_MAX in one submission (mc_batch_steps: one
 * synchronisation per submission), one at a time when the reference's logits go into the ring
 * after each step (spec configurations). */
static int lockstep(cuda_engine *g, const int64_t *tok, int64_t t0, int64_t t1,
                    const rssm_engine_out *o, char *err, size_t errlen) {
  const int64_t K = g->K, C = g->C, N = g->N, R = (int64_t)mc_batch_rows(g->std);
  char e2[600];
  for (int64_t t = t0; t < t1;) {
    const int64_t left = t1 - t;
    const int n = g->ring ? 1 : (int)(left < MC_STEPS_MAX ? left : MC_STEPS_MAX);
    for (int i = 0; i < n; i++)
      for (int64_t k = 0; k < K; k++) {
        g->x[i * K + k] = tok[k * (N + 1) + t + i];
        g->y[i * K + k] = tok[k * (N + 1) + t + i + 1];
      }
    int rc = mc_batch_steps(g->std, n, g->x, g->y, g->met, e2, sizeof e2);
    if (rc == RSSM_OK && g->ring) rc = mc_ref_ring_store(g->ring, g->std, t, e2, sizeof e2);
    if (rc != RSSM_OK) {
      snprintf(err, errlen, "GPU steps %lld..%lld: %s", (long long)t, (long long)(t + n - 1), e2);
      return rc;
    }
    for (int i = 0; i < n; i++, t++) {
      const mc_row_metrics *met = g->met + i * R; /* [R] of step t */
      for (int64_t k = 0; k < K; k++) {
        const mc_row_metrics *ref = &met[k];
        if (!ref->finite) {
          snprintf(err, errlen,
                   "the reference's logits are not finite at sequence %lld, step %lld "
                   "(the fp32 reference must stay finite)",
                   (long long)(g->offset + k), (long long)t);
          return RSSM_ERR_INPUT;
        }
        o->ref_nll[k * N + t] = ref->nll;
        for (int64_t c = 0; c < C; c++) {
          if (g->batch_of[c] >= 0) continue;
          const int64_t pi = k * C + c;
          if (record(g, o, k, c, t, &met[g->row_cfg[c] * K + k])) fill_dead(g, o, k, c, t, t + 1);
          g->cursor[pi] = t + 1;
        }
      }
      g->tref = t + 1;
    }
  }
  return RSSM_OK;
}

/* Group s's rounds until none of its rows can play one within [., b1). */
static int spec_rounds(cuda_engine *g, ce_spec_group *sg, const int64_t *tok, int64_t b1,
                       const rssm_engine_out *o, char *err, size_t errlen) {
  const int64_t K = g->K, N = g->N;
  const int T = sg->T;
  char e2[600];
  for (;;) {
    int any = 0;
    for (int i = 0; i < sg->C; i++)
      for (int64_t k = 0; k < K; k++) {
        const int64_t c = sg->cfg[i], pi = k * g->C + c, r = i * K + k, t = g->cursor[pi];
        const int64_t *x = tok + k * (N + 1);
        sg->accept[r] = -1;
        if (g->dead[pi] || t >= N) continue;
        int a = ssm_accept_draw(&g->configs[c], g->seed, (uint32_t)(g->offset + k),
                                g->round[pi]);
        if (a > N - t) a = (int)(N - t); /* the window's end cuts the last round */
        if (t + a > b1) continue;         /* finished in the next block, whole */
        sg->accept[r] = a;
        any = 1;
        /* drafts past the window's last token repeat it: they are never accepted */
        for (int j = 0; j < T; j++) {
          const int64_t at = t + j <= N ? t + j : N;
          sg->drafts[r * T + j] = x[at];
          sg->targets[r * T + j] = x[at + 1 <= N ? at + 1 : N];
        }
      }
    if (!any) return RSSM_OK;
    int rc = mc_batch_spec_round(sg->b, g->ring, sg->drafts, sg->targets, sg->accept, sg->met, e2,
                                 sizeof e2);
    if (rc != RSSM_OK) {
      snprintf(err, errlen, "GPU spec round (T=%d): %s", T, e2);
      return rc;
    }
    for (int i = 0; i < sg->C; i++)
      for (int64_t k = 0; k < K; k++) {
        const int64_t c = sg->cfg[i], pi = k * g->C + c, r = i * K + k, t = g->cursor[pi];
        const int a = sg->accept[r];
        if (a < 1) continue;
        int died = 0;
        for (int j = 0; j < a && !died; j++)
          if (record(g, o, k, c, t + j, &sg->met[r * T + j])) {
            /* as kill_pair: dead from here to the block's end, the next blocks fill the rest */
            fill_dead(g, o, k, c, t + j, b1);
            g->cursor[pi] = b1;
            died = 1;
          }
        if (!died) {
          g->cursor[pi] = t + a;
          g->round[pi]++;
        }
      }
  }
}

int ce_block(rssm_engine *e, const int64_t *tok, int64_t t0, int64_t t1,
             const rssm_engine_out *o, int64_t *done, char *err, size_t errlen) {
  cuda_engine *g = e->impl;
  const int64_t K = g->K, C = g->C;
  int rc = lockstep(g, tok, t0, t1, o, err, errlen);
  /* spec pairs that went non-finite: their part of the block */
  for (int64_t k = 0; k < K; k++)
    for (int64_t c = 0; c < C; c++) {
      const int64_t pi = k * C + c;
      if (g->batch_of[c] >= 0 && g->dead[pi] && g->cursor[pi] < t1) {
        fill_dead(g, o, k, c, g->cursor[pi], t1);
        g->cursor[pi] = t1;
      }
    }
  for (int s = 0; rc == RSSM_OK && s < g->nspec; s++)
    rc = spec_rounds(g, &g->spec[s], tok, t1, o, err, errlen);
  if (rc != RSSM_OK) return rc;
  /* spec pairs may lag behind t1 by less than a round */
  int64_t m = t1;
  for (int64_t i = 0; i < K * C; i++)
    if (g->cursor[i] < m) m = g->cursor[i];
  *done = m;
  return RSSM_OK;
}

#endif
