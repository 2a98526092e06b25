/* run_data lifecycle (run_data.h). */
#include "src/driver/run_data.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int run_data_alloc(run_data *d, int64_t K, int64_t N, int nconfig) {
  memset(d, 0, sizeof *d);
  if (K < 1 || N < 1 || nconfig < 0 || K > (INT64_C(1) << 20) || N > (INT64_C(1) << 31)) return -1;
  /* 13 bytes per step and configuration, plus the tokens and the reference */
  int64_t cells = K * N;
  if (cells > (INT64_C(1) << 40) / (13 * (int64_t)(nconfig + 1) + 8)) return -1;
  size_t kn = (size_t)cells;
  d->K = K;
  d->N = N;
  d->nconfig = nconfig;
  d->tokens = calloc(kn + (size_t)K, sizeof(int32_t));
  d->window_start = calloc((size_t)K, sizeof(int64_t));
  d->ref_nll = calloc(kn, sizeof(float));
  d->steps_written = calloc((size_t)K, sizeof(int64_t));
  d->cfg = calloc((size_t)nconfig + 1, sizeof(run_cfg_data));
  if (!d->tokens || !d->window_start || !d->ref_nll || !d->steps_written || !d->cfg) goto oom;
  for (int c = 0; c < nconfig; c++) {
    run_cfg_data *x = &d->cfg[c];
    x->kl = calloc(kn, sizeof(float));
    x->nll = calloc(kn, sizeof(float));
    x->dp = calloc(kn, sizeof(float));
    x->top1 = calloc(kn, 1);
    x->first_nonfinite = malloc((size_t)K * sizeof(int64_t));
    if (!x->kl || !x->nll || !x->dp || !x->top1 || !x->first_nonfinite) goto oom;
    for (int64_t k = 0; k < K; k++) x->first_nonfinite[k] = -1;
  }
  return 0;
oom:
  run_data_free(d);
  return -1;
}

void run_data_free(run_data *d) {
  if (d->cfg)
    for (int c = 0; c < d->nconfig; c++) {
      free(d->cfg[c].kl);
      free(d->cfg[c].nll);
      free(d->cfg[c].dp);
      free(d->cfg[c].top1);
      free(d->cfg[c].first_nonfinite);
    }
  free(d->cfg);
  free(d->tokens);
  free(d->window_start);
  free(d->ref_nll);
  free(d->experiment);
  free(d->identity);
  free(d->steps_written);
  memset(d, 0, sizeof *d);
}

int run_data_complete(const run_data *d) {
  for (int64_t k = 0; k < d->K; k++)
    if (d->steps_written[k] != d->N) return 0;
  return 1;
}

static void compact(void *a, size_t esize, int64_t K, int64_t N, int64_t n) {
  unsigned char *p = a; /* [K][N] -> [K][n] */
  for (int64_t k = 1; k < K; k++)
    memmove(p + (size_t)(k * n) * esize, p + (size_t)(k * N) * esize, (size_t)n * esize);
}

void run_data_truncate(run_data *d, int64_t n) {
  if (n >= d->N || n < 1) return;
  compact(d->ref_nll, sizeof(float), d->K, d->N, n);
  for (int c = 0; c < d->nconfig; c++) {
    run_cfg_data *x = &d->cfg[c];
    compact(x->kl, sizeof(float), d->K, d->N, n);
    compact(x->nll, sizeof(float), d->K, d->N, n);
    compact(x->dp, sizeof(float), d->K, d->N, n);
    compact(x->top1, 1, d->K, d->N, n);
    for (int64_t k = 0; k < d->K; k++)
      if (x->first_nonfinite[k] >= n) x->first_nonfinite[k] = -1;
  }
  compact(d->tokens, sizeof(int32_t), d->K, d->N + 1, n + 1);
  for (int64_t k = 0; k < d->K; k++)
    if (d->steps_written[k] > n) d->steps_written[k] = n;
  d->N = n;
}

int64_t run_data_min_written(const run_data *d) {
  int64_t lo = d->N;
  for (int64_t k = 0; k < d->K; k++)
    if (d->steps_written[k] < lo) lo = d->steps_written[k];
  return lo;
}

void run_data_written_text(const run_data *d, char *out, size_t outlen) {
  int64_t lo = run_data_min_written(d), hi = 0;
  for (int64_t k = 0; k < d->K; k++)
    if (d->steps_written[k] > hi) hi = d->steps_written[k];
  if (lo == hi)
    snprintf(out, outlen, "steps written: %lld of %lld", (long long)lo, (long long)d->N);
  else
    snprintf(out, outlen, "steps written: %lld to %lld of %lld, by sequence", (long long)lo,
             (long long)hi, (long long)d->N);
}
