/* Batched quantisation of whole matrices, CPU (quant_cpu.c) and CUDA (quant_cuda.cu).
 *
 * Both paths call the same per-element and per-block functions of quant/numerics.h in the same
 * order, so their stored bytes and decoded values are bit-identical (SPEC sections 3 and 4). */
#ifndef RSSM_QUANT_QUANT_H
#define RSSM_QUANT_QUANT_H

#include "quant/format.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the stochastic-rounding bits of matrix i come from (SPEC section 4). The Philox counter of
 * element e of matrix i is
 *   { e >> 2, event[i], (uint32)matrix_id[i], (uint32)(matrix_id[i] >> 32) | stream }
 * with the key = seed, and word (e & 3) of the output is the element's 32 random bits.
 * matrix_id packs layer, head and sequence: see qsr_matrix_id(). event may be NULL (all 0). */
typedef struct {
  uint64_t seed;
  const uint64_t *matrix_id; /* [nmat] (host or device memory, as the entry point says) */
  const uint32_t *event;     /* [nmat] or NULL */
  uint32_t stream;           /* < 16: QSR_STREAM_* */
} qsr_params;

enum { QSR_STREAM_STATE = 0, QSR_STREAM_HP = 1, QSR_STREAM_LP = 2, QSR_STREAM_QUANT_CLI = 3,
       QSR_STREAM_ACCEPT = 4 /* spec acceptance draws (src/ssm/ssm_accept.h), never rounding */ };

/* layer < 4096, head < 65536, sequence < 2^32. */
static inline uint64_t qsr_matrix_id(uint32_t layer, uint32_t head, uint32_t sequence) {
  return ((uint64_t)(((layer & 0xFFFu) << 20) | ((head & 0xFFFFu) << 4)) << 32) | sequence;
}

/* x: [nmat][rows][cols] fp32 -> blob: [nmat][L.bytes_per_matrix]. sr is ignored for RTN formats;
 * for SR formats a NULL sr (or NULL matrix_id) means seed 0, matrix id = index in the batch,
 * event 0, stream 0. All pointers are host memory. */
void q_encode_cpu(const qformat *f, const qlayout *L, int64_t nmat, const float *x, void *blob,
                  const qsr_params *sr);
/* blob: [nmat][L.bytes_per_matrix] -> y: [nmat][rows][cols] fp32 */
void q_decode_cpu(const qformat *f, const qlayout *L, int64_t nmat, const void *blob, float *y);
/* Fake quantisation: encode then decode (scratch is allocated internally). Returns 0, or -1 when
 * memory runs out. x and y may be the same array. */
int q_fake_cpu(const qformat *f, const qlayout *L, int64_t nmat, const float *x, float *y,
               const qsr_params *sr);

#ifdef RSSM_HAVE_CUDA
/* The same on the GPU: all array pointers (x, blob, y, sr->matrix_id, sr->event) are device
 * pointers; the calls are asynchronous on `stream` (a cudaStream_t, 0 for the default). */
void q_encode_cuda(const qformat *f, const qlayout *L, int64_t nmat, const float *x, void *blob,
                   const qsr_params *sr, void *stream);
void q_decode_cuda(const qformat *f, const qlayout *L, int64_t nmat, const void *blob, float *y,
                   void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
