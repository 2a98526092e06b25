/* The per-draft snapshot baseline of speculative verification (snapshot.h). Memory traffic per
 * round and row: one read of the committed state and T writes, which is what the paper's vLLM
 * baseline moves (1R + TW); the records of the drafts are staged in shared memory once per
 * (row, head). */
#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "src/io/errbuf.h"
#include "src/bench_kernels/snapshot.h"
#include "src/ssm/ssm_math.h"

namespace {

constexpr int SN_MAXM = 8;   /* elements of a state row per lane: dk <= 256 */
constexpr int SN_WARPS = 8;  /* warps per block */

__device__ inline float butterfly(float p) {
  for (int off = RSSM_DOT_LANES / 2; off >= 1; off >>= 1) p = p + __shfl_xor_sync(0xffffffffu, p, off);
  return p;
}

/* Warp-32 dot (ssm_math.h item 1) of a row in registers with y [dk]. */
template <int M>
__device__ inline float dot_regs(const float *x /* [M] */, const float *y /* [dk] */, int dk, int lane) {
  float p = 0.0f;
#pragma unroll
  for (int m = 0; m < M; m++) {
    int c = lane + 32 * m;
    if (c < dk) p = p + x[m] * y[c];
  }
  return butterfly(p);
}

/* Grid (H, B), SN_WARPS warps. Each warp runs R state rows of head blockIdx.x of row blockIdx.y
 * through the T drafts (rows w + 8 (r + R t)): per draft (GDN) u = beta (v - alpha S_row . k),
 * the fold S_row = alpha S_row + x k, the output S_row . q, and the store of S_row into the
 * draft's snapshot slot: the operations of a conventional CPU step, in its order. A lane holds
 * M = ceil(dk / 32) elements of a row; the first rows' loads go out before the drafts are
 * staged, as in the engine's materialisation (src/ssm_cuda, mat2_kernel), so that the baseline
 * gets the same memory-level parallelism as the kernels it is compared with. */
template <int M>
__global__ void __launch_bounds__(SN_WARPS * 32, 2)
    snap_kernel(int H, int dv, int dk, int G, int T, int gdn, float *snap /* [B][T+1][H][dv][dk] */,
                const int *slot /* [B] */, ssm_cuda_inputs in /* [B][T][...] */,
                float *o /* [B][T][H][dv] */) {
  extern __shared__ __align__(16) float sm[];
  constexpr int R = M <= 4 ? 8 : 4;
  const int hd = blockIdx.x, b = blockIdx.y;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int hpg = H / G, g = hd / hpg;
  const size_t mat = (size_t)dv * dk, per_row = (size_t)(T + 1) * H * mat;
  const int s0 = slot[b];
  const float *src = snap + (size_t)b * per_row + ((size_t)s0 * H + hd) * mat;
  float x[R][M];
  auto load_rows = [&](int i0) {
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int i = i0 + r * SN_WARPS;
#pragma unroll
      for (int m = 0; m < M; m++) {
        const int c = lane + 32 * m;
        x[r][m] = (i < dv && c < dk) ? src[(size_t)i * dk + c] : 0.0f;
      }
    }
  };
  load_rows(warp);
  float *al = sm;                        /* [T] */
  float *bt = al + T;                    /* [T] */
  float *kk = bt + T;                    /* [T][dk] */
  float *qq = kk + (size_t)T * dk;       /* [T][dk] */
  float *vv = qq + (size_t)T * dk;       /* [T][dv] */
  for (int s = threadIdx.x; s < T; s += blockDim.x) {
    al[s] = in.alpha[((size_t)b * T + s) * H + hd];
    bt[s] = gdn ? in.beta[((size_t)b * T + s) * H + hd] : 0.0f;
  }
  for (int e = threadIdx.x; e < T * dk; e += blockDim.x) {
    int s = e / dk, c = e % dk;
    kk[e] = in.k[(((size_t)b * T + s) * G + g) * dk + c];
    qq[e] = in.q[(((size_t)b * T + s) * G + g) * dk + c];
  }
  for (int e = threadIdx.x; e < T * dv; e += blockDim.x) {
    int s = e / dv, i = e % dv;
    vv[e] = in.v[(((size_t)b * T + s) * H + hd) * dv + i];
  }
  __syncthreads();
  for (int i0 = warp; i0 < dv; i0 += R * SN_WARPS) {
    if (i0 != warp) load_rows(i0);
    for (int s = 0; s < T; s++) {
      const float alpha = al[s];
      const float *ks = kk + (size_t)s * dk, *qs = qq + (size_t)s * dk;
      float *dst = snap + (size_t)b * per_row + ((size_t)((s0 + 1 + s) % (T + 1)) * H + hd) * mat;
#pragma unroll
      for (int r = 0; r < R; r++) {
        const int i = i0 + r * SN_WARPS;
        if (i >= dv) continue; /* warp-uniform */
        float xi = vv[(size_t)s * dv + i];
        if (gdn) xi = rssm_gdn_u(xi, bt[s], alpha, dot_regs<M>(x[r], ks, dk, lane)); /* item 5 */
#pragma unroll
        for (int m = 0; m < M; m++) {
          int c = lane + 32 * m;
          if (c < dk) x[r][m] = alpha * x[r][m] + xi * ks[c]; /* item 4 */
        }
        float p = dot_regs<M>(x[r], qs, dk, lane);
        if (lane == 0) o[(((size_t)b * T + s) * H + hd) * dv + i] = p;
#pragma unroll
        for (int m = 0; m < M; m++) {
          int c = lane + 32 * m;
          if (c < dk) dst[(size_t)i * dk + c] = x[r][m];
        }
      }
    }
  }
}

