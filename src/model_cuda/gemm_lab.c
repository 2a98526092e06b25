/* The host-side arithmetic of the small-GEMM lab (gemm_lab.h): names, chunk sizes, the split
 * count, bf16 rounding and the error bounds. Pure C, so that the CPU build (the option parser of
 * `bench gemm`, its tests) has it. */
#include "src/model_cuda/gemm_lab.h"

#include "src/model_cuda/mc_gemm_lt.h"
#include "src/model_cuda/mc_gemm_wide.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const names[GEMM_LAB_NVARIANTS] = {
    "cublas", "stream", "splitk", "stream4", "mma4", "mma8", "mma16", "wide",
    "lt0",    "lt1",    "lt2",    "lt3",     "lt4",  "lt5",  "lt6",   "lt7"};

const char *gemm_lab_name(int variant) {
  return variant >= 0 && variant < GEMM_LAB_NVARIANTS ? names[variant] : NULL;
}

int gemm_lab_parse(const char *text) {
  for (int v = 0; v < GEMM_LAB_NVARIANTS; v++) {
    char number[4];
    snprintf(number, sizeof number, "%d", v);
    if (strcmp(text, names[v]) == 0 || strcmp(text, number) == 0) return v;
  }
  return -1;
}

_Static_assert(GEMM_LAB_LT_RANKS == MC_GEMM_LT_RANKS,
               "one lt variant per rank the runtime may use");

int gemm_lab_lt_rank(int variant) {
  return variant >= GEMM_LAB_LT0 && variant < GEMM_LAB_NVARIANTS ? variant - GEMM_LAB_LT0 : -1;
}

int gemm_lab_is_tiled(int variant) {
  return variant == GEMM_LAB_CUBLAS || gemm_lab_lt_rank(variant) >= 0;
}

int gemm_lab_is_order(int variant) {
  return variant == GEMM_LAB_STREAM || variant == GEMM_LAB_SPLITK || variant == GEMM_LAB_STREAM4;
}

int gemm_lab_mma_warps(int variant) {
  return variant == GEMM_LAB_MMA4    ? 4
         : variant == GEMM_LAB_MMA8  ? 8
         : variant == GEMM_LAB_MMA16 ? 16
                                     : 0;
}

int gemm_lab_has_prec(int variant, gemm_lab_prec p) {
  if (variant < 0 || variant >= GEMM_LAB_NVARIANTS) return 0;
  return p == GEMM_LAB_BF16 || (gemm_lab_mma_warps(variant) == 0 && variant != GEMM_LAB_WIDE &&
                                gemm_lab_lt_rank(variant) < 0);
}

int gemm_lab_wide_splits(int variant, int64_t rows, int64_t cols, int sms) {
  return variant == GEMM_LAB_WIDE ? mc_gemm_wide_splits(rows, cols, sms) : 0;
}

const char *gemm_lab_prec_name(gemm_lab_prec p) { return p == GEMM_LAB_BF16 ? "bf16" : "fp32"; }
int gemm_lab_chunk(gemm_lab_prec p) { return p == GEMM_LAB_BF16 ? 8 : 4; }
int gemm_lab_wbytes(gemm_lab_prec p) { return p == GEMM_LAB_BF16 ? 2 : 4; }

int64_t gemm_lab_rows_alloc(int variant, int R, int tile) {
  if (!gemm_lab_is_tiled(variant)) return R;
  if (tile < 1) tile = 1;
  return ((int64_t)R + tile - 1) / tile * tile;
}

/* Variant 1 gives ceil(rows / (NW WARPS)) blocks per row group; with at least 2 per SM the grid
 * already fills the device (a 16-row batch of the 4B shapes: 320-31040 blocks). Fewer (the tiny
 * models' 256-row weights: 32 blocks) leave most SMs idle, so the chunks are split; a split of
 * fewer than 32 chunks would leave lanes without work, hence the cap. */
