/* Per-step metrics on the GPU (mc_kernels.h; SPEC section 5; the CPU's src/model/metrics.c):
 * only R small structs per step leave the device.
 *
 * row_stats_kernel: block per row. Finite check; max with the first index on ties (the
 *   reduction keeps the lower index when values are equal, which is the CPU's sequential
 *   "first strictly larger"); s = sum (double) expf(x - max) in fp64, lse = (float) log(s).
 * row_metrics_kernel: block per row r (window k = r % K). logp = (x - max) - lse in fp32 as on
 *   the CPU; reference rows (r < K): nll only. Configuration rows: kl = sum_i p_ref(i)
 *   (expm1(-d_i) + d_i), d_i = logp_ref(i) - logp_cfg(i), in fp64 with terms <= 0 dropped (the
 *   non-negative form of metrics.c), nll, dp, top1.
 * The fp64 sums run in a fixed tree order (deterministic, different from the CPU's sequential
 * one: ~1e-16 relative); expf differs from glibc's by <= 2 ulp. */
#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_kernels.h"

using namespace mc;

namespace {

constexpr int STAT_THREADS = 1024;
/* Elements a row_stats thread loads before it uses them. One at a time (unrolled by the compiler
 * a few deep at most) a row of the 4B shapes' vocabulary (V 248320: 243 elements a thread, two
 * passes) took 81 us at one block a row on 64 of the SMs (H100, session 37 trace) for 2 x 1 MB a
 * row: each thread had a load or two in flight. The same elements in the same order, so the same
 * bits. */
constexpr int STAT_BATCH = 8;
constexpr int MET_THREADS = 256;

/* A row_stats thread's next STAT_BATCH elements, i = base + k STAT_THREADS (0 past V). */
__device__ inline void load_stat_batch(const float *x /* [V] */, int64_t base, int64_t V,
                                       float *v /* [STAT_BATCH] */) {
#pragma unroll
  for (int k = 0; k < STAT_BATCH; k++) {
    const int64_t i = base + (int64_t)k * STAT_THREADS;
    v[k] = i < V ? x[i] : 0.0f;
  }
}

/* The last five levels (off = 16 .. 1) of the block trees below, in warp 0 by shuffles rather
 * than in shared memory with a barrier of the whole block after each: at every level lane t
 * combines its value with lane t + off's, which is exactly the shared-memory level's
 * a[t] = a[t] op a[t + off] for t < off (the same pairs, the same operand order; lanes >= off
 * compute what no lane reads, and a lane past 31 returns the caller's own value, which changes
 * nothing), so the trees' results keep their bits. Why: ten barriers of 1024 threads a row on the
 * step's critical path (row_stats added 3.6 us to a fixture step, row_metrics 1.1: session 34). */
__device__ inline double sum_tail(double v) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) v = v + __shfl_down_sync(0xffffffffu, v, off);
  return v;
}
__device__ inline void max_tail(float *m, int64_t *idx) {
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) {
    const float mo = __shfl_down_sync(0xffffffffu, *m, off);
    const int64_t io = __shfl_down_sync(0xffffffffu, *idx, off);
    if (io >= 0 && (*idx < 0 || mo > *m || (mo == *m && io < *idx))) {
      *m = mo;
      *idx = io;
    }
  }
}

__global__ void __launch_bounds__(STAT_THREADS)
row_stats_kernel(const float *logits /* [R][V] */, int64_t V, mc_row_stats *stats /* [R] */) {
  pdl_enter();
  __shared__ float vmax[STAT_THREADS];
  __shared__ int64_t vidx[STAT_THREADS];
  __shared__ double vsum[STAT_THREADS];
  __shared__ int bad;
  const int r = blockIdx.x, t = threadIdx.x;
  const float *x = logits + (int64_t)r * V; /* [V] */
  if (t == 0) bad = 0;
  __syncthreads();
  float m = -INFINITY;
  int64_t am = -1;
  int nonfinite = 0;
  /* a thread's elements i = t, t + STAT_THREADS, ... STAT_BATCH at a time, loads first
     (STAT_BATCH says why), then visited in ascending i as one at a time would */
  for (int64_t base = t; base < V; base += (int64_t)STAT_BATCH * STAT_THREADS) {
    float v[STAT_BATCH];
    load_stat_batch(x, base, V, v);
#pragma unroll
    for (int k = 0; k < STAT_BATCH; k++) {
      const int64_t i = base + (int64_t)k * STAT_THREADS;
      if (i >= V) break;
      if (!isfinite(v[k])) nonfinite = 1;
      if (am < 0 || v[k] > m)
        m = v[k], am = i; /* ascending i within the thread: first index kept */
    }
  }
  if (nonfinite) atomicOr(&bad, 1);
  vmax[t] = m;
  vidx[t] = am;
  __syncthreads();
  for (int off = STAT_THREADS / 2; off >= 32; off >>= 1) {
    if (t < off) {
      const float mo = vmax[t + off];
      const int64_t io = vidx[t + off];
      if (io >= 0 && (vidx[t] < 0 || mo > vmax[t] || (mo == vmax[t] && io < vidx[t]))) {
        vmax[t] = mo;
        vidx[t] = io;
      }
    }
    __syncthreads();
  }
  if (t < 32) { /* off = 16 .. 1 (max_tail) */
    float mw = vmax[t];
    int64_t iw = vidx[t];
    max_tail(&mw, &iw);
    if (t == 0) vmax[0] = mw, vidx[0] = iw;
  }
  __syncthreads();
  const float mx = vmax[0];
  if (bad) {
    if (t == 0) stats[r] = mc_row_stats{0.0f, mx, (int32_t)vidx[0], 0};
    return;
  }
  double s = 0.0;
  for (int64_t base = t; base < V; base += (int64_t)STAT_BATCH * STAT_THREADS) {
    float v[STAT_BATCH];
    load_stat_batch(x, base, V, v);
#pragma unroll
    for (int k = 0; k < STAT_BATCH; k++) {
      if (base + (int64_t)k * STAT_THREADS >= V) break;
      s += (double)expf(v[k] - mx); /* ascending i, as one at a time */
    }
  }
  vsum[t] = s;
  __syncthreads();
  for (int off = STAT_THREADS / 2; off >= 32; off >>= 1) {
    if (t < off) vsum[t] = vsum[t] + vsum[t + off];
    __syncthreads();
  }
  if (t < 32) { /* off = 16 .. 1 (sum_tail); thread 0 holds the sum */
    const double total = sum_tail(vsum[t]);
    if (t == 0) stats[r] = mc_row_stats{(float)log(total), mx, (int32_t)vidx[0], 1};
  }
}

