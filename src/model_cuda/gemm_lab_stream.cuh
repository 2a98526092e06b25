/* Internal to the small-GEMM lab (gemm_lab.h): the launcher of the stream kernels (variants 1 and
 * 2, gemm_lab_stream.cu), called by gemm_lab.cu. */
#ifndef RSSM_MODEL_CUDA_GEMM_LAB_STREAM_CUH
#define RSSM_MODEL_CUDA_GEMM_LAB_STREAM_CUH

#include <cuda_runtime.h>

#include <stdint.h>

#include "src/model_cuda/gemm_lab.h"

/* THE FIXED ORDER over nsplit ranges: nsplit = 1 writes Y[r][n] directly (variants 1, 3);
 * nsplit > 1 writes range s's tree sum to part[s][r][n] and then adds the ranges in ascending
 * order into Y (variant 2). wide: the warp shape GEMM_LAB_NW_WIDE x GEMM_LAB_RB_WIDE (variant 3)
 * instead of GEMM_LAB_NW x GEMM_LAB_RB; the order, and so the bits, are the same. x: fp32 X
 * [R][cols] (fp32) or its bf16 rounding [R][cols] (bf16). Returns 0 or -1 on a launch error. */
int gemm_lab_launch_order(gemm_lab_prec p, int wide, const void *W /* [rows][cols] */,
                          const void *x /* [R][cols] */, float *part /* [nsplit][R][rows] */,
                          float *Y /* [R][rows] */, int R, int64_t rows, int64_t cols, int nsplit,
                          cudaStream_t s);

#endif
