/* fp32 building blocks of the CPU forward: matrix-vector products (threaded), norms and
 * activations. All arithmetic is single precision in a fixed order; the threaded product assigns
 * each output row to exactly one thread and computes it the same way whatever the thread count,
 * so results do not depend on it. */
#ifndef RSSM_MODEL_LINALG_H
#define RSSM_MODEL_LINALG_H

#include <stdint.h>

void linalg_set_threads(int n);
int linalg_threads(void);

/* a . b in fp32 with 8 interleaved partial sums (lane l takes i = l, l+8, ...), then
 * ((p0+p1)+(p2+p3))+((p4+p5)+(p6+p7)). */
float dot_f32(const float *a /* [n] */, const float *b /* [n] */, int64_t n);

/* y[r] = W[r] . x for r < rows; threads over rows when the matrix is large. */
void matvec(const float *W /* [rows][cols] */, const float *x /* [cols] */,
            float *y /* [rows] */, int64_t rows, int64_t cols);

/* Row-outer products over several vectors: y[j][r] = W[r] . x[j] for j < nx, r < rows, each value
 * bit-identical to dot_f32(W + r * cols, x[j], cols) (the same 8 lanes and reduction per pair;
 * only the loop order differs: the row stays in L1 while it meets every vector). Threads over
 * rows like matvec when the work is large. */
void matvec_many(const float *W /* [rows][cols] */, int64_t rows, int64_t cols,
                 const float *const *x /* [nx] -> [cols] */, float *const *y /* [nx] -> [rows] */,
                 int nx);

/* y = x * rsqrt(mean(x^2) + eps) * (plus_one ? 1 + w : w); w may be NULL (no weight). */
void rmsnorm(const float *x /* [n] */, const float *w /* [n] or NULL */, int plus_one,
             double eps, float *y /* [n] */, int64_t n);

float silu_f(float x);
float sigmoid_f(float x);
float softplus_f(float x); /* torch: x when x > 20 */

#endif