/* One configuration or reference row's metrics (block of MET_THREADS threads): x with its
 * stats sr against the reference row xr with sk (is_ref: x is the reference, nll only), target
 * tg. Shared by the lockstep rows and the spec rounds, so both compute the same bits. */
__device__ void metrics_row(const float *x /* [V] */, mc_row_stats sr, const float *xr /* [V] */,
                            mc_row_stats sk, int64_t tg, int is_ref, int64_t V,
                            mc_row_metrics *out, double *ksum /* shared [MET_THREADS] */) {
  const int t = threadIdx.x;
  mc_row_metrics o = {0.0f, 0.0f, 0.0f, 1, sr.finite, sr.argmax};
  if (!sr.finite) {
    if (t == 0) *out = mc_row_metrics{0.0f, 0.0f, 0.0f, 0, 0, sr.argmax};
    return;
  }
  const float lc_t = (x[tg] - sr.max) - sr.lse;
  o.nll = -lc_t;
  if (is_ref || !sk.finite) {
    if (t == 0) *out = o;
    return;
  }
  double kl = 0.0;
  for (int64_t i = t; i < V; i += MET_THREADS) {
    const float lref = (xr[i] - sk.max) - sk.lse, lcfg = (x[i] - sr.max) - sr.lse;
    const float p = expf(lref);
    const double d = (double)lref - (double)lcfg;
    const double term = (double)p * (expm1(-d) + d);
    if (term > 0.0) kl += term;
  }
  ksum[t] = kl;
  __syncthreads();
  for (int off = MET_THREADS / 2; off >= 32; off >>= 1) {
    if (t < off) ksum[t] = ksum[t] + ksum[t + off];
    __syncthreads();
  }
  const double ktotal = t < 32 ? sum_tail(ksum[t]) : 0.0; /* off = 16 .. 1; thread 0's is the sum */
  if (t == 0) {
    const float lref_t = (xr[tg] - sk.max) - sk.lse;
    o.kl = (float)ktotal;
    o.dp = expf(lc_t) - expf(lref_t);
    o.top1 = sr.argmax == sk.argmax;
    *out = o;
  }
}

__global__ void __launch_bounds__(MET_THREADS)
row_metrics_kernel(const float *logits /* [R][V] */, const mc_row_stats *stats /* [R] */,
                   const int64_t *target /* [K] */, int K, int64_t V,
                   mc_row_metrics *out /* [R] */) {
  pdl_enter();
  __shared__ double ksum[MET_THREADS];
  const int r = blockIdx.x, k = r % K;
  metrics_row(logits + (int64_t)r * V, stats[r], logits + (int64_t)k * V, stats[k], target[k],
              r < K, V, &out[r], ksum);
}

__global__ void __launch_bounds__(MET_THREADS)
spec_metrics_kernel(const float *logits /* [RT][V] */, const mc_row_stats *stats /* [RT] */,
                    const float *ref_logits /* [*][V] */, const mc_row_stats *ref_stats /* [*] */,
                    const int *ref_row /* [RT] */, const int64_t *target /* [RT] */, int64_t V,
                    mc_row_metrics *out /* [RT] */) {
  pdl_enter();
  __shared__ double ksum[MET_THREADS];
  const int i = blockIdx.x, k = ref_row[i];
  metrics_row(logits + (int64_t)i * V, stats[i], ref_logits + (int64_t)k * V, ref_stats[k],
              target[i], 0, V, &out[i], ksum);
}

}  // namespace

extern "C" int mc_row_stats_launch(const float *logits, int R, int64_t V, mc_row_stats *stats,
                                   void *stream) {
  if (R < 1) return 0;
  pdl_launch(row_stats_kernel, (unsigned)R, STAT_THREADS, 0, as_stream(stream), logits, V, stats);
  return launch_ok();
}

extern "C" int mc_row_metrics_launch(const float *logits, const mc_row_stats *stats,
                                     const int64_t *target, int R, int K, int64_t V,
                                     mc_row_metrics *out, void *stream) {
  if (R < 1 || K < 1) return 0;
  pdl_launch(row_metrics_kernel, (unsigned)R, MET_THREADS, 0, as_stream(stream), logits, stats,
             target, K, V, out);
  return launch_ok();
}

extern "C" int mc_spec_metrics_launch(const float *logits, const mc_row_stats *stats,
                                      const float *ref_logits, const mc_row_stats *ref_stats,
                                      const int *ref_row, const int64_t *target, int RT,
                                      int64_t V, mc_row_metrics *out, void *stream) {
  if (RT < 1) return 0;
  pdl_launch(spec_metrics_kernel, (unsigned)RT, MET_THREADS, 0, as_stream(stream), logits, stats,
             ref_logits, ref_stats, ref_row, target, V, out);
  return launch_ok();
}
