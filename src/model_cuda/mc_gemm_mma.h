/* A skinny bf16 GEMM on the tensor cores for the decode step (issue 18):
 *
 *     Y[r][n] = sum_k X[r][k] W[n][k],   r < R <= 64 rows, n < rows, k < cols,
 *
 * W bf16 (the runtime's bf16 weights, mc_gemm_prec MC_GEMM_BF16), X bf16 or fp32 (fp32 X is
 * rounded to bf16, nearest even, as it is loaded: the same values f32_to_bf16 writes into xb, so
 * the two entries give the same bits), products exact, fp32 accumulation, fp32 Y.
 *
 * Why a kernel of our own beside cuBLAS (docs/bench-gemm.md): on the fixture models each cuBLAS
 * call costs ~3 us in a graph (launch and tail, not bytes: gpu_launch_lab), takes no part in
 * Programmatic Dependent Launch and needs a rounding launch before it. This kernel streams W once
 * with 16-byte loads, needs no split-K scratch, reads fp32 X directly and takes part in
 * Programmatic Dependent Launch (cuda_pdl.h) with its first round of W loaded before it waits for
 * the previous kernel: weights are never written during a decode. It was also meant for the 4B
 * shapes, where a GEMM is a read of W; there cuBLAS wins (mc_gemm_mma_for_model has the figures).
 *
 * Shape of the work. A block owns 16 weight rows and has KW warps; warp w takes the 32-k steps
 * w, w + KW, w + 2 KW, ... (so the block reads KW x 64 contiguous bytes of each row per round).
 * Per step a lane (g = lane / 4, t = lane % 4) loads W[n0 + g][32 s + 8 t .. + 7] and
 * W[n0 + g + 8][same] (16 bytes each) and, per 8 rows of X, X[8 j + g][same]; these feed two
 * mma.m16n8k16 (W as the row-major A, X as the column-major B) whose 16 k slots are a fixed
 * permutation of the step's 32 k, the same for A and B (slot 2t + e <-> k = 8t + e, slot 2t + 8 + e
 * <-> 8t + 2 + e in the first, +4 in the second), so each product W[n][k] X[r][k] is formed
 * exactly once. Then the KW warps' partial sums are added in shared memory in warp order.
 *
 * Numerics: products of bf16 are exact in fp32; the sums are the tensor cores' (fp32 with
 * possible truncation at alignment, as cuBLAS's bf16 GEMMs: gemm_lab_bound_cublas) then KW - 1
 * fp32 additions: |y - y64| <= gamma'(cols + KW) sum |x w|. The bits of an output depend on W, its
 * X row, cols and KW (a function of rows and the device: mc_gemm_mma_warps), not on R nor on the
 * other rows of the batch; they are not cuBLAS's bits. */
#ifndef RSSM_MODEL_CUDA_MC_GEMM_MMA_H
#define RSSM_MODEL_CUDA_MC_GEMM_MMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_GEMM_MMA_MAX_R 64

/* The 32-k steps of W a warp loads in one round (the first round is loaded before the kernel
 * waits for the previous one: cuda_pdl.h). */
#define MC_GEMM_MMA_PREFETCH 4

/* KW for a weight of `rows` rows and `cols` columns on a device of `sms` multiprocessors: 4 when
 * the 16-row blocks alone give every SM at least 4 of them (they are then resident together and
 * keep the bytes in flight); 16 when the blocks fit on the SMs one each and 8 warps would need a
 * second round of W (cols > 32 x 8 x MC_GEMM_MMA_PREFETCH): the second round is read after the
 * wait, on the step's critical path (the Mamba-2 fixture's MLP down projection, 320 x 1920 on 20
 * blocks, added 3.7-4.1 us to a step against 1.5-2.3 for its other GEMMs: H100, session 34,
 * tests/gpu/kernel_trace.c); else 8. A function of the weight and the device only, never of R. */
int mc_gemm_mma_warps(int64_t rows, int64_t cols, int sms);

