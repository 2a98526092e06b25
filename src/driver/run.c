/* The lockstep run loop (run.h). */
#include "src/driver/run.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "src/io/version.h"
#include "src/model/metrics.h"
#include "src/driver/parallel.h"
#include "src/driver/run_h5.h"
#include "src/driver/run_internal.h"
#include "src/driver/run_identity.h"
#include "src/driver/run_outputs.h"
#include "src/driver/run_progress.h"
#include "src/driver/run_signal.h"
#include "src/io/out_lock.h"
#include "src/io/status.h"
#include "src/ssm/ssm_accept.h"
#include "src/io/atomic_file.h"
#include "src/tokens/token_source.h"

#ifndef RSSM_GIT_COMMIT
#define RSSM_GIT_COMMIT "unknown"
#endif

/* The worker context of one phase. */
typedef struct {
  runner *r;
  int threads;
  float *scratch_logits;  /* [threads][Tmax][V] */
  float *scratch_lp;      /* [threads][V] */
  int64_t b1;             /* end of this block */
  int group;              /* sequences per group_item (batched stepping); 0: not used */
  int parts;              /* > 1: group_item g is configurations part g % parts of sequence
                           * g / parts, without the reference (ref_item ran before) */
  int spec_only;          /* pair_item: only spec pairs (the others went through group_item) */
  run_progress *prog;     /* decoder steps counted for the progress reports; may be NULL */
  char err[1024];         /* first error of the phase (under the pool's rule: first nonzero) */
  int err_set;
} phase_ctx;

static pthread_mutex_t phase_error_mu = PTHREAD_MUTEX_INITIALIZER;

static void phase_error(phase_ctx *p, const char *msg) {
  pthread_mutex_lock(&phase_error_mu);
  if (!p->err_set) {
    p->err_set = 1;
    snprintf(p->err, sizeof p->err, "%s", msg);
  }
  pthread_mutex_unlock(&phase_error_mu);
}

/* Reference of sequence k over [b0, b1): its log-probabilities go to rows (t - base). */
static int ref_item(void *ctx, int64_t k, int thread) {
  phase_ctx *p = ctx;
  runner *r = p->r;
  size_t V = (size_t)r->V;
  float *lp = r->reflp + (size_t)k * (size_t)r->rows * V;
  int64_t *am = r->refam + (size_t)k * (size_t)r->rows;
  float *logits = p->scratch_logits + (size_t)thread * (size_t)r->Tmax * V;
  const int64_t *x = r->tok + k * (r->N + 1);
  char e[400];
  for (int64_t t = r->b0; t < p->b1; t++) {
    int rc = r->ref[k]->ops->step(r->ref[k], x[t], logits, e, sizeof e);
    if (rc != RSSM_OK) {
      char m[512];
      snprintf(m, sizeof m, "reference, sequence %lld, step %lld: %s",
               (long long)(r->d.offset + k), (long long)t, e);
      phase_error(p, m);
      return rc;
    }
    int64_t row = t - r->base;
    if (metrics_log_softmax(logits, r->V, lp + (size_t)row * V, &am[row]) != 0) {
      char m[512];
      snprintf(m, sizeof m, "the reference's logits are not finite at sequence %lld, step %lld "
               "(the fp32 reference must stay finite)", (long long)(r->d.offset + k), (long long)t);
      phase_error(p, m);
      return RSSM_ERR_INPUT;
    }
    r->d.ref_nll[k * r->N + t] = -lp[(size_t)row * V + (size_t)x[t + 1]];
    run_progress_add(p->prog, 1);
  }
  return 0;
}

/* Record step t of pair (k, c) from its logits; returns 0, or 1 when they are not finite. */
static int record(runner *r, int64_t k, int64_t c, int64_t t, const float *logits, float *lp) {
  run_cfg_data *x = &r->d.cfg[c];
  int64_t am;
  size_t i = (size_t)(k * r->N + t);
  if (metrics_log_softmax(logits, r->V, lp, &am) != 0) {
    if (x->first_nonfinite[k] < 0) x->first_nonfinite[k] = t;
    return 1;
  }
  int64_t row = t - r->base;
  const float *ref = r->reflp + ((size_t)k * (size_t)r->rows + (size_t)row) * (size_t)r->V;
  step_metrics m;
  metrics_step(ref, r->refam[(size_t)k * (size_t)r->rows + (size_t)row], lp, am, r->V,
               r->tok[k * (r->N + 1) + t + 1], &m);
  x->kl[i] = m.kl;
  x->nll[i] = m.nll;
  x->dp[i] = m.dp;
  x->top1[i] = m.top1;
  return 0;
}

