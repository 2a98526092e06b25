/* Saving and restoring a sequence's decode state between steps (resume; see model.h): the
 * committed position, each SSM block's committed conv window (K-1 rows) and each attention
 * block's K/V rows 0..pos-1. The SSM engine states are not included: the caller saves them
 * through model_state_ssm() (src/ssm/ssm_snapshot.h), so that the engine's byte layout has one
 * owner. Host byte order: both ends run in the same build. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "src/model/model.h"

#define SNAP_TAG "RSSMMS01"

static int is_ssm(int kind) { return kind == BK_GDN || kind == BK_MAMBA2; }
static int is_attn(int kind) { return kind == BK_QATTN || kind == BK_NATTN; }

static int64_t conv_floats(const model_config *c, int kind) {
  if (kind == BK_GDN)
    return (c->gdn_kernel - 1) * (2 * c->gdn_hk * c->gdn_dk + c->gdn_hv * c->gdn_dv);
  return (c->m_kernel - 1) * (c->m_heads * c->m_head_dim + 2 * c->m_groups * c->m_state);
}

static int64_t body_bytes(const model_state *s, int64_t pos) {
  const model_config *c = &s->m->cfg;
  const int64_t kvd = c->n_kv_heads * c->head_dim;
  int64_t n = 0;
  for (int i = 0; i < s->m->nblocks; i++) {
    int k = s->m->blocks[i].kind;
    if (is_ssm(k)) n += conv_floats(c, k) * (int64_t)sizeof(float);
    if (is_attn(k)) n += 2 * pos * kvd * (int64_t)sizeof(float);
  }
  return n;
}

int64_t model_state_bytes(const model_state *s) {
  return 8 + 2 * (int64_t)sizeof(int64_t) + body_bytes(s, s->pos);
}

void model_state_save(const model_state *s, unsigned char *buf) {
  const model_config *c = &s->m->cfg;
  const int64_t kvd = c->n_kv_heads * c->head_dim;
  unsigned char *p = buf;
  memcpy(p, SNAP_TAG, 8);
  p += 8;
  int64_t hdr[2] = {s->pos, s->m->nblocks};
  memcpy(p, hdr, sizeof hdr);
  p += sizeof hdr;
  for (int i = 0; i < s->m->nblocks; i++) {
    int k = s->m->blocks[i].kind;
    const block_state *bs = &s->bs[i];
    if (is_ssm(k)) {
      size_t n = (size_t)conv_floats(c, k) * sizeof(float);
      memcpy(p, bs->conv_win, n);
      p += n;
    }
    if (is_attn(k)) {
      size_t n = (size_t)(s->pos * kvd) * sizeof(float);
      memcpy(p, bs->kcache, n);
      p += n;
      memcpy(p, bs->vcache, n);
      p += n;
    }
  }
}

int model_state_load(model_state *s, const unsigned char *buf, int64_t len, char *err,
                     size_t errlen) {
  const model_config *c = &s->m->cfg;
  const int64_t kvd = c->n_kv_heads * c->head_dim;
  int64_t hdr[2];
  if (len < 8 + (int64_t)sizeof hdr || memcmp(buf, SNAP_TAG, 8) != 0) {
    snprintf(err, errlen, "saved model state: bad tag or %" PRId64 " bytes (expected a %s "
             "snapshot)", len, SNAP_TAG);
    return RSSM_ERR_INPUT;
  }
  memcpy(hdr, buf + 8, sizeof hdr);
  if (hdr[1] != s->m->nblocks || hdr[0] < 0 || hdr[0] > s->max_ctx) {
    snprintf(err, errlen, "saved model state: %" PRId64 " blocks at position %" PRId64
             " (expected %d blocks and a position <= %" PRId64 ")", hdr[1], hdr[0],
             s->m->nblocks, s->max_ctx);
    return RSSM_ERR_INPUT;
  }
  if (len != 8 + (int64_t)sizeof hdr + body_bytes(s, hdr[0])) {
    snprintf(err, errlen, "saved model state: %" PRId64 " bytes (expected %" PRId64 " for "
             "position %" PRId64 ")", len, 8 + (int64_t)sizeof hdr + body_bytes(s, hdr[0]),
             hdr[0]);
    return RSSM_ERR_INPUT;
  }
  const unsigned char *p = buf + 8 + sizeof hdr;
  s->pos = hdr[0];
  for (int i = 0; i < s->m->nblocks; i++) {
    int k = s->m->blocks[i].kind;
    block_state *bs = &s->bs[i];
    if (is_ssm(k)) {
      size_t n = (size_t)conv_floats(c, k) * sizeof(float);
      memcpy(bs->conv_win, p, n);
      p += n;
    }
    if (is_attn(k)) {
      size_t n = (size_t)(s->pos * kvd) * sizeof(float);
      memcpy(bs->kcache, p, n);
      p += n;
      memcpy(bs->vcache, p, n);
      p += n;
    }
  }
  return RSSM_OK;
}

int model_state_ssm_count(const model_state *s) { return s->m->n_ssm; }

ssm_state *model_state_ssm(model_state *s, int i) {
  for (int b = 0; b < s->m->nblocks; b++)
    if (s->m->blocks[b].ssm_index == i) return &s->bs[b].eng;
  return NULL;
}
