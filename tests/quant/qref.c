/* Independent reference numerics for the quant tests (see qref.h for what is and is not shared
 * with the code under test). Clarity over speed: grids are sorted tables, rounding is a search. */
#include "tests/quant/qref.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ref_code_bits(rssm_elem e) {
  switch (e) {
    case RSSM_EL_E2M1: return 4;
    case RSSM_EL_FP16: case RSSM_EL_BF16: return 16;
    default: return 8;
  }
}

/* A minifloat with an IEEE-style layout: sign, ebits exponent bits with bias, mbits mantissa bits;
 * exponent field 0 is subnormal. Special codes are handled by the caller. */
static double minifloat(uint32_t efield, uint32_t mant, int bias, int mbits) {
  if (efield == 0) return ldexp((double)mant, 1 - bias - mbits);
  return ldexp((double)(mant + (1u << mbits)), (int)efield - bias - mbits);
}

double ref_decode(rssm_elem e, uint32_t code) {
  double a;
  int neg;
  switch (e) {
    case RSSM_EL_INT8:
      return (double)(int8_t)(uint8_t)code;
    case RSSM_EL_BF16: {
      /* bfloat16 is by definition the top half of an IEEE binary32 */
      uint32_t u = (code & 0xFFFFu) << 16;
      float f;
      memcpy(&f, &u, sizeof f);
      return (double)f;
    }
    case RSSM_EL_FP16: { /* IEEE binary16: 1/5/10, bias 15, exponent 31 = inf/NaN */
      neg = (code >> 15) & 1u;
      uint32_t ef = (code >> 10) & 31u, m = code & 1023u;
      if (ef == 31u) a = m ? NAN : INFINITY;
      else a = minifloat(ef, m, 15, 10);
      break;
    }
    case RSSM_EL_E4M3: { /* OCP FP8 E4M3: 1/4/3, bias 7, S.1111.111 = NaN, no infinities */
      neg = (code >> 7) & 1u;
      uint32_t ef = (code >> 3) & 15u, m = code & 7u;
      if (ef == 15u && m == 7u) a = NAN;
      else a = minifloat(ef, m, 7, 3);
      break;
    }
    case RSSM_EL_E5M2: { /* OCP FP8 E5M2: 1/5/2, bias 15, exponent 31 = inf/NaN as in IEEE */
      neg = (code >> 7) & 1u;
      uint32_t ef = (code >> 2) & 31u, m = code & 3u;
      if (ef == 31u) a = m ? NAN : INFINITY;
      else a = minifloat(ef, m, 15, 2);
      break;
    }
    default: { /* E2M1 (OCP MX FP4): 1/2/1, bias 1, no special codes */
      neg = (code >> 3) & 1u;
      uint32_t ef = (code >> 1) & 3u, m = code & 1u;
      a = minifloat(ef, m, 1, 1);
      break;
    }
  }
  return neg ? -a : a;
}

static ref_grid *grids[6];

const ref_grid *ref_grid_get(rssm_elem e) {
  if (grids[e]) return grids[e];
  int bits = ref_code_bits(e);
  uint32_t npos = (e == RSSM_EL_INT8) ? 128u : (1u << (bits - 1)); /* codes with sign bit clear */
  double *val = malloc((npos + 1) * sizeof *val);
  uint32_t *code = malloc((npos + 1) * sizeof *code);
  ref_grid *g = malloc(sizeof *g);
  if (!val || !code || !g) abort();
  int n = 0;
  for (uint32_t c = 0; c < npos; c++) {
    double v = ref_decode(e, c);
    if (isnan(v) || isinf(v)) continue;
    if (n > 0 && !(v > val[n - 1])) { /* the tables below rely on it */
      fprintf(stderr, "ref_grid: codes of format %d are not ascending at 0x%x\n", (int)e, c);
      abort();
    }
    val[n] = v;
    code[n] = c;
    n++;
  }
  g->e = e;
  g->maxval = val[n - 1];
  g->saturating = !(e == RSSM_EL_FP16 || e == RSSM_EL_BF16);
  if (!g->saturating) {
    /* the value one ulp past the top: IEEE rounds to it, and it means inf */
    val[n] = (e == RSSM_EL_FP16) ? 65536.0 : ldexp(1.0, 128);
    code[n] = (e == RSSM_EL_FP16) ? 0x7C00u : 0x7F80u;
    n++;
  }
  g->n = n;
  g->val = val;
  g->code = code;
  grids[e] = g;
  return g;
}

