/* Fused glue of the GPU forward (mc_fused.h): the residual add with the next RMSNorm, and the
 * bf16 GEMM input written by the kernel that makes the fp32 one. The arithmetic is that of
 * mc_kernels.cu (rmsnorm_group and silu are shared through mc_device.cuh), so the outputs are
 * the unfused path's bits. */
#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_fused.h"

using namespace mc;

namespace {

constexpr int NORM_THREADS = 128; /* mc_kernels.cu's rmsnorm block */
constexpr int EW_THREADS = 256;

/* Block per row r < Rpad. Rows r < R: add (every thread its elements, then a barrier so that
 * the norm's lanes read the sums), then the norm; padding rows write ub's zeros only. */
__global__ void add_rmsnorm_kernel(float *h /* [R][H] */, const float *y /* [R][H] or NULL */,
                                   float *u /* [R][H] */, __nv_bfloat16 *ub /* [Rpad][H] */,
                                   int R, int64_t H, const float *w /* [H] */, int plus_one,
                                   float eps) {
  const int r = blockIdx.x;
  __nv_bfloat16 *ubr = ub ? ub + (int64_t)r * H : nullptr; /* [H] */
  if (r >= R) {
    for (int64_t i = threadIdx.x; i < H; i += blockDim.x) ubr[i] = __float2bfloat16_rn(0.0f);
    return;
  }
  float *hr = h + (int64_t)r * H; /* [H] */
  if (y) {
    const float *yr = y + (int64_t)r * H; /* [H] */
    for (int64_t i = threadIdx.x; i < H; i += blockDim.x) hr[i] = hr[i] + yr[i];
    __syncthreads();
  }
  rmsnorm_group(hr, u + (int64_t)r * H, ubr, (int)H, w, plus_one, eps, nullptr);
}

/* One (group, row) per block, rows r < Rpad: mc_rmsnorm's grid with the gate and the bf16 copy
 * (rmsnorm_group); padding rows write yb's zeros only. */
__global__ void rmsnorm_gate_kernel(const float *x /* [R][ld] */, float *y /* [R][ld] */,
                                    __nv_bfloat16 *yb /* [Rpad][ld] or NULL */,
                                    const float *z /* [R][ldz] or NULL */, int64_t ldz, int R,
                                    int gs, int64_t ld, const float *w, int w_per_group,
                                    float eps) {
  const int g = blockIdx.x, r = blockIdx.y;
  __nv_bfloat16 *ybg = yb ? yb + r * ld + (int64_t)g * gs : nullptr; /* [gs] */
  if (r >= R) {
    for (int i = threadIdx.x; i < gs; i += blockDim.x) ybg[i] = __float2bfloat16_rn(0.0f);
    return;
  }
  const float *xg = x + r * ld + (int64_t)g * gs;                          /* [gs] */
  const float *wg = w ? (w_per_group ? w + (int64_t)g * gs : w) : nullptr; /* [gs] */
  const float *zg = z ? z + r * ldz + (int64_t)g * gs : nullptr;           /* [gs] */
  rmsnorm_group(xg, y + r * ld + (int64_t)g * gs, ybg, gs, wg, 0, eps, zg);
}

/* act[r][i] = the activation of the block's projection (SWIGLU: swiglu_of(gu[r][i],
 * gu[r][I + i]), rows 2 I apart; else relu2_of(up[r][i]), rows I apart) and actb = bf16(act);
 * rows R..Rpad-1 write actb's zeros only. */
template <int SWIGLU>
__global__ void act_bf16_kernel(const float *in /* [R][2 I] or [R][I] */, float *act /* [R][I] */,
                                __nv_bfloat16 *actb /* [Rpad][I] */, int R, int64_t I) {
  const int r = blockIdx.y;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < I;
       i += (int64_t)gridDim.x * blockDim.x) {
    if (r >= R) {
      actb[r * I + i] = __float2bfloat16_rn(0.0f);
      continue;
    }
    const float a = SWIGLU ? swiglu_of(in[r * 2 * I + i], in[r * 2 * I + I + i])
                           : relu2_of(in[r * I + i]);
    act[r * I + i] = a;
    actb[r * I + i] = __float2bfloat16_rn(a);
  }
}

unsigned row_blocks(int64_t n) { return row_blocks_for(n, EW_THREADS); }

template <int SWIGLU>
int launch_act_bf16(const float *in, float *act, void *actb, int R, int Rpad, int64_t I,
                    void *stream) {
  if (R < 1) return 0;
  act_bf16_kernel<SWIGLU><<<dim3(row_blocks(I), (unsigned)(Rpad > R ? Rpad : R)), EW_THREADS, 0,
                            as_stream(stream)>>>(in, act, (__nv_bfloat16 *)actb, R, I);
  return launch_ok();
}

}  // namespace

extern "C" {

int mc_add_rmsnorm(float *h, const float *y, float *u, void *ub, int R, int Rpad, int64_t H,
                   const float *w, int plus_one, float eps, void *stream) {
  if (R < 1) return 0;
  const int rows = ub ? (Rpad > R ? Rpad : R) : R;
  add_rmsnorm_kernel<<<(unsigned)rows, NORM_THREADS, 0, as_stream(stream)>>>(
      h, y, u, (__nv_bfloat16 *)ub, R, H, w, plus_one, eps);
  return launch_ok();
}

int mc_rmsnorm_gate(const float *x, float *y, void *yb, const float *z, int64_t ldz, int R,
                    int Rpad, int ngroups, int gs, int64_t ld, const float *w, int w_per_group,
                    float eps, void *stream) {
  if (R < 1 || ngroups < 1) return 0;
  const int rows = yb ? (Rpad > R ? Rpad : R) : R;
  rmsnorm_gate_kernel<<<dim3((unsigned)ngroups, (unsigned)rows), NORM_THREADS, 0,
                        as_stream(stream)>>>(x, y, (__nv_bfloat16 *)yb, z, ldz, R, gs, ld, w,
                                             w_per_group, eps);
  return launch_ok();
}

int mc_swiglu_bf16(const float *gu, float *act, void *actb, int R, int Rpad, int64_t I,
                   void *stream) {
  return launch_act_bf16<1>(gu, act, actb, R, Rpad, I, stream);
}

int mc_relu2_bf16(const float *up, float *act, void *actb, int R, int Rpad, int64_t I,
                  void *stream) {
  return launch_act_bf16<0>(up, act, actb, R, Rpad, I, stream);
}

}  // extern "C"
