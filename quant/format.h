/* Number formats of SPEC section 3: their names, parsing, and the byte layout of a stored matrix.
 *
 * A stored matrix (one head's [dv][dk] state, or one matrix of a `replayssm quant` input) is one
 * contiguous blob of bytes_per_matrix bytes:
 *   codes   at codes_off:   [rows][code_bytes_per_row]   element codes, row-major, dk contiguous
 *   scales  at scales_off:  [rows][blocks_per_row]       per-block scales (fp32 or one-byte codes)
 *   tscale  at tscale_off:  float                        nvfp4 only: the per-matrix S_dec
 * Every region starts on a 16-byte boundary and a batch of matrices is [nmat][bytes_per_matrix],
 * so kernels move exactly the bytes that the format needs (plus at most 15 bytes of padding per
 * region). */
#ifndef RSSM_QUANT_FORMAT_H
#define RSSM_QUANT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  QF_FP32 = 0,
  QF_BF16,
  QF_FP16,
  QF_FP8_E4M3,
  QF_FP8_E5M2,
  QF_INT8,
  QF_NVFP4,
  QF_MXFP8,
  QF_MXFP4,
  QF_COUNT
} qformat_kind;

typedef enum { QR_RTN = 0, QR_SR = 1 } qrounding;

typedef struct {
  qformat_kind kind;
  int block;           /* elements per scale block along dk; 0 for unscaled formats */
  qrounding rounding;  /* element rounding; scales are always round-to-nearest-even */
} qformat;

/* Parse "FORMAT[@BLOCK][/rtn|/sr]" (e.g. "fp8@64/sr", "nvfp4", "fp16/sr").
 * Returns 0 on success; on failure returns -1 and writes a one-line reason into err. */
int qformat_parse(const char *text, qformat *out, char *err, size_t errlen);

/* Canonical text: the name, "@B" only when B differs from the default, "/sr" only for SR. */
void qformat_to_string(const qformat *f, char *buf, size_t buflen);

const char *qformat_kind_name(qformat_kind k);
int qformat_default_block(qformat_kind k); /* 0 for unscaled formats */
int qformat_is_identity(const qformat *f); /* fp32: storing is a copy */

typedef struct {
  int64_t rows, cols;            /* dv, dk */
  int64_t code_bytes_per_row;    /* fp32 4*cols; bf16/fp16 2*cols; 8-bit cols; 4-bit (cols+1)/2 */
  int64_t blocks_per_row;        /* ceil(cols / block); 0 for unscaled formats */
  int64_t scale_elem_bytes;      /* 4 (fp32 scale: fp8, fp8_e5m2, int8), 1 (e4m3 / e8m0), 0 */
  int64_t codes_off, scales_off, tscale_off; /* byte offsets in the blob; -1 where absent */
  int64_t payload_bytes;         /* bytes that carry information (no padding) */
  int64_t bytes_per_matrix;      /* the blob's stride, a multiple of 16 */
} qlayout;

/* Fills *out for a rows x cols matrix. Returns 0, or -1 when a size is non-positive or the matrix
 * has more than 2^58 elements (so no byte count can overflow; every accepted layout is below
 * 2^61 bytes). */
int qlayout_of(const qformat *f, int64_t rows, int64_t cols, qlayout *out);

#ifdef __cplusplus
}
#endif
#endif
