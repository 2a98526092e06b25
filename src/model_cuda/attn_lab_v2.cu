/* Attention lab variants 2 (stream, NPOS = 1) and 4 (multipos, NPOS = 4): K and V rows straight
 * from global memory into registers (attn_lab.h, attn_lab_stream.cuh).
 *
 * One block per (split, kv head, row), WARPS warps, NG lane groups. A step covers NG * NPOS
 * consecutive positions of the split: group g takes positions base + t NG + g, t < NPOS, so at
 * each t the block reads NG consecutive rows. All 2 NPOS VPL 16-byte loads of a step (K and V)
 * are issued before the first score is formed: with NPOS = 4 a group has 8 KiB (D = 256) in
 * flight, which is what hides the DRAM latency when occupancy is one block per SM (the register
 * arrays of REP heads cost it). Loads are ld.global.cs (streaming: every byte is read once per
 * step, nothing is worth keeping in L2). Positions are consumed in ascending order per group. */
#include "src/io/env_switch.h"
#include "src/model_cuda/attn_lab_stream.cuh"

using namespace attn_lab;

namespace {

template <int D, int REP, int NPOS>
__global__ void __launch_bounds__(WARPS * 32)
stream_kernel(Args a) {
  pdl_enter();
  using G = Geo<D>;
  __shared__ FinishSmem<D, REP> S;
  Place pl;
  if (!block_place<D, REP>(a, &pl)) return; /* past pos[r]: the combine never reads it */
  const int n = pl.n, group = pl.group, sub = pl.sub;
  const float4 *kb = reinterpret_cast<const float4 *>(a.kcache + pl.row0); /* position j: + j kvd/4 */
  const float4 *vb = reinterpret_cast<const float4 *>(a.vcache + pl.row0);
  const int64_t stride4 = pl.kvd / 4, head0 = pl.head0;
  Acc<D, REP> A;
  acc_init<D, REP>(A, a.q + head0 * D, sub);

  for (int base = 0; base < n; base += G::NG * NPOS) {
    float4 kr[NPOS][G::VPL], vr[NPOS][G::VPL];
    bool ok[NPOS];
#pragma unroll
    for (int t = 0; t < NPOS; t++) {
      const int j = base + t * G::NG + group;
      ok[t] = j < n;
#pragma unroll
      for (int v = 0; v < G::VPL; v++) {
        const int64_t off = (int64_t)j * stride4 + sub + G::LP * v;
        kr[t][v] = vr[t][v] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (ok[t]) { /* never read past the split (the last split may end at max_ctx) */
          kr[t][v] = __ldcs(kb + off);
          vr[t][v] = __ldcs(vb + off);
        }
      }
    }
#pragma unroll
    for (int t = 0; t < NPOS; t++) {
      float s[REP];
      acc_scores<D, REP>(A, kr[t], a.scale, s);
      if (ok[t]) acc_update<D, REP>(A, s, vr[t]);
    }
  }
  acc_finish<D, REP>(A, S, group, sub, a.part_ml, a.part_acc, head0, a.nsplit, blockIdx.x);
}

/* RSSM_ATTN_TRIM=0 or 1 (trim_grid's A/B switch), read once: -1 when unset */
int trim_forced() {
  static const char *const off_on[] = {"0", "1"};
  static const int forced = rssm_env_switch("RSSM_ATTN_TRIM", off_on, 2, -1);
  return forced;
}

template <int D, int REP, int NPOS> int launch(const Args &a, int R, cudaStream_t s) {
  /* all nsplit splits, or those a position below max_ctx can use when the full grid is large
     (trim_grid, attn_lab_stream.cuh): the same bits either way */
  const int splits = trim_grid(a.nsplit, a.nKV, R, trim_forced())
                         ? splits_launched(a.max_ctx, a.nsplit)
                         : a.nsplit;
  pdl_launch(stream_kernel<D, REP, NPOS>, dim3((unsigned)splits, (unsigned)a.nKV, (unsigned)R),
             WARPS * 32, 0, s, a);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
}

}  // namespace

int attn_lab_launch_stream(const Args &a, int D, int rep, int R, int npos, cudaStream_t s) {
#define LAUNCH1(D_, REP_) launch<D_, REP_, 1>(a, R, s)
#define LAUNCH4(D_, REP_) launch<D_, REP_, 4>(a, R, s)
  if (npos == 1) {
    ATTN_LAB_DISPATCH(D, rep, LAUNCH1)
  }
  ATTN_LAB_DISPATCH(D, rep, LAUNCH4)
#undef LAUNCH1
#undef LAUNCH4
}
