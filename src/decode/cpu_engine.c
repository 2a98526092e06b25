/* The CPU lockstep engine (engine.h, cpu_engine_open): one decoder per window under the
 * reference and one per (window, configuration) pair. A block runs in parallel phases on the
 * engine's threads: first every window's reference decodes the block, then every pair decodes it
 * against the reference's log-probabilities (or, for models that step decoders together, groups
 * of windows advance in one call per step; plan_phases). Each work item writes only its own
 * rows (cpu_engine_items.c), so results do not depend on the thread count or the block size. A
 * spec pair plays whole rounds: a round whose accepted drafts would pass the block's end waits
 * for the next block, whose reference rows keep the last Tmax - 1 rows of this one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/decode/cpu_engine_internal.h"
#include "src/decode/parallel.h"
#include "src/io/status.h"

static void ce_close(rssm_engine *e) {
  if (!e) return;
  cpu_engine *g = e->impl;
  if (g->ref)
    for (int64_t k = 0; k < g->K; k++) rssm_decoder_free(g->ref[k]);
  if (g->dec)
    for (int64_t i = 0; i < g->K * g->C; i++) rssm_decoder_free(g->dec[i]);
  void *bufs[] = {g->ref,    g->dec,  g->reflp,          g->refam,     g->cursor,
                  g->round,  g->dead, g->scratch_logits, g->scratch_lp};
  for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
  free(g);
}

/* Before block [b0, b1): keep the reference rows a lagging spec pair may still need (steps
 * [b0 - (Tmax-1), b0)) at the front of the row buffers. */
static void keep_reference_rows(cpu_engine *g, int64_t b0, int64_t b1) {
  int64_t keep = g->Tmax - 1 < b0 ? g->Tmax - 1 : b0;
  if (keep > g->nrows) keep = g->nrows;
  int64_t from = b0 - keep - g->base; /* row of the first kept step */
  for (int64_t k = 0; k < g->K && from > 0 && keep > 0; k++) {
    float *lp = g->reflp + (size_t)k * (size_t)g->rows * (size_t)g->V;
    int64_t *am = g->refam + (size_t)k * (size_t)g->rows;
    memmove(lp, lp + (size_t)from * (size_t)g->V, (size_t)keep * (size_t)g->V * sizeof(float));
    memmove(am, am + from, (size_t)keep * sizeof(int64_t));
  }
  g->base = b0 - keep;
  g->nrows = keep + (b1 - b0);
}

/* One block: the references and pairs in parallel phases (plan_phases). */
static int ce_block(rssm_engine *e, const int64_t *tok, int64_t t0, int64_t t1,
                    const rssm_engine_out *out, int64_t *done, char *err, size_t errlen) {
  cpu_engine *g = e->impl;
  keep_reference_rows(g, t0, t1);
  cpu_block_ctx p;
  memset(&p, 0, sizeof p);
  p.g = g;
  p.tok = tok;
  p.out = out;
  p.b0 = t0;
  p.b1 = t1;
  int rc;
  if (g->parts > 1) {
    rc = parallel_for(g->K, g->threads, cpu_ref_item, &p);
    if (rc == RSSM_OK) rc = parallel_for(g->K * g->parts, g->threads, cpu_group_item, &p);
    p.spec_only = 1;
  } else if (g->group > 0) {
    rc = parallel_for((g->K + g->group - 1) / g->group, g->threads, cpu_group_item, &p);
    p.spec_only = 1;
  } else {
    rc = parallel_for(g->K, g->threads, cpu_ref_item, &p);
  }
  if (rc == RSSM_OK) rc = parallel_for(g->K * g->C, g->threads, cpu_pair_item, &p);
  if (rc != RSSM_OK) {
    snprintf(err, errlen, "%s", p.err);
    return rc;
  }
  /* spec pairs may lag behind t1 by less than a round */
  int64_t m = t1;
  for (int64_t i = 0; i < g->K * g->C; i++)
    if (g->cursor[i] < m) m = g->cursor[i];
  *done = m;
  return RSSM_OK;
}

static const rssm_engine_ops cpu_engine_ops = {ce_block, cpu_engine_state_bytes, cpu_engine_save,
                                               cpu_engine_load, ce_close};

/* How the phases cut the work (g->group, g->parts) and their scratch buffers. Models that step
 * decoders together (step_many) get one work item per group of sequences: all references and
 * non-spec pairs of the group advance in one call per step, so the CPU runtime reads each
 * weight once per step for all of them. Groups: as few as keep every thread busy (ceil(K /
 * threads) sequences), at most 64 decoders per call. With fewer sequences than threads, the
 * references run first (ref_item) and each sequence's configurations are cut into
 * ceil(threads / K) parts, one item each. Results never depend on the grouping
 * (tests/driver/test_run_hf.c). */
