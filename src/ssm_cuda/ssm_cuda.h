/* The SSM state engine on the GPU: B sequences and the H heads of one SSM layer (Mamba-2 or GDN),
 * every strategy of SPEC section 2, bit for bit the arithmetic of the CPU reference in src/ssm
 * (docs/ssm-cuda.md).
 *
 * Lifecycle: ssm_cuda_build / ssm_cuda_free. Operations, one launch sequence each, all rows at
 * once, asynchronous on a caller's stream and free of host round trips (capturable in a CUDA
 * Graph):
 *   conventional, replay: ssm_cuda_step   (one decode step per row)
 *   spec:                 ssm_cuda_verify (T drafts per row), then ssm_cuda_commit (a per row)
 *   replay, spec:         ssm_cuda_flush  (fold the committed records now)
 * Each operation takes an `active` row mask (device, [B], nonzero = active; NULL = all rows): an
 * inactive row does nothing at all, so rows can be desynchronised. A row's flush decision is made
 * on the device from its own h (Appendix D.2): rows reach their flush at different steps.
 *
 * Every row behaves exactly as one CPU ssm_state (same config, dims, ids {seed, layer,
 * sequences[b]}) fed the same calls: same outputs, same checkpoint bytes, same h, base and
 * quantisation events.
 *
 * All input/output arrays of the operations are device pointers, row-major [B][n][...]:
 * row b's slice is laid out exactly as ssm_inputs (n = 1 for a step, T for a verification). */
#ifndef RSSM_SSM_CUDA_H
#define RSSM_SSM_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "quant/format.h"
#include "src/ssm/ssm_config.h"
#include "src/ssm/ssm_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Device inputs of one operation for all B rows (n tokens per row). */
typedef struct {
  const float *alpha; /* [B][n][H]      decay in (0, 1] */
  const float *beta;  /* [B][n][H]      GDN write strength; NULL for Mamba-2 */
  const float *v;     /* [B][n][H][dv]  Mamba-2: dt * x; GDN: v */
  const float *k;     /* [B][n][G][dk]  Mamba-2: B; GDN: k (L2-normalised) */
  const float *q;     /* [B][n][G][dk]  Mamba-2: C; GDN: q (L2-normalised, times dk^-1/2) */
} ssm_cuda_inputs;

/* One stored checkpoint of all rows and heads, in its storage format (quant/format.h). */
typedef struct {
  qformat fmt;
  qlayout lay;          /* one head's [dv][dk] matrix */
  uint32_t stream;      /* QSR_STREAM_STATE, _HP or _LP */
  unsigned char *blob;  /* device [B][H][lay.bytes_per_matrix] */
} ssm_cuda_ckpt;

/* The batched device state. Public so that tests can see it; treat it as read-only. */
typedef struct {
  ssm_config cfg;
  ssm_dims dims;
  int B;
  uint64_t seed;
  uint32_t layer;
  int cap;              /* ring slots per row: L + T (spec), L (replay), 1 (conventional) */

  /* per-row bookkeeping (device), the CPU ssm_state's scalars */
  int *base;            /* [B] slot of record 1 */
  int *h;               /* [B] committed records since the last flush */
  int *pending;         /* [B] spec: drafts verified and not yet committed (0 or T) */
  int *flushed;         /* [B] 1 when the row's last operation stored its checkpoint(s) */
  int *flag;            /* [B] the current operation's plan: 0 idle, 1 non-flush, 2 flush */
  int *misuse;          /* [B] count of calls the row refused (e.g. step on a spec row) */
  int *ndraft;          /* [B] drafts of the row's last planned verification (0..T) */
  uint64_t *nflush;     /* [B] flushes (replay, spec) or stores (conventional) */
  uint32_t *event;      /* [B][H] quantisation events so far */
  uint64_t *matrix_id;  /* [B][H] qsr_matrix_id(layer, head, sequences[b]) */

  /* ring of records (device), slot-major per row; x is v for Mamba-2 and u for GDN */
  float *rec_alpha;     /* [B][cap][H] */
  float *rec_beta;      /* [B][cap][H]      GDN only */
  float *rec_x;         /* [B][cap][H][dv] */
  float *rec_v;         /* [B][cap][H][dv]  GDN only */
  float *rec_k;         /* [B][cap][G][dk] */

  /* main: conventional state, shared checkpoint, or C_hp; lp: C_lp (split only) */
  ssm_cuda_ckpt main, lp;

  /* scratch: the fp32 state materialised by a flush (only flush rows touch it) */
  float *S;             /* [B][H][dv][dk] */
  /* pre3 -> ro4: the readout's record coefficients per query, c_j at j < n and w_0 at cap
     (replay and spec) */
  float *coefs;         /* [B][H][nq_max][cap + 1] */
  int nq_max;           /* readout queries of the largest operation: (spec ? T : 1) x (GDN ? 2 : 1) */
  size_t smem_optin;    /* the device's opt-in shared memory per block */
  int num_sms;          /* the device's multiprocessors (ro4's rows per batch on small grids) */
} ssm_cuda_state;

