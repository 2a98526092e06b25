/* The work items of the CPU lockstep engine's phases (cpu_engine_internal.h): each steps its own
 * decoders over the block and writes only its own rows of the metric buffers, so results do not
 * depend on the thread count or on how the phases cut the work. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/decode/cpu_engine_internal.h"
#include "src/io/status.h"
#include "src/model/metrics.h"
#include "src/ssm/ssm_accept.h"

/* n more decoder steps for the progress reports. */
static void progress(const cpu_engine *g, int64_t n) {
  if (g->progress) g->progress(g->progress_ctx, n);
}

static pthread_mutex_t phase_error_mu = PTHREAD_MUTEX_INITIALIZER;

static void phase_error(cpu_block_ctx *p, const char *msg) {
  pthread_mutex_lock(&phase_error_mu);
  if (!p->err_set) {
    p->err_set = 1;
    snprintf(p->err, sizeof p->err, "%s", msg);
  }
  pthread_mutex_unlock(&phase_error_mu);
}

/* Reference of sequence k over [b0, b1): its log-probabilities go to rows (t - base). */
int cpu_ref_item(void *ctx, int64_t k, int thread) {
  cpu_block_ctx *p = ctx;
  cpu_engine *r = p->g;
  size_t V = (size_t)r->V;
  float *lp = r->reflp + (size_t)k * (size_t)r->rows * V;
  int64_t *am = r->refam + (size_t)k * (size_t)r->rows;
  float *logits = r->scratch_logits + (size_t)thread * (size_t)r->Tmax * V;
  const int64_t *x = p->tok + k * (r->N + 1);
  char e[400];
  for (int64_t t = p->b0; t < p->b1; t++) {
    int rc = r->ref[k]->ops->step(r->ref[k], x[t], logits, e, sizeof e);
    if (rc != RSSM_OK) {
      char m[512];
      snprintf(m, sizeof m, "reference, sequence %lld, step %lld: %s",
               (long long)(r->offset + k), (long long)t, e);
      phase_error(p, m);
      return rc;
    }
    int64_t row = t - r->base;
    if (metrics_log_softmax(logits, r->V, lp + (size_t)row * V, &am[row]) != 0) {
      char m[512];
      snprintf(m, sizeof m, "the reference's logits are not finite at sequence %lld, step %lld "
               "(the fp32 reference must stay finite)", (long long)(r->offset + k), (long long)t);
      phase_error(p, m);
      return RSSM_ERR_INPUT;
    }
    p->out->ref_nll[k * r->N + t] = -lp[(size_t)row * V + (size_t)x[t + 1]];
    progress(r, 1);
  }
  return 0;
}

/* Record step t of pair (k, c) from its logits; returns 0, or 1 when they are not finite. */
static int record(const cpu_block_ctx *p, int64_t k, int64_t c, int64_t t, const float *logits,
                  float *lp) {
  const cpu_engine *r = p->g;
  const rssm_engine_out *o = p->out;
  int64_t am;
  size_t i = (size_t)(k * r->N + t);
  if (metrics_log_softmax(logits, r->V, lp, &am) != 0) {
    if (o->first_nonfinite[c][k] < 0) o->first_nonfinite[c][k] = t;
    return 1;
  }
  int64_t row = t - r->base;
  const float *ref = r->reflp + ((size_t)k * (size_t)r->rows + (size_t)row) * (size_t)r->V;
  step_metrics m;
  metrics_step(ref, r->refam[(size_t)k * (size_t)r->rows + (size_t)row], lp, am, r->V,
               p->tok[k * (r->N + 1) + t + 1], &m);
  o->kl[c][i] = m.kl;
  o->nll[c][i] = m.nll;
  o->dp[c][i] = m.dp;
  o->top1[c][i] = m.top1;
  return 0;
}

/* A pair that went non-finite: kl = inf (and nll inf, dp NaN, top1 0) from there to `to`. */
static void fill_dead(const cpu_block_ctx *p, int64_t k, int64_t c, int64_t from, int64_t to) {
  const cpu_engine *r = p->g;
  const rssm_engine_out *o = p->out;
  for (int64_t t = from; t < to; t++) {
    size_t i = (size_t)(k * r->N + t);
    o->kl[c][i] = INFINITY;
    o->nll[c][i] = INFINITY;
    o->dp[c][i] = NAN;
    o->top1[c][i] = 0;
  }
}

