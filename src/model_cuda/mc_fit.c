/* What fits in device memory (mc_fit.h). */
#include "src/model_cuda/mc_fit.h"

#include <stdio.h>

int64_t mc_fit_largest(int64_t (*need)(void *ctx, int64_t n), void *ctx, int64_t lo, int64_t hi,
                       int64_t budget) {
  if (hi < lo || need(ctx, lo) > budget) return lo - 1;
  /* invariant: need(lo) fits; the answer is in [lo, hi] */
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (need(ctx, mid) <= budget)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

void mc_fit_message(char *buf, size_t len, int64_t need, int R, int C, int64_t max_ctx,
                    int64_t avail, int64_t rows_fit, int64_t ctx_fit) {
  const double gib = 1073741824.0;
  int n = snprintf(buf, len,
                   "needs %.1f GiB of device memory for %d rows at %lld positions, the device "
                   "has %.1f GiB free: ",
                   (double)need / gib, R, (long long)max_ctx, (double)avail / gib);
  if (n < 0 || (size_t)n >= len) return;
  char *at = buf + n;
  size_t left = len - (size_t)n;
  const int64_t windows = C > 0 ? rows_fit / C : 0;
  if (rows_fit >= 1 && windows >= 1)
    n = snprintf(at, left,
                 "at most %lld rows fit at %lld positions (%lld window%s of the %d "
                 "configurations: fewer --sequences, or --shard I/N over several runs)",
                 (long long)rows_fit, (long long)max_ctx, (long long)windows,
                 windows == 1 ? "" : "s", C);
  else if (rows_fit >= 1)
    n = snprintf(at, left,
                 "at most %lld rows fit at %lld positions, less than one window of the %d "
                 "configurations (fewer configurations per run)",
                 (long long)rows_fit, (long long)max_ctx, C);
  else
    n = snprintf(at, left, "not even one row fits at %lld positions", (long long)max_ctx);
  if (n < 0 || (size_t)n >= left) return;
  at += n;
  left -= (size_t)n;
  if (ctx_fit >= 1)
    snprintf(at, left, "; the %d rows fit at most %lld positions (--steps)", R,
             (long long)ctx_fit);
  else
    snprintf(at, left, "; the %d rows do not fit at any length", R);
}
