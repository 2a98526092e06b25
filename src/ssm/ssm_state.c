/* Lifecycle of an SSM state (build/free), its checkpoint stores, and writes into the ring. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/errbuf.h"
#include "quant/quant.h"
#include "src/ssm/ssm_internal.h"

static void *zalloc(size_t n, size_t size, int *oom) {
  if (n == 0) n = 1;
  void *p = calloc(n, size);
  if (!p) *oom = 1;
  return p;
}

/* Allocate one checkpoint's blob and decoded copy, and store Q_F(0) into it with round-to-nearest
 * (zero is on every grid, so no SR bits and no event are needed for the initial state). */
static int ckpt_init(ssm_ckpt *c, const qformat *f, uint32_t stream, const ssm_dims *d,
                     char *err, size_t errlen) {
  c->fmt = *f;
  c->stream = stream;
  if (qlayout_of(f, d->dv, d->dk, &c->lay) != 0)
    return rssm_fail(err, errlen, "no storage layout for a %d x %d matrix", d->dv, d->dk);
  size_t nelem = (size_t)d->H * (size_t)d->dv * (size_t)d->dk;
  int oom = 0;
  c->blob = zalloc((size_t)d->H, (size_t)c->lay.bytes_per_matrix, &oom);
  c->deq = zalloc(nelem, sizeof(float), &oom);
  float *zeros = zalloc(nelem, sizeof(float), &oom);
  if (oom) {
    free(zeros);
    return rssm_fail(err, errlen, "out of memory for a checkpoint");
  }
  qformat rtn = *f;
  rtn.rounding = QR_RTN;
  q_encode_cpu(&rtn, &c->lay, d->H, zeros, c->blob, NULL);
  q_decode_cpu(f, &c->lay, d->H, c->blob, c->deq);
  free(zeros);
  return 0;
}

static void ckpt_free(ssm_ckpt *c) {
  free(c->blob);
  free(c->deq);
  c->blob = NULL;
  c->deq = NULL;
}

int ssm_state_build(ssm_state *st, const ssm_config *cfg, const ssm_dims *dims,
                    const ssm_ids *ids, char *err, size_t errlen) {
  memset(st, 0, sizeof *st);
  const ssm_dims *d = dims;
  if (d->kind != SSM_MAMBA2 && d->kind != SSM_GDN)
    return rssm_fail(err, errlen, "unknown SSM kind");
  if (d->H < 1 || d->dv < 1 || d->dk < 1 || d->G < 1)
    return rssm_fail(err, errlen, "dims must be positive (H=%d dv=%d dk=%d G=%d)", d->H, d->dv,
                     d->dk, d->G);
  if (d->H % d->G != 0)
    return rssm_fail(err, errlen, "H=%d is not a multiple of the key groups G=%d", d->H, d->G);
  if (d->H > 65536 || ids->layer >= 4096)
    return rssm_fail(err, errlen, "head (%d) or layer (%u) outside the SR matrix-id range", d->H,
                     ids->layer);
  if (cfg->strategy != SSM_CONVENTIONAL && cfg->L < 1)
    return rssm_fail(err, errlen, "L=%d < 1", cfg->L);
  if (cfg->strategy == SSM_SPEC && (cfg->T < 1 || cfg->T > cfg->L))
    return rssm_fail(err, errlen, "T=%d outside [1, L=%d]", cfg->T, cfg->L);

  st->cfg = *cfg;
  st->dims = *d;
  st->ids = *ids;
  /* Conventional uses one slot as the scratch record of its step, so that every path folds
   * records through the same code. */
  st->cap = cfg->strategy == SSM_CONVENTIONAL ? 1
            : cfg->strategy == SSM_REPLAY     ? cfg->L
                                              : cfg->L + cfg->T;
  size_t H = (size_t)d->H, dv = (size_t)d->dv, dk = (size_t)d->dk, G = (size_t)d->G;
  size_t cap = (size_t)st->cap;
  int gdn = d->kind == SSM_GDN, oom = 0;
  st->rec_alpha = zalloc(cap * H, sizeof(float), &oom);
  st->rec_x = zalloc(cap * H * dv, sizeof(float), &oom);
  st->rec_k = zalloc(cap * G * dk, sizeof(float), &oom);
  if (gdn) {
    st->rec_beta = zalloc(cap * H, sizeof(float), &oom);
    st->rec_v = zalloc(cap * H * dv, sizeof(float), &oom);
  }
  st->matrix_id = zalloc(H, sizeof(uint64_t), &oom);
  st->event = zalloc(H, sizeof(uint32_t), &oom);
  st->S = zalloc(H * dv * dk, sizeof(float), &oom);
  st->w = zalloc(cap + 1, sizeof(float), &oom);
  st->coef = zalloc(cap, sizeof(float), &oom);
  st->dots = zalloc(G * cap, sizeof(float), &oom);
  st->alpha_tmp = zalloc(cap, sizeof(float), &oom);
  st->otmp = zalloc(H * dv, sizeof(float), &oom);
  st->xs = zalloc(cap, sizeof(const float *), &oom);
  if (oom) {
    ssm_state_free(st);
    return rssm_fail(err, errlen, "out of memory for the SSM state");
  }
  for (size_t hd = 0; hd < H; hd++)
    st->matrix_id[hd] = qsr_matrix_id(ids->layer, (uint32_t)hd, ids->sequence);

  int rc;
  if (cfg->strategy == SSM_CONVENTIONAL) {
    rc = ckpt_init(&st->main, &cfg->state, QSR_STREAM_STATE, d, err, errlen);
  } else if (!cfg->split) {
    rc = ckpt_init(&st->main, &cfg->ckpt, QSR_STREAM_STATE, d, err, errlen);
  } else {
    rc = ckpt_init(&st->main, &cfg->hp, QSR_STREAM_HP, d, err, errlen);
    if (rc == 0) rc = ckpt_init(&st->lp, &cfg->lp, QSR_STREAM_LP, d, err, errlen);
  }
  if (rc != 0) {
    ssm_state_free(st);
    return -1;
  }
  return 0;
}

