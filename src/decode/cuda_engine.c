/* `replayssm run --device cuda`: the GPU runtime as a block engine (engine.h,
 * docs/gpu-runtime.md).
 *
 * One mc_batch of (C + 1) x K rows: configuration 0 is the run's reference, configuration c + 1
 * the experiment's configuration c; row (c + 1) K + k is window k under configuration c, row k
 * the reference of window k. Every step feeds window k's token to its rows and reads back only
 * the per-row metrics (mc_row_metrics: kl, nll, dp, top1, finite), which go into the driver's
 * buffers with the driver's non-finite rule. Resume: every row's state (mc_batch_row_*) and
 * which pairs went non-finite (ce_save). Not yet:
 * spec configurations (refused by mc_batch_build). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/decode/engine.h"
#include "src/decode/hf_decoder.h"
#include "src/io/status.h"
#include "src/model_cuda/mc_model.h"

#ifndef RSSM_HAVE_CUDA

int cuda_engine_open(const rssm_engine_params *p, rssm_engine **out, char *err, size_t errlen) {
  (void)p;
  *out = NULL;
  mc_device_check(err, errlen);
  return RSSM_ERR_INPUT;
}

#else

typedef struct {
  rssm_engine base;
  mc_model *g;
  mc_batch *b;
  int64_t K, C, N, offset;
  int64_t *x, *y;          /* [K] this step's tokens and targets */
  mc_row_metrics *met;     /* [(C + 1) K] */
  uint8_t *dead;           /* [K][C] pairs that went non-finite */
} cuda_engine;

static void ce_close(rssm_engine *e) {
  if (!e) return;
  cuda_engine *g = e->impl;
  mc_batch_free(g->b);
  mc_model_free(g->g);
  free(g->x);
  free(g->y);
  free(g->met);
  free(g->dead);
  free(g);
}

/* The row of window k's reference (c = -1) or of pair (k, c). */
static int row_of(const cuda_engine *g, int64_t k, int64_t c) { return (int)((c + 1) * g->K + k); }

/* Resume state: u8 dead [K][C]; per window k, i64 bytes + the reference's row; per pair (k, c)
 * still alive, i64 bytes + its row (mc_batch_row_save). */
static int64_t ce_state_bytes(const rssm_engine *e) {
  const cuda_engine *g = e->impl;
  int64_t n = g->K * g->C;
  for (int64_t k = 0; k < g->K; k++) {
    n += 8 + mc_batch_row_bytes(g->b, row_of(g, k, -1));
    for (int64_t c = 0; c < g->C; c++)
      if (!g->dead[k * g->C + c]) n += 8 + mc_batch_row_bytes(g->b, row_of(g, k, c));
  }
  return n;
}

static int ce_save(const rssm_engine *e, void *buf, char *err, size_t errlen) {
  const cuda_engine *g = e->impl;
  unsigned char *at = buf;
  memcpy(at, g->dead, (size_t)(g->K * g->C));
  at += g->K * g->C;
  for (int64_t k = 0; k < g->K; k++)
    for (int64_t c = -1; c < g->C; c++) {
      if (c >= 0 && g->dead[k * g->C + c]) continue;
      const int row = row_of(g, k, c);
      const int64_t n = mc_batch_row_bytes(g->b, row);
      memcpy(at, &n, 8);
      int rc = mc_batch_row_save(g->b, row, at + 8, err, errlen);
      if (rc != RSSM_OK) return rc;
      at += 8 + n;
    }
  return RSSM_OK;
}

static int ce_load(rssm_engine *e, const void *buf, int64_t len, char *err, size_t errlen) {
  cuda_engine *g = e->impl;
  const unsigned char *at = buf, *end = at + len;
  if (len < g->K * g->C) {
    snprintf(err, errlen, "corrupt checkpoint (sizes do not match this run)");
    return RSSM_ERR_INPUT;
  }
  memcpy(g->dead, at, (size_t)(g->K * g->C));
  at += g->K * g->C;
  for (int64_t k = 0; k < g->K; k++)
    for (int64_t c = -1; c < g->C; c++) {
      if (c >= 0 && g->dead[k * g->C + c]) continue;
      int64_t n = -1;
      if (end - at >= 8) memcpy(&n, at, 8);
      if (n < 0 || n > end - at - 8) {
        snprintf(err, errlen, "corrupt checkpoint (sizes do not match this run)");
        return RSSM_ERR_INPUT;
      }
      int rc = mc_batch_row_load(g->b, row_of(g, k, c), at + 8, n, err, errlen);
      if (rc != RSSM_OK) return rc;
      at += 8 + n;
    }
  if (at != end) {
    snprintf(err, errlen, "corrupt checkpoint (sizes do not match this run)");
    return RSSM_ERR_INPUT;
  }
  return RSSM_OK;
}

