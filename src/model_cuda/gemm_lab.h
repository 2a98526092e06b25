/* Small-GEMM lab (issue 18, "Long-context decoding on one GPU at the byte limit";
 * docs/bench-gemm.md): variants of the runtime's projection GEMM
 *
 *     Y[r][n] = sum_k X[r][k] W[n][k],   r < R <= 64 rows, n < rows (weight rows), k < cols,
 *
 * timed by `replayssm bench gemm` against the copy bandwidth and checked by gpu_check_gemm_lab.
 * A lab: the model runtime's gemm() (mc_step_gemm.cu) is not changed by it; a winner goes in after a
 * measurement.
 *
 * Precisions (as the runtime's two GEMM precisions, mc_gemm_prec):
 *   fp32  W and X fp32, fp32 products and sums;
 *   bf16  W bf16 (raw bits, uint16), X rounded to bf16 (round to nearest even) first, as the
 *         runtime does; products of two bf16 values are exact in fp32; fp32 sums and output.
 *
 * Variants:
 *   0 cublas  what the runtime does today: cublasSgemm without TF32 (fp32) or cublasGemmEx with
 *             bf16 W and X and CUBLAS_COMPUTE_32F (bf16), one call per tile of `tile` rows, so
 *             X and Y must hold gemm_lab_rows_alloc(R, tile) rows (padding rows are computed and
 *             never read, as in the runtime). Row-invariant only across batches whose calls have
 *             the same n (the runtime's row tile), and only as an observation about cuBLAS.
 *   1 stream  one pass over the weights: a warp owns GEMM_LAB_NW weight rows and up to
 *             GEMM_LAB_RB rows of X, streams its weight rows once with 16-byte loads (bf16: 8
 *             values, fp32: 4), reads X through L1 (R cols values: tiny beside the weights),
 *             fp32 fmaf accumulation in THE FIXED ORDER below; the grid covers
 *             ceil(R / GEMM_LAB_RB) row groups, consecutive blocks sharing weight rows so that
 *             the other row groups find them in L2.
 *   2 splitk  variant 1's arithmetic over nsplit contiguous ranges of the chunks (nsplit a
 *             function of the weight's shape and the device only: gemm_lab_splits), each range's
 *             result written to scratch, then a second kernel adds the nsplit partials in
 *             ascending order. For weights with few rows (the tiny models' 256 x 256 lm_head
 *             gives variant 1 only 32 blocks for 132 SMs).
 *   3 stream4 variant 1 with another warp shape: GEMM_LAB_NW_WIDE = 4 weight rows and
 *             GEMM_LAB_RB_WIDE = 8 rows of X per warp (each X load feeds 4 weight rows, and a lane
 *             has 4 x 2 16-byte weight loads in flight; at large R twice the row groups re-read
 *             the weights from L2). The same order as variant 1, so the same bits.
 *   4 mma4    bf16 only: the runtime's tensor-core kernel (mc_gemm_mma.h) with 4 warps a block,
 *             reading fp32 X and rounding it to bf16 as it loads it (no rounding launch first);
 *   5 mma8    the same with 8 warps a block,
 *   6 mma16   and with 16 (the runtime picks one of the three by mc_gemm_mma_warps). The tensor
 *             cores' order, not THE FIXED ORDER: checked against gemm_lab_bound_mma; row
 *             invariance is printed, not required.
 *   7 wide    bf16 only: the wide tensor-core kernel (mc_gemm_wide.h: 128 weight rows a block,
 *             X staged in shared memory once per block, a cp.async pipeline, split-K at
 *             mc_gemm_wide_splits' count for the device, the partials added in split order by
 *             a second kernel),
 *             reading xb as the runtime does (X rounded first, as variant 0); checked against
 *             gemm_lab_bound_mma at kw = its split count.
 *   8-15 lt0..lt7  bf16 only: cuBLASLt's matmul with the i-th algorithm its heuristic ranks
 *             for the shape (mc_gemm_lt.h, as the runtime's RSSM_GEMM_LT switch), on variant 0's
 *             tiles and xb. cublasGemmEx runs one algorithm of its own choice; at the 4B
 *             shapes' 64-row tiles it read the output projections at 43-56 % of copy (session
 *             37), and the question is whether another ranked kernel (other tiles, split-K
 *             counts) streams them faster. The rank names an algorithm through the shape, the
 *             device and the library only, never through a timing, so a winner can ship as a
 *             fixed rule. Refused (-2) when cols % 8 or rows % 4 is not 0 (a tile would not be
 *             16-byte aligned) or when the heuristic ranks fewer than i + 1 algorithms.
 *             Checked against gemm_lab_bound_cublas (any order, as variant 0).
 *
 * THE FIXED ORDER (variants 1, 2 and 3, and gemm_lab_ref_order on the CPU). A "chunk" is CH
 * consecutive k (CH = 8 for bf16, 4 for fp32: what one 16-byte load of W holds), chunk c covering
 * k in [c CH, (c + 1) CH) clipped to cols (the last chunk may be short: its missing
 * k are skipped, never added as zeros). The nchunks = ceil(cols / CH) chunks are cut into
 * nsplit ranges of len = 32 ceil(ceil(nchunks / nsplit) / 32) chunks (range s: [s len, (s + 1)
 * len) clipped; variant 1 is nsplit = 1). In range s, lane l (< 32) starts from +0 and does
 * acc = fmaf(x[r][k], w[n][k], acc) for the chunks base + l, base + l + 32, ... in ascending
 * order, within a chunk in ascending k; then the 32 lane sums are added by the fixed tree
 * p[l] = p[l] + p[l + h] for h = 16, 8, 4, 2, 1 (what the xor butterfly leaves in every lane);
 * then y = P[0], y = y + P[s] for s = 1 .. nsplit - 1. This order depends only on cols, the
 * precision and nsplit, never on R, the row's place in the batch nor the other rows: a row's
 * output is bit-identical whatever batch it is in (row-invariant by construction), and
 * gemm_lab_ref_order reproduces it bit for bit (fmaf on both sides, no contraction elsewhere:
 * the project compiles C with -ffp-contract=off and CUDA with --fmad=false). */