float ref_round(rssm_elem e, float x, int sr, uint32_t rbits) {
  const ref_grid *g = ref_grid_get(e);
  double a = fabs((double)x);
  double r;
  if (a >= g->maxval && g->saturating) {
    r = g->maxval;
  } else if (!g->saturating && a >= g->val[g->n - 1]) { /* fp16/bf16: at or past 2^16 / 2^128 */
    r = INFINITY;
  } else {
    /* largest i with val[i] <= a (val[0] = 0 <= a) */
    int lo = 0, hi = g->n - 1;
    while (hi - lo > 1) {
      int mid = (lo + hi) / 2;
      if (g->val[mid] <= a) lo = mid; else hi = mid;
    }
    double vlo = g->val[lo], vhi = g->val[lo + 1];
    if (a == vlo) {
      r = vlo;
    } else {
      /* both differences are exact in double: a and the neighbours are floats within a factor of
       * two of each other (or vlo = 0), and hi - lo is a power of two on every grid here */
      double d_lo = a - vlo, d_hi = vhi - a;
      int up;
      if (sr && a <= g->maxval) {
        double p = d_lo / (vhi - vlo);
        up = (double)(rbits >> 8) < p * 16777216.0;
      } else if (d_lo != d_hi) {
        up = d_hi < d_lo;
      } else {
        up = (g->code[lo + 1] & 1u) == 0u; /* tie: the even code */
      }
      r = up ? vhi : vlo;
      if (r > g->maxval) r = INFINITY; /* the overflow entry */
    }
  }
  float f = (float)r; /* exact: every grid value is an fp32 value */
  return signbit(x) ? -f : f;
}

uint32_t ref_sr_bits(uint64_t seed, uint64_t matrix_id, uint32_t event, uint32_t stream,
                     uint64_t elem) {
  /* quant/quant.h: { e >> 2, event, (uint32)matrix_id, (uint32)(matrix_id >> 32) | stream },
   * key = seed (low word first), output word e & 3 */
  uint32_t ctr[4] = {(uint32_t)(elem >> 2), event, (uint32_t)(matrix_id & 0xFFFFFFFFu),
                     (uint32_t)(matrix_id >> 32) | stream};
  uint32_t key[2] = {(uint32_t)(seed & 0xFFFFFFFFu), (uint32_t)(seed >> 32)};
  uint32_t out[4];
  rssm_philox4x32_10(ctr, key, out);
  return out[elem % 4u];
}

