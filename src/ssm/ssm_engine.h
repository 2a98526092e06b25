/* The SSM state engine, CPU reference: one SSM layer (Mamba-2 or GDN), one sequence, one state
 * strategy (SPEC sections 1, 2 and 4; docs/ssm-engine.md).
 *
 * Lifecycle: ssm_state_build / ssm_state_free. Operations:
 *   conventional, replay: ssm_step (one decode step: inputs -> o = S_t q_t)
 *   spec:                 ssm_verify (T drafts -> T outputs), then ssm_commit(a)
 *   replay, spec:         ssm_flush (fold the committed records into the checkpoint(s) now)
 * Every output is S_t q_t per head; Mamba-2 callers add D_h x_t themselves, GDN callers pass q
 * already scaled by dk^-1/2.
 *
 * Records live in a ring of L + T slots (T = 0 for replay). Record j = 1..h (committed) sits in
 * slot (base + j - 1) mod (L + T); a spec round's drafts sit at j = h+1..h+T; a flush folds
 * records 1..h into the checkpoint and moves base past them, so drafts stay where they are.
 *
 * Checkpoints are real storage blobs in the layout of quant/format.h: [H][bytes_per_matrix], one
 * [dv][dk] matrix per head, encoded with q_encode_cpu (fp32: a plain copy). `deq` holds their
 * decoded fp32 values, refreshed at every store, which is what every later step reads.
 *
 * The struct is public so that tests and the CUDA mirror can see the exact bytes; treat it as
 * read-only outside src/ssm. */
#ifndef RSSM_SSM_ENGINE_H
#define RSSM_SSM_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "quant/format.h"
#include "src/ssm/ssm_config.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { SSM_MAMBA2 = 0, SSM_GDN } ssm_kind;

/* One layer's shape. Value head h uses key group h / (H / G); G divides H.
 * Mamba-2: dv = head_dim, dk = d_state, G = n_groups. GDN: dv, dk = value/key head dims, G = Hk. */
typedef struct {
  ssm_kind kind;
  int H, dv, dk, G;
} ssm_dims;

/* Who the state belongs to: seeds the stochastic rounding (SPEC section 4). */
typedef struct {
  uint64_t seed;     /* the run's seed */
  uint32_t layer;    /* < 4096 */
  uint32_t sequence;
} ssm_ids;

/* n tokens of inputs (n = 1 for ssm_step, T for ssm_verify), token-major and contiguous. */
typedef struct {
  const float *alpha; /* [n][H]      decay in (0, 1] */
  const float *beta;  /* [n][H]      GDN write strength; NULL for Mamba-2 */
  const float *v;     /* [n][H][dv]  Mamba-2: dt * x; GDN: v */
  const float *k;     /* [n][G][dk]  Mamba-2: B; GDN: k (L2-normalised) */
  const float *q;     /* [n][G][dk]  Mamba-2: C; GDN: q (L2-normalised, times dk^-1/2) */
} ssm_inputs;

/* One stored checkpoint (or, for conventional, the stored state). */
typedef struct {
  qformat fmt;
  qlayout lay;          /* one head's [dv][dk] matrix */
  uint32_t stream;      /* QSR_STREAM_STATE, _HP or _LP */
  unsigned char *blob;  /* [H][lay.bytes_per_matrix] */
  float *deq;           /* [H][dv][dk] decoded blob */
} ssm_ckpt;

typedef struct {
  ssm_config cfg;
  ssm_dims dims;
  ssm_ids ids;

  /* ring of records, slot-major; x is v for Mamba-2 and u for GDN */
  int cap;            /* L + T (replay: L; conventional: 0) */
  int base;           /* slot of record 1 */
  int h;              /* committed records since the last flush */
  int pending;        /* spec: drafts verified and not yet committed (0 or T) */
  float *rec_alpha;   /* [cap][H] */
  float *rec_beta;    /* [cap][H]      GDN only */
  float *rec_x;       /* [cap][H][dv] */
  float *rec_v;       /* [cap][H][dv]  GDN only: v, kept for the HP recompute of u */
  float *rec_k;       /* [cap][G][dk] */

  /* main: conventional state, shared checkpoint, or C_hp; lp: C_lp (split only) */
  ssm_ckpt main, lp;
  uint64_t *matrix_id; /* [H] qsr_matrix_id(layer, head, sequence) */
  uint32_t *event;     /* [H] quantisation events so far (stores or flushes) */

  uint64_t nflush;     /* flushes (replay, spec) or stores (conventional) so far */
  int flushed;         /* 1 when the last step/verify/flush stored the checkpoint(s) */

  /* Appendix F counters, per head and output-only readout (non-flush steps, drafts, GDN u):
   * readouts done, and those of them that skipped the checkpoint (cfg.skip; always 0 without). */
  uint64_t ckpt_reads, ckpt_skips;

  /* scratch */
  float *S;            /* [H][dv][dk] materialised state */
  float *w;            /* [cap+1] decay weights of one head */
  float *coef;         /* [cap] readout coefficients of one head */
  float *dots;         /* [G][cap] k_j . y per group */
  float *alpha_tmp;    /* [cap] one head's alphas in record order */
  float *otmp;         /* [H][dv] */
  const float **xs;    /* [cap] record x vectors of one head */
} ssm_state;

/* Allocates and zeroes the state (S_0 = 0, stored as Q_F(0) without an SR event). Returns 0, or
 * -1 with a one-line reason (bad dims, H not a multiple of G, out of memory, a strategy field
 * outside its range). On failure nothing needs freeing. */
int ssm_state_build(ssm_state *st, const ssm_config *cfg, const ssm_dims *dims,
                    const ssm_ids *ids, char *err, size_t errlen);
void ssm_state_free(ssm_state *st);

/* One standard decode step (conventional, replay): o [H][dv] = S_t q_t. Returns 0, or -1 when
 * called on a spec state or when inputs are missing. */
int ssm_step(ssm_state *st, const ssm_inputs *in, float *o /* [H][dv] */);

/* One spec round's verification: drafts n = T; o [T][H][dv]. Flushes first when h + T > L.
 * Returns 0, or -1 when not spec or a previous round is not committed. */
int ssm_verify(ssm_state *st, const ssm_inputs *drafts, float *o /* [T][H][dv] */);

/* The same with this round's own number of drafts, 0 <= T <= cfg.T (drafts and o hold T tokens):
 * the flush test is h + T > L and commit accepts 1..T, so the row behaves exactly as a state
 * configured with that T. T = 0 leaves the state untouched (bit for bit: no record, no flush, no
 * change to `flushed`) and pending stays 0, so no commit follows. Returns 0, or -1 as ssm_verify
 * (and for T outside [0, cfg.T]). */
int ssm_verify_n(ssm_state *st, const ssm_inputs *drafts, int T, float *o /* [T][H][dv] */);

/* Accept the first a drafts of the last verification (1 <= a <= T): h += a. Returns 0 or -1. */
int ssm_commit(ssm_state *st, int a);

/* Fold the committed records into the checkpoint(s) now (replay, spec; a no-op when h == 0 or
 * for conventional). Drafts awaiting commit stay in the ring. */
void ssm_flush(ssm_state *st);

/* The index of the ring slot that holds record j (1-based, relative to the last flush). */
static inline int ssm_slot(const ssm_state *st, int j) { return (st->base + j - 1) % st->cap; }

#ifdef __cplusplus
}
#endif
#endif