#ifndef RSSM_MODEL_CUDA_GEMM_LAB_H
#define RSSM_MODEL_CUDA_GEMM_LAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  GEMM_LAB_CUBLAS = 0,
  GEMM_LAB_STREAM = 1,
  GEMM_LAB_SPLITK = 2,
  GEMM_LAB_STREAM4 = 3,
  GEMM_LAB_MMA4 = 4,
  GEMM_LAB_MMA8 = 5,
  GEMM_LAB_MMA16 = 6,
  GEMM_LAB_WIDE = 7,
  GEMM_LAB_LT0 = 8, /* GEMM_LAB_LT0 + i: cuBLASLt's i-th ranked algorithm, i < GEMM_LAB_LT_RANKS */
};
#define GEMM_LAB_LT_RANKS 8 /* MC_GEMM_LT_RANKS */
#define GEMM_LAB_NVARIANTS (GEMM_LAB_LT0 + GEMM_LAB_LT_RANKS)
typedef enum { GEMM_LAB_FP32 = 0, GEMM_LAB_BF16 = 1 } gemm_lab_prec;

#define GEMM_LAB_MAX_R 64 /* rows of X per call */
#define GEMM_LAB_LANES 32 /* the fixed order's lane sums */
#define GEMM_LAB_MAX_SPLITS 64
/* The stream kernels' shape (variants 1 and 2; variant 3: the _WIDE pair): GEMM_LAB_WARPS warps per block, each owning
 * GEMM_LAB_NW weight rows and GEMM_LAB_RB rows of X (NW RB = 32 outputs: one per lane at the
 * end). None of them enters the summation order. */
#define GEMM_LAB_WARPS 4
#define GEMM_LAB_NW 2
#define GEMM_LAB_RB 16
/* variant 3's warp: 4 weight rows, 8 rows of X */
#define GEMM_LAB_NW_WIDE 4
#define GEMM_LAB_RB_WIDE 8

