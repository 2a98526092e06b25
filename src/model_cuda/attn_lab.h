/* Attention-decode lab (issue 18; docs/bench-attention.md): variants of the split-K decode
 * designed for the bytes, timed against the copy bandwidth by `replayssm bench attention` and
 * checked against mc_ref_attn_decode by gpu_check_attn_lab. Variant 4 (multipos) won the first
 * measurement (H200, 2026-12-02) and is the shipped decode: mc_attn_decode (mc_kernels.h,
 * mc_attn.cu) calls it at the split count attn_lab_splits_shipped; the other variants stay here
 * for the comparison.
 *
 * Variants (all fp32, --fmad=false, expf as the CUDA runtime gives it):
 *   1 shipped   mc_attn_decode as the runtime calls it: variant 4 at the split count the caller
 *               passes (the bench and the check pass attn_lab_splits_shipped, the runtime's).
 *               The pre-issue-18 kernel (chunks of 256 positions, warp per position) is gone;
 *               its numbers are in docs/bench-attention.md.
 *   2 stream    a fixed number of splits nsplit per (row, kv head), each split a contiguous run of
 *               ceil((pos+1) / nsplit) positions (so every SM has work at every position, and
 *               graph replay at any position works: the split length is computed on the device
 *               from pos); K and V rows read by 16-byte loads straight into registers, each
 *               lane group owning D / 4 float4 of one position for all rep = nH / nKV heads of
 *               the GQA group; online softmax in registers; a block reduction in fixed order.
 *   3 cpasync   variant 2's arithmetic, the K/V tiles brought into shared memory by cp.async
 *               (sm_80+), three stages in flight, so the loads of the next tiles overlap the
 *               arithmetic of this one without relying on occupancy.
 *   4 multipos  variant 2 with four positions per lane group in flight: all eight 16-byte
 *               loads (K and V of four positions) are issued before the first is used (more
 *               bytes in flight per warp for the same occupancy).
 * Every variant uses the same combine kernel (one block per (head, row), splits in ascending
 * order, then the Qwen gate) and the scratch layout part_ml [R][nH][nsplit][2], part_acc
 * [R][nH][nsplit][D]; their summation order depends on nsplit (fixed per launch) and pos[r],
 * never on the timing nor on the other rows, so a launch is deterministic and a row's output
 * does not depend on how many rows share the launch.
 *
 * cache_row [R] (or NULL = identity): token row r reads the K/V cache rows of cache row
 * cache_row[r] (the speculative path's indirection); q, pos, gate and out stay indexed by r. */
#ifndef RSSM_MODEL_CUDA_ATTN_LAB_H
#define RSSM_MODEL_CUDA_ATTN_LAB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { ATTN_LAB_SHIPPED = 1, ATTN_LAB_STREAM = 2, ATTN_LAB_CPASYNC = 3, ATTN_LAB_MULTIPOS = 4 };
#define ATTN_LAB_NVARIANTS 4

/* "shipped", "stream", "cpasync", "multipos" for 1..4; NULL otherwise. */
const char *attn_lab_name(int variant);
/* The variant numbered by name or by digit ("2" or "stream"); 0 if none. Pure C (CPU build). */
int attn_lab_parse(const char *text);

/* The split count of variants 2-4 for R rows, nKV kv heads, contexts up to max_ctx, on a device
 * of `sms` multiprocessors: the smallest count in [n0, 4 n0], n0 = ceil(4 sms / (R nKV)), whose
 * block count R nKV nsplit spreads most evenly over the SMs, capped at ceil(max_ctx / 16) (a
 * split holds at least 16 positions at max_ctx). Pure C (the bench prints it). */
int attn_lab_splits(int R, int nKV, int64_t max_ctx, int sms);

/* The split count of the shipped decode (mc_attn_decode in the model runtime), fixed when a batch
 * is built: one row alone puts at least one block on every SM, n0 = ceil(sms / nKV), then the
 * count in [n0, 4 n0] whose nKV nsplit blocks spread most evenly over the SMs (the smallest on
 * ties). It depends on the model's kv heads and the device only, never on the row count nor on
 * max_ctx: the summation order depends on nsplit, so a row must see the same count in a plain
 * run, its shards (fewer rows), its resume and a spec batch (max_ctx N + T); see
 * docs/bench-attention.md, "Shipped". 132 SMs: nKV 2 -> 66, 4 -> 33, 8 -> 33. Pure C. */
int attn_lab_splits_shipped(int nKV, int sms);

/* Floats of scratch of attn_lab_decode: part_ml R nH nsplit 2 floats rounded up to a multiple
 * of 4 (so that part_acc, which follows, is 16-byte aligned as in the runtime's own allocation),
 * then part_acc R nH nsplit D. attn_lab_ml_floats is the first part. Pure C. */
size_t attn_lab_ml_floats(int R, int nH, int nsplit);
size_t attn_lab_scratch_floats(int R, int nH, int D, int nsplit);

/* Whether every variant has a compiled instance for (D, rep = nH / nKV): D in {16, 32, 64, 128,
 * 256} (16 and 32: the transformers fixtures), rep in {1, 2, 4, 5, 8}. The model runtime refuses
 * other attention shapes at upload ("not supported on the GPU"). Pure C. */
int attn_lab_shape_ok(int nH, int nKV, int D);

#ifdef RSSM_HAVE_CUDA
/* o[r][h] = softmax_j(q[r][h] . k_j / sqrt(D)) v_j over j <= pos[r], k_j and v_j of kv head
 * h / (nH / nKV) of cache row cache_row[r] (or r); gated (gate_src non-NULL): o *= sigmoid(gate)
 * with the gates at gate_src[r * ldgate + nH * D + h * D + d] (mc_attn_decode's convention).
 * q, kcache, vcache 16-byte aligned (float4 loads). scratch: attn_lab_scratch_floats floats.
 * Returns 0, -1 on a launch error, -2 when the arguments are not supported (a shape without an
 * instance, nsplit < 1, R > 65535). */
int attn_lab_decode(int variant, const float *q /* [R][nH][D] */,
                    const float *kcache /* [Rc][max_ctx][nKV][D] */,
                    const float *vcache /* [Rc][max_ctx][nKV][D] */, const int *pos /* [R] */,
                    const int *cache_row /* [R] or NULL */, int64_t max_ctx,
                    const float *gate_src /* [R][ldgate] or NULL */, int64_t ldgate,
                    float *scratch /* [attn_lab_scratch_floats] */, float *o /* [R][nH][D] */,
                    int R, int nH, int nKV, int D, int nsplit, void *stream);
/* The same with the two scratch arrays apart, as mc_batch.cu allocates them for mc_attn_decode:
 * part_ml [R][nH][nsplit][2], part_acc [R][nH][nsplit][D]; mc_attn_decode's body is this call
 * with variant 4. */
int attn_lab_decode_parts(int variant, const float *q /* [R][nH][D] */,
                          const float *kcache /* [Rc][max_ctx][nKV][D] */,
                          const float *vcache /* [Rc][max_ctx][nKV][D] */, const int *pos /* [R] */,
                          const int *cache_row /* [R] or NULL */, int64_t max_ctx,
                          const float *gate_src /* [R][ldgate] or NULL */, int64_t ldgate,
                          float *part_ml /* [R][nH][nsplit][2] */,
                          float *part_acc /* [R][nH][nsplit][D] */, float *o /* [R][nH][D] */,
                          int R, int nH, int nKV, int D, int nsplit, void *stream);
#endif

#ifdef __cplusplus
}
#endif
#endif
