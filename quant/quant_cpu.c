/* Batched quantisation on the CPU: loops over matrices, rows and blocks around the shared
 * per-block code of quant/numerics.h (the CUDA path runs the same code, one thread per block). */
#include "quant/quant.h"

#include <stdlib.h>
#include <string.h>

#include "quant/numerics.h"

/* Block width along a row: the format's block, or the whole row for unscaled formats. */
static int64_t block_width(const qformat *f, const qlayout *L) { return f->block > 0 ? f->block : L->cols; }

static void encode_matrix(const qformat *f, const qlayout *L, const float *x /* [rows][cols] */,
                          uint8_t *blob /* [bytes_per_matrix] */, const rssm_sr_ctx *sr) {
  float s_enc = 1.0f, s_dec = 1.0f;
  if (f->kind == QF_NVFP4) {
    int nonfinite = 0;
    float amax = rssm_amax(x, L->rows * L->cols, &nonfinite);
    s_enc = rssm_nvfp4_senc(amax);
    s_dec = 1.0f / s_enc;
    memcpy(blob + L->tscale_off, &s_dec, sizeof s_dec);
  }
  int64_t bw = block_width(f, L);
  for (int64_t r = 0; r < L->rows; r++) {
    const float *row = x + r * L->cols;
    uint8_t *codes = blob + L->codes_off + r * L->code_bytes_per_row;
    for (int64_t b = 0, c0 = 0; c0 < L->cols; b++, c0 += bw) {
      int64_t n = (L->cols - c0 < bw) ? L->cols - c0 : bw;
      uint8_t *scale = L->scales_off >= 0
                           ? blob + L->scales_off + (r * L->blocks_per_row + b) * L->scale_elem_bytes
                           : NULL;
      rssm_encode_block(f->kind, row, c0, n, r * L->cols, codes, scale, s_enc, s_dec, sr);
    }
  }
}

static void decode_matrix(const qformat *f, const qlayout *L, const uint8_t *blob /* [bytes_per_matrix] */,
                          float *y /* [rows][cols] */) {
  if (f->kind == QF_FP32) { /* the codes are the values: the per-element path would only copy */
    memcpy(y, blob + L->codes_off, (size_t)(L->rows * L->cols) * sizeof(float));
    return;
  }
  float s_dec = 1.0f;
  if (f->kind == QF_NVFP4) memcpy(&s_dec, blob + L->tscale_off, sizeof s_dec);
  for (int64_t r = 0; r < L->rows; r++) {
    const uint8_t *codes = blob + L->codes_off + r * L->code_bytes_per_row;
    for (int64_t c = 0; c < L->cols; c++) {
      const uint8_t *scale =
          L->scales_off >= 0
              ? blob + L->scales_off + (r * L->blocks_per_row + c / f->block) * L->scale_elem_bytes
              : NULL;
      y[r * L->cols + c] = rssm_decode_at(f->kind, codes, scale, s_dec, c);
    }
  }
}

void q_encode_cpu(const qformat *f, const qlayout *L, int64_t nmat, const float *x, void *blob,
                  const qsr_params *sr) {
  for (int64_t i = 0; i < nmat; i++) {
    rssm_sr_ctx ctx = {0, 0, 0, 0, 0};
    if (f->rounding == QR_SR) {
      /* without parameters: seed 0, matrix id = position in the batch, event 0, stream 0 */
      ctx.sr = 1;
      ctx.seed = sr ? sr->seed : 0u;
      ctx.matrix_id = (sr && sr->matrix_id) ? sr->matrix_id[i] : (uint64_t)i;
      ctx.event = (sr && sr->event) ? sr->event[i] : 0u;
      ctx.stream = sr ? sr->stream : 0u;
    }
    uint8_t *m = (uint8_t *)blob + i * L->bytes_per_matrix;
    /* padding bytes are zeroed so that blobs compare equal with memcmp */
    memset(m, 0, (size_t)L->bytes_per_matrix);
    encode_matrix(f, L, x + i * L->rows * L->cols, m, &ctx);
  }
}

void q_decode_cpu(const qformat *f, const qlayout *L, int64_t nmat, const void *blob, float *y) {
  for (int64_t i = 0; i < nmat; i++)
    decode_matrix(f, L, (const uint8_t *)blob + i * L->bytes_per_matrix, y + i * L->rows * L->cols);
}

int q_fake_cpu(const qformat *f, const qlayout *L, int64_t nmat, const float *x, float *y,
               const qsr_params *sr) {
  /* one matrix of scratch at a time keeps memory flat for large stacks */
  uint8_t *scratch = malloc((size_t)L->bytes_per_matrix);
  if (!scratch) return -1;
  for (int64_t i = 0; i < nmat; i++) {
    /* matrix i keeps its own identity (and so its own random bits) in the one-matrix call */
    uint64_t id = (sr && sr->matrix_id) ? sr->matrix_id[i] : (uint64_t)i;
    uint32_t ev = (sr && sr->event) ? sr->event[i] : 0u;
    qsr_params one = {sr ? sr->seed : 0u, &id, &ev, sr ? sr->stream : 0u};
    const qsr_params *p = &one;
    q_encode_cpu(f, L, 1, x + i * L->rows * L->cols, scratch, p);
    q_decode_cpu(f, L, 1, scratch, y + i * L->rows * L->cols);
  }
  free(scratch);
  return 0;
}
