/* `replayssm run --device cuda`: the GPU runtime as a block engine (engine.h,
 * docs/gpu-runtime.md).
 *
 * A lockstep mc_batch of the reference and the non-spec configurations, and one spec batch per
 * distinct T of the spec configurations (cuda_engine_internal.h). Every step feeds window k's
 * token to the lockstep rows and reads back only the per-row metrics (mc_row_metrics: kl, nll,
 * dp, top1, finite), which go into the driver's buffers with the driver's non-finite rule; the
 * spec rows then play their rounds against the reference ring (cuda_engine_block.c). Resume:
 * every row's state (mc_batch_row_*), the spec pairs' cursors and rounds, the ring entries they
 * still need, and which pairs went non-finite (cuda_engine_state.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/decode/cuda_engine_internal.h"
#include "src/decode/engine.h"
#include "src/decode/hf_decoder.h"
#include "src/io/status.h"
#include "src/model_cuda/mc_fit.h"
#include "src/model_cuda/mc_model.h"

#ifndef RSSM_HAVE_CUDA

int cuda_engine_open(const rssm_engine_params *p, rssm_engine **out, char *err, size_t errlen) {
  (void)p;
  *out = NULL;
  mc_device_check(err, errlen);
  return RSSM_ERR_INPUT;
}

#else

static void ce_close(rssm_engine *e) {
  if (!e) return;
  cuda_engine *g = e->impl;
  for (int s = 0; g->spec && s < g->nspec; s++) {
    ce_spec_group *sg = &g->spec[s];
    mc_batch_free(sg->b);
    free(sg->cfg);
    free(sg->drafts);
    free(sg->targets);
    free(sg->accept);
    free(sg->met);
  }
  free(g->spec);
  mc_ref_ring_free(g->ring);
  mc_batch_free(g->std);
  mc_model_free(g->g);
  free(g->batch_of);
  free(g->row_cfg);
  free(g->x);
  free(g->y);
  free(g->met);
  free(g->dead);
  free(g->cursor);
  free(g->round);
  free(g);
}

mc_batch *ce_batch_of(const cuda_engine *g, int64_t c) {
  return c < 0 || g->batch_of[c] < 0 ? g->std : g->spec[g->batch_of[c]].b;
}

int ce_row_of(const cuda_engine *g, int64_t k, int64_t c) {
  return (int)((c < 0 ? 0 : g->row_cfg[c]) * g->K + k);
}

static const rssm_engine_ops cuda_engine_ops = {ce_block, ce_state_bytes, ce_save, ce_load,
                                                ce_close};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* RSSM_CUDA_MEMINFO=1: one stderr line with the device memory before and after, the weights,
 * the batch's estimate against what it took, the upload and build times, how many rows the
 * estimate lets fit at this length and at 131072 positions (docs/real-checkpoints.md), and the
 * model's GEMM row tile (mc_model_row_tile: the batch's GEMMs run on ceil(R / tile) tiles). */
static void report_memory(const cuda_engine *g, int R, int64_t N, const int64_t mem[4],
                          double t_up, double t_build) {
  const double gib = 1073741824.0;
  const int64_t est = mc_batch_estimate(g->g, R, N), budget = mem[2];
  fprintf(stderr,
          "replayssm: cuda memory: device %.2f GiB, free %.2f GiB before the weights; weights "
          "%.2f GiB (uploaded in %.2f s); batch %d rows x %lld positions: estimate %.2f GiB, "
          "took %.2f GiB (built in %.2f s); free %.2f GiB after; estimate lets %lld rows fit at "
          "%lld positions, %lld at 131072; GEMM row tile %d (GEMM weights %.2f GiB)\n",
          (double)mem[1] / gib, (double)mem[0] / gib, (double)mc_model_bytes(g->g) / gib, t_up, R,
          (long long)N, (double)est / gib, (double)(mem[2] - mem[3]) / gib, t_build,
          (double)mem[3] / gib, (long long)mc_batch_rows_fit(g->g, N, budget), (long long)N,
          (long long)mc_batch_rows_fit(g->g, 131072, budget), mc_model_row_tile(g->g),
          (double)mc_model_gemm_bytes(g->g) / gib);
  fflush(stderr);
}

/* Device bytes of the batches and ring for K windows (the engine's own estimate, so that the
 * refusal can name how many windows fit with the spec rows' T token rows counted). */
typedef struct {
  const cuda_engine *g;
  const rssm_engine_params *p;
  int64_t cs;             /* non-spec configurations */
} need_ctx;