/* A pair that went non-finite: kl = inf (and nll inf, dp NaN, top1 0) from there to `to`. */
static void fill_dead(runner *r, int64_t k, int64_t c, int64_t from, int64_t to) {
  run_cfg_data *x = &r->d.cfg[c];
  for (int64_t t = from; t < to; t++) {
    size_t i = (size_t)(k * r->N + t);
    x->kl[i] = INFINITY;
    x->nll[i] = INFINITY;
    x->dp[i] = NAN;
    x->top1[i] = 0;
  }
}

static void kill_pair(runner *r, int64_t pi, int64_t k, int64_t c, int64_t from, int64_t to) {
  r->dead[pi] = 1;
  rssm_decoder_free(r->dec[pi]);
  r->dec[pi] = NULL;
  fill_dead(r, k, c, from, to);
  r->cursor[pi] = to;
}

static int pair_item(void *ctx, int64_t pi, int thread) {
  phase_ctx *p = ctx;
  runner *r = p->r;
  int64_t k = pi / r->C, c = pi % r->C;
  size_t V = (size_t)r->V;
  float *logits = p->scratch_logits + (size_t)thread * (size_t)r->Tmax * V;
  float *lp = p->scratch_lp + (size_t)thread * V;
  const int64_t *x = r->tok + k * (r->N + 1);
  const ssm_config *cfg = &r->e->configs[c].cfg;
  char e[400];
  if (p->spec_only && cfg->strategy != SSM_SPEC) return 0;
  if (r->dead[pi]) {
    fill_dead(r, k, c, r->cursor[pi], p->b1);
    r->cursor[pi] = p->b1;
    return 0;
  }
  rssm_decoder *d = r->dec[pi];
  if (cfg->strategy != SSM_SPEC) {
    for (int64_t t = r->cursor[pi]; t < p->b1; t++) {
      int rc = d->ops->step(d, x[t], logits, e, sizeof e);
      if (rc != RSSM_OK) goto fail;
      if (record(r, k, c, t, logits, lp)) {
        kill_pair(r, pi, k, c, t, p->b1);
        return 0;
      }
      r->cursor[pi] = t + 1;
      run_progress_add(p->prog, 1);
    }
    return 0;
  }
  int T = cfg->T;
  int64_t drafts[64];
  while (r->cursor[pi] < r->N) {
    int64_t t = r->cursor[pi];
    int a = ssm_accept_draw(cfg, r->e->seed, (uint32_t)(r->d.offset + k), r->round[pi]);
    if (a > r->N - t) a = (int)(r->N - t); /* the window's end cuts the last round */
    if (t + a > p->b1) break;               /* finished in the next block, whole */
    /* drafts past the window's last token repeat it: they are never accepted */
    for (int j = 0; j < T; j++) drafts[j] = x[t + j <= r->N ? t + j : r->N];
    int rc = d->ops->verify(d, drafts, T, logits, e, sizeof e);
    if (rc != RSSM_OK) goto fail;
    for (int j = 0; j < a; j++)
      if (record(r, k, c, t + j, logits + (size_t)j * V, lp)) {
        kill_pair(r, pi, k, c, t + j, p->b1);
        return 0;
      }
    rc = d->ops->commit(d, a, e, sizeof e);
    if (rc != RSSM_OK) goto fail;
    r->cursor[pi] = t + a;
    r->round[pi]++;
    run_progress_add(p->prog, a);
  }
  return 0;
fail : {
  char m[600];
  snprintf(m, sizeof m, "configuration '%s', sequence %lld, step %lld: %s", cfg->name,
           (long long)(r->d.offset + k), (long long)r->cursor[pi], e);
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
static int group_item(void *ctx, int64_t g, int thread) {
  phase_ctx *p = ctx;
  runner *r = p->r;
  size_t V = (size_t)r->V;
  int64_t k0 = g * p->group, k1 = k0 + p->group < r->K ? k0 + p->group : r->K;
  int64_t c0 = 0, c1 = r->C;
  int with_ref = 1;
  if (p->parts > 1) {
    int64_t part = g % p->parts;
    k0 = g / p->parts;
    k1 = k0 + 1;
    c0 = r->C * part / p->parts;
    c1 = r->C * (part + 1) / p->parts;
    with_ref = 0;
  }
  const int cap = (int)((k1 - k0) * (r->C + 1)); /* decoders per call, at most */
  float *scratch = p->scratch_logits + (size_t)thread * (size_t)p->group * (size_t)(r->C + 1) * V;
  float *lp = p->scratch_lp + (size_t)thread * V;
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
      if (r->dead[pi] && r->e->configs[c].cfg.strategy != SSM_SPEC) {
        fill_dead(r, k, c, r->cursor[pi], p->b1);
        r->cursor[pi] = p->b1;
      }
    }
  for (int64_t t = r->b0; t < p->b1 && rc == 0; t++) {
    int n = 0;
    for (int64_t k = k0; k < k1; k++) {
      const int64_t *x = r->tok + k * (r->N + 1);
      if (with_ref) {
        dv[n] = r->ref[k];
        tokv[n] = x[t];
        who[n] = -1 - k;
        n++;
      }
      for (int64_t c = c0; c < c1; c++) {
        int64_t pi = k * r->C + c;
        if (r->e->configs[c].cfg.strategy == SSM_SPEC || r->dead[pi] || r->cursor[pi] != t)
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
                 (long long)(r->d.offset + (-1 - w)), (long long)t, e);
      else
        snprintf(m, sizeof m, "configuration '%s', sequence %lld, step %lld: %s",
                 r->e->configs[w % r->C].cfg.name, (long long)(r->d.offset + w / r->C),
                 (long long)t, e);
      phase_error(p, m);
      rc = src;
      break;
    }
    run_progress_add(p->prog, n);
    int64_t row = t - r->base;
    for (int i = 0; i < n && rc == 0; i++) {
      if (who[i] >= 0) continue;
      int64_t k = -1 - who[i];
      float *rl = r->reflp + ((size_t)k * (size_t)r->rows + (size_t)row) * V;
      if (metrics_log_softmax(lv[i], r->V, rl, &r->refam[(size_t)k * (size_t)r->rows +
                                                        (size_t)row]) != 0) {
        char m[512];
        snprintf(m, sizeof m, "the reference's logits are not finite at sequence %lld, step "
                 "%lld (the fp32 reference must stay finite)", (long long)(r->d.offset + k),
                 (long long)t);
        phase_error(p, m);
        rc = RSSM_ERR_INPUT;
        break;
      }
      r->d.ref_nll[k * r->N + t] = -rl[(size_t)r->tok[k * (r->N + 1) + t + 1]];
    }
    for (int i = 0; i < n && rc == 0; i++) {
      if (who[i] < 0) continue;
      int64_t pi = who[i], k = pi / r->C, c = pi % r->C;
      if (record(r, k, c, t, lv[i], lp)) kill_pair(r, pi, k, c, t, p->b1);
      else r->cursor[pi] = t + 1;
    }
  }
  free(dv);
  free(tokv);
  free(lv);
  free(who);
  return rc;
}

/* ------------------------------------------------------------------ setup ----------------- */

static void runner_free(runner *r) {
  if (r->ref)
    for (int64_t k = 0; k < r->K; k++) rssm_decoder_free(r->ref[k]);
  if (r->dec)
    for (int64_t i = 0; i < r->K * r->C; i++) rssm_decoder_free(r->dec[i]);
  free(r->ref);
  free(r->dec);
  free(r->tok);
  free(r->reflp);
  free(r->refam);
  free(r->cursor);
  free(r->round);
  free(r->dead);
  run_data_free(&r->d);
  rssm_engine_close(r->engine); /* before the model it was opened from */
  free(r->engine_cfgs);
  rssm_model_close(r->m);
  memset(r, 0, sizeof *r);
}

/* --device cuda: the GPU engine instead of decoders (it holds every row's state). */
static int open_engine(runner *r, char *err, size_t errlen) {
  char m[1024];
  r->engine_cfgs = calloc((size_t)r->C + 1, sizeof *r->engine_cfgs);
  if (!r->engine_cfgs) {
    snprintf(err, errlen, "out of memory");
    return RSSM_ERR_IO;
  }
  for (int64_t c = 0; c < r->C; c++) r->engine_cfgs[c] = r->e->configs[c].cfg;
  const rssm_engine_params ep = {r->m, &r->e->reference, r->engine_cfgs, r->K, r->C, r->N,
                                 r->e->seed, r->d.offset};
  int rc = cuda_engine_open(&ep, &r->engine, m, sizeof m);
  if (rc != RSSM_OK) {
    snprintf(err, errlen, "--device cuda: %s", m);
    return rc;
  }
  /* the reference log-probabilities stay on the device: zero the host rows that run_ckpt.c
   * still writes, so that checkpoints are deterministic */
  memset(r->reflp, 0, (size_t)r->K * (size_t)r->rows * (size_t)r->V * sizeof(float));
  return RSSM_OK;
}

/* A block of the engine: every row from r->b0 to b1 (no spec: every pair is at b0). */
static int engine_block(runner *r, int64_t b1, char *err, size_t errlen) {
  float *kl[EXP_MAX_CONFIGS], *nll[EXP_MAX_CONFIGS], *dp[EXP_MAX_CONFIGS];
  uint8_t *top1[EXP_MAX_CONFIGS];
  int64_t *fnf[EXP_MAX_CONFIGS];
  for (int64_t c = 0; c < r->C; c++) {
    kl[c] = r->d.cfg[c].kl;
    nll[c] = r->d.cfg[c].nll;
    dp[c] = r->d.cfg[c].dp;
    top1[c] = r->d.cfg[c].top1;
    fnf[c] = r->d.cfg[c].first_nonfinite;
  }
  const rssm_engine_out out = {r->d.ref_nll, kl, nll, dp, top1, fnf, r->dead};
  int rc = r->engine->ops->block(r->engine, r->tok, r->b0, b1, &out, err, errlen);
  if (rc == RSSM_OK)
    for (int64_t i = 0; i < r->K * r->C; i++) r->cursor[i] = b1;
  return rc;
}

/* Keys that apply only to some models: gdn_u=cached needs GDN layers. */
static int check_model_keys(const experiment *e, const rssm_model *m, char *err, size_t errlen) {
  char where[EXP_PATH_MAX + 32];
  for (int c = 0; c < e->nconfig; c++)
    if (e->configs[c].cfg.gdn_u == SSM_GDN_U_CACHED && m->gdn_layers == 0) {
      experiment_where(e, e->configs[c].line, "--config", where, sizeof where);
      snprintf(err, errlen, "%s: configuration '%s': gdn_u=cached applies to GDN layers, and "
               "model %s has none (expected no gdn_u= key)", where, e->configs[c].cfg.name,
               e->model);
      return RSSM_ERR_INPUT;
    }
  return RSSM_OK;
}

static int setup(runner *r, const experiment *e, const run_options *o, char *err, size_t errlen) {
  char where[EXP_PATH_MAX + 32], m[1024];
  memset(r, 0, sizeof *r);
  r->e = e;
  /* model first: its vocabulary checks the tokens */
  int rc = rssm_model_open(e->model, &r->m, m, sizeof m);
  if (rc != RSSM_OK) {
    experiment_where(e, e->model_line, "--model", where, sizeof where);
    snprintf(err, errlen, "%s: %s", where, m);
    return rc;
  }
  token_source src;
  rc = token_source_load(e->tokens, &src, m, sizeof m);
  if (rc != RSSM_OK) {
    experiment_where(e, e->tokens_line, "--tokens", where, sizeof where);
    snprintf(err, errlen, "%s: %s", where, m);
    return rc;
  }
  experiment_where(e, e->tokens_line, "--tokens", where, sizeof where);
  if (src.max_id >= r->m->vocab) {
    int64_t pos = 0;
    while (src.ids[pos] < r->m->vocab) pos++;
    snprintf(err, errlen, "%s: tokens '%s': token %lld has id %lld, outside the model's "
             "vocabulary [0, %lld)", where, e->tokens, (long long)pos, (long long)src.ids[pos],
             (long long)r->m->vocab);
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  if (src.n < e->steps + 1) {
    snprintf(err, errlen, "%s: tokens '%s' holds %lld tokens, fewer than steps + 1 = %lld", where,
             e->tokens, (long long)src.n, (long long)(e->steps + 1));
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  r->V = r->m->vocab;
  r->N = e->steps;
  r->C = e->nconfig;
  int64_t K_all = e->sequences;
  int64_t lo = K_all * o->shard_i / o->shard_n, hi = K_all * (o->shard_i + 1) / o->shard_n;
  r->K = hi - lo;
  if (r->K < 1) {
    snprintf(err, errlen, "--shard %d/%d: no sequences in this shard (%lld sequences in all)",
             o->shard_i, o->shard_n, (long long)K_all);
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  if (check_model_keys(e, r->m, err, errlen) != RSSM_OK) {
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  r->Tmax = 1;
  for (int c = 0; c < e->nconfig; c++)
    if (e->configs[c].cfg.strategy == SSM_SPEC && e->configs[c].cfg.T > r->Tmax)
      r->Tmax = e->configs[c].cfg.T;
  if (r->Tmax > 64) {
    snprintf(err, errlen, "a spec configuration has T = %d (at most 64)", r->Tmax);
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  /* block: at most ~256 MiB of reference rows, never fewer than Tmax steps */
  int64_t cap = (INT64_C(1) << 28) / (4 * r->V * r->K);
  r->B = e->block < cap ? e->block : cap;
  if (r->B < r->Tmax) r->B = r->Tmax;
  if (r->B > r->N) r->B = r->N;
  r->rows = r->B + r->Tmax - 1;

  if (run_data_alloc(&r->d, r->K, r->N, (int)r->C) != 0) {
    snprintf(err, errlen, "out of memory for %lld x %lld steps of %lld configurations",
             (long long)r->K, (long long)r->N, (long long)r->C);
    token_source_free(&src);
    return RSSM_ERR_IO;
  }
  run_data *d = &r->d;
  snprintf(d->version, sizeof d->version, "%s", rssm_version());
  snprintf(d->commit, sizeof d->commit, "%s", RSSM_GIT_COMMIT);
  snprintf(d->model, sizeof d->model, "%s", e->model);
  snprintf(d->model_checksum, sizeof d->model_checksum, "%s", r->m->checksum);
  d->vocab = r->m->vocab;
  d->vocab_rows = r->m->vocab_rows;
  snprintf(d->tokens_path, sizeof d->tokens_path, "%s", e->tokens);
  snprintf(d->tokens_checksum, sizeof d->tokens_checksum, "crc32:%08x", src.crc);
  snprintf(d->tokenizer, sizeof d->tokenizer, "%s", src.tokenizer);
  ssm_config_to_string(&e->reference, d->reference, sizeof d->reference);
  d->experiment = experiment_to_text(e);
  d->seed = e->seed;
  d->sequences = K_all;
  d->offset = lo;
  snprintf(d->shard, sizeof d->shard, "%d/%d", o->shard_i, o->shard_n);
  for (int c = 0; c < e->nconfig; c++) {
    snprintf(d->cfg[c].name, sizeof d->cfg[c].name, "%s", e->configs[c].cfg.name);
    ssm_config_to_string(&e->configs[c].cfg, d->cfg[c].spec, sizeof d->cfg[c].spec);
  }
  size_t KC = (size_t)(r->K * r->C);
  r->tok = malloc((size_t)(r->K * (r->N + 1)) * sizeof(int64_t));
  r->ref = calloc((size_t)r->K, sizeof *r->ref);
  r->dec = calloc(KC + 1, sizeof *r->dec);
  r->reflp = malloc((size_t)r->K * (size_t)r->rows * (size_t)r->V * sizeof(float));
  r->refam = calloc((size_t)(r->K * r->rows), sizeof(int64_t));
  r->cursor = calloc(KC + 1, sizeof(int64_t));
  r->round = calloc(KC + 1, sizeof(uint32_t));
  r->dead = calloc(KC + 1, 1);
  d->identity = run_identity_text(d, o->cuda ? "cuda" : "cpu");
  if (!d->experiment || !d->identity || !r->tok || !r->ref || !r->dec || !r->reflp || !r->refam ||
      !r->cursor ||
      !r->round || !r->dead) {
    snprintf(err, errlen, "out of memory setting up %lld sequences", (long long)r->K);
    token_source_free(&src);
    return RSSM_ERR_IO;
  }
  for (int64_t k = 0; k < r->K; k++) {
    int64_t start = token_window_start(src.n, r->N + 1, K_all, lo + k);
    d->window_start[k] = start;
    for (int64_t t = 0; t <= r->N; t++) {
      r->tok[k * (r->N + 1) + t] = src.ids[start + t];
      d->tokens[k * (r->N + 1) + t] = (int32_t)src.ids[start + t];
    }
  }
  token_source_free(&src);
  /* the fingerprint ties a checkpoint to this experiment, shard and build */
  uLong fp = crc32(0L, Z_NULL, 0);
  fp = crc32(fp, (const Bytef *)d->experiment, (uInt)strlen(d->experiment));
  fp = crc32(fp, (const Bytef *)d->shard, (uInt)strlen(d->shard));
  fp = crc32(fp, (const Bytef *)d->model_checksum, (uInt)strlen(d->model_checksum));
  fp = crc32(fp, (const Bytef *)d->tokens_checksum, (uInt)strlen(d->tokens_checksum));
  if (o->cuda) fp = crc32(fp, (const Bytef *)"cuda", 4); /* GPU row states are another format */
  r->fingerprint = ((uint64_t)fp << 32) ^ (uint64_t)(r->K * 1000003 + r->N);
  if (o->cuda) return open_engine(r, err, errlen);
  for (int64_t k = 0; k < r->K; k++) {
    rssm_decoder_params dp = {&e->reference, e->seed, (uint32_t)(lo + k), r->N + r->Tmax};
    rc = rssm_decoder_open(r->m, &dp, &r->ref[k], m, sizeof m);
    if (rc == RSSM_OK && r->ref[k]->T != 0) {
      snprintf(m, sizeof m, "the reference must not be a spec configuration");
      rc = RSSM_ERR_INPUT;
    }
    if (rc != RSSM_OK) {
      snprintf(err, errlen, "reference: %s", m);
      return rc;
    }
    for (int64_t c = 0; c < r->C; c++) {
      dp.cfg = &e->configs[c].cfg;
      rc = rssm_decoder_open(r->m, &dp, &r->dec[k * r->C + c], m, sizeof m);
      if (rc != RSSM_OK) {
        experiment_where(e, e->configs[c].line, "--config", where, sizeof where);
        snprintf(err, errlen, "%s: configuration '%s': %s", where, e->configs[c].cfg.name, m);
        return rc;
      }
    }
  }
  return RSSM_OK;
}

/* ------------------------------------------------------------------ progress -------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(int64_t done, int64_t total, int64_t done0, double t0) {
  double el = now_s() - t0;
  double rate = el > 0 ? (double)(done - done0) / el : 0.0;
  double eta = rate > 0 ? (double)(total - done) / rate : 0.0;
  int w = 30, fill = total ? (int)(w * done / total) : w;
  char bar[64];
  for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
  bar[w] = '\0';
  fprintf(stderr, "\r[%s] %lld/%lld steps  %.1f steps/s  ETA %d:%02d:%02d ", bar, (long long)done,
          (long long)total, rate, (int)(eta / 3600), (int)fmod(eta / 60, 60), (int)fmod(eta, 60));
  fflush(stderr);
}

/* ------------------------------------------------------------------ the run --------------- */

static int64_t min_cursor(const runner *r) {
  int64_t m = r->b0;
  for (int64_t i = 0; i < r->K * r->C; i++)
    if (r->cursor[i] < m) m = r->cursor[i];
  return m;
}

/* The run's file state: every sequence has its first n steps written. */
static void set_written(runner *r, int64_t n) {
  r->written = n;
  for (int64_t k = 0; k < r->K; k++) r->d.steps_written[k] = n;
}

/* Before anything is written: the outputs' paths, an existing output or checkpoint, setup, and
 * what --resume finds. *done: out is already this experiment's complete result. */
static int prepare(runner *r, const experiment *e, const run_options *o, const char *ckpt,
                   int *done, char *err, size_t errlen) {
  *done = 0;
  int have_out = access(o->out, F_OK) == 0, have_ckpt = access(ckpt, F_OK) == 0;
  if (have_out && !o->force && !o->resume) {
    snprintf(err, errlen, "%s: exists (use --force to overwrite it)", o->out);
    return RSSM_ERR_INPUT;
  }
  if (have_ckpt && !o->resume && !o->force) {
    snprintf(err, errlen, "%s: an interrupted run's checkpoint exists (use --resume to continue "
             "it or --force to start over)", ckpt);
    return RSSM_ERR_INPUT;
  }
  if (o->force && !o->resume) unlink(ckpt);
  int rc = setup(r, e, o, err, errlen);
  if (rc != RSSM_OK) return rc;
  int plan = RESUME_FRESH;
  if (o->resume) {
    rc = run_resume_plan(r, o->out, ckpt, &plan, err, errlen);
    if (rc != RSSM_OK) return rc;
  }
  if (plan == RESUME_DONE) {
    fprintf(stderr, "replayssm run: %s is complete; nothing to resume\n", o->out);
    *done = 1;
    return RSSM_OK;
  }
  if (!o->quiet) {
    fprintf(stderr, "replayssm run: %s -> %s (shard %s: sequences %lld..%lld of %lld)\n"
            "model: %s\n# effective experiment\n%s", e->file[0] ? e->file : "(command line)",
            o->out, r->d.shard, (long long)r->d.offset, (long long)(r->d.offset + r->K - 1),
            (long long)r->d.sequences, r->m->description, r->d.experiment);
    if (plan == RESUME_CKPT)
      fprintf(stderr, "replayssm run: resuming at step %lld of %lld\n", (long long)r->b0,
              (long long)r->N);
  }
  set_written(r, r->written);
  return RSSM_OK;
}

/* One line after a SIGTERM/SIGINT: where the run stopped, what is kept, how to go on. */
static void say_stopped(int sig, int64_t step, int64_t N, const char *part, const char *ckpt) {
  fprintf(stderr, "replayssm run: stopped by %s after step %lld of %lld; %s holds the steps "
          "written and %s the state: rerun the same command with --resume to continue\n",
          sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", (long long)step,
          (long long)N, part, ckpt);
}

/* How the CPU phases cut the work (p->group, p->parts) and their scratch buffers. Models that
 * step decoders together (step_many) get one work item per group of sequences: all references
 * and non-spec pairs of the group advance in one call per step, so the CPU runtime reads each
 * weight once per step for all of them. Groups: as few as keep every thread busy (ceil(K /
 * threads) sequences), at most 64 decoders per call. With fewer sequences than threads, the
 * references run first (ref_item) and each sequence's configurations are cut into
 * ceil(threads / K) parts, one item each. Results never depend on the grouping
 * (tests/driver/test_run_hf.c). */
static int plan_phases(phase_ctx *p, runner *r, const run_options *o, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  p->r = r;
  p->threads = o->threads;
  const char *unb = getenv("RSSM_RUN_UNBATCHED"); /* tests: the one-decoder-at-a-time path */
  if (!r->engine && r->m->ops->step_many && !(unb && unb[0] == '1')) {
    int64_t g = (r->K + o->threads - 1) / o->threads;
    int64_t gmax = 64 / (r->C + 1) > 0 ? 64 / (r->C + 1) : 1;
    const char *ge = getenv("RSSM_RUN_GROUP"); /* tests and measurements: sequences per group */
    if (ge && atol(ge) > 0) g = gmax = atol(ge);
    p->group = (int)(g < gmax ? g : gmax);
    if (r->K < o->threads && r->C > 1 && !(ge && atol(ge) > 0)) {
      int64_t parts = (o->threads + r->K - 1) / r->K;
      p->group = 1;
      p->parts = (int)(parts < r->C ? parts : r->C);
    }
  }
  size_t per_thread = (size_t)r->Tmax;
  if ((size_t)p->group * (size_t)(r->C + 1) > per_thread)
    per_thread = (size_t)p->group * (size_t)(r->C + 1);
  p->scratch_logits = malloc((size_t)o->threads * per_thread * (size_t)r->V * sizeof(float));
  p->scratch_lp = malloc((size_t)o->threads * (size_t)r->V * sizeof(float));
  if (!p->scratch_logits || !p->scratch_lp) {
    snprintf(err, errlen, "out of memory for %d threads' scratch", o->threads);
    return RSSM_ERR_IO;
  }
  return RSSM_OK;
}

/* Before block [b0, b1): keep the reference rows a lagging spec pair may still need (steps
 * [b0 - (Tmax-1), b0)) at the front of the row buffers. */
static void keep_reference_rows(runner *r, int64_t b1) {
  int64_t keep = r->Tmax - 1 < r->b0 ? r->Tmax - 1 : r->b0;
  if (keep > r->nrows) keep = r->nrows;
  int64_t from = r->b0 - keep - r->base; /* row of the first kept step */
  for (int64_t k = 0; k < r->K && from > 0 && keep > 0; k++) {
    float *lp = r->reflp + (size_t)k * (size_t)r->rows * (size_t)r->V;
    int64_t *am = r->refam + (size_t)k * (size_t)r->rows;
    memmove(lp, lp + (size_t)from * (size_t)r->V, (size_t)keep * (size_t)r->V * sizeof(float));
    memmove(am, am + from, (size_t)keep * sizeof(int64_t));
  }
  r->base = r->b0 - keep;
  r->nrows = keep + (b1 - r->b0);
}

/* One block on the CPU: the references and pairs in parallel phases (plan_phases). */
static int cpu_block(phase_ctx *p, runner *r, const run_options *o, char *err, size_t errlen) {
  int rc;
  if (p->parts > 1) {
    rc = parallel_for(r->K, o->threads, ref_item, p);
    if (rc == RSSM_OK) rc = parallel_for(r->K * p->parts, o->threads, group_item, p);
    p->spec_only = 1;
  } else if (p->group > 0) {
    rc = parallel_for((r->K + p->group - 1) / p->group, o->threads, group_item, p);
    p->spec_only = 1;
  } else {
    rc = parallel_for(r->K, o->threads, ref_item, p);
  }
  if (rc == RSSM_OK) rc = parallel_for(r->K * r->C, o->threads, pair_item, p);
  if (rc != RSSM_OK) snprintf(err, errlen, "%s", p->err);
  return rc;
}

int run_experiment(const experiment *e, const run_options *o, char *err, size_t errlen) {
  double t_start = now_s();
  char part[4200], ckpt[4200];
  snprintf(part, sizeof part, "%s.part", o->out);
  snprintf(ckpt, sizeof ckpt, "%s.ckpt", o->out);
  /* the paths first (they write nothing), then the lock, before anything is written */
  int rc = run_outputs_check(e, o->out, err, errlen);
  if (rc != RSSM_OK) return rc;
  out_lock lock;
  rc = out_lock_take(o->out, &lock, err, errlen);
  if (rc != RSSM_OK) return rc;
  runner r;
  memset(&r, 0, sizeof r);
  int finished = 0;
  rc = prepare(&r, e, o, ckpt, &finished, err, errlen);
  if (rc != RSSM_OK || finished) {
    runner_free(&r);
    out_lock_release(&lock);
    return rc;
  }
  run_signal_install();
  run_h5 *h = run_h5_create(part, &r.d, err, errlen);
  if (!h) {
    run_signal_restore();
    runner_free(&r);
    out_lock_release(&lock);
    return RSSM_ERR_IO;
  }
  /* a resumed run rewrites what its checkpoint holds: the old .part may be torn */
  rc = run_h5_write_columns(h, &r.d, 0, r.written, err, errlen);

  /* The workers below each decode whole (sequence, configuration) pairs, so with two or more of
   * them the CPU model's own matrix-vector threads would only oversubscribe the cores (and start
   * a thread per product). Results do not depend on either count. */
  rssm_model_set_threads(r.m, o->threads > 1 ? 1 : 2);

  phase_ctx p;
  memset(&p, 0, sizeof p);
  if (rc == RSSM_OK) rc = plan_phases(&p, &r, o, err, errlen);
  const char *kill_env = getenv("RSSM_TEST_KILL_AFTER_BLOCK");
  long kill_after = kill_env ? atol(kill_env) : -1;
  long blocks = 0;
  int64_t last_ckpt = r.b0;
  double t0 = now_s();
  int64_t done0 = r.written;
  int stop = 0; /* the signal that asked the run to stop (run_signal.h) */
  /* reports by time between the blocks' (RSSM_PROGRESS_SECONDS, default 5) */
  const char *pe = getenv("RSSM_PROGRESS_SECONDS");
  double every = pe && atof(pe) > 0 ? atof(pe) : 5.0;
  if (!o->quiet && rc == RSSM_OK)
    p.prog = run_progress_start(r.N, r.K * (r.C + 1), r.written, every, o->progress);
  while (rc == RSSM_OK && r.b0 < r.N) {
    int64_t b1 = r.b0 + r.B < r.N ? r.b0 + r.B : r.N;
    p.b1 = b1;
    keep_reference_rows(&r, b1);
    rc = r.engine ? engine_block(&r, b1, err, errlen) : cpu_block(&p, &r, o, err, errlen);
    if (rc != RSSM_OK) break;
    r.b0 = b1;
    int64_t written0 = r.written;
    set_written(&r, min_cursor(&r));
    rc = run_h5_write_columns(h, &r.d, written0, r.written, err, errlen);
    int64_t done = r.written;
    stop = run_signal_pending();
    if (rc == RSSM_OK && r.b0 < r.N && (stop || r.b0 - last_ckpt >= e->checkpoint_every)) {
      rc = run_ckpt_save(&r, ckpt, err, errlen);
      last_ckpt = r.b0;
      /* batch jobs (no terminal) get one progress line per checkpoint instead of a bar */
      if (rc == RSSM_OK && !o->progress && !o->quiet) {
        double el = now_s() - t0, rate = el > 0 ? (double)(done - done0) / el : 0.0;
        fprintf(stderr, "replayssm run: step %lld of %lld, %.1f steps/s, checkpoint %s\n",
                (long long)done, (long long)r.N, rate, ckpt);
      }
    }
    run_progress_steps(p.prog, done);
    if (o->progress) progress(done, r.N, done0, t0);
    if (++blocks == kill_after) raise(SIGKILL); /* tests: die between two blocks */
    if (stop && rc == RSSM_OK && r.b0 < r.N) break;
  }
  run_signal_restore();
  run_progress_stop(p.prog);
  if (rc == RSSM_OK && run_h5_set_wall_seconds(h, now_s() - t_start) != 0) {
    snprintf(err, errlen, "%s: writing the attribute wall_seconds failed", part);
    rc = RSSM_ERR_IO;
  }
  free(p.scratch_logits);
  free(p.scratch_lp);
  if (run_h5_close(h) != 0 && rc == RSSM_OK) {
    snprintf(err, errlen, "%s: closing the HDF5 file failed", part);
    rc = RSSM_ERR_IO;
  }
  if (rc == RSSM_OK && stop && r.b0 < r.N) {
    say_stopped(stop, r.b0, r.N, part, ckpt);
    runner_free(&r);
    out_lock_release(&lock);
    return 128 + stop;
  }
  if (rc == RSSM_OK) rc = atomic_commit(part, o->out, err, errlen);
  if (rc == RSSM_OK) unlink(ckpt);
  if (rc == RSSM_OK && !o->quiet)
    fprintf(stderr, "replayssm run: wrote %s (%lld sequences x %lld steps, %lld configurations)\n",
            o->out, (long long)r.K, (long long)r.N, (long long)r.C);
  runner_free(&r);
  out_lock_release(&lock);
  return rc;
}
