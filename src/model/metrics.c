/* Per-step metrics (metrics.h). */
#include "src/model/metrics.h"

#include <math.h>
#include <stddef.h>

int metrics_log_softmax(const float *logits, int64_t V, float *logp, int64_t *argmax) {
  float m = logits[0];
  int64_t am = 0;
  for (int64_t i = 0; i < V; i++) {
    if (!isfinite(logits[i])) return -1;
    if (logits[i] > m) m = logits[i], am = i;
  }
  double s = 0.0;
  for (int64_t i = 0; i < V; i++) s += (double)expf(logits[i] - m);
  float lse = (float)log(s);
  for (int64_t i = 0; i < V; i++) logp[i] = (logits[i] - m) - lse;
  *argmax = am;
  return 0;
}

double metrics_kl_sum(const float *logp_ref, const float *logp_cfg, int64_t V, double *dropped) {
  double kl = 0.0, neg = 0.0;
  for (int64_t i = 0; i < V; i++) {
    float p = expf(logp_ref[i]);
    double d = (double)logp_ref[i] - (double)logp_cfg[i];
    double term = (double)p * (expm1(-d) + d); /* >= 0 in exact arithmetic (metrics.h) */
    if (term > 0.0) kl += term;
    else neg += term;
  }
  if (dropped) *dropped = neg;
  return kl;
}

void metrics_step(const float *logp_ref, int64_t argmax_ref, const float *logp_cfg,
                  int64_t argmax_cfg, int64_t V, int64_t target, step_metrics *out) {
  out->kl = (float)metrics_kl_sum(logp_ref, logp_cfg, V, NULL);
  out->nll = -logp_cfg[target];
  out->dp = expf(logp_cfg[target]) - expf(logp_ref[target]);
  out->top1 = argmax_ref == argmax_cfg;
}
