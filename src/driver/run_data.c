/* run_data lifecycle (run_data.h). */
#include "src/driver/run_data.h"

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
  d->cfg = calloc((size_t)nconfig + 1, sizeof(run_cfg_data));
  if (!d->tokens || !d->window_start || !d->ref_nll || !d->cfg) goto oom;
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
  memset(d, 0, sizeof *d);
}
