/* `replayssm run --device cuda`: the GPU runtime as the driver's block engine
 * (src/driver/run_engine.h, docs/gpu-runtime.md).
 *
 * One mc_batch of (C + 1) x K rows: configuration 0 is the run's reference, configuration c + 1
 * the experiment's configuration c; row (c + 1) K + k is the pair (k, c) of the runner, row k the
 * reference of window k. Every step feeds window k's token to its rows and reads back only the
 * per-row metrics (mc_row_metrics: kl, nll, dp, top1, finite), which go into the runner's
 * buffers exactly where ref_item / pair_item of run.c put theirs, with the same non-finite rule.
 * Checkpoints: the runner's decoders are row views of the batch whose state_bytes / save / load
 * are mc_batch_row_*, so run_ckpt.c writes and reads them unchanged. Not yet: spec
 * configurations (refused), CUDA Graphs (each step is launched from the host). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/driver/run_engine.h"
#include "src/io/status.h"
#include "src/model_cuda/mc_model.h"

#ifndef RSSM_HAVE_CUDA

int run_engine_open(runner *r, run_engine **out, char *err, size_t errlen) {
  (void)r;
  *out = NULL;
  mc_device_check(err, errlen);
  return RSSM_ERR_INPUT;
}
int run_engine_block(run_engine *g, runner *r, int64_t b1, char *err, size_t errlen) {
  (void)g, (void)r, (void)b1;
  snprintf(err, errlen, "built without CUDA");
  return RSSM_ERR_INPUT;
}
void run_engine_close(run_engine *g) { (void)g; }

#else

struct run_engine {
  mc_model *g;
  mc_batch *b;
  int K, C;                /* windows, experiment configurations (rows: (C + 1) K) */
  int64_t *x, *y;          /* [K] this step's tokens and targets */
  mc_row_metrics *met;     /* [(C + 1) K] */
};

/* A row view: the decoder the runner holds for one row, for checkpoints only. */
typedef struct {
  run_engine *eng;
  int row;
} row_view;

static int rv_refuse(char *err, size_t errlen) {
  snprintf(err, errlen, "internal: a GPU row is advanced by the engine, not through its decoder");
  return RSSM_ERR_IO;
}
static int rv_step(rssm_decoder *d, int64_t token, float *logits, char *err, size_t errlen) {
  (void)d, (void)token, (void)logits;
  return rv_refuse(err, errlen);
}
static int rv_verify(rssm_decoder *d, const int64_t *tokens, int n, float *logits, char *err,
                     size_t errlen) {
  (void)d, (void)tokens, (void)n, (void)logits;
  return rv_refuse(err, errlen);
}
static int rv_commit(rssm_decoder *d, int a, char *err, size_t errlen) {
  (void)d, (void)a;
  return rv_refuse(err, errlen);
}
static int64_t rv_state_bytes(const rssm_decoder *d) {
  const row_view *v = d->impl;
  return mc_batch_row_bytes(v->eng->b, v->row);
}
static int rv_save(const rssm_decoder *d, void *buf, char *err, size_t errlen) {
  const row_view *v = d->impl;
  return mc_batch_row_save(v->eng->b, v->row, buf, err, errlen);
}
static int rv_load(rssm_decoder *d, const void *buf, int64_t len, char *err, size_t errlen) {
  row_view *v = d->impl;
  return mc_batch_row_load(v->eng->b, v->row, buf, len, err, errlen);
}
static void rv_free(rssm_decoder *d) {
  if (!d) return;
  free(d->impl);
  free(d);
}

static const rssm_decoder_ops row_view_ops = {rv_step,        rv_verify, rv_commit, rv_state_bytes,
                                              rv_save,        rv_load,   rv_free};

static rssm_decoder *row_view_new(run_engine *eng, int row, int64_t V) {
  rssm_decoder *d = calloc(1, sizeof *d);
  row_view *v = calloc(1, sizeof *v);
  if (!d || !v) {
    free(d);
    free(v);
    return NULL;
  }
  v->eng = eng;
  v->row = row;
  d->ops = &row_view_ops;
  d->vocab = V;
  d->T = 0;
  d->impl = v;
  return d;
}

void run_engine_close(run_engine *g) {
  if (!g) return;
  mc_batch_free(g->b);
  mc_model_free(g->g);
  free(g->x);
  free(g->y);
  free(g->met);
  free(g);
}