/* "cublas", "stream", "splitk", "stream4", "mma4", "mma8", "mma16", "wide", "lt0" .. "lt7" for
 * 0..15; NULL otherwise. */
const char *gemm_lab_name(int variant);
/* The variant numbered by name or number ("1" or "stream", "11" or "lt3"); -1 if none. */
int gemm_lab_parse(const char *text);
/* The heuristic rank a cuBLASLt variant uses (0..7 for lt0..lt7), -1 for the others. */
int gemm_lab_lt_rank(int variant);
/* Whether the variant calls cuBLAS once per tile of `tile` rows (cublas and the lt variants:
 * X and Y hold gemm_lab_rows_alloc's padded rows). */
int gemm_lab_is_tiled(int variant);
/* "fp32", "bf16" */
const char *gemm_lab_prec_name(gemm_lab_prec p);
/* Whether the variant computes THE FIXED ORDER (1, 2, 3: bit-exact against gemm_lab_ref_order
 * and row-invariant by construction). */
int gemm_lab_is_order(int variant);
/* The warps a block of an mma variant (4, 8, 16 for mma4, mma8, mma16), 0 for the others. */
int gemm_lab_mma_warps(int variant);
/* Variant 7's split count for a weight of rows x cols on the device of sms multiprocessors
 * (mc_gemm_wide_splits); 0 for the other variants. */
int gemm_lab_wide_splits(int variant, int64_t rows, int64_t cols, int sms);
/* Whether the variant runs at precision p (the mma, wide and lt variants: bf16 only). */
int gemm_lab_has_prec(int variant, gemm_lab_prec p);
/* Values of k per chunk (one 16-byte load of W): 8 for bf16, 4 for fp32. */
int gemm_lab_chunk(gemm_lab_prec p);
/* Bytes of one weight element: 2 or 4. */
int gemm_lab_wbytes(gemm_lab_prec p);

/* Rows X and Y must hold for a call of R rows on tiles of `tile` (the tiled variants, 0 and the
 * lt ones: R rounded up to a multiple of tile; the others: R). */
int64_t gemm_lab_rows_alloc(int variant, int R, int tile);

/* The split count of variant 2 for a weight of rows x cols on a device of sms multiprocessors:
 * 1 when variant 1 already has 2 sms blocks per row group (ceil(rows / (NW WARPS)) >= 2 sms),
 * otherwise ceil(2 sms / those blocks), capped so that every split holds at least 32 chunks (one
 * per lane) and at GEMM_LAB_MAX_SPLITS. A function
 * of the weight and the device, never of R: the order (and so the bits) of variant 2 depend on
 * it. */
int gemm_lab_splits(int64_t rows, int64_t cols, gemm_lab_prec p, int sms);
/* Floats of scratch of variant 2: nsplit R rows partials ([nsplit][R][rows]). */
size_t gemm_lab_scratch_floats(int R, int64_t rows, int nsplit);

/* bf16 bits of x, round to nearest even (__float2bfloat16_rn for finite x and infinities; NaN
 * stays a quiet NaN). */
uint16_t gemm_lab_bf16_rne(float x);
/* The float a bf16 holds. */
float gemm_lab_bf16_to_f32(uint16_t b);

/* CPU reference of THE FIXED ORDER above, bit-identical to variants 1 and 3 (nsplit = 1) and 2.
 * W: float [rows][cols] (fp32) or uint16_t bf16 bits [rows][cols] (bf16); X fp32 (rounded to
 * bf16 here for bf16). */
void gemm_lab_ref_order(gemm_lab_prec p, const void *W /* [rows][cols] */,
                        const float *X /* [R][cols] */, float *Y /* [R][rows] */, int R,
                        int64_t rows, int64_t cols, int nsplit);

/* fp64 evaluation: Y64[r][n] = sum_k x w and A[r][n] = sum_k |x w| in double, x rounded to bf16
 * first for bf16 (the GEMM's definition: the rounding of X is part of it, not an error). */
