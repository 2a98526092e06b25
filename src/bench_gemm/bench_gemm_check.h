/* The correctness check of one small-GEMM-lab variant (src/model_cuda/gemm_lab.h) on one weight
 * shape, on random inputs: against an fp64 evaluation within the variant's error bound, and, for
 * the stream variants (1, 2, 3), bit for bit against the CPU reference of their order and for row
 * invariance. Run by `bench gemm` before it times a variant and by tests/gpu/gemm_lab_check.cu
 * (gpu_check_gemm_lab) over more shapes and row counts. The argument is in bench_gemm_check.c.
 * CUDA builds only. */
#ifndef RSSM_BENCH_GEMM_BENCH_GEMM_CHECK_H
#define RSSM_BENCH_GEMM_BENCH_GEMM_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "src/model_cuda/gemm_lab.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int ran;             /* 0: the variant refused the arguments (gemm_lab_run -2) */
  int ok;              /* every requirement below held */
  double worst_ratio;  /* max over checked outputs of |gpu - fp64| / (bound A) (<= 1 passes) */
  double worst_rel;    /* max |gpu - fp64| / A, A = sum |x w| */
  int64_t cpu_diff;    /* variants 1-3: checked outputs whose bits differ from gemm_lab_ref_order
                          (must be 0); variants 0, 4, 5: not computed (-1) */
  int64_t inv_diff;    /* outputs of rows computed alone or in the reversed batch whose bits differ
                          from the same row in the batch: must be 0 for variants 1-3; reported
                          only for variants 0, 4, 5 (cuBLAS promises nothing; the runtime's
                          tile; the tensor cores' order is the hardware's) */
  int64_t checked;     /* outputs compared with fp64 (over every R) */
  uint64_t bits;       /* FNV-1a of every output's bits (each R's rows in turn): two builds of a
                          variant meant to give the same bits print the same value */
  int nsplit;          /* the split count used */
} gemm_check_result;

/* Checks `variant` at precision p on W [rows][cols] (random +-[0.05, 1) on the device) and X
 * [64][cols] (random +-[0.05, 1)), for each R of Rs [nR] (1..64): Y's first R rows at up to 64
 * sampled weight rows (all of them when rows <= 64, always the first and the last) against fp64
 * and the CPU order; then, at the largest R, row invariance over every output. tile: variant
 * 0's rows per call; nsplit: variant 2's split count (0: gemm_lab_splits for this device).
 * Returns 0 (result in *res) or -1 on a CUDA or allocation error (message in err). */
int gemm_check_variant(int variant, gemm_lab_prec p, int64_t rows, int64_t cols, const int *Rs,
                       int nR, int tile, int nsplit, gemm_check_result *res, char *err,
                       size_t errlen);

/* FNV-1a (64-bit) of n bytes, continued from h (start: GEMM_CHECK_FNV_BASIS): a fingerprint of
 * a kernel's output bits, printed so that two builds meant to agree bit for bit can be compared
 * by their printed lines. */
#define GEMM_CHECK_FNV_BASIS 0xcbf29ce484222325ULL
uint64_t gemm_check_fnv1a(uint64_t h, const void *bytes, size_t n);

/* Frees what gemm_check_variant keeps between calls (the last shape's device weights and host
 * references): the bench calls it before allocating a whole step's weights. */
void gemm_check_release(void);

#ifdef __cplusplus
}
#endif
#endif
