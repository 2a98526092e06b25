/* The wide tensor-core GEMM for the large models' decode step (issue 18: the 4B shapes at K = 64
 * rows, where cuBLAS's bf16 GEMMs read the weights at 72-80 % of copy and take no part in PDL):
 *
 *     Y[r][n] = sum_k X[r][k] W[n][k],   r < R <= 64, n < rows, k < cols,
 *
 * W bf16 [rows][cols], X bf16 [R][cols] (the runtime's xb), Y fp32 [R][ldy].
 *
 * Shape of the work. A block owns MC_GEMM_WIDE_ROWS = 128 weight rows (8 warps of 16) and one of
 * nsplit contiguous ranges of the k-tiles (64 k each); it streams its W tiles and the matching X
 * tiles (all R rows: X is read once per 128 weight rows, not once per 16 as in mc_gemm_mma.h)
 * through a 4-stage cp.async pipeline in shared memory (swizzled rows, ldmatrix fragments,
 * mma.m16n8k16), starting at a k-tile rotated by its tile index (so that the blocks running at
 * once read different X tiles). The first 3 stages' W is requested before the kernel waits for
 * the previous one (cuda_pdl.h): W is a weight, never written during a decode. nsplit
 * (mc_gemm_wide_splits) fills the SMs where the weight has few rows (a 2560-row output
 * projection is 20 blocks of 128 rows); the split blocks write fp32 partial sums to scratch and
 * a second kernel adds them in split order.
 *
 * Numerics: products of bf16 are exact in fp32; each split's sum is the tensor cores' (fp32 with
 * possible truncation at alignment, 2u per addition, as cuBLAS's bf16 GEMMs), then nsplit - 1
 * fp32 additions in ascending split order: |y - y64| <= gamma'(cols + nsplit) sum |x w|
 * (gemm_lab_bound_mma with kw = nsplit). The bits of an output depend on W, its X row, cols, its
 * tile (the rotation) and nsplit (a function of rows, cols and the device only), never on R nor
 * on the other rows: a row's output is the same in any batch. They are neither cuBLAS's bits nor
 * mc_gemm_mma's. */
#ifndef RSSM_MODEL_CUDA_MC_GEMM_WIDE_H
#define RSSM_MODEL_CUDA_MC_GEMM_WIDE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_GEMM_WIDE_MAX_R 64    /* rows of X per call */
#define MC_GEMM_WIDE_ROWS 128    /* weight rows a block */
#define MC_GEMM_WIDE_KT 64       /* k a tile (128 bytes of a bf16 row) */
#define MC_GEMM_WIDE_SM_BLOCKS 2 /* blocks resident per SM (96 KiB of pipeline each) */
#define MC_GEMM_WIDE_MIN_TILES 8 /* k-tiles a split at least (64 KiB of W a block) */
#define MC_GEMM_WIDE_MAX_SPLITS 32

/* The split count for a weight of rows x cols on a device of sms multiprocessors: as many splits
 * as keep the grid (ceil(rows / 128) tiles x nsplit) within one wave of MC_GEMM_WIDE_SM_BLOCKS
 * blocks an SM, each split at least MC_GEMM_WIDE_MIN_TILES k-tiles, at most
 * MC_GEMM_WIDE_MAX_SPLITS; then the count that ceil(nkt / nsplit) k-tiles a split gives (so that
 * no split is empty). 1 when the tiles alone fill the wave. A function of the weight and the
 * device only, never of R: the bits depend on it. */
int mc_gemm_wide_splits(int64_t rows, int64_t cols, int sms);

/* k-tiles of each split but the last (which may have fewer): ceil(nkt / nsplit). */
int64_t mc_gemm_wide_tiles_per_split(int64_t cols, int nsplit);

/* Floats of scratch a call with nsplit > 1 needs ([nsplit][R][rows]); 0 for nsplit = 1. */
size_t mc_gemm_wide_scratch_floats(int R, int64_t rows, int nsplit);
/* An upper bound over every weight on a device of sms multiprocessors (nsplit > 1 only where
 * ceil(rows / 128) nsplit <= MC_GEMM_WIDE_SM_BLOCKS sms): the scratch floats a batch allocates
 * once. */
size_t mc_gemm_wide_scratch_max(int sms);

/* Whether the kernel takes these arguments: 1 <= R <= 64, 1 <= rows, cols <= INT32_MAX, cols a
 * multiple of 8 (16-byte rows), W and X 16-byte aligned, ldy >= rows. */
int mc_gemm_wide_supported(const void *W, const void *X, int R, int64_t rows, int64_t cols,
                           int64_t ldy);

#ifdef RSSM_HAVE_CUDA
/* Sets the kernels' shared-memory attribute (once per process; mc_gemm_wide does it too, but a
 * batch calls this when it is built, so that no first call happens inside a graph capture).
 * 0, or -1 on a device before sm_80 or an error. */
int mc_gemm_wide_prepare(void);

/* Y[r][n] for r < R, n < rows (Y's other columns untouched), nsplit = mc_gemm_wide_splits(rows,
 * cols, device SMs) (any count up to MC_GEMM_WIDE_MAX_SPLITS that leaves no split empty is
 * taken; the bits depend on it). scratch: mc_gemm_wide_scratch_floats(R, rows, nsplit) floats when
 * nsplit > 1, else NULL. Launched with pdl_launch on `stream` (a second launch, the split sums,
 * when nsplit > 1). Returns 0, -1 on a launch error, -2 when the arguments are not supported
 * (nothing launched). */
int mc_gemm_wide(const uint16_t *W /* [rows][cols] */, const uint16_t *X /* [R][cols] */,
                 float *Y /* [R][ldy] */, int64_t ldy, int R, int64_t rows, int64_t cols,
                 int nsplit, float *scratch /* [nsplit][R][rows] */, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
