/* Register decoders of element and scale codes for the GPU readout kernels (src/ssm_cuda, v3):
 * integer bit assembly instead of rssm_decode_elem's generic arithmetic and no lookup tables
 * (a 256-entry shared-memory table bank-conflicts, and the generic decoder inlined into a hot
 * loop costs registers). Each returns exactly the bits of the reference decoder of
 * quant/numerics.h for every code: tests/quant/test_decode_fast.c compares all codes on the CPU,
 * ssm_cuda_check_decoders (gpu_check_ssm) on the device. Composite decodes built from them
 * (NVFP4 (e * s) * S_dec, fp8 e * scale) keep rssm_decode_at's operations and association, so
 * they are bit-identical too. */
#ifndef RSSM_QUANT_DECODE_FAST_H
#define RSSM_QUANT_DECODE_FAST_H

#include <stdint.h>

#include "quant/numerics.h"
#include "quant/rssm_hd.h"

/* E2M1 s e1 e0 m as a scaled fp32: the bits s e1 e0 m placed at fp32 bits 31 and 24..22 read as
 * a float with exponent field e and mantissa m << 22, i.e. 2^(e-127) (1 + m/2) for e > 0 and the
 * subnormal m 2^-127 for e = 0; times 2^126 (exact: a power of two, no overflow) that is
 * (1 + m/2) 2^(e-1) and m * 0.5, the E2M1 values (-0 for code 8). Branch-free: two integer
 * operations and one multiply (the subnormal operand needs no flush-to-zero, which nvcc and C11
 * leave off). */
RSSM_HD float rssm_e2m1_fast(uint32_t code) {
  const uint32_t bits = ((code & 7u) << 22) | ((code & 8u) << 28);
  return rssm_bits_f32(bits) * 8.5070591730234616e+37f; /* 2^126 */
}

/* E4M3 (OCP fn, bias 7) the same way: the 7 magnitude bits at fp32 bits 26..20 give exponent
 * field e and mantissa m << 20, 2^(e-127) (1 + m/8) or the subnormal m 2^-129; times 2^120 that is
 * (1 + m/8) 2^(e-7) and m 2^-9, the E4M3 values, exactly. 0x7F / 0xFF are NaN, which the
 * reference returns as the quiet NaN with the code's sign (a select, not a branch). */
RSSM_HD float rssm_e4m3_fast(uint32_t code) {
  const uint32_t s = (code & 0x80u) << 24, mag = code & 0x7Fu;
  const float v = rssm_bits_f32(s | (mag << 20)) * 1.329227995784916e+36f; /* 2^120 */
  return mag == 0x7Fu ? rssm_bits_f32(s | 0x7FC00000u) : v;
}

/* E8M0 scale: 2^(code - 127) as fp32 bits (code 0: the subnormal 2^-127), 0xFF NaN. */
RSSM_HD float rssm_e8m0_fast(uint32_t code) {
  if (code == 0xFFu) return rssm_nan();
  return rssm_bits_f32(code ? code << 23 : 0x00400000u);
}

/* bf16 (bf16 != 0) or fp16 code: finite values and infinities are the same bits (bf16: the code
 * shifted; fp16: the exponent rebiased, subnormals the decoder's own mant * 2^-24 and sign); NaNs
 * go to the reference decoder itself. */
RSSM_HD float rssm_decode16_fast(int bf16, uint32_t code) {
  if (bf16) {
    if ((code & 0x7F80u) == 0x7F80u && (code & 0x7Fu)) return rssm_decode_elem(RSSM_EL_BF16, code);
    return rssm_bits_f32(code << 16);
  }
  const uint32_t e = (code >> 10) & 0x1Fu, m = code & 0x3FFu, sg = (code & 0x8000u) << 16;
  if (e == 0x1Fu) return rssm_decode_elem(RSSM_EL_FP16, code);
  if (e == 0u) {
    const float a = (float)m * 5.9604644775390625e-08f; /* rssm_exp2i(-24), as the decoder */
    return sg ? -a : a;
  }
  return rssm_bits_f32(sg | ((e + 112u) << 23) | (m << 13));
}

#endif