static float block_amax(const float *x /* [n] */, int64_t n) {
  float m = 0.0f;
  for (int64_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
  return m;
}

void ref_fake_matrix(const qformat *f, int64_t rows, int64_t cols, const float *x /* [rows][cols] */,
                     float *y /* [rows][cols] */, uint64_t seed, uint64_t matrix_id, uint32_t event,
                     uint32_t stream) {
  int sr = f->rounding == QR_SR;
#define BITS(idx) (sr ? ref_sr_bits(seed, matrix_id, event, stream, (uint64_t)(idx)) : 0u)
  rssm_elem el;
  switch (f->kind) {
    case QF_FP32:
      memcpy(y, x, (size_t)(rows * cols) * sizeof *x);
      return;
    case QF_BF16: el = RSSM_EL_BF16; break;
    case QF_FP16: el = RSSM_EL_FP16; break;
    case QF_FP8_E5M2: el = RSSM_EL_E5M2; break;
    case QF_INT8: el = RSSM_EL_INT8; break;
    case QF_NVFP4: case QF_MXFP4: el = RSSM_EL_E2M1; break;
    default: el = RSSM_EL_E4M3; break;
  }
  if (f->kind == QF_BF16 || f->kind == QF_FP16) {
    for (int64_t i = 0; i < rows * cols; i++) y[i] = ref_round(el, x[i], sr, BITS(i));
    return;
  }
  /* NVFP4's per-matrix scales: S_enc = (448*6)/amax (1 where amax = 0), S_dec = 1/S_enc */
  float s_enc = 1.0f, s_dec = 1.0f;
  if (f->kind == QF_NVFP4) {
    float amax = block_amax(x, rows * cols);
    s_enc = amax > 0.0f ? (448.0f * 6.0f) / amax : 1.0f;
    s_dec = 1.0f / s_enc;
  }
  const float maxf = (float)ref_grid_get(el)->maxval;
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t c0 = 0; c0 < cols; c0 += f->block) {
      int64_t n = cols - c0 < f->block ? cols - c0 : f->block; /* the last block may be short */
      const float *xb = x + r * cols + c0;
      float *yb = y + r * cols + c0;
      int64_t e0 = r * cols + c0;
      float amax = block_amax(xb, n);
      if (f->kind == QF_NVFP4) {
        /* s = e4m3(min(amax_b * (S_enc/6), 448)); fminf takes 448 when the product is NaN */
        float s = ref_round(RSSM_EL_E4M3, fminf(amax * (s_enc / 6.0f), 448.0f), 0, 0u);
        float enc = fminf(1.0f / (s * s_dec), FLT_MAX);
        for (int64_t i = 0; i < n; i++) {
          float code = ref_round(el, fmaxf(-6.0f, fminf(6.0f, xb[i] * enc)), sr, BITS(e0 + i));
          yb[i] = (code * s) * s_dec;
        }
        continue;
      }
      float s;
      if (f->kind == QF_MXFP8 || f->kind == QF_MXFP4) {
        int emax = f->kind == QF_MXFP8 ? 8 : 2, e = -127, k;
        if (amax > 0.0f) {
          frexpf(amax, &k); /* amax = m * 2^k, m in [0.5, 1): floor(log2(amax)) = k - 1 */
          e = k - 1 - emax;
        }
        e = e < -127 ? -127 : (e > 127 ? 127 : e);
        s = ldexpf(1.0f, e);
      } else {
        s = amax / maxf;
        /* SPEC: s = 1 where amax = 0. numerics.h extends this to an amax/max that underflows to
         * zero (docs/formats.md), which these finite tests reach only with amax < 2^-141. */
        if (amax == 0.0f || s == 0.0f) s = 1.0f;
      }
      for (int64_t i = 0; i < n; i++) {
        float code = ref_round(el, xb[i] / s, sr, BITS(e0 + i));
        if (el == RSSM_EL_INT8 && code == 0.0f) code = 0.0f; /* int8 has no -0 code */
        yb[i] = code * s;
      }
    }
  }
#undef BITS
}

uint64_t ref_rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double ref_rng_uniform(uint64_t *state) { return (double)(ref_rng_next(state) >> 11) * 0x1.0p-53; }

float ref_rand_spread(uint64_t *state, double lo_exp, double hi_exp) {
  double mag = pow(10.0, lo_exp + (hi_exp - lo_exp) * ref_rng_uniform(state));
  float f = (float)mag;
  return (ref_rng_next(state) & 1u) ? -f : f;
}

uint32_t ref_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

float ref_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

int64_t ref_count_bit_mismatch(const float *a /* [n] */, const float *b /* [n] */, int64_t n,
                               int64_t *first) {
  int64_t bad = 0;
  *first = -1;
  for (int64_t i = 0; i < n; i++) {
    if (ref_f32_bits(a[i]) != ref_f32_bits(b[i])) {
      if (bad == 0) *first = i;
      bad++;
    }
  }
  return bad;
}

qformat ref_format(const char *text) {
  qformat f;
  char err[256];
  if (qformat_parse(text, &f, err, sizeof err) != 0) {
    fprintf(stderr, "test bug: format '%s' rejected: %s\n", text, err);
    abort();
  }
  return f;
}