__global__ void snap_commit_kernel(int B, int T, int *slot /* [B] */, const int *a /* [B] */) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b < B) slot[b] = (slot[b] + a[b]) % (T + 1);
}

size_t snap_smem(const bench_snap_state *s) {
  return ((size_t)2 * s->T + (size_t)2 * s->T * s->dims.dk + (size_t)s->T * s->dims.dv) * sizeof(float);
}

}  // namespace

extern "C" int bench_snap_build(bench_snap_state *s, const ssm_dims *d, int B, int T, char *err, size_t errlen) {
  memset(s, 0, sizeof *s);
  if (d->dk > 32 * SN_MAXM) return rssm_fail(err, errlen, "dk=%d > %d", d->dk, 32 * SN_MAXM);
  if (T < 1 || B < 1 || B > 65535 || d->H < 1 || d->G < 1 || d->H % d->G != 0)
    return rssm_fail(err, errlen, "bad snapshot dims (B=%d T=%d H=%d G=%d)", B, T, d->H, d->G);
  s->dims = *d;
  s->B = B;
  s->T = T;
  size_t bytes = (size_t)B * (T + 1) * d->H * d->dv * d->dk * sizeof(float);
  if (cudaMalloc(reinterpret_cast<void **>(&s->snap), bytes) != cudaSuccess ||
      cudaMalloc(reinterpret_cast<void **>(&s->slot), (size_t)B * sizeof(int)) != cudaSuccess) {
    bench_snap_free(s);
    return rssm_fail(err, errlen, "out of device memory for %zu bytes of snapshots", bytes);
  }
  if (cudaMemset(s->snap, 0, bytes) != cudaSuccess || cudaMemset(s->slot, 0, (size_t)B * sizeof(int)) != cudaSuccess) {
    bench_snap_free(s);
    return rssm_fail(err, errlen, "cudaMemset failed");
  }
  size_t smem = snap_smem(s);
  if (smem > 48 * 1024 &&
      (cudaFuncSetAttribute(snap_kernel<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess ||
       cudaFuncSetAttribute(snap_kernel<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem) != cudaSuccess)) {
    bench_snap_free(s);
    return rssm_fail(err, errlen, "cannot raise the snapshot kernel's shared memory to %zu bytes",
                     smem);
  }
  return cudaDeviceSynchronize() == cudaSuccess
             ? 0
             : rssm_fail(err, errlen, "CUDA error building snapshots");
}

extern "C" void bench_snap_free(bench_snap_state *s) {
  if (!s) return;
  if (s->snap) cudaFree(s->snap);
  if (s->slot) cudaFree(s->slot);
  memset(s, 0, sizeof *s);
}

extern "C" int bench_snap_verify(bench_snap_state *s, const ssm_cuda_inputs *in, float *o, void *stream) {
  const ssm_dims *d = &s->dims;
  if (!in || !o || !in->alpha || !in->v || !in->k || !in->q || (d->kind == SSM_GDN && !in->beta)) return -1;
  dim3 grid((unsigned)d->H, (unsigned)s->B);
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  if (d->dk <= 128)
    snap_kernel<4><<<grid, SN_WARPS * 32, snap_smem(s), st>>>(d->H, d->dv, d->dk, d->G, s->T, d->kind == SSM_GDN,
                                                             s->snap, s->slot, *in, o);
  else
    snap_kernel<8><<<grid, SN_WARPS * 32, snap_smem(s), st>>>(d->H, d->dv, d->dk, d->G, s->T, d->kind == SSM_GDN,
                                                             s->snap, s->slot, *in, o);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int bench_snap_commit(bench_snap_state *s, const int *a, void *stream) {
  snap_commit_kernel<<<(unsigned)((s->B + 127) / 128), 128, 0, static_cast<cudaStream_t>(stream)>>>(s->B, s->T,
                                                                                                 s->slot, a);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

extern "C" int bench_snap_download(const bench_snap_state *s, int b, int slot_offset, float *host) {
  if (b < 0 || b >= s->B) return -1;
  int sl = 0;
  if (cudaMemcpy(&sl, s->slot + b, sizeof(int), cudaMemcpyDeviceToHost) != cudaSuccess) return -1;
  sl = (sl + slot_offset) % (s->T + 1);
  const ssm_dims *d = &s->dims;
  size_t mat = (size_t)d->H * d->dv * d->dk;
  const float *src = s->snap + ((size_t)b * (s->T + 1) + (size_t)sl) * mat;
  return cudaMemcpy(host, src, mat * sizeof(float), cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
}
