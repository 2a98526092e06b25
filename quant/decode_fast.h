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

/* E2M1 s e1 e0 m: e = 0 gives m * 0.5 (0 or 0.5); e > 0 gives (1 + m/2) 2^(e-1), i.e. the fp32
 * exponent field e + 126 and mantissa m << 22. The sign is the bit itself (-0 for code 8). */
RSSM_HD float rssm_e2m1_fast(uint32_t code) {
  const uint32_t s = (code & 8u) << 28, e = (code >> 1) & 3u, m = code & 1u;
  const uint32_t mag = e ? ((e + 126u) << 23) | (m << 22) : (m ? (126u << 23) : 0u);
  return rssm_bits_f32(s | mag);
}

/* E4M3 (OCP fn, bias 7): normal codes are fp32 exponent e + 120 and mantissa m << 20;
 * subnormals m * 2^-9 (exact); 0x7F / 0xFF are NaN, which the reference returns as the negation
 * of rssm_nan() for 0xFF: the quiet NaN with the code's sign. */
RSSM_HD float rssm_e4m3_fast(uint32_t code) {
  const uint32_t s = (code & 0x80u) << 24, e = (code >> 3) & 15u, m = code & 7u;
  if (e == 15u && m == 7u) return rssm_bits_f32(s | 0x7FC00000u);
  if (e == 0u) return rssm_bits_f32(s | rssm_f32_bits((float)m * 0.001953125f));
  return rssm_bits_f32(s | ((e + 120u) << 23) | (m << 20));
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
