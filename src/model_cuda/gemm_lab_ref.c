/* CPU references of the small-GEMM lab (gemm_lab.h): THE FIXED ORDER of variants 1 and 2 bit for
 * bit, and an fp64 evaluation with the sum of |terms| the error bounds scale. Pure C (built
 * without CUDA too: the CPU test of the order against fp64 runs in CI). Compiled as ISO C11, so
 * -ffp-contract=off: the only fused operations are the explicit fmaf calls, which glibc computes
 * with one rounding (as the device's fmaf). */
#include <math.h>
#include <stdlib.h>

#include "src/model_cuda/gemm_lab.h"

/* w[n][k] as a float */
static float weight_at(gemm_lab_prec p, const void *W, int64_t i) {
  if (p == GEMM_LAB_BF16) return gemm_lab_bf16_to_f32(((const uint16_t *)W)[i]);
  return ((const float *)W)[i];
}

/* X as the GEMM reads it: rounded to bf16 (bf16), a copy (fp32). NULL when out of memory. */
static float *gemm_input(gemm_lab_prec p, const float *X /* [R][cols] */, int R, int64_t cols) {
  const size_t n = (size_t)R * (size_t)cols;
  float *x = malloc((n ? n : 1) * sizeof *x); /* [R][cols] */
  if (!x) return NULL;
  for (size_t i = 0; i < n; i++)
    x[i] = p == GEMM_LAB_BF16 ? gemm_lab_bf16_to_f32(gemm_lab_bf16_rne(X[i])) : X[i];
  return x;
}

/* One output of THE FIXED ORDER: row xr [cols] against weight row wn (index of its first
 * element in W). */
static float order_one(gemm_lab_prec p, const void *W, int64_t wn, const float *xr /* [cols] */,
                       int64_t cols, int nsplit) {
  const int64_t ch = gemm_lab_chunk(p), nchunks = (cols + ch - 1) / ch;
  const int64_t per = (nchunks + nsplit - 1) / nsplit;
  const int64_t len = (per + GEMM_LAB_LANES - 1) / GEMM_LAB_LANES * GEMM_LAB_LANES;
  float y = 0.0f;
  for (int s = 0; s < nsplit; s++) {
    const int64_t c0 = (int64_t)s * len, c1 = c0 + len < nchunks ? c0 + len : nchunks;
    float lane[GEMM_LAB_LANES]; /* the lane sums of range s */
    for (int l = 0; l < GEMM_LAB_LANES; l++) {
      float acc = 0.0f;
      for (int64_t c = c0 + l; c < c1; c += GEMM_LAB_LANES)
        for (int64_t k = c * ch; k < (c + 1) * ch && k < cols; k++)
          acc = fmaf(xr[k], weight_at(p, W, wn + k), acc);
      lane[l] = acc;
    }
    for (int h = GEMM_LAB_LANES / 2; h >= 1; h /= 2) /* the butterfly's tree */
      for (int l = 0; l < h; l++) lane[l] = lane[l] + lane[l + h];
    y = s == 0 ? lane[0] : y + lane[0];
  }
  return y;
}

void gemm_lab_ref_order(gemm_lab_prec p, const void *W, const float *X, float *Y, int R,
                        int64_t rows, int64_t cols, int nsplit) {
  if (nsplit < 1) nsplit = 1;
  float *x = gemm_input(p, X, R, cols); /* [R][cols] */
  if (!x) {
    for (int64_t i = 0; i < (int64_t)R * rows; i++) Y[i] = NAN; /* a check then fails loudly */
    return;
  }
  for (int r = 0; r < R; r++)
    for (int64_t n = 0; n < rows; n++)
      Y[(int64_t)r * rows + n] = order_one(p, W, n * cols, x + (int64_t)r * cols, cols, nsplit);
  free(x);
}

void gemm_lab_ref64(gemm_lab_prec p, const void *W, const float *X, double *Y64, double *A, int R,
                    int64_t rows, int64_t cols) {
  float *x = gemm_input(p, X, R, cols); /* [R][cols] */
  for (int r = 0; r < R; r++)
    for (int64_t n = 0; n < rows; n++) {
      double s = 0.0, a = 0.0;
      for (int64_t k = 0; x && k < cols; k++) {
        const double t = (double)x[(int64_t)r * cols + k] * (double)weight_at(p, W, n * cols + k);
        s += t;
        a += fabs(t);
      }
      Y64[(int64_t)r * rows + n] = x ? s : NAN;
      A[(int64_t)r * rows + n] = x ? a : NAN;
    }
  free(x);
}