static void kill_pair(const cpu_block_ctx *p, int64_t pi, int64_t k, int64_t c, int64_t from,
                      int64_t to) {
  cpu_engine *r = p->g;
  r->dead[pi] = 1;
  rssm_decoder_free(r->dec[pi]);
  r->dec[pi] = NULL;
  fill_dead(p, k, c, from, to);
  r->cursor[pi] = to;
}

int cpu_pair_item(void *ctx, int64_t pi, int thread) {
  cpu_block_ctx *p = ctx;
  cpu_engine *r = p->g;
  int64_t k = pi / r->C, c = pi % r->C;
  size_t V = (size_t)r->V;
  float *logits = r->scratch_logits + (size_t)thread * (size_t)r->Tmax * V;
  float *lp = r->scratch_lp + (size_t)thread * V;
  const int64_t *x = p->tok + k * (r->N + 1);
  const ssm_config *cfg = &r->configs[c];
  char e[400];
  if (p->spec_only && cfg->strategy != SSM_SPEC) return 0;
  if (r->dead[pi]) {
    fill_dead(p, k, c, r->cursor[pi], p->b1);
    r->cursor[pi] = p->b1;
    return 0;
  }
  rssm_decoder *d = r->dec[pi];
  if (cfg->strategy != SSM_SPEC) {
    for (int64_t t = r->cursor[pi]; t < p->b1; t++) {
      int rc = d->ops->step(d, x[t], logits, e, sizeof e);
      if (rc != RSSM_OK) goto fail;
      if (record(p, k, c, t, logits, lp)) {
        kill_pair(p, pi, k, c, t, p->b1);
        return 0;
      }
      r->cursor[pi] = t + 1;
      progress(r, 1);
    }
    return 0;
  }
  int T = cfg->T;
  int64_t drafts[64];
  while (r->cursor[pi] < r->N) {
    int64_t t = r->cursor[pi];
    int a = ssm_accept_draw(cfg, r->seed, (uint32_t)(r->offset + k), r->round[pi]);
    if (a > r->N - t) a = (int)(r->N - t); /* the window's end cuts the last round */
    if (t + a > p->b1) break;               /* finished in the next block, whole */
    /* drafts past the window's last token repeat it: they are never accepted */
    for (int j = 0; j < T; j++) drafts[j] = x[t + j <= r->N ? t + j : r->N];
    int rc = d->ops->verify(d, drafts, T, logits, e, sizeof e);
    if (rc != RSSM_OK) goto fail;
    for (int j = 0; j < a; j++)
      if (record(p, k, c, t + j, logits + (size_t)j * V, lp)) {
        kill_pair(p, pi, k, c, t + j, p->b1);
        return 0;
      }
    rc = d->ops->commit(d, a, e, sizeof e);
    if (rc != RSSM_OK) goto fail;
    r->cursor[pi] = t + a;
    r->round[pi]++;
    progress(r, a);
  }
  return 0;
fail : {
  char m[600];
  snprintf(m, sizeof m, "configuration '%s', sequence %lld, step %lld: %s", cfg->name,
           (long long)(r->offset + k), (long long)r->cursor[pi], e);
  phase_error(p, m);
  return RSSM_ERR_IO;
}
}

/* Sequences [g G, (g+1) G) over [b0, b1), when the model steps decoders together (step_many):
 * at every step, the references and every live non-spec pair of these sequences advance in one
 * call (bit-identical to stepping them one by one, so the output does not depend on G or on
 * the thread count), then the references' rows are stored and the pairs compared with them, as
 * ref_item and pair_item do. With parts > 1 (fewer sequences than threads), item g is instead
 * one part of the configurations of sequence g / parts, after ref_item. Spec pairs are left to
 * pair_item (spec_only), after this phase. */
