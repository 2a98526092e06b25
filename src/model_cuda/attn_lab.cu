/* The attention lab's entry point (attn_lab.h): variant 1 is mc_attn_decode (the shipped decode,
 * which is variant 4 called from mc_attn.cu); variants 2-4 launch their partial kernel
 * (attn_lab_v2.cu, attn_lab_v3.cu) and then the combine below. */
#include "src/model_cuda/attn_lab.h"

#include "src/model_cuda/attn_lab_stream.cuh"
#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_kernels.h"

namespace {

/* One block per (head, row), thread per d, splits in ascending order over the splits actually
 * used at pos[r]: M = max m_c, L = sum l_c expf(m_c - M), o = (sum acc_c expf(m_c - M)) / L,
 * then the Qwen gate. */
__global__ void lab_combine_kernel(const float *part_ml /* [R][nH][nsplit][2] */,
                                   const float *part_acc /* [R][nH][nsplit][D] */,
                                   const int *pos /* [R] */, const float *gate_src /* [R][ldgate] */,
                                   int64_t ldgate, float *o /* [R][nH][D] */, int nH, int D,
                                   int nsplit) {
  pdl_enter();
  const int h = blockIdx.x, r = blockIdx.y;
  const int used = attn_lab::splits_used(pos[r], nsplit);
  const float *ml = part_ml + ((int64_t)r * nH + h) * nsplit * 2;   /* [nsplit][2] */
  const float *acc = part_acc + ((int64_t)r * nH + h) * nsplit * D; /* [nsplit][D] */
  float M = -INFINITY;
  for (int c = 0; c < used; c++) M = fmaxf(M, ml[2 * c]);
  float L = 0.0f;
  for (int c = 0; c < used; c++) L = L + ml[2 * c + 1] * expf(ml[2 * c] - M);
  const int64_t qd = (int64_t)nH * D;
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float a = 0.0f;
    for (int c = 0; c < used; c++) a = a + acc[(int64_t)c * D + d] * expf(ml[2 * c] - M);
    float v = a / L;
    if (gate_src) v = v * mc::sigmoid(gate_src[r * ldgate + qd + (int64_t)h * D + d]);
    o[r * qd + (int64_t)h * D + d] = v;
  }
}

}  // namespace

extern "C" int attn_lab_decode(int variant, const float *q, const float *kcache,
                               const float *vcache, const int *pos, const int *cache_row,
                               int64_t max_ctx, const float *gate_src, int64_t ldgate,
                               float *scratch, float *o, int R, int nH, int nKV, int D, int nsplit,
                               void *stream) {
  if (R < 1) return 0;
  if (nsplit < 1) return -2;
  float *acc = scratch + attn_lab_ml_floats(R, nH, nsplit); /* 16-byte aligned */
  return attn_lab_decode_parts(variant, q, kcache, vcache, pos, cache_row, max_ctx, gate_src,
                               ldgate, scratch, acc, o, R, nH, nKV, D, nsplit, stream);
}

extern "C" int attn_lab_decode_parts(int variant, const float *q, const float *kcache,
                                     const float *vcache, const int *pos, const int *cache_row,
                                     int64_t max_ctx, const float *gate_src, int64_t ldgate,
                                     float *part_ml, float *part_acc, float *o, int R, int nH,
                                     int nKV, int D, int nsplit, void *stream) {
  if (R < 1) return 0;
  if (nKV < 1 || nH % nKV != 0 || R > 65535) return -2;
  cudaStream_t s = mc::as_stream(stream);
  if (!attn_lab_shape_ok(nH, nKV, D) || nsplit < 1) return -2;
  if (variant == ATTN_LAB_SHIPPED) /* whatever the runtime ships (mc_attn.cu) */
    return mc_attn_decode(q, kcache, vcache, pos, cache_row, max_ctx, gate_src, ldgate, part_ml,
                          part_acc, o, R, nH, nKV, D, nsplit, stream);
  attn_lab::Args a;
  a.q = q;
  a.kcache = kcache;
  a.vcache = vcache;
  a.pos = pos;
  a.cache_row = cache_row;
  a.max_ctx = max_ctx;
  a.part_ml = part_ml;
  a.part_acc = part_acc;
  a.nH = nH;
  a.nKV = nKV;
  a.nsplit = nsplit;
  a.scale = (float)(1.0 / sqrt((double)D)); /* as layer_attn.c */
  const int rep = nH / nKV;
  int rc;
  if (variant == ATTN_LAB_STREAM) rc = attn_lab_launch_stream(a, D, rep, R, 1, s);
  else if (variant == ATTN_LAB_MULTIPOS) rc = attn_lab_launch_stream(a, D, rep, R, 4, s);
  else if (variant == ATTN_LAB_CPASYNC) rc = attn_lab_launch_cpasync(a, D, rep, R, s);
  else return -2;
  if (rc != 0) return rc;
  pdl_launch(lab_combine_kernel, dim3((unsigned)nH, (unsigned)R), D < 256 ? D : 256, 0, s,
             a.part_ml, a.part_acc, pos, gate_src, ldgate, o, nH, D, nsplit);
  return mc::launch_ok();
}
