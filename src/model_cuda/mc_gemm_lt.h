/* cuBLASLt's ranked algorithms for the decode step's bf16 GEMMs (issue 18):
 *
 *     Y[r][n] = sum_k X[r][k] W[n][k],   on tiles of `tile` rows r,
 *
 * W bf16 [rows][cols], xb bf16 [Rpad][cols] (the runtime's xb), Y fp32 [Rpad][ldy], the same
 * call as the runtime's cublasGemmEx (Y^T = W X^T column-major: m = rows, n = tile, k = cols,
 * fp32 compute and output), but with the algorithm of a chosen rank among those cuBLASLt's
 * heuristic ranks for the shape, best first. cublasGemmEx runs one algorithm of its own choice;
 * at the 4B shapes' 64-row tiles it read the output projections' weights at 43-56 % of copy
 * (session 37's `bench gemm`: gdn.out 2560 x 4096 15.97 us, mlp.out 2560 x 9216 28.59 us), and
 * another ranked kernel (other tiles, another split-K count) may stream them faster. The rank
 * names an algorithm through the shape, the device and the library only, never through a
 * timing, so a run's bits do not depend on a race.
 *
 * Numerics: any order of a cols-term sum of exact bf16 products in fp32 with tensor-core
 * accumulation (2u per addition), as cuBLAS's: gemm_lab_bound_cublas. The bits differ from
 * cublasGemmEx's wherever the algorithm does.
 *
 * Operands must be 16-byte aligned at every tile (the heuristic is asked for algorithms that
 * need no more): cols % 8 == 0, ldy % 4 == 0, W, xb and Y 16-byte aligned. */
#ifndef RSSM_MODEL_CUDA_MC_GEMM_LT_H
#define RSSM_MODEL_CUDA_MC_GEMM_LT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MC_GEMM_LT_RANKS 8 /* algorithms asked of the heuristic per shape */

/* A cuBLASLt handle and its plans (one per distinct rows, cols, ldy and tile: descriptors and
 * ranked algorithms, built on a shape's first call, host work only, so a first call inside a
 * stream capture is fine). */
typedef struct mc_gemm_lt mc_gemm_lt;
/* NULL on failure. */
mc_gemm_lt *mc_gemm_lt_create(void);
void mc_gemm_lt_destroy(mc_gemm_lt *lt);

/* Y = W . xb on the Rpad / tile tiles with the rank-th ranked algorithm, workspace ws of
 * ws_bytes (the algorithms ranked need at most MC_GEMM_LT_WORKSPACE bytes). Returns 0, -1 on a
 * cuBLASLt error, -2 when the shape is not taken (alignment above, Rpad not a multiple of tile,
 * a rank the heuristic did not reach, ws_bytes under the workspace the algorithm needs, a new shape
 * when the plan cache is full). */
int mc_gemm_lt_run(mc_gemm_lt *lt, int rank, const void *W /* [rows][cols] bf16 */,
                   const uint16_t *xb /* [Rpad][cols] bf16 */, float *Y /* [Rpad][ldy] */,
                   int64_t ldy, int64_t Rpad, int64_t rows, int64_t cols, int tile, void *ws,
                   size_t ws_bytes, void *stream);

#define MC_GEMM_LT_WORKSPACE ((size_t)32 << 20) /* the workspace the heuristic may assume */

/* RSSM_GEMM_LT (the runtime's A/B switch, read once through rssm_env_switch): unset or "off"
 * -1 (cublasGemmEx everywhere); "out0".."out7" the rank for the output projections (weights
 * with fewer rows than columns: the 4B shapes' down projections, where cublasGemmEx is slowest),
 * cublasGemmEx for the rest; "all0".."all7" the rank for every cuBLAS bf16 GEMM. */
typedef struct {
  int rank;     /* -1: off */
  int out_only; /* 1: only weights with rows < cols */
} mc_gemm_lt_rule;
mc_gemm_lt_rule mc_gemm_lt_rule_from_env(void);
/* Whether the rule sends a weight of rows x cols to cuBLASLt. */
int mc_gemm_lt_takes(mc_gemm_lt_rule rule, int64_t rows, int64_t cols);

#ifdef __cplusplus
}
#endif
#endif
