/* Attention lab variant 3 (cpasync): variant 2's arithmetic with the K/V tiles brought into
 * shared memory by cp.async (sm_80+), STAGES tiles in flight (attn_lab.h, attn_lab_stream.cuh).
 *
 * A tile is TP = 2 NG consecutive positions of the split, K [TP][D] and V [TP][D] floats; the
 * block's 256 threads issue its 16-byte copies (cp.async.cg: L2 only, the data is used once), one
 * commit group per tile. Iteration t waits for tile t (wait_group STAGES - 2), synchronises, issues
 * tile t + STAGES - 1 into the stage tile t - 1 used (every thread is past it: the barrier), then
 * consumes tile t from shared memory with the lane-group mapping of variant 2 (consecutive lanes,
 * consecutive 16 bytes: no bank conflicts). The loads in flight no longer depend on registers or
 * occupancy: (STAGES - 1) tiles per block, 64 KiB at D = 256. Positions past the split are never
 * copied nor read. */
#include "src/model_cuda/attn_lab_stream.cuh"

using namespace attn_lab;

namespace {

constexpr int STAGES = 3;
constexpr int TPOS = 2; /* positions per group per tile */

__device__ inline void cp16(void *smem, const void *gmem) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ inline void cp_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> __device__ inline void cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

template <int D> struct Tile {
  static constexpr int TP = TPOS * Geo<D>::NG;            /* positions per tile */
  static constexpr int FLOATS = 2 * TP * D;               /* K then V */
  static constexpr size_t BYTES = (size_t)STAGES * FLOATS * sizeof(float);
};

/* Copies positions t TP .. of the split (those < n) into stage st: K [TP][D] then V [TP][D]. */
template <int D>
__device__ inline void issue(float *stage /* [2][TP][D] */, const float *kb, const float *vb,
                             int64_t kvd, int tile, int n) {
  constexpr int F4 = D / 4, TP = Tile<D>::TP;
  for (int i = threadIdx.x; i < TP * F4; i += blockDim.x) {
    const int pp = i / F4, c = i % F4;
    const int j = tile * TP + pp;
    if (j < n) {
      cp16(stage + pp * D + 4 * c, kb + (int64_t)j * kvd + 4 * c);
      cp16(stage + TP * D + pp * D + 4 * c, vb + (int64_t)j * kvd + 4 * c);
    }
  }
}

template <int D, int REP>
__global__ void __launch_bounds__(WARPS * 32)
cpasync_kernel(Args a) {
  using G = Geo<D>;
  constexpr int TP = Tile<D>::TP;
  __shared__ FinishSmem<D, REP> S;
  extern __shared__ float4 tiles4[]; /* [STAGES][2][TP][D] floats (float4: 16-byte aligned) */
  float *tiles = reinterpret_cast<float *>(tiles4);
  Place pl;
  if (!block_place<D, REP>(a, &pl)) return;
  const int n = pl.n, group = pl.group, sub = pl.sub;
  const int64_t kvd = pl.kvd, head0 = pl.head0;
  const float *kb = a.kcache + pl.row0, *vb = a.vcache + pl.row0; /* [n][kvd] from here */
  Acc<D, REP> A;
  acc_init<D, REP>(A, a.q + head0 * D, sub);

  const int ntile = (n + TP - 1) / TP;
  for (int st = 0; st < STAGES - 1; st++) {
    if (st < ntile) issue<D>(tiles + st * Tile<D>::FLOATS, kb, vb, kvd, st, n);
    cp_commit(); /* empty groups keep the wait counts uniform */
  }
  for (int t = 0; t < ntile; t++) {
    cp_wait<STAGES - 2>();
    __syncthreads();
    const int tn = t + STAGES - 1;
    if (tn < ntile) issue<D>(tiles + (tn % STAGES) * Tile<D>::FLOATS, kb, vb, kvd, tn, n);
    cp_commit();
    const float *sk = tiles + (t % STAGES) * Tile<D>::FLOATS; /* [TP][D] */
    const float *sv = sk + TP * D;                            /* [TP][D] */
#pragma unroll
    for (int u = 0; u < TPOS; u++) {
      const int pp = u * G::NG + group;
      const bool ok = t * TP + pp < n;
      float4 kr[G::VPL], vr[G::VPL];
      const float4 *k4 = reinterpret_cast<const float4 *>(sk + pp * D);
      const float4 *v4 = reinterpret_cast<const float4 *>(sv + pp * D);
#pragma unroll
      for (int v = 0; v < G::VPL; v++) {
        kr[v] = k4[sub + G::LP * v]; /* stale bytes when !ok: scored, never used */
        vr[v] = v4[sub + G::LP * v];
      }
      float s[REP];
      acc_scores<D, REP>(A, kr, a.scale, s);
      if (ok) acc_update<D, REP>(A, s, vr);
    }
  }
  cp_wait<0>();
  acc_finish<D, REP>(A, S, group, sub, a.part_ml, a.part_acc, head0, a.nsplit, blockIdx.x);
}

template <int D, int REP> int launch(const Args &a, int R, cudaStream_t s) {
  static bool attr_set = false; /* the opt-in above 48 KiB of dynamic shared memory, once */
  if (!attr_set) {
    if (cudaFuncSetAttribute(cpasync_kernel<D, REP>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)Tile<D>::BYTES) != cudaSuccess)
      return -1;
    attr_set = true;
  }
  cpasync_kernel<D, REP><<<dim3((unsigned)a.nsplit, (unsigned)a.nKV, (unsigned)R), WARPS * 32,
                           Tile<D>::BYTES, s>>>(a);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

}  // namespace

int attn_lab_launch_cpasync(const Args &a, int D, int rep, int R, cudaStream_t s) {
#define LAUNCH(D_, REP_) launch<D_, REP_>(a, R, s)
  ATTN_LAB_DISPATCH(D, rep, LAUNCH)
#undef LAUNCH
}