static int plan_phases(cpu_engine *g, char *err, size_t errlen) {
  const char *unb = getenv("RSSM_RUN_UNBATCHED"); /* tests: the one-decoder-at-a-time path */
  if (g->m->ops->step_many && !(unb && unb[0] == '1')) {
    int64_t n = (g->K + g->threads - 1) / g->threads;
    int64_t gmax = 64 / (g->C + 1) > 0 ? 64 / (g->C + 1) : 1;
    const char *ge = getenv("RSSM_RUN_GROUP"); /* tests and measurements: sequences per group */
    if (ge && atol(ge) > 0) n = gmax = atol(ge);
    g->group = (int)(n < gmax ? n : gmax);
    if (g->K < g->threads && g->C > 1 && !(ge && atol(ge) > 0)) {
      int64_t parts = (g->threads + g->K - 1) / g->K;
      g->group = 1;
      g->parts = (int)(parts < g->C ? parts : g->C);
    }
  }
  size_t per_thread = (size_t)g->Tmax;
  if ((size_t)g->group * (size_t)(g->C + 1) > per_thread)
    per_thread = (size_t)g->group * (size_t)(g->C + 1);
  g->scratch_logits = malloc((size_t)g->threads * per_thread * (size_t)g->V * sizeof(float));
  g->scratch_lp = malloc((size_t)g->threads * (size_t)g->V * sizeof(float));
  if (!g->scratch_logits || !g->scratch_lp) {
    snprintf(err, errlen, "out of memory for %d threads' scratch", g->threads);
    return RSSM_ERR_IO;
  }
  return RSSM_OK;
}

/* Every window's reference decoder, then its pairs'; *failed as cpu_engine_open's. */
static int open_decoders(cpu_engine *g, const rssm_engine_params *p, int *failed, char *err,
                         size_t errlen) {
  for (int64_t k = 0; k < g->K; k++) {
    rssm_decoder_params dp = {p->reference, p->seed, (uint32_t)(p->offset + k),
                              g->N + g->Tmax};
    *failed = -1;
    int rc = rssm_decoder_open(g->m, &dp, &g->ref[k], err, errlen);
    if (rc == RSSM_OK && g->ref[k]->T != 0) {
      snprintf(err, errlen, "the reference must not be a spec configuration");
      rc = RSSM_ERR_INPUT;
    }
    if (rc != RSSM_OK) return rc;
    for (int64_t c = 0; c < g->C; c++) {
      dp.cfg = &p->configs[c];
      *failed = (int)c;
      rc = rssm_decoder_open(g->m, &dp, &g->dec[k * g->C + c], err, errlen);
      if (rc != RSSM_OK) return rc;
    }
  }
  *failed = -2;
  return RSSM_OK;
}

int cpu_engine_open(const rssm_engine_params *p, rssm_engine **out, int *failed, char *err,
                    size_t errlen) {
  *out = NULL;
  *failed = -2;
  cpu_engine *g = calloc(1, sizeof *g);
  if (!g) {
    snprintf(err, errlen, "out of memory");
    return RSSM_ERR_IO;
  }
  *g = (cpu_engine){.engine = {&cpu_engine_ops, g},
                    .m = p->m,
                    .configs = p->configs,
                    .seed = p->seed,
                    .offset = p->offset,
                    .V = p->m->vocab,
                    .N = p->N,
                    .K = p->K,
                    .C = p->C,
                    .threads = p->threads > 0 ? p->threads : 1,
                    .progress = p->progress,
                    .progress_ctx = p->progress_ctx};
  g->Tmax = 1;
  for (int64_t c = 0; c < p->C; c++)
    if (p->configs[c].strategy == SSM_SPEC && p->configs[c].T > g->Tmax) g->Tmax = p->configs[c].T;
  g->rows = p->block + g->Tmax - 1;
  size_t KC = (size_t)(g->K * g->C);
  g->ref = calloc((size_t)g->K, sizeof *g->ref);
  g->dec = calloc(KC + 1, sizeof *g->dec);
  g->reflp = malloc((size_t)g->K * (size_t)g->rows * (size_t)g->V * sizeof(float));
  g->refam = calloc((size_t)(g->K * g->rows), sizeof(int64_t));
  g->cursor = calloc(KC + 1, sizeof(int64_t));
  g->round = calloc(KC + 1, sizeof(uint32_t));
  g->dead = calloc(KC + 1, 1);
  int rc = RSSM_OK;
  if (!g->ref || !g->dec || !g->reflp || !g->refam || !g->cursor || !g->round || !g->dead) {
    snprintf(err, errlen, "out of memory setting up %lld sequences", (long long)g->K);
    rc = RSSM_ERR_IO;
  }
  if (rc == RSSM_OK) rc = open_decoders(g, p, failed, err, errlen);
  if (rc == RSSM_OK) rc = plan_phases(g, err, errlen);
  if (rc != RSSM_OK) {
    ce_close(&g->engine);
    return rc;
  }
  /* Each work item decodes whole (sequence, configuration) pairs, so with two or more threads
   * the CPU model's own matrix-vector threads would only oversubscribe the cores (and start a
   * thread per product). Results do not depend on either count. */
  rssm_model_set_threads(p->m, g->threads > 1 ? 1 : 2);
  *out = &g->engine;
  return RSSM_OK;
}