/* Whether a bf16 model whose GEMMs read gemm_bytes of weights a step uses this kernel (1) or
 * cuBLAS (0): this kernel when gemm_bytes <= MC_GEMM_MMA_MODEL_BYTES. Measured on an H100
 * (docs/gpu-results.md, "Session 30" and "Session 31"; `bench gemm`, bf16, L2 flushed): at 16
 * rows the fixture models' step GEMMs take 69 / 61 us in a graph (session 30, before the weights
 * were loaded ahead of the PDL wait: 95 / 75) against cuBLAS's 162 / 103, while on the 4B
 * shapes cuBLAS reads the weights at 72-74 % of copy against this kernel's 45-58 % (at 64 rows:
 * 20-27 %: every warp re-reads 64 rows of X for 16 weight rows). A property of the model, never
 * of the batch, so a row's bits do not depend on the batch it is in. The runtime applies it by
 * default (mc_model.cu, gemm_kernel_choice; RSSM_GEMM_BF16=cublas / =mma override it). */
#define MC_GEMM_MMA_MODEL_BYTES ((int64_t)64 << 20)
int mc_gemm_mma_for_model(int64_t gemm_bytes);

/* Whether the kernel takes these arguments: 1 <= R <= 64, 1 <= rows, cols <= INT32_MAX, cols a
 * multiple of 8 (a 16-byte load of bf16 W), W and X 16-byte aligned, ldy >= rows. */
int mc_gemm_mma_supported(const void *W, const void *X, int R, int64_t rows, int64_t cols,
                          int64_t ldy);

/* The activations mc_gemm_mma_act applies (mc_device.cuh's relu2_of and swiglu_of). */
#define MC_GEMM_MMA_ACT_RELU2 1
#define MC_GEMM_MMA_ACT_SWIGLU 2

/* Whether mc_gemm_mma_act takes these arguments: mc_gemm_mma_supported's conditions with the
 * output's width (rows, or rows / 2 for SWIGLU, which needs rows even) at most lda. */
int mc_gemm_mma_act_supported(const void *W, const void *X, int R, int64_t rows, int64_t cols,
                              int64_t lda, int act);

/* The tiles of 8 rows of X a call of R rows computes (1, 2, 4 or 8: R <= 8, 16, 32, 64). */
int mc_gemm_mma_row_tiles(int R);

#ifdef RSSM_HAVE_CUDA
/* Y[r][n] for r < R, n < rows (Y's other columns untouched). W bf16 bits [rows][cols]; X bf16
 * bits (x_f32 = 0) or fp32 (x_f32 = 1) [R][cols]; Y fp32 [R][ldy]. kw: 4, 8 or 16
 * (mc_gemm_mma_warps). Launched with pdl_launch (cuda_pdl.h). Returns 0, -1 on a launch error, -2
 * when the arguments are not supported (mc_gemm_mma_supported, or kw not 4, 8 or 16): nothing is
 * launched then. */
int mc_gemm_mma(const uint16_t *W /* [rows][cols] */, const void *X /* [R][cols] */, int x_f32,
                float *Y /* [R][ldy] */, int64_t ldy, int R, int64_t rows, int64_t cols, int kw,
                void *stream);

/* An MLP's input projection and its activation in one launch, written as the bf16 input of the
 * output projection (issue 18: one launch less per MLP block):
 *   RELU2   A[r][n] = bf16(relu2_of(Y[r][n])),                 n < rows;
 *   SWIGLU  A[r][n] = bf16(swiglu_of(Y[r][n], Y[r][I + n])),   n < I = rows / 2 (W = gate | up),
 * with Y = X W^T as mc_gemm_mma computes it (each sum from the same loads, mma and warp order; a
 * SWIGLU block takes 8 gate rows and their 8 up rows instead of 16 consecutive rows) and the
 * activation and rounding of act_bf16_kernel (mc_fused.cu): the bits of mc_gemm_mma followed by
 * mc_relu2_bf16 / mc_swiglu_bf16, which gpu_check_gemm_lab checks. Rows R.. of A are not written.
 * Returns as mc_gemm_mma (-2: mc_gemm_mma_act_supported refuses, or kw not 4, 8 or 16). */
int mc_gemm_mma_act(const uint16_t *W /* [rows][cols] */, const void *X /* [R][cols] */, int x_f32,
                    uint16_t *A /* [R][lda] bf16 */, int64_t lda, int R, int64_t rows, int64_t cols,
                    int act, int kw, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
