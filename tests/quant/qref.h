/* An independent reference for the quant tests: SPEC section 3 written out straightforwardly.
 *
 * Element grids are built by decoding every code from the formats' published definitions
 * (IEEE 754 binary16, bfloat16, OCP FP8 E4M3/E5M2, OCP MX E2M1, integers) and rounding is a
 * search of that sorted table for the two neighbours of |x| (nearest, ties to the even code, or
 * stochastic), instead of the exponent/ulp bit tricks of quant/numerics.h. The block formats
 * follow the SPEC's table literally, in fp32. The only thing shared with the code under test is
 * rssm_philox4x32_10, which tests/quant/test_sr.c pins down with Random123's known answers. */
#ifndef RSSM_TESTS_QUANT_QREF_H
#define RSSM_TESTS_QUANT_QREF_H

#include <stdint.h>

#include "quant/format.h"
#include "quant/numerics.h" /* rssm_elem (a label only) and rssm_philox4x32_10 */

/* Width of a code in bits: 4 (E2M1), 8 (E4M3, E5M2, INT8) or 16 (FP16, BF16). */
int ref_code_bits(rssm_elem e);

/* The value of a code from the format's definition, in double: NaN codes give NaN, inf codes
 * give +-inf. INT8 codes are two's complement (0x80 = -128 is a code but not on the grid). */
double ref_decode(rssm_elem e, uint32_t code);

/* The non-negative half of a grid, ascending: every finite value of a code with the sign bit
 * clear. For fp16/bf16 one more entry follows the largest finite value: 2^16 / 2^128 with the
 * (even) code of +inf, which is where IEEE round-to-nearest sends values past the top. */
typedef struct {
  rssm_elem e;
  int n;          /* entries in val/code (the overflow entry included) */
  double maxval;  /* largest finite grid value */
  int saturating; /* 1: |x| > maxval gives maxval; 0: overflow to inf like a plain cast */
  const double *val;    /* [n] ascending */
  const uint32_t *code; /* [n] the code of each entry */
} ref_grid;

/* The grid of e (built once per process, never freed). */
const ref_grid *ref_grid_get(rssm_elem e);

/* Round a finite x onto the grid of e. sr == 0: nearest, ties to the even code. sr != 0: for
 * lo < |x| < hi, hi with probability p = (|x| - lo)/(hi - lo), decided as (rbits >> 8) < p * 2^24
 * (the top 24 bits of rbits as a uniform in [0, 1)); past the largest finite value SR behaves as
 * round-to-nearest (SPEC 4). Saturating formats clamp at maxval, fp16/bf16 go to +-inf. The sign
 * of x is kept, zero included (INT8 too: its code 0 then decodes to +0, which ref_fake_matrix
 * models). */
float ref_round(rssm_elem e, float x, int sr, uint32_t rbits);

/* The SR bits of one element, from the counter layout documented in quant/quant.h. */
uint32_t ref_sr_bits(uint64_t seed, uint64_t matrix_id, uint32_t event, uint32_t stream,
                     uint64_t elem);

/* Fake quantisation of one finite rows x cols matrix per SPEC section 3 (every format). SR bits
 * come from ref_sr_bits(seed, matrix_id, event, stream, row * cols + col) when f is /sr. */
void ref_fake_matrix(const qformat *f, int64_t rows, int64_t cols, const float *x /* [rows][cols] */,
                     float *y /* [rows][cols] */, uint64_t seed, uint64_t matrix_id, uint32_t event,
                     uint32_t stream);

/* Deterministic random numbers (splitmix64): the tests must not depend on the platform's rand. */
uint64_t ref_rng_next(uint64_t *state);
double ref_rng_uniform(uint64_t *state); /* [0, 1) with 53 random bits */
/* sign * 10^U(lo_exp, hi_exp), never zero (as long as 10^lo_exp is above the fp32 range's floor). */
float ref_rand_spread(uint64_t *state, double lo_exp, double hi_exp);

/* Bits of a float, for bit-for-bit comparisons (+0 and -0 differ, NaN payloads count). */
uint32_t ref_f32_bits(float f);
float ref_bits_f32(uint32_t u);

/* Number of indices where a and b differ bit for bit; *first gets the first such index (or -1). */
int64_t ref_count_bit_mismatch(const float *a /* [n] */, const float *b /* [n] */, int64_t n,
                               int64_t *first);

/* Parse a format string that the test knows to be valid (aborts otherwise). */
qformat ref_format(const char *text);

#endif