/* Allocates the device state, every row S_0 = 0 stored as Q_F(0) (as ssm_state_build).
 * sequences: host [B]. Returns 0, or -1 with a one-line reason (bad dims, dk > 256, ring or
 * drafts too large for shared memory, no CUDA device, out of memory). On failure nothing needs
 * freeing. Synchronous. */
int ssm_cuda_build(ssm_cuda_state *st, const ssm_config *cfg, const ssm_dims *dims, int B,
                   uint64_t seed, uint32_t layer, const uint32_t *sequences /* host [B] */,
                   char *err, size_t errlen);
void ssm_cuda_free(ssm_cuda_state *st);

/* One standard decode step (conventional, replay). o: device [B][H][dv] = S_t q_t per row;
 * inactive rows' outputs are left untouched. Returns 0, or -1 (spec state, missing inputs). */
int ssm_cuda_step(ssm_cuda_state *st, const ssm_cuda_inputs *in /* n = 1 */,
                  const uint8_t *active /* device [B] or NULL */, float *o /* [B][H][dv] */,
                  void *stream /* cudaStream_t */);

/* One spec round's verification of T drafts per active row: o device [B][T][H][dv]. A row with
 * h + T > L flushes its committed records first. Returns 0, or -1 (not spec, missing inputs). */
int ssm_cuda_verify(ssm_cuda_state *st, const ssm_cuda_inputs *drafts /* n = T */,
                    const uint8_t *active, float *o /* [B][T][H][dv] */, void *stream);

/* The same with each row's own number of drafts n[b] in 0..T (device [B]; NULL = T for every
 * row), as ssm_verify_n: the drafts keep the stride T ([B][T][...], row b uses its first n[b]
 * tokens) and row b writes o[b][0..n[b]-1] only. A row with n[b] = 0 does nothing at all (its
 * state, `flushed` included, stays as it was) and then commits a[b] = 0. n[b] outside [0, T]
 * counts a misuse and leaves the row idle. */
int ssm_cuda_verify_n(ssm_cuda_state *st, const ssm_cuda_inputs *drafts /* n = T */,
                      const int *n /* device [B] or NULL */, const uint8_t *active,
                      float *o /* [B][T][H][dv] */, void *stream);

/* Accept the first a[b] drafts of each active row's last verification (1 <= a[b] <= its drafts):
 * h += a. a: device [B]. a[b] = 0 on a row with nothing pending (a verification of 0 drafts) does
 * nothing; any other row without a pending verification or with a out of range counts a misuse. */
int ssm_cuda_commit(ssm_cuda_state *st, const int *a /* device [B] */, const uint8_t *active,
                    void *stream);

/* Fold each active row's committed records into its checkpoint(s) now (replay, spec; rows with
 * h == 0 and conventional states do nothing). */
int ssm_cuda_flush(ssm_cuda_state *st, const uint8_t *active, void *stream);

/* One row's state, for comparison with a CPU ssm_state. */
typedef struct {
  int h, base, pending, flushed, misuse;
  uint64_t nflush;
} ssm_cuda_row_info;

/* Synchronous download of row b: info; event host [H] (or NULL); main_blob host
 * [H][main.lay.bytes_per_matrix] (or NULL); lp_blob host [H][lp.lay.bytes_per_matrix] (split
 * only, or NULL). Waits for the device. Returns 0, or -1 (b out of range, CUDA error). */
int ssm_cuda_download_row(const ssm_cuda_state *st, int b, ssm_cuda_row_info *info,
                          uint32_t *event, unsigned char *main_blob, unsigned char *lp_blob);

/* The readouts' fast decoders (16-bit formats, decode tables of the 8- and 4-bit formats)
 * against the reference decoders on the device, for every code. Returns the number of codes whose
 * bits differ (0 expected), or -1 on a CUDA error. Synchronous. */
long long ssm_cuda_check_decoders(void);

#ifdef __cplusplus
}
#endif
#endif
