/* The numerics that the CPU and the GPU share (SPEC sections 3 and 4): Philox4x32-10, the element
 * grids of every format, round-to-nearest-even and stochastic rounding, block and tensor scales.
 *
 * Every function here is `__host__ __device__` under nvcc and `static inline` in C. Each is written
 * as a fixed sequence of IEEE single-precision operations (+, -, *, / and comparisons, no
 * transcendental functions, no fused multiply-add: C is compiled as ISO C11, which disables
 * contraction, and CUDA with --fmad=false), so the two compilers produce the same bits.
 *
 * Non-finite input (documented in docs/formats.md):
 *  - fp32, bf16, fp16 behave as a plain cast: NaN stays NaN, +-inf stays +-inf, and finite values
 *    beyond the largest finite value round to +-inf exactly as IEEE round-to-nearest does.
 *  - fp8 / fp8_e5m2 / int8 / nvfp4 / mxfp8 / mxfp4: a NaN or infinity anywhere in a scale block
 *    makes that whole block decode to NaN (its scale is stored as NaN: an fp32 NaN, the E4M3 NaN
 *    code 0x7F, or the E8M0 NaN code 0xFF), so a non-finite state is never laundered into finite
 *    numbers. Block and tensor amax values are taken over the finite elements only.
 */
#ifndef RSSM_QUANT_NUMERICS_H
#define RSSM_QUANT_NUMERICS_H

#include <stdint.h>

#include "quant/format.h"

#include "quant/rssm_hd.h"

/* ------------------------------------------------------------------------------------------------
 * Bit casts and exact powers of two
 * --------------------------------------------------------------------------------------------- */
RSSM_HD uint32_t rssm_f32_bits(float f) {
  union { float f; uint32_t u; } c;
  c.f = f;
  return c.u;
}
RSSM_HD float rssm_bits_f32(uint32_t u) {
  union { float f; uint32_t u; } c;
  c.u = u;
  return c.f;
}
RSSM_HD int rssm_isfinite(float x) { return (rssm_f32_bits(x) & 0x7F800000u) != 0x7F800000u; }
RSSM_HD int rssm_isnan(float x) { return (rssm_f32_bits(x) & 0x7FFFFFFFu) > 0x7F800000u; }
RSSM_HD float rssm_fabs(float x) { return rssm_bits_f32(rssm_f32_bits(x) & 0x7FFFFFFFu); }
RSSM_HD float rssm_copysign(float mag, float sgn) {
  return rssm_bits_f32((rssm_f32_bits(mag) & 0x7FFFFFFFu) | (rssm_f32_bits(sgn) & 0x80000000u));
}
RSSM_HD float rssm_nan(void) { return rssm_bits_f32(0x7FC00000u); }
RSSM_HD float rssm_inf(void) { return rssm_bits_f32(0x7F800000u); }
#define RSSM_FLT_MAX 3.40282347e+38f

/* 2^e exactly, for e in [-149, 127] (subnormal powers included). */
RSSM_HD float rssm_exp2i(int e) {
  if (e >= -126) return rssm_bits_f32((uint32_t)(e + 127) << 23);
  return rssm_bits_f32(1u << (e + 149));
}

/* floor(log2(a)) of a finite a > 0, read from the bits (exact, subnormals included). */
RSSM_HD int rssm_floor_log2(float a) {
  uint32_t u = rssm_f32_bits(a) & 0x7FFFFFFFu;
  int ef = (int)(u >> 23);
  if (ef > 0) return ef - 127;
  int e = -127; /* subnormal: value = m * 2^-149 with m < 2^23; find the top bit of m */
  uint32_t m = u & 0x7FFFFFu;
  while ((m & 0x400000u) == 0) { m <<= 1; e -= 1; }
  return e;
}

/* floor(t) for 0 <= t < 2^24, exact. */
RSSM_HD float rssm_floor_small(float t) { return (float)(uint32_t)t; }

