/* The engine's operations: step (conventional, replay), verify and commit (spec), flush.
 * SPEC section 2 is the contract; docs/ssm-engine.md walks through each path. */
#include <string.h>

#include "src/ssm/ssm_internal.h"

/* The checkpoint that non-flush steps read: C_lp when split, else the shared one. */
static const float *read_ckpt(const ssm_state *st) {
  return st->cfg.split ? st->lp.deq : st->main.deq;
}

/* From which record on a flush recomputes GDN u from the materialised S: all committed records
 * for split with gdn_u=recompute (their stored u came from the LP path); none otherwise (shared:
 * the stored u came from this same checkpoint; cached: the ablation keeps them). */
static int recompute_from(const ssm_state *st, int n_committed) {
  if (st->cfg.split && st->cfg.gdn_u == SSM_GDN_U_RECOMPUTE) return 1;
  return n_committed + 1;
}

/* Fold records 1..h onto the flush's source checkpoint (C_hp or the shared one) into st->S,
 * store the checkpoint(s), and drop the folded records. */
static void flush_committed(ssm_state *st) {
  ssm_materialise(st, st->main.deq, st->h, recompute_from(st, st->h), st->S);
  ssm_store(st, st->S);
  st->base = (st->base + st->h) % st->cap;
  st->h = 0;
}

static int inputs_ok(const ssm_state *st, const ssm_inputs *in, const float *o) {
  if (!in || !o || !in->alpha || !in->v || !in->k || !in->q) return 0;
  return st->dims.kind != SSM_GDN || in->beta != NULL;
}

int ssm_step(ssm_state *st, const ssm_inputs *in, float *o) {
  if (st->cfg.strategy == SSM_SPEC || !inputs_ok(st, in, o)) return -1;
  st->flushed = 0;
  if (st->cfg.strategy == SSM_CONVENTIONAL) {
    /* S = deq(stored); fold this token (GDN: u from that S); output; store Q_F(S). The one ring
     * slot holds the token as record 1. */
    ssm_write_record(st, 1, in, 0);
    ssm_materialise(st, st->main.deq, 1, 1, st->S);
    ssm_output_from_state(st, st->S, in->q, o);
    ssm_store(st, st->S);
    return 0;
  }
  const int j = st->h + 1;
  ssm_write_record(st, j, in, 0);
  if (j < st->cfg.L) {
    /* Non-flush step, output-only: the checkpoint is read once per row, no state is formed.
     * GDN first needs u_j = beta (v - alpha S_{j-1} k_j) from the same readout. */
    const float *C = read_ckpt(st);
    if (st->dims.kind == SSM_GDN) ssm_gdn_u_readout(st, C, j);
    st->h = j;
    ssm_readout(st, C, j, in->q, o);
    return 0;
  }
  /* Flush step (h reaches L): rebuild S from the flush source with all j records (GDN: the new
   * record's u always comes from this S), output from it, store. */
  ssm_materialise(st, st->main.deq, j, recompute_from(st, j - 1), st->S);
  ssm_output_from_state(st, st->S, in->q, o);
  st->h = j;
  ssm_store(st, st->S);
  st->base = (st->base + st->h) % st->cap;
  st->h = 0;
  return 0;
}

int ssm_verify(ssm_state *st, const ssm_inputs *drafts, float *o) {
  return ssm_verify_n(st, drafts, st->cfg.T, o);
}

int ssm_verify_n(ssm_state *st, const ssm_inputs *drafts, int T, float *o) {
  if (st->cfg.strategy != SSM_SPEC || st->pending != 0 || T < 0 || T > st->cfg.T) return -1;
  /* A round without drafts is no operation at all: nothing is read, written, flushed or counted
   * (not even `flushed` is cleared), so a batch can carry rows that verify nothing this round. */
  if (T == 0) return 0;
  if (!inputs_ok(st, drafts, o)) return -1;
  const ssm_dims *d = &st->dims;
  const size_t gk = (size_t)d->G * d->dk, hv = (size_t)d->H * d->dv;
  st->flushed = 0;
  /* Drafts go to records h+1..h+T; a flush below moves base past the committed ones only. The
   * ring has L + cfg.T slots and h + T <= L after the flush test, so T <= cfg.T drafts fit. */
  for (int s = 0; s < T; s++) ssm_write_record(st, st->h + 1 + s, drafts, s);
  const float *C;
  if (st->h + T > st->cfg.L) {
    /* Appendix D.1: fold the committed records first, so that the ring never wraps onto
     * uncommitted data; the drafts' outputs then read the fp32 S that the flush just built (as
     * Algorithm 3 reads C_hp on flush rounds). The test uses this round's T, so a row verifying
     * T drafts behaves exactly as a state configured with that T. */
    flush_committed(st);
    C = st->S;
  } else {
    C = read_ckpt(st);
  }
  /* GDN: the draft u's solve the unit upper-triangular system of Appendix B.3 by forward
   * substitution: draft s needs S_{h+s-1} k_{h+s}, which involves the u of drafts 1..s-1. */
  if (d->kind == SSM_GDN)
    for (int s = 1; s <= T; s++) ssm_gdn_u_readout(st, C, st->h + s);
  for (int s = 1; s <= T; s++)
    ssm_readout(st, C, st->h + s, drafts->q + (size_t)(s - 1) * gk, o + (size_t)(s - 1) * hv);
  st->pending = T;
  return 0;
}

int ssm_commit(ssm_state *st, int a) {
  if (st->cfg.strategy != SSM_SPEC || st->pending == 0 || a < 1 || a > st->pending) return -1;
  /* Rejected drafts stay in their slots and are overwritten by the next round. */
  st->h += a;
  st->pending = 0;
  return 0;
}

void ssm_flush(ssm_state *st) {
  st->flushed = 0;
  if (st->cfg.strategy == SSM_CONVENTIONAL || st->h == 0) return;
  flush_committed(st);
}