static int64_t engine_need(void *ctx, int64_t K) {
  const need_ctx *n = ctx;
  const cuda_engine *g = n->g;
  int64_t need = mc_batch_estimate(g->g, (int)((1 + n->cs) * K), n->p->N);
  for (int s = 0; s < g->nspec; s++)
    need += mc_batch_estimate_t(g->g, (int)(g->spec[s].C * K), g->spec[s].T,
                                n->p->N + g->spec[s].T);
  if (g->nspec > 0) need += mc_ref_ring_bytes(K, g->ring_slots, hf_model_of(n->p->m)->cfg.V);
  return need;
}

/* Refuses (RSSM_ERR_INPUT) a run whose batches do not fit in the free device memory, naming how
 * many windows would. */
static int check_fit(const cuda_engine *g, const rssm_engine_params *p, int64_t cs, char *err,
                     size_t errlen) {
  int64_t fr = 0, to = 0;
  if (mc_device_mem(&fr, &to) != 0) return RSSM_OK; /* the batches' own checks still apply */
  /* tests (tests/gpu/gpu_session.sh): pretend the device has this many bytes free */
  const char *pretend = getenv("RSSM_TEST_CUDA_FREE_BYTES");
  if (pretend && *pretend) fr = strtoll(pretend, NULL, 10);
  need_ctx n = {g, p, cs};
  const int64_t need = engine_need(&n, p->K);
  if (need <= fr) return RSSM_OK;
  const int64_t kfit = mc_fit_largest(engine_need, &n, 1, p->K, fr);
  int64_t spec_rows = 0, tok_rows = 0;
  for (int s = 0; s < g->nspec; s++) {
    spec_rows += g->spec[s].C * p->K;
    tok_rows += g->spec[s].C * p->K * g->spec[s].T;
  }
  const double gib = 1073741824.0;
  snprintf(err, errlen,
           "needs %.1f GiB of device memory for %lld rows (%lld lockstep, %lld spec rows with "
           "%lld token rows) at %lld positions, the device has %.1f GiB free: at most %lld "
           "rows fit (%lld windows of the %lld configurations and the reference: fewer "
           "--sequences, or --shard I/N over several runs)",
           (double)need / gib, (long long)((1 + cs) * p->K + spec_rows),
           (long long)((1 + cs) * p->K), (long long)spec_rows, (long long)tok_rows,
           (long long)p->N, (double)fr / gib,
           (long long)(kfit > 0 ? kfit * (1 + p->C) : 0), (long long)(kfit > 0 ? kfit : 0),
           (long long)p->C);
  return RSSM_ERR_INPUT;
}

/* The spec groups (one per distinct T, configurations in experiment order) and every
 * configuration's batch and index in it. */
static int plan_groups(cuda_engine *g, const rssm_engine_params *p, int64_t *cs) {
  int64_t n_std = 0;
  for (int64_t c = 0; c < p->C; c++) {
    const ssm_config *cf = &p->configs[c];
    if (cf->strategy != SSM_SPEC) {
      g->batch_of[c] = -1;
      g->row_cfg[c] = 1 + n_std++;
      continue;
    }
    if (cf->T > g->Tmax) g->Tmax = cf->T;
    int s = 0;
    while (s < g->nspec && g->spec[s].T != cf->T) s++;
    if (s == g->nspec) {
      g->spec[s].T = cf->T;
      g->spec[s].cfg = calloc((size_t)p->C, sizeof(int64_t));
      if (!g->spec[s].cfg) return RSSM_ERR_IO;
      g->nspec++;
    }
    g->batch_of[c] = s;
    g->row_cfg[c] = g->spec[s].C;
    g->spec[s].cfg[g->spec[s].C++] = c;
  }
  *cs = n_std;
  for (int s = 0; s < g->nspec; s++) {
    ce_spec_group *sg = &g->spec[s];
    const size_t rows = (size_t)(sg->C * p->K);
    sg->drafts = calloc(rows * (size_t)sg->T, sizeof(int64_t));
    sg->targets = calloc(rows * (size_t)sg->T, sizeof(int64_t));
    sg->accept = calloc(rows, sizeof(int));
    sg->met = calloc(rows * (size_t)sg->T, sizeof(mc_row_metrics));
    if (!sg->drafts || !sg->targets || !sg->accept || !sg->met) return RSSM_ERR_IO;
  }
  return RSSM_OK;
}