void ssm_state_free(ssm_state *st) {
  if (!st) return;
  /* Measurement aid (Appendix F): RSSM_SSM_SKIP_STATS set and non-empty prints the readout
   * counters of every replay/spec state on stderr when it is freed, one line each. */
  const char *stats = getenv("RSSM_SSM_SKIP_STATS");
  if (stats && *stats && st->cfg.strategy != SSM_CONVENTIONAL && st->rec_alpha)
    fprintf(stderr, "ssm-skip layer=%u sequence=%u H=%d reads=%llu skipped=%llu config=%s\n",
            st->ids.layer, st->ids.sequence, st->dims.H, (unsigned long long)st->ckpt_reads,
            (unsigned long long)st->ckpt_skips, st->cfg.name);
  free(st->rec_alpha);
  free(st->rec_beta);
  free(st->rec_x);
  free(st->rec_v);
  free(st->rec_k);
  ckpt_free(&st->main);
  ckpt_free(&st->lp);
  free(st->matrix_id);
  free(st->event);
  free(st->S);
  free(st->w);
  free(st->coef);
  free(st->dots);
  free(st->alpha_tmp);
  free(st->otmp);
  free((void *)st->xs);
  memset(st, 0, sizeof *st);
}

static void ckpt_store(ssm_state *st, ssm_ckpt *c, const float *S) {
  qsr_params sr = {st->ids.seed, st->matrix_id, st->event, c->stream};
  q_encode_cpu(&c->fmt, &c->lay, st->dims.H, S, c->blob, &sr);
  q_decode_cpu(&c->fmt, &c->lay, st->dims.H, c->blob, c->deq);
}

void ssm_store(ssm_state *st, const float *S) {
  /* C_hp and C_lp come from the same fp32 S with the same event index, on their own streams. */
  ckpt_store(st, &st->main, S);
  if (st->cfg.split) ckpt_store(st, &st->lp, S);
  for (int hd = 0; hd < st->dims.H; hd++) st->event[hd]++;
  st->nflush++;
  st->flushed = 1;
}

void ssm_write_record(ssm_state *st, int j, const ssm_inputs *in, int t) {
  const ssm_dims *d = &st->dims;
  size_t slot = (size_t)ssm_slot(st, j);
  size_t H = (size_t)d->H, hv = H * (size_t)d->dv, gk = (size_t)d->G * (size_t)d->dk;
  memcpy(st->rec_alpha + slot * H, in->alpha + (size_t)t * H, H * sizeof(float));
  memcpy(st->rec_k + slot * gk, in->k + (size_t)t * gk, gk * sizeof(float));
  if (d->kind == SSM_GDN) {
    memcpy(st->rec_beta + slot * H, in->beta + (size_t)t * H, H * sizeof(float));
    memcpy(st->rec_v + slot * hv, in->v + (size_t)t * hv, hv * sizeof(float));
  } else {
    memcpy(st->rec_x + slot * hv, in->v + (size_t)t * hv, hv * sizeof(float));
  }
}
