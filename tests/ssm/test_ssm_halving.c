/* The recursive-halving reduction of the v3 readout kernels (reduce_sums in
 * src/ssm_cuda/ssm_cuda.cu), emulated lane by lane on the CPU: K = 8, 16 or 32 warp-32 dot
 * products reduced together must give, in the lane that holds each, exactly the bits of
 * rssm_dot_w32 (ssm_math.h item 1), which the CPU engine computes. The argument is that at every
 * level the value kept for a sum is own + partner's, the butterfly's p[l] + p[l ^ off], and float
 * + is commutative bit for bit; this checks it, and the lane-to-sum map, on random inputs of
 * mixed magnitudes (so that the association matters) with fixed seeds. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "src/ssm/ssm_math.h"

static uint64_t next(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* U(-1, 1) times 2^U(-20, 20): sums whose rounding depends on the order */
static float val(uint64_t *x) {
  double u = (double)(next(x) >> 11) / 9007199254740992.0, e = (double)(next(x) >> 11) / 9007199254740992.0;
  return (float)((2.0 * u - 1.0) * ldexp(1.0, (int)(40.0 * e) - 20));
}

/* reduce_sums<K> on 32 lanes: v[l][s] is lane l's partial of sum s; returns in v[l][0]. */
static void halving(float v[32][32], int K) {
  int half = K / 2;
  for (int off = 16; off >= 1; off >>= 1) {
    float nv[32][32];
    memcpy(nv, v, sizeof nv);
    for (int l = 0; l < 32; l++) {
      if (half >= 1) {
        const int upper = (l & off) != 0, p = l ^ off;
        for (int s = 0; s < half; s++) {
          const float keep = upper ? v[l][s + half] : v[l][s];
          const float recv = (p & off) ? v[p][s] : v[p][s + half]; /* what lane p sends */
          nv[l][s] = keep + recv;
        }
      } else {
        nv[l][0] = v[l][0] + v[l ^ off][0];
      }
    }
    memcpy(v, nv, sizeof nv);
    if (half >= 1) half >>= 1;
  }
}

Test(ssm_halving, equals_rssm_dot_w32_for_every_sum) {
  enum { DK = 128 };
  static const int dks[] = {128, 72, 96, 33};
  uint64_t seed = 0x1234;
  for (int K = 8; K <= 32; K *= 2)
    for (size_t di = 0; di < sizeof dks / sizeof dks[0]; di++)
      for (int trial = 0; trial < 20; trial++) {
        const int dk = dks[di];
        float a[32][DK], b[32][DK], v[32][32];
        for (int s = 0; s < K; s++)
          for (int c = 0; c < dk; c++) {
            a[s][c] = val(&seed);
            b[s][c] = val(&seed);
          }
        /* lane l's warp-32 partial of sum s: +0, then p + a*b over c = l + 32 m ascending */
        for (int l = 0; l < 32; l++)
          for (int s = 0; s < K; s++) {
            float p = 0.0f;
            for (int c = l; c < dk; c += 32) p = p + a[s][c] * b[s][c];
            v[l][s] = p;
          }
        halving(v, K);
        for (int l = 0; l < 32; l++) {
          const int s = l / (32 / K);
          const float ref = rssm_dot_w32(a[s], b[s], dk);
          cr_assert_eq(memcmp(&v[l][0], &ref, sizeof ref), 0, "K=%d dk=%d lane %d sum %d: %.9g vs %.9g", K, dk, l,
                       s, (double)v[l][0], (double)ref);
        }
      }
}