int cpu_group_item(void *ctx, int64_t g, int thread) {
  cpu_block_ctx *p = ctx;
  cpu_engine *r = p->g;
  size_t V = (size_t)r->V;
  int64_t k0 = g * r->group, k1 = k0 + r->group < r->K ? k0 + r->group : r->K;
  int64_t c0 = 0, c1 = r->C;
  int with_ref = 1;
  if (r->parts > 1) {
    int64_t part = g % r->parts;
    k0 = g / r->parts;
    k1 = k0 + 1;
    c0 = r->C * part / r->parts;
    c1 = r->C * (part + 1) / r->parts;
    with_ref = 0;
  }
  const int cap = (int)((k1 - k0) * (r->C + 1)); /* decoders per call, at most */
  float *scratch = r->scratch_logits + (size_t)thread * (size_t)r->group * (size_t)(r->C + 1) * V;
  float *lp = r->scratch_lp + (size_t)thread * V;
  rssm_decoder **dv = malloc((size_t)cap * sizeof *dv);
  int64_t *tokv = malloc((size_t)cap * sizeof *tokv);
  float **lv = malloc((size_t)cap * sizeof *lv);
  int64_t *who = malloc((size_t)cap * sizeof *who); /* -1 - k: reference of k; else the pair */
  if (!dv || !tokv || !lv || !who) {
    free(dv);
    free(tokv);
    free(lv);
    free(who);
    phase_error(p, "out of memory for a batched step");
    return RSSM_ERR_IO;
  }
  int rc = 0;
  /* pairs already dead: their whole block */
  for (int64_t k = k0; k < k1; k++)
    for (int64_t c = c0; c < c1; c++) {
      int64_t pi = k * r->C + c;
      if (r->dead[pi] && r->configs[c].strategy != SSM_SPEC) {
        fill_dead(p, k, c, r->cursor[pi], p->b1);
        r->cursor[pi] = p->b1;
      }
    }
  for (int64_t t = p->b0; t < p->b1 && rc == 0; t++) {
    int n = 0;
    for (int64_t k = k0; k < k1; k++) {
      const int64_t *x = p->tok + k * (r->N + 1);
      if (with_ref) {
        dv[n] = r->ref[k];
        tokv[n] = x[t];
        who[n] = -1 - k;
        n++;
      }
      for (int64_t c = c0; c < c1; c++) {
        int64_t pi = k * r->C + c;
        if (r->configs[c].strategy == SSM_SPEC || r->dead[pi] || r->cursor[pi] != t)
          continue;
        dv[n] = r->dec[pi];
        tokv[n] = x[t];
        who[n] = pi;
        n++;
      }
    }
    if (n == 0) break; /* every pair of this item went non-finite */
    for (int i = 0; i < n; i++) lv[i] = scratch + (size_t)i * V;
    char e[400];
    int failed = -1;
    int src = r->m->ops->step_many(r->m, dv, n, tokv, lv, &failed, e, sizeof e);
    if (src != RSSM_OK) {
      char m[600];
      int64_t w = failed >= 0 && failed < n ? who[failed] : -1;
      if (w < 0)
        snprintf(m, sizeof m, "reference, sequence %lld, step %lld: %s",
                 (long long)(r->offset + (-1 - w)), (long long)t, e);
      else
        snprintf(m, sizeof m, "configuration '%s', sequence %lld, step %lld: %s",
                 r->configs[w % r->C].name, (long long)(r->offset + w / r->C),
                 (long long)t, e);
      phase_error(p, m);
      rc = src;
      break;
    }
    progress(r, n);
    int64_t row = t - r->base;
    for (int i = 0; i < n && rc == 0; i++) {
      if (who[i] >= 0) continue;
      int64_t k = -1 - who[i];
      float *rl = r->reflp + ((size_t)k * (size_t)r->rows + (size_t)row) * V;
      if (metrics_log_softmax(lv[i], r->V, rl, &r->refam[(size_t)k * (size_t)r->rows +
                                                        (size_t)row]) != 0) {
        char m[512];
        snprintf(m, sizeof m, "the reference's logits are not finite at sequence %lld, step "
                 "%lld (the fp32 reference must stay finite)", (long long)(r->offset + k),
                 (long long)t);
        phase_error(p, m);
        rc = RSSM_ERR_INPUT;
        break;
      }
      p->out->ref_nll[k * r->N + t] = -rl[(size_t)p->tok[k * (r->N + 1) + t + 1]];
    }
    for (int i = 0; i < n && rc == 0; i++) {
      if (who[i] < 0) continue;
      int64_t pi = who[i], k = pi / r->C, c = pi % r->C;
      if (record(p, k, c, t, lv[i], lp)) kill_pair(p, pi, k, c, t, p->b1);
      else r->cursor[pi] = t + 1;
    }
  }
  free(dv);
  free(tokv);
  free(lv);
  free(who);
  return rc;
}