/* The correctness check of one attention-lab variant (src/model_cuda/attn_lab.h) against the CPU
 * reference mc_ref_attn_decode and an fp64 evaluation, on random inputs; run by `bench attention`
 * before it times a variant, and by tests/gpu/attn_lab_check.cu (gpu_check_attn_lab) over more
 * shapes and split counts. The tolerance argument is in bench_attn_check.c. CUDA builds only. */
#ifndef RSSM_BENCH_ATTN_BENCH_ATTN_CHECK_H
#define RSSM_BENCH_ATTN_BENCH_ATTN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  int ran;            /* 0: the variant refused the arguments (attn_lab_decode -2) */
  int ok;             /* every output within its bound, both against fp64 and the CPU */
  double worst_ratio; /* max over outputs of |gpu - fp64| / bound (<= 1 passes) */
  double worst_rel;   /* max |gpu - fp64| / |fp64| */
  double worst_cpu;   /* max |gpu - cpu| / |fp64| (the CPU reference's own order) */
  double worst_cpu_rel; /* max |cpu - fp64| / |fp64|, for comparison */
} attn_check_result;

/* Checks `variant` at (nH, nKV, D, gated) with split count nsplit on 4 rows at positions 0, 777,
 * 4096 and max_ctx - 1 (max_ctx = 8192), with cache_row NULL and with a permutation of the
 * cache rows. Returns 0 (result in *res) or -1 on a CUDA or allocation error
 * (message in err). */
int attn_check_variant(int variant, int nH, int nKV, int D, int gated, int nsplit,
                       attn_check_result *res, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