/* Step t's metrics of row (c + 1) K + k into pair (k, c)'s buffers, or its dead values. */
static void record_pair(cuda_engine *g, const rssm_engine_out *o, int64_t k, int64_t c,
                        int64_t t) {
  const int64_t pi = k * g->C + c;
  const mc_row_metrics *mm = &g->met[(c + 1) * g->K + k];
  const size_t i = (size_t)(k * g->N + t);
  if (!g->dead[pi] && !mm->finite) {
    /* as the CPU path: from this step on kl = inf, nll = inf, dp = NaN, top1 = 0 */
    if (o->first_nonfinite[c][k] < 0) o->first_nonfinite[c][k] = t;
    g->dead[pi] = 1;
  }
  if (g->dead[pi]) {
    o->kl[c][i] = INFINITY;
    o->nll[c][i] = INFINITY;
    o->dp[c][i] = NAN;
    o->top1[c][i] = 0;
  } else {
    o->kl[c][i] = mm->kl;
    o->nll[c][i] = mm->nll;
    o->dp[c][i] = mm->dp;
    o->top1[c][i] = (uint8_t)mm->top1;
  }
}

static int ce_block(rssm_engine *e, const int64_t *tok, int64_t t0, int64_t t1,
                    const rssm_engine_out *o, int64_t *done, char *err, size_t errlen) {
  cuda_engine *g = e->impl;
  const int64_t K = g->K, C = g->C, N = g->N;
  char e2[600];
  for (int64_t t = t0; t < t1; t++) {
    for (int64_t k = 0; k < K; k++) {
      g->x[k] = tok[k * (N + 1) + t];
      g->y[k] = tok[k * (N + 1) + t + 1];
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
                 "(the fp32 reference must stay finite)", (long long)(g->offset + k),
                 (long long)t);
        return RSSM_ERR_INPUT;
      }
      o->ref_nll[k * N + t] = ref->nll;
      for (int64_t c = 0; c < C; c++) record_pair(g, o, k, c, t);
    }
  }
  *done = t1; /* no spec configurations: every row reaches t1 */
  return RSSM_OK;
}

static const rssm_engine_ops cuda_engine_ops = {ce_block, ce_state_bytes, ce_save, ce_load,
                                                ce_close};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* RSSM_CUDA_MEMINFO=1: one stderr line with the device memory before and after, the weights,
 * the batch's estimate against what it took, the upload and build times, and how many rows the
 * estimate lets fit at this length and at 131072 positions (docs/real-checkpoints.md). */
static void report_memory(const cuda_engine *g, int R, int64_t N, const int64_t mem[4],
                          double t_up, double t_build) {
  const double gib = 1073741824.0;
  const int64_t est = mc_batch_estimate(g->g, R, N), budget = mem[2];
  fprintf(stderr,
          "replayssm: cuda memory: device %.2f GiB, free %.2f GiB before the weights; weights "
          "%.2f GiB (uploaded in %.2f s); batch %d rows x %lld positions: estimate %.2f GiB, "
          "took %.2f GiB (built in %.2f s); free %.2f GiB after; estimate lets %lld rows fit at "
          "%lld positions, %lld at 131072\n",
          (double)mem[1] / gib, (double)mem[0] / gib, (double)mc_model_bytes(g->g) / gib, t_up, R,
          (long long)N, (double)est / gib, (double)(mem[2] - mem[3]) / gib, t_build,
          (double)mem[3] / gib, (long long)mc_batch_rows_fit(g->g, N, budget), (long long)N,
          (long long)mc_batch_rows_fit(g->g, 131072, budget));
  fflush(stderr);
}

