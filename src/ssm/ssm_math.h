/* Per-row arithmetic of the SSM state engine, shared by the CPU reference (the .c files of
 * src/ssm) and the CUDA kernels, which must reproduce it bit for bit.
 *
 * Every function is `__host__ __device__ static inline` under nvcc and `static inline` in C, and
 * is a fixed sequence of IEEE single-precision + and * (no FMA: C is compiled as ISO C11, which
 * turns contraction off, and CUDA with --fmad=false). Float + and * are commutative bit for bit,
 * so only the association written here matters. The reduction order, which a kernel must follow:
 *
 * 1. Dot products along dk (S row . q, S row . k, C row . y, k_j . q, k_j . k_t): the "warp-32
 *    order" of rssm_dot_w32. 32 partial sums; partial[l] starts at +0.0f and accumulates
 *    partial[l] = partial[l] + a[i]*b[i] for i = l, l+32, l+64, ... < n (ascending). Then a
 *    butterfly: for off = 16, 8, 4, 2, 1, every lane at once: partial[l] = partial[l] +
 *    partial[l ^ off] (the old values). The result is partial[0] (every lane holds the same bits).
 *    A kernel does this with one warp per row: lane l strides over i = l + 32m, then
 *    p += __shfl_xor_sync(~0u, p, off) for off = 16..1.
 *
 * 2. Decay weights of n records (record j = 1..n, alpha[j-1] is record j's alpha), written
 *    w[j] = gamma_{j+1:n}: w[n] = 1, then for j = n-1 down to 0: w[j] = w[j+1] * alpha[j].
 *    w[0] = gamma_n weighs the checkpoint.
 *
 * 3. Output-only readout of S_n y, where S_n = gamma_n C + sum_j gamma_{j+1:n} x_j k_j^T (x = v
 *    for Mamba-2, u for GDN), without forming S_n: per record the coefficient
 *    c_j = w[j] * d_j with d_j = k_j . y (item 1, once per key group); per row i
 *    acc = (C_i . y) * w[0]; then for j = 1..n ascending: acc = acc + x_j[i] * c_j.
 *
 * 4. Materialised fold of one record into a row (conventional steps and flushes):
 *    S_i[c] = alpha * S_i[c] + x[i] * k[c] (two rounded products, then their rounded sum).
 *
 * 5. GDN correction: u[i] = beta * (v[i] - alpha * sk[i]), where sk[i] = S_{t-1,i} . k_t, either
 *    a materialised row dot (item 1) or the readout of item 3 with y = k_t.
 *
 * Sums over records always run in ascending record order; heads and rows are independent. */
#ifndef RSSM_SSM_MATH_H
#define RSSM_SSM_MATH_H

#include "quant/rssm_hd.h"

#define RSSM_DOT_LANES 32

/* Item 1: a . b over n elements in warp-32 order. Only lane 0's value is needed, and at each
 * butterfly level lane l < off reads lanes l and l + off only, so the levels can run in place on
 * the lower half: p[l] = p[l] + p[l + off] for l < off. This is the same rounded sum as lane 0 of
 * the full butterfly (float + is commutative bit for bit), in 31 additions and no copies. */
RSSM_HD float rssm_dot_w32(const float *a /* [n] */, const float *b /* [n] */, int n) {
  float p[RSSM_DOT_LANES];
  for (int l = 0; l < RSSM_DOT_LANES; l++) {
    float s = 0.0f;
    for (int i = l; i < n; i += RSSM_DOT_LANES) s = s + a[i] * b[i];
    p[l] = s;
  }
  for (int off = RSSM_DOT_LANES / 2; off >= 1; off >>= 1)
    for (int l = 0; l < off; l++) p[l] = p[l] + p[l + off];
  return p[0];
}

/* Item 2: w[j] = gamma_{j+1:n} for j = 0..n. */
RSSM_HD void rssm_decay_weights(const float *alpha /* [n] */, int n, float *w /* [n+1] */) {
  w[n] = 1.0f;
  for (int j = n - 1; j >= 0; j--) w[j] = w[j + 1] * alpha[j];
}

/* Item 3, the per-record coefficient c_j = w_j * (k_j . y). */
RSSM_HD float rssm_readout_coef(float w_j, float d_j) { return w_j * d_j; }

/* Item 3, one row: cdot = C_i . y; xs[j] points at record (j+1)'s x vector [dv]; c[j] its
 * coefficient. Returns (S_n y)_i. */
RSSM_HD float rssm_readout_row(float cdot, float w0, const float *const *xs /* [n] -> [dv] */,
                               const float *c /* [n] */, int n, int i) {
  float acc = cdot * w0;
  for (int j = 0; j < n; j++) acc = acc + xs[j][i] * c[j];
  return acc;
}

/* Item 4: fold one record into one row. */
RSSM_HD void rssm_fold_row(float *s /* [dk] */, float alpha, float x, const float *k /* [dk] */,
                           int dk) {
  for (int c = 0; c < dk; c++) s[c] = alpha * s[c] + x * k[c];
}

/* Item 5. */
RSSM_HD float rssm_gdn_u(float v, float beta, float alpha, float sk) {
  return beta * (v - alpha * sk);
}

#endif