/* ------------------------------------------------------------------------------------------------
 * Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC11):
 * 10 rounds; round: (hi0,lo0) = M0*c0, (hi1,lo1) = M1*c2;
 *   c' = { hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0 }; then the key is bumped by the Weyl constants.
 * --------------------------------------------------------------------------------------------- */
#define RSSM_PHILOX_M0 0xD2511F53u
#define RSSM_PHILOX_M1 0xCD9E8D57u
#define RSSM_PHILOX_W0 0x9E3779B9u
#define RSSM_PHILOX_W1 0xBB67AE85u

RSSM_HD void rssm_philox4x32_10(const uint32_t ctr_in[4], const uint32_t key_in[2],
                                uint32_t out[4]) {
  uint32_t c0 = ctr_in[0], c1 = ctr_in[1], c2 = ctr_in[2], c3 = ctr_in[3];
  uint32_t k0 = key_in[0], k1 = key_in[1];
  for (int r = 0; r < 10; r++) {
    if (r > 0) { k0 += RSSM_PHILOX_W0; k1 += RSSM_PHILOX_W1; }
    uint64_t p0 = (uint64_t)RSSM_PHILOX_M0 * c0;
    uint64_t p1 = (uint64_t)RSSM_PHILOX_M1 * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

/* The 32 random bits of element `elem` of a matrix (SPEC section 4; counter layout in quant.h). */
RSSM_HD uint32_t rssm_sr_bits(uint64_t seed, uint64_t matrix_id, uint32_t event, uint32_t stream,
                              uint64_t elem) {
  uint32_t ctr[4] = {(uint32_t)(elem >> 2), event, (uint32_t)matrix_id,
                     (uint32_t)(matrix_id >> 32) | (stream & 0xFu)};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t out[4];
  rssm_philox4x32_10(ctr, key, out);
  return out[elem & 3u];
}

/* ------------------------------------------------------------------------------------------------
 * Element grids
 * --------------------------------------------------------------------------------------------- */
typedef enum {
  RSSM_EL_E4M3 = 0, /* OCP FP8 E4M3 (fn): bias 7, max 448, 0x7F/0xFF NaN, no inf */
  RSSM_EL_E5M2,     /* OCP FP8 E5M2: bias 15, max 57344, IEEE-like inf/NaN codes */
  RSSM_EL_E2M1,     /* FP4 E2M1: {0, .5, 1, 1.5, 2, 3, 4, 6}, no inf/NaN */
  RSSM_EL_FP16,     /* IEEE binary16 */
  RSSM_EL_BF16,     /* bfloat16 */
  RSSM_EL_INT8      /* integers in [-127, 127] */
} rssm_elem;

typedef struct {
  int ebits, mbits, bias; /* exponent/mantissa field widths; int8: mbits < 0 marks the integer grid */
  int emin;               /* exponent of the smallest normal value */
  float maxval;           /* largest finite magnitude */
  int saturate;           /* 1: clamp at maxval; 0: overflow to inf like a plain cast */
} rssm_elem_desc;

RSSM_HD rssm_elem_desc rssm_elem_info(rssm_elem e) {
  rssm_elem_desc d;
  switch (e) {
    case RSSM_EL_E4M3: d.ebits = 4; d.mbits = 3; d.bias = 7; d.emin = -6; d.maxval = 448.0f; d.saturate = 1; break;
    case RSSM_EL_E5M2: d.ebits = 5; d.mbits = 2; d.bias = 15; d.emin = -14; d.maxval = 57344.0f; d.saturate = 1; break;
    case RSSM_EL_E2M1: d.ebits = 2; d.mbits = 1; d.bias = 1; d.emin = 0; d.maxval = 6.0f; d.saturate = 1; break;
    case RSSM_EL_FP16: d.ebits = 5; d.mbits = 10; d.bias = 15; d.emin = -14; d.maxval = 65504.0f; d.saturate = 0; break;
    case RSSM_EL_BF16: d.ebits = 8; d.mbits = 7; d.bias = 127; d.emin = -126; d.maxval = 3.38953139e38f; d.saturate = 0; break;
    default: /* RSSM_EL_INT8 */
      d.ebits = 0; d.mbits = -1; d.bias = 0; d.emin = 0; d.maxval = 127.0f; d.saturate = 1; break;
  }
  return d;
}

/* Round a magnitude a >= 0 (finite) onto the grid with spacing `ulp` near a.
 * sr == 0: ties to the even multiple. sr != 0: up with probability frac, resolved to 2^-24 by the
 * top 24 bits of rbits (frac = (a - lo)/ulp is exact: a - lo is exact by Sterbenz and ulp is a
 * power of two). Returns the multiple n of ulp as a float (exact, n < 2^25). */
RSSM_HD float rssm_round_multiple(float a, float ulp, int sr, uint32_t rbits) {
  float t = a / ulp;                 /* exact: ulp is a power of two and t < 2^25 */
  float fl = rssm_floor_small(t);
  float fr = t - fl;                 /* exact */
  int up;
  if (sr) {
    up = ((float)(rbits >> 8) * 5.9604644775390625e-08f) < fr; /* u in [0,1) step 2^-24 */
  } else {
    up = fr > 0.5f || (fr == 0.5f && (((uint32_t)fl) & 1u));
  }
  return up ? fl + 1.0f : fl;
}

/* Round finite x onto the element grid of e (RNE or SR), with saturation/overflow per format.
 * Returns the grid value as fp32 (exact). */
RSSM_HD float rssm_round_elem(rssm_elem e, float x, int sr, uint32_t rbits) {
  rssm_elem_desc d = rssm_elem_info(e);
  float a = rssm_fabs(x);
  if (!(a > 0.0f)) return x; /* +-0 kept with its sign */
  float r;
  if (d.mbits < 0) { /* integer grid */
    r = rssm_round_multiple(a, 1.0f, sr, rbits);
  } else {
    int ex = rssm_floor_log2(a);
    if (ex < d.emin) ex = d.emin;
    float ulp = rssm_exp2i(ex - d.mbits);
    /* SPEC 4: beyond the largest finite value SR behaves as round-to-nearest. */
    int use_sr = sr && !(a > d.maxval);
    r = rssm_round_multiple(a, ulp, use_sr, rbits) * ulp; /* exact (or inf past FLT_MAX) */
  }
  if (r > d.maxval) r = d.saturate ? d.maxval : rssm_inf();
  return rssm_copysign(r, x);
}

/* Code of a value that lies on the grid of e (output of rssm_round_elem, or NaN/inf where the
 * format has those codes). 8-bit codes for E4M3/E5M2/INT8 (int8 as two's complement), 4-bit for
 * E2M1, 16-bit for FP16/BF16. */
RSSM_HD uint32_t rssm_encode_elem(rssm_elem e, float v) {
  rssm_elem_desc d = rssm_elem_info(e);
  uint32_t sign = (rssm_f32_bits(v) >> 31) & 1u;
  if (d.mbits < 0) { /* int8: v is an integer in [-127, 127] */
    int iv = (int)v;
    return (uint32_t)(uint8_t)(int8_t)iv;
  }
  int nbits = 1 + d.ebits + d.mbits;
  uint32_t sbit = sign << (nbits - 1);
  uint32_t expmax = (1u << d.ebits) - 1u;
  if (rssm_isnan(v)) {
    if (e == RSSM_EL_E4M3) return sbit | 0x7Fu;
    if (e == RSSM_EL_BF16) return sbit | 0x7FC0u;
    if (e == RSSM_EL_FP16) return sbit | 0x7E00u;
    if (e == RSSM_EL_E5M2) return sbit | 0x7Fu;
    return sbit | 0x7u; /* E2M1 has no NaN: blocks carry NaN in their scale instead */
  }
  float a = rssm_fabs(v);
  if (!rssm_isfinite(a)) return sbit | (expmax << d.mbits); /* inf (fp16/bf16/e5m2 only) */
  if (a == 0.0f) return sbit;
  int ex = rssm_floor_log2(a);
  uint32_t efield, mant;
  if (ex < d.emin) { /* subnormal: a = mant * 2^(emin - mbits) */
    efield = 0;
    mant = (uint32_t)(a / rssm_exp2i(d.emin - d.mbits));
  } else {
    efield = (uint32_t)(ex + d.bias);
    mant = (uint32_t)(a / rssm_exp2i(ex - d.mbits)) - (1u << d.mbits);
  }
  return sbit | (efield << d.mbits) | mant;
}

RSSM_HD float rssm_decode_elem(rssm_elem e, uint32_t code) {
  rssm_elem_desc d = rssm_elem_info(e);
  if (d.mbits < 0) return (float)(int8_t)(uint8_t)code;
  int nbits = 1 + d.ebits + d.mbits;
  uint32_t sign = (code >> (nbits - 1)) & 1u;
  uint32_t expmax = (1u << d.ebits) - 1u;
  uint32_t efield = (code >> d.mbits) & expmax;
  uint32_t mant = code & ((1u << d.mbits) - 1u);
  float a;
  if (e == RSSM_EL_E4M3 && efield == expmax && mant == ((1u << d.mbits) - 1u)) {
    a = rssm_nan();
  } else if (e != RSSM_EL_E4M3 && e != RSSM_EL_E2M1 && efield == expmax) {
    a = mant ? rssm_nan() : rssm_inf();
  } else if (efield == 0) {
    a = (float)mant * rssm_exp2i(d.emin - d.mbits);
  } else {
    a = (float)(mant + (1u << d.mbits)) * rssm_exp2i((int)efield - d.bias - d.mbits);
  }
  return sign ? -a : a;
}

/* Round x onto the grid and return the code; x may be NaN/inf for fp16/bf16 (plain cast). */
RSSM_HD uint32_t rssm_quantize_elem(rssm_elem e, float x, int sr, uint32_t rbits) {
  if (!rssm_isfinite(x)) return rssm_encode_elem(e, x);
  return rssm_encode_elem(e, rssm_round_elem(e, x, sr, rbits));
}

/* ------------------------------------------------------------------------------------------------
 * Scales (always round-to-nearest-even)
 * --------------------------------------------------------------------------------------------- */

/* Max |x| over the finite elements of x[0..n), and whether any element is non-finite. */
RSSM_HD float rssm_amax(const float *x /* [n] */, int64_t n, int *nonfinite) {
  float m = 0.0f;
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    float a = rssm_fabs(x[i]);
    if (!rssm_isfinite(a)) { bad = 1; continue; }
    if (a > m) m = a;
  }
  *nonfinite = bad;
  return m;
}

/* fp8 / fp8_e5m2 / int8 block scale: s = amax / max, 1 where amax = 0. Also 1 where amax/max
 * underflows to zero (amax below ~2^-141): otherwise every element would become 0/0 = NaN; with
 * s = 1 such a block rounds to zeros, the nearest the format can do. */
RSSM_HD float rssm_scale_fp32(float amax, float maxval) {
  float s = amax / maxval;
  return s > 0.0f ? s : 1.0f;
}

/* MX block scale exponent: floor(log2(amax)) - emax clamped to [-127, 127]; -127 for amax = 0.
 * Stored as the E8M0 code exponent + 127 (0xFF is NaN). */
RSSM_HD int rssm_mx_exponent(float amax, int emax) {
  if (!(amax > 0.0f)) return -127;
  int e = rssm_floor_log2(amax) - emax;
  if (e < -127) e = -127;
  if (e > 127) e = 127;
  return e;
}
RSSM_HD float rssm_e8m0_decode(uint32_t code) {
  if (code == 0xFFu) return rssm_nan();
  return rssm_exp2i((int)code - 127);
}

/* NVFP4 per-matrix encode scale: S_enc = (448*6)/amax, 1 where amax = 0. S_dec = 1/S_enc.
 * (For amax below about 7.9e-36 S_enc overflows to inf, S_dec is 0 and the matrix stores zeros.) */
RSSM_HD float rssm_nvfp4_senc(float amax) { return amax > 0.0f ? (448.0f * 6.0f) / amax : 1.0f; }

/* NVFP4 block scale code: e4m3(min(amax_b * (S_enc/6), 448)), round-to-nearest-even. */
RSSM_HD uint32_t rssm_nvfp4_block_scale_code(float amax_b, float s_enc) {
  float m = amax_b * (s_enc / 6.0f);
  float c = (m < 448.0f) ? m : 448.0f; /* a NaN product (0 * inf) takes 448, as fminf would */
  return rssm_quantize_elem(RSSM_EL_E4M3, c, 0, 0u);
}

/* NVFP4 element encode factor: min(1/(s * S_dec), FLT_MAX). */
RSSM_HD float rssm_nvfp4_enc(float s, float s_dec) {
  float r = 1.0f / (s * s_dec);
  return (r < RSSM_FLT_MAX) ? r : RSSM_FLT_MAX;
}
RSSM_HD float rssm_clamp6(float y) { return y < -6.0f ? -6.0f : (y > 6.0f ? 6.0f : y); }

/* ------------------------------------------------------------------------------------------------
 * One scale block of one row: encode and decode. A CPU loop and a GPU thread call the same code,
 * which is what makes their bytes identical. The block covers columns [c0, c0 + n) of row `row`;
 * the row's codes start at `codes` (layout of quant/format.h) and its block scales at `scales`.
 * --------------------------------------------------------------------------------------------- */
typedef struct {
  uint64_t seed, matrix_id;
  uint32_t event, stream;
  int sr; /* 0: round-to-nearest-even; 1: stochastic */
} rssm_sr_ctx;

RSSM_HD uint32_t rssm_sr_elem_bits(const rssm_sr_ctx *c, uint64_t elem) {
  return c->sr ? rssm_sr_bits(c->seed, c->matrix_id, c->event, c->stream, elem) : 0u;
}

RSSM_HD rssm_elem rssm_elem_of(qformat_kind k) {
  switch (k) {
    case QF_BF16: return RSSM_EL_BF16;
    case QF_FP16: return RSSM_EL_FP16;
    case QF_FP8_E5M2: return RSSM_EL_E5M2;
    case QF_INT8: return RSSM_EL_INT8;
    case QF_NVFP4: case QF_MXFP4: return RSSM_EL_E2M1;
    default: return RSSM_EL_E4M3; /* QF_FP8_E4M3, QF_MXFP8 */
  }
}

RSSM_HD void rssm_put_nibble(uint8_t *row_codes /* [(cols+1)/2] */, int64_t c, uint32_t code) {
  uint8_t *b = row_codes + (c >> 1);
  if (c & 1) *b = (uint8_t)((*b & 0x0Fu) | ((code & 0xFu) << 4));
  else *b = (uint8_t)((*b & 0xF0u) | (code & 0xFu));
}
RSSM_HD uint32_t rssm_get_nibble(const uint8_t *row_codes /* [(cols+1)/2] */, int64_t c) {
  uint8_t b = row_codes[c >> 1];
  return (c & 1) ? (uint32_t)(b >> 4) : (uint32_t)(b & 0xFu);
}

/* Encode x[c0 .. c0+n) of one row. elem0 = row * cols (the element index of the row's column 0,
 * used for the SR counter). s_enc/s_dec: the matrix's NVFP4 scales (ignored otherwise).
 * fp32/bf16/fp16 have no blocks: call it with any n; scales is then unused. */
RSSM_HD void rssm_encode_block(qformat_kind kind, const float *x /* [cols] of this row */,
                               int64_t c0, int64_t n, int64_t elem0,
                               uint8_t *codes /* this row's codes */,
                               uint8_t *scale /* this block's scale slot */,
                               float s_enc, float s_dec, const rssm_sr_ctx *sr) {
  rssm_elem el = rssm_elem_of(kind);
  if (kind == QF_FP32) {
    float *dst = (float *)codes;
    for (int64_t c = c0; c < c0 + n; c++) dst[c] = x[c];
    return;
  }
  if (kind == QF_BF16 || kind == QF_FP16) {
    uint16_t *dst = (uint16_t *)codes;
    for (int64_t c = c0; c < c0 + n; c++)
      dst[c] = (uint16_t)rssm_quantize_elem(el, x[c], sr->sr, rssm_sr_elem_bits(sr, (uint64_t)(elem0 + c)));
    return;
  }
  int nonfinite = 0;
  float amax = rssm_amax(x + c0, n, &nonfinite);
  int four_bit = (kind == QF_NVFP4 || kind == QF_MXFP4);
  if (nonfinite) { /* the whole block reads back as NaN; its codes are zero */
    if (kind == QF_NVFP4) *scale = 0x7Fu;
    else if (kind == QF_MXFP8 || kind == QF_MXFP4) *scale = 0xFFu;
    else { float qn = rssm_nan(); *(float *)scale = qn; }
    for (int64_t c = c0; c < c0 + n; c++) {
      if (four_bit) rssm_put_nibble(codes, c, 0u); else codes[c] = 0u;
    }
    return;
  }
  if (kind == QF_NVFP4) {
    uint32_t sc = rssm_nvfp4_block_scale_code(amax, s_enc);
    float s = rssm_decode_elem(RSSM_EL_E4M3, sc);
    float enc = rssm_nvfp4_enc(s, s_dec);
    *scale = (uint8_t)sc;
    for (int64_t c = c0; c < c0 + n; c++) {
      float y = rssm_clamp6(x[c] * enc);
      rssm_put_nibble(codes, c, rssm_quantize_elem(el, y, sr->sr, rssm_sr_elem_bits(sr, (uint64_t)(elem0 + c))));
    }
    return;
  }
  float s;
  if (kind == QF_MXFP8 || kind == QF_MXFP4) {
    int e = rssm_mx_exponent(amax, kind == QF_MXFP8 ? 8 : 2);
    *scale = (uint8_t)(e + 127);
    s = rssm_exp2i(e);
  } else {
    s = rssm_scale_fp32(amax, rssm_elem_info(el).maxval);
    *(float *)scale = s;
  }
  for (int64_t c = c0; c < c0 + n; c++) {
    uint32_t code = rssm_quantize_elem(el, x[c] / s, sr->sr, rssm_sr_elem_bits(sr, (uint64_t)(elem0 + c)));
    if (four_bit) rssm_put_nibble(codes, c, code); else codes[c] = (uint8_t)code;
  }
}

/* Decode one element (row codes, its block's scale slot, the matrix's NVFP4 S_dec). */
RSSM_HD float rssm_decode_at(qformat_kind kind, const uint8_t *codes /* this row's codes */,
                             const uint8_t *scale /* this element's block scale slot */,
                             float s_dec, int64_t c) {
  switch (kind) {
    case QF_FP32: return ((const float *)codes)[c];
    case QF_BF16: return rssm_decode_elem(RSSM_EL_BF16, ((const uint16_t *)codes)[c]);
    case QF_FP16: return rssm_decode_elem(RSSM_EL_FP16, ((const uint16_t *)codes)[c]);
    case QF_NVFP4: {
      float s = rssm_decode_elem(RSSM_EL_E4M3, *scale);
      return (rssm_decode_elem(RSSM_EL_E2M1, rssm_get_nibble(codes, c)) * s) * s_dec;
    }
    case QF_MXFP4:
      return rssm_decode_elem(RSSM_EL_E2M1, rssm_get_nibble(codes, c)) * rssm_e8m0_decode(*scale);
    case QF_MXFP8:
      return rssm_decode_elem(RSSM_EL_E4M3, codes[c]) * rssm_e8m0_decode(*scale);
    default: /* fp8, fp8_e5m2, int8: fp32 block scale */
      return rssm_decode_elem(rssm_elem_of(kind), codes[c]) * *(const float *)scale;
  }
}

#endif