void gemm_lab_ref64(gemm_lab_prec p, const void *W /* [rows][cols] */,
                    const float *X /* [R][cols] */, double *Y64 /* [R][rows] */,
                    double *A /* [R][rows] */, int R, int64_t rows, int64_t cols);

/* The error bounds (bench_gemm_check.c has the argument): |y - y64| <= bound * A.
 *  - THE FIXED ORDER: every term goes through at most d roundings, d = the longest lane chain
 *    (ceil(len / 32) CH fmaf, len the chunks of a range) + 5 (the tree) + nsplit - 1 (the
 *    second pass): gamma_d = d u / (1 - d u), u = 2^-24;
 *  - cuBLAS: any order of a cols-term dot product with rounded products is within gamma_cols
 *    (Higham, Accuracy and Stability, eq. 3.5); the tensor cores' fp32 accumulation of bf16
 *    products may truncate instead of rounding (up to 2u per addition), so 2u per step:
 *    gamma'_cols = 2 cols u / (1 - 2 cols u), for both precisions. */
double gemm_lab_bound_order(gemm_lab_prec p, int64_t cols, int nsplit);
double gemm_lab_bound_cublas(int64_t cols);
/*  - the mma variants (mc_gemm_mma.h): the tensor cores' sums as cuBLAS's (2u per addition),
 *    then the kw - 1 additions of the warps' partial sums: gamma' at d = cols + kw; the wide
 *    variant (mc_gemm_wide.h) the same with kw = its split count (nsplit - 1 additions). */
double gemm_lab_bound_mma(int64_t cols, int kw);

#ifdef RSSM_HAVE_CUDA
/* A cuBLAS handle with its own 32 MiB workspace and math mode CUBLAS_DEFAULT_MATH (as the
 * runtime's batch), on `stream`. NULL on failure. */
typedef struct gemm_lab_ctx gemm_lab_ctx;
gemm_lab_ctx *gemm_lab_create(void *stream);
void gemm_lab_destroy(gemm_lab_ctx *c);

/* Y = X W^T with `variant` at precision p. W on the device: float [rows][cols] or bf16 bits
 * [rows][cols]. X fp32 [Ra][cols], Y [Ra][rows], Ra = gemm_lab_rows_alloc(variant, R, tile).
 * xb: bf16 scratch of Ra cols elements (bf16 only; X rounded into it first, as the runtime's xb).
 * scratch: gemm_lab_scratch_floats(R, rows, nsplit) floats (variant 2 only). tile: variant 0's
 * rows per call. nsplit: variant 2's split count (variants 1 and 3: always 1). Every device pointer
 * 16-byte aligned. The mma variants read X itself (not xb) and need cols % 8 == 0; the wide
 * variant reads xb, needs cols % 8 == 0, and ignores nsplit and scratch (its count is
 * gemm_lab_wide_splits', its scratch the context's); the lt variants read xb on tiles as variant
 * 0 (their plans are cached in the context per shape and tile). Returns 0, -1 on
 * a launch or cuBLAS error, -2 when the arguments are not supported (R outside 1..64, nsplit
 * outside 1..GEMM_LAB_MAX_SPLITS, tile < 1, an mma variant at fp32 or on a shape
 * mc_gemm_mma_supported refuses, an lt variant whose rank the heuristic does not reach). */
int gemm_lab_run(gemm_lab_ctx *c, int variant, gemm_lab_prec p, const void *W /* [rows][cols] */,
                 const float *X /* [Ra][cols] */, uint16_t *xb /* [Ra][cols] */,
                 float *scratch /* [nsplit][R][rows] */, float *Y /* [Ra][rows] */, int R,
                 int64_t rows, int64_t cols, int tile, int nsplit);

/* W[i] = +-[0.05, 1) (never zero; sign and magnitude from a hash of (seed, i)), as fp32 or bf16
 * (the fp32 value rounded to nearest even), on the device. Returns 0 or -1. */
int gemm_lab_fill(gemm_lab_prec p, void *W /* [n] */, int64_t n, uint32_t seed, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