/* The device model and batch of g (host buffers allocated). */
static int build_batch(cuda_engine *g, const rssm_engine_params *p, const model *m, char *err,
                       size_t errlen) {
  const char *mi = getenv("RSSM_CUDA_MEMINFO");
  const int meminfo = mi && strcmp(mi, "1") == 0;
  int64_t mem[4] = {0, 0, 0, 0}; /* free before the weights, total, free before/after the batch */
  double t0 = mono_s(), t_up = 0, t_build = 0;
  if (meminfo && mc_device_mem(&mem[0], &mem[1]) != 0) mem[0] = mem[1] = -1;
  ssm_config *cfgs = calloc((size_t)p->C + 1, sizeof *cfgs);
  uint32_t *seqs = calloc((size_t)p->K, sizeof *seqs);
  int rc = cfgs && seqs ? RSSM_OK : RSSM_ERR_IO;
  if (rc != RSSM_OK) snprintf(err, errlen, "out of host memory");
  if (rc == RSSM_OK) {
    cfgs[0] = *p->reference;
    for (int64_t c = 0; c < p->C; c++) cfgs[c + 1] = p->configs[c];
    for (int64_t k = 0; k < p->K; k++) seqs[k] = (uint32_t)(p->offset + k);
    rc = mc_model_upload(m, &g->g, err, errlen);
  }
  if (rc == RSSM_OK && meminfo) {
    t_up = mono_s() - t0;
    if (mc_device_mem(&mem[2], &mem[1]) != 0) mem[2] = -1;
    t0 = mono_s();
  }
  /* positions 0..N-1 are fed (no spec: Tmax = 1) */
  if (rc == RSSM_OK)
    rc = mc_batch_build(&g->b, g->g, cfgs, (int)p->C + 1, (int)p->K, p->seed, seqs, p->N, err,
                        errlen);
  if (rc == RSSM_OK && meminfo) {
    t_build = mono_s() - t0;
    if (mc_device_mem(&mem[3], &mem[1]) != 0) mem[3] = -1;
    report_memory(g, (int)((p->C + 1) * p->K), p->N, mem, t_up, t_build);
  }
  /* one CUDA Graph per step (bit-identical to launching, checked on the H200); RSSM_CUDA_GRAPH=0
   * launches kernel by kernel, for debugging and RSSM_CUDA_PROFILE */
  const char *graph = getenv("RSSM_CUDA_GRAPH");
  if (rc == RSSM_OK && !(graph && strcmp(graph, "0") == 0)) mc_batch_use_graph(g->b, 1);
  free(cfgs);
  free(seqs);
  return rc;
}

int cuda_engine_open(const rssm_engine_params *p, rssm_engine **out, char *err, size_t errlen) {
  *out = NULL;
  if (mc_device_check(err, errlen) != 0) return RSSM_ERR_INPUT;
  const model *m = hf_model_of(p->m);
  if (!m) {
    snprintf(err, errlen, "needs a Hugging Face model directory (the toy models "
             "run on the CPU only)");
    return RSSM_ERR_INPUT;
  }
  if (p->K > 65535 / (p->C + 1)) {
    snprintf(err, errlen, "%lld sequences x %lld configurations exceed 65535 rows",
             (long long)p->K, (long long)(p->C + 1));
    return RSSM_ERR_INPUT;
  }
  cuda_engine *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, errlen, "out of host memory");
    return RSSM_ERR_IO;
  }
  g->base.ops = &cuda_engine_ops;
  g->base.impl = g;
  g->K = p->K;
  g->C = p->C;
  g->N = p->N;
  g->offset = p->offset;
  const int64_t rows = (p->C + 1) * p->K;
  g->x = calloc((size_t)p->K, sizeof *g->x);
  g->y = calloc((size_t)p->K, sizeof *g->y);
  g->met = calloc((size_t)rows, sizeof *g->met);
  g->dead = calloc((size_t)(p->K * p->C) + 1, 1);
  int rc = g->x && g->y && g->met && g->dead ? RSSM_OK : RSSM_ERR_IO;
  if (rc != RSSM_OK) snprintf(err, errlen, "out of host memory");
  if (rc == RSSM_OK) rc = build_batch(g, p, m, err, errlen);
  if (rc != RSSM_OK) {
    ce_close(&g->base);
    return rc;
  }
  *out = &g->base;
  return RSSM_OK;
}

#endif