int gemm_lab_splits(int64_t rows, int64_t cols, gemm_lab_prec p, int sms) {
  if (rows < 1 || cols < 1 || sms < 1) return 1;
  const int64_t per = (int64_t)GEMM_LAB_NW * GEMM_LAB_WARPS;
  const int64_t groups = (rows + per - 1) / per;
  if (groups >= 2 * (int64_t)sms) return 1;
  int64_t n = (2 * (int64_t)sms + groups - 1) / groups;
  const int64_t nchunks = (cols + gemm_lab_chunk(p) - 1) / gemm_lab_chunk(p);
  const int64_t cap = nchunks / GEMM_LAB_LANES;
  if (n > cap) n = cap;
  if (n > GEMM_LAB_MAX_SPLITS) n = GEMM_LAB_MAX_SPLITS;
  return n < 1 ? 1 : (int)n;
}

size_t gemm_lab_scratch_floats(int R, int64_t rows, int nsplit) {
  return (size_t)(nsplit > 0 ? nsplit : 0) * (size_t)(R > 0 ? R : 0) * (size_t)(rows > 0 ? rows : 0);
}

uint16_t gemm_lab_bf16_rne(float x) {
  uint32_t b;
  memcpy(&b, &x, sizeof b);
  if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x0040u); /* quiet NaN */
  b += 0x7fffu + ((b >> 16) & 1u); /* ties to even; overflow carries into the exponent: inf */
  return (uint16_t)(b >> 16);
}

float gemm_lab_bf16_to_f32(uint16_t h) {
  const uint32_t b = (uint32_t)h << 16;
  float x;
  memcpy(&x, &b, sizeof x);
  return x;
}

/* gamma_d = d u / (1 - d u) with u = 2^-24 (Higham, Accuracy and Stability of Numerical
 * Algorithms, 2nd ed., lemma 3.1): a value that went through d roundings (each a relative
 * perturbation (1 + delta), |delta| <= u) is within gamma_d of exact, relative to the sum of the
 * absolute values of the terms. */
static double gamma_of(double d, double u) { return d * u / (1.0 - d * u); }

/* THE FIXED ORDER (gemm_lab.h): a term x_k w_k enters its lane's chain at one fmaf (exact
 * product, one rounding of the sum) and is rounded again by each later fmaf of that chain: at
 * most ceil(len / 32) CH roundings in the chain (len = chunks per range), then one per level of
 * the 5-level tree, then at most nsplit - 1 additions of the second pass. */
double gemm_lab_bound_order(gemm_lab_prec p, int64_t cols, int nsplit) {
  if (nsplit < 1) nsplit = 1;
  const int64_t ch = gemm_lab_chunk(p), nchunks = (cols + ch - 1) / ch;
  const int64_t per = (nchunks + nsplit - 1) / nsplit;
  const int64_t len = (per + GEMM_LAB_LANES - 1) / GEMM_LAB_LANES * GEMM_LAB_LANES;
  const double chain = (double)(len / GEMM_LAB_LANES) * (double)ch;
  return gamma_of(chain + 5.0 + (double)(nsplit - 1), ldexp(1.0, -24));
}

/* cuBLAS: the order (split-K, tree or sequential, and which kernel) is cuBLAS's. For any order
 * the sum of cols rounded products is within gamma_cols sum |x w| (Higham eq. 3.5: each term
 * sees at most cols roundings, its product's and at most cols - 1 additions). fp32 SGEMM without
 * TF32 rounds as IEEE; bf16 GemmEx on tensor cores forms exact products but its fp32
 * accumulation may align and truncate (Fasi, Higham, Mikaitis, Pranesh 2021, "Numerical
 * behavior of NVIDIA tensor cores"), an error of up to 2u per addition: so 2u per rounding for
 * both precisions, gamma computed with 2u. */
double gemm_lab_bound_cublas(int64_t cols) {
  return gamma_of((double)cols + 1.0, ldexp(1.0, -23));
}

double gemm_lab_bound_mma(int64_t cols, int kw) {
  return gamma_of((double)cols + (double)(kw > 1 ? kw : 1), ldexp(1.0, -23));
}