/* The device model and batches of g (host buffers allocated, groups planned). */
static int build_batch(cuda_engine *g, const rssm_engine_params *p, const model *m, int64_t cs,
                       char *err, size_t errlen) {
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
    for (int64_t c = 0; c < p->C; c++)
      if (g->batch_of[c] < 0) cfgs[g->row_cfg[c]] = p->configs[c];
    for (int64_t k = 0; k < p->K; k++) seqs[k] = (uint32_t)(p->offset + k);
    rc = mc_model_upload(m, &g->g, err, errlen);
  }
  if (rc == RSSM_OK && meminfo) {
    t_up = mono_s() - t0;
    if (mc_device_mem(&mem[2], &mem[1]) != 0) mem[2] = -1;
    t0 = mono_s();
  }
  if (rc == RSSM_OK) rc = check_fit(g, p, cs, err, errlen);
  /* lockstep rows feed positions 0..N-1 */
  if (rc == RSSM_OK)
    rc = mc_batch_build(&g->std, g->g, cfgs, (int)(1 + cs), (int)p->K, p->seed, seqs, p->N, err,
                        errlen);
  /* a spec row's round reaches T - 1 positions past its last committed token */
  for (int s = 0; rc == RSSM_OK && s < g->nspec; s++) {
    ce_spec_group *sg = &g->spec[s];
    for (int i = 0; i < sg->C; i++) cfgs[i] = p->configs[sg->cfg[i]];
    rc = mc_batch_build_spec(&sg->b, g->g, cfgs, sg->C, (int)p->K, p->seed, seqs, p->N + sg->T,
                             err, errlen);
  }
  if (rc == RSSM_OK && g->nspec > 0)
    rc = mc_ref_ring_build(&g->ring, g->g, (int)p->K, (int)g->ring_slots, err, errlen);
  if (rc == RSSM_OK && meminfo) {
    t_build = mono_s() - t0;
    if (mc_device_mem(&mem[3], &mem[1]) != 0) mem[3] = -1;
    report_memory(g, (int)((1 + cs) * p->K), p->N, mem, t_up, t_build);
  }
  /* one CUDA Graph per lockstep step (bit-identical to launching, checked on the H200);
   * RSSM_CUDA_GRAPH=0 launches kernel by kernel, for debugging and RSSM_CUDA_PROFILE. Spec
   * rounds are launched kernel by kernel. */
  const char *graph = getenv("RSSM_CUDA_GRAPH");
  if (rc == RSSM_OK && !(graph && strcmp(graph, "0") == 0)) mc_batch_use_graph(g->std, 1);
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
  int64_t tok_rows = 1;
  for (int64_t c = 0; c < p->C; c++)
    tok_rows += p->configs[c].strategy == SSM_SPEC ? p->configs[c].T : 1;
  if (p->K > 65535 / tok_rows) {
    snprintf(err, errlen, "%lld sequences x %lld token rows per window exceed 65535 rows",
             (long long)p->K, (long long)tok_rows);
    return RSSM_ERR_INPUT;
  }
  cuda_engine *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, errlen, "out of host memory");
    return RSSM_ERR_IO;
  }
  g->base.ops = &cuda_engine_ops;
  g->base.impl = g;
  g->configs = p->configs;
  g->seed = p->seed;
  g->K = p->K;
  g->C = p->C;
  g->N = p->N;
  g->offset = p->offset;
  g->Tmax = 1;
  const size_t pairs = (size_t)(p->K * p->C) + 1;
  g->batch_of = calloc((size_t)p->C + 1, sizeof(int64_t));
  g->row_cfg = calloc((size_t)p->C + 1, sizeof(int64_t));
  g->spec = calloc((size_t)p->C + 1, sizeof(ce_spec_group));
  g->x = calloc((size_t)MC_STEPS_MAX * (size_t)p->K, sizeof *g->x);
  g->y = calloc((size_t)MC_STEPS_MAX * (size_t)p->K, sizeof *g->y);
  g->met = calloc((size_t)MC_STEPS_MAX * (size_t)((p->C + 1) * p->K), sizeof *g->met);
  g->dead = calloc(pairs, 1);
  g->cursor = calloc(pairs, sizeof(int64_t));
  g->round = calloc(pairs, sizeof(uint32_t));
  int rc = g->batch_of && g->row_cfg && g->spec && g->x && g->y && g->met && g->dead &&
                   g->cursor && g->round
               ? RSSM_OK
               : RSSM_ERR_IO;
  int64_t cs = 0;
  if (rc == RSSM_OK) rc = plan_groups(g, p, &cs);
  if (rc != RSSM_OK) snprintf(err, errlen, "out of host memory");
  g->ring_slots = p->block + g->Tmax; /* a spec row lags by less than Tmax steps plus a block */
  if (rc == RSSM_OK) rc = build_batch(g, p, m, cs, err, errlen);
  if (rc != RSSM_OK) {
    ce_close(&g->base);
    return rc;
  }
  *out = &g->base;
  return RSSM_OK;
}

#endif
