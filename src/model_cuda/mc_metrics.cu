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
constexpr int MET_THREADS = 256;

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
  for (int64_t i = t; i < V; i += STAT_THREADS) {
    const float v = x[i];
    if (!isfinite(v)) nonfinite = 1;
    if (am < 0 || v > m) m = v, am = i; /* ascending i within the thread: first index kept */
  }
  if (nonfinite) atomicOr(&bad, 1);
  vmax[t] = m;
  vidx[t] = am;
  __syncthreads();
  for (int off = STAT_THREADS / 2; off >= 1; off >>= 1) {
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
  const float mx = vmax[0];
  if (bad) {
    if (t == 0) stats[r] = mc_row_stats{0.0f, mx, (int32_t)vidx[0], 0};
    return;
  }
  double s = 0.0;
  for (int64_t i = t; i < V; i += STAT_THREADS) s += (double)expf(x[i] - mx);
  vsum[t] = s;
  __syncthreads();
  for (int off = STAT_THREADS / 2; off >= 1; off >>= 1) {
    if (t < off) vsum[t] = vsum[t] + vsum[t + off];
    __syncthreads();
  }
  if (t == 0) stats[r] = mc_row_stats{(float)log(vsum[0]), mx, (int32_t)vidx[0], 1};
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
  for (int off = MET_THREADS / 2; off >= 1; off >>= 1) {
    if (t < off) ksum[t] = ksum[t] + ksum[t + off];
    __syncthreads();
  }
  if (t == 0) {
    const float lref_t = (xr[tg] - sk.max) - sk.lse;
    o.kl = (float)ksum[0];
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