int run_engine_open(runner *r, run_engine **out, char *err, size_t errlen) {
  *out = NULL;
  const experiment *e = r->e;
  if (mc_device_check(err, errlen) != 0) return RSSM_ERR_INPUT;
  if (strncmp(e->model, "toy:", 4) == 0) {
    snprintf(err, errlen, "needs a Hugging Face model directory (the toy models "
             "run on the CPU only)");
    return RSSM_ERR_INPUT;
  }
  if (r->K > 65535 / (r->C + 1)) {
    snprintf(err, errlen, "%lld sequences x %lld configurations exceed 65535 rows",
             (long long)r->K, (long long)(r->C + 1));
    return RSSM_ERR_INPUT;
  }
  const model *m = r->m->impl; /* hf_model_open's model (docs/driver.md, backends) */
  run_engine *g = calloc(1, sizeof *g);
  ssm_config *cfgs = calloc((size_t)r->C + 1, sizeof *cfgs);
  uint32_t *seqs = calloc((size_t)r->K, sizeof *seqs);
  if (!g || !cfgs || !seqs) {
    free(g);
    free(cfgs);
    free(seqs);
    snprintf(err, errlen, "out of host memory");
    return RSSM_ERR_IO;
  }
  g->K = (int)r->K;
  g->C = (int)r->C;
  cfgs[0] = e->reference;
  for (int64_t c = 0; c < r->C; c++) cfgs[c + 1] = e->configs[c].cfg;
  for (int64_t k = 0; k < r->K; k++) seqs[k] = (uint32_t)(r->d.offset + k);
  const int rows = (g->C + 1) * g->K;
  g->x = calloc((size_t)g->K, sizeof *g->x);
  g->y = calloc((size_t)g->K, sizeof *g->y);
  g->met = calloc((size_t)rows, sizeof *g->met);
  int rc = g->x && g->y && g->met ? RSSM_OK : RSSM_ERR_IO;
  if (rc != RSSM_OK) snprintf(err, errlen, "out of host memory");
  if (rc == RSSM_OK) rc = mc_model_upload(m, &g->g, err, errlen);
  /* positions 0..N-1 are fed (no spec: Tmax = 1) */
  if (rc == RSSM_OK)
    rc = mc_batch_build(&g->b, g->g, cfgs, g->C + 1, g->K, e->seed, seqs, r->N, err, errlen);
  /* one CUDA Graph per step (bit-identical to launching, checked on the H200); RSSM_CUDA_GRAPH=0
   * launches kernel by kernel, for debugging and RSSM_CUDA_PROFILE */
  const char *graph = getenv("RSSM_CUDA_GRAPH");
  if (rc == RSSM_OK && !(graph && strcmp(graph, "0") == 0)) mc_batch_use_graph(g->b, 1);
  free(cfgs);
  free(seqs);
  for (int64_t k = 0; rc == RSSM_OK && k < r->K; k++) {
    r->ref[k] = row_view_new(g, (int)k, r->V);
    for (int64_t c = 0; r->ref[k] && c < r->C; c++)
      if (!(r->dec[k * r->C + c] = row_view_new(g, (int)((c + 1) * r->K + k), r->V))) break;
    if (!r->ref[k] || (r->C > 0 && !r->dec[k * r->C + r->C - 1])) {
      snprintf(err, errlen, "out of host memory");
      rc = RSSM_ERR_IO;
    }
  }
  if (rc != RSSM_OK) {
    /* the runner frees the row views; they must not outlive the engine they point at */
    for (int64_t k = 0; k < r->K; k++) {
      rssm_decoder_free(r->ref[k]);
      r->ref[k] = NULL;
      for (int64_t c = 0; c < r->C; c++) {
        rssm_decoder_free(r->dec[k * r->C + c]);
        r->dec[k * r->C + c] = NULL;
      }
    }
    run_engine_close(g);
    return rc;
  }
  /* the reference log-probabilities stay on the device: zero the host rows that run_ckpt.c
   * still writes, so that checkpoints are deterministic */
  memset(r->reflp, 0, (size_t)r->K * (size_t)r->rows * (size_t)r->V * sizeof(float));
  *out = g;
  return RSSM_OK;
}

int run_engine_block(run_engine *g, runner *r, int64_t b1, char *err, size_t errlen) {
  const int64_t K = r->K, C = r->C, N = r->N;
  char e2[600];
  for (int64_t t = r->b0; t < b1; t++) {
    for (int64_t k = 0; k < K; k++) {
      g->x[k] = r->tok[k * (N + 1) + t];
      g->y[k] = r->tok[k * (N + 1) + t + 1];
    }
    int rc = mc_batch_step(g->b, g->x, g->y, NULL, g->met, e2, sizeof e2);
    if (rc != RSSM_OK) {
      snprintf(err, errlen, "GPU step %lld: %s", (long long)t, e2);
      return rc;
    }
    for (int64_t k = 0; k < K; k++) {
      const mc_row_metrics *ref = &g->met[k];
      if (!ref->finite) {
        snprintf(err, errlen, "the reference's logits are not finite at sequence %lld, step %lld "
                 "(the fp32 reference must stay finite)", (long long)(r->d.offset + k),
                 (long long)t);
        return RSSM_ERR_INPUT;
      }
      r->d.ref_nll[k * N + t] = ref->nll;
      for (int64_t c = 0; c < C; c++) {
        const int64_t pi = k * C + c;
        const mc_row_metrics *mm = &g->met[(c + 1) * K + k];
        run_cfg_data *x = &r->d.cfg[c];
        const size_t i = (size_t)(k * N + t);
        if (!r->dead[pi] && !mm->finite) {
          /* as run.c's kill_pair: from this step on kl = inf, nll = inf, dp = NaN, top1 = 0 */
          if (x->first_nonfinite[k] < 0) x->first_nonfinite[k] = t;
          r->dead[pi] = 1;
          rssm_decoder_free(r->dec[pi]);
          r->dec[pi] = NULL;
        }
        if (r->dead[pi]) {
          x->kl[i] = INFINITY;
          x->nll[i] = INFINITY;
          x->dp[i] = NAN;
          x->top1[i] = 0;
        } else {
          x->kl[i] = mm->kl;
          x->nll[i] = mm->nll;
          x->dp[i] = mm->dp;
          x->top1[i] = (uint8_t)mm->top1;
        }
        r->cursor[pi] = t + 1;
      }
    }
  }
  return RSSM_OK;
}

#endif
