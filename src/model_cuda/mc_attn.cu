/* The shipped attention decode of the GPU runtime (mc_kernels.h, docs/gpu-runtime.md "Attention
 * decode", docs/bench-attention.md "Shipped"): the attention lab's variant 4, multipos
 * (src/model_cuda/attn_lab_v2.cu with four positions per lane group in flight, then the lab's
 * combine in attn_lab.cu), at a split count the batch fixed when it was built.
 *
 * Why multipos: on the H200 (2026-12-02, `bench attention --rows 36 --positions 16384,131072`)
 * it was at or above 73% of the copy bandwidth at every shape measured (fixture 90.7-102.4%,
 * Qwen3.5-4B 73.3-75.1%, Nemotron-3-Nano-4B 74.7-76.7%), where the pre-issue-18 kernel (chunks
 * of 256 positions, warp per position, scores and weights through shared memory) was at 19-34%;
 * stream and cpasync were faster at some shapes but fell to 60-78% at others.
 *
 * The split count (attn_lab_splits_shipped(nKV, sms)) fixes the summation order; it depends on
 * the model's kv heads and the device only, so a row's bits do not depend on the batch's row
 * count (shards and resumes are byte-identical to the plain run) nor on max_ctx (a spec batch,
 * max_ctx N + T, and its reference batch, N, sum alike), and a graph captured once replays at any
 * position (the split length is computed on the device from pos[r]). */
#include "src/model_cuda/attn_lab.h"
#include "src/model_cuda/mc_kernels.h"

extern "C" int mc_attn_decode(const float *q, const float *kcache, const float *vcache,
                              const int *pos, const int *cache_row, int64_t max_ctx,
                              const float *gate_src, int64_t ldgate, float *part_ml,
                              float *part_acc, float *o, int R, int nH, int nKV, int D, int nsplit,
                              void *stream) {
  if (R < 1) return 0;
  const int rc = attn_lab_decode_parts(ATTN_LAB_MULTIPOS, q, kcache, vcache, pos, cache_row,
                                       max_ctx, gate_src, ldgate, part_ml, part_acc, o, R, nH,
                                       nKV, D, nsplit, stream);
  return rc == 0 ? 0 : -1; /* -2 (no instance for the shape) too: the upload refuses those */
}
