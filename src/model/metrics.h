/* Per-step metrics of teacher-forced decoding (SPEC section 5).
 *
 * log-softmax over the V logits in fp32 with the maximum subtracted; the normaliser's sum of
 * exponentials is accumulated in fp64 (then its log rounded to fp32), and so is the KL sum.
 * kl = sum_i p_ref(i) (log p_ref(i) - log p_cfg(i)) in nats, no floor on probabilities, computed
 * in the equivalent form sum_i p_ref(i) (exp(-d_i) - 1 + d_i) with d_i = log p_ref(i) - log
 * p_cfg(i): the added terms sum to sum p_cfg - sum p_ref = 0 for normalised distributions, and
 * every term is >= 0 (e^-x - 1 + x >= 0), so rounding can no longer push a near-zero KL below
 * zero. The fp32 normalisation error of log p_cfg then enters to second order instead of first
 * (that form is the generalised KL of the two measures). Terms that round below zero (|d| below
 * ~1e-16, where the term is ~1e-32) count as 0.
 * nll = -log p_cfg(target); dp = p_cfg(target) - p_ref(target); top1 = whether the argmaxes
 * (first index on ties) agree. */
#ifndef RSSM_MODEL_METRICS_H
#define RSSM_MODEL_METRICS_H

#include <stdint.h>

/* logp [V] = log_softmax(logits [V]). Returns 0, or -1 (logp untouched) when a logit is not
 * finite. *argmax receives the first index of the largest logit. */
int metrics_log_softmax(const float *logits /* [V] */, int64_t V, float *logp /* [V] */,
                        int64_t *argmax);

/* The KL sum of metrics_step in fp64: the sum of the terms above 0; *dropped (when not NULL)
 * receives the sum of the terms that were not added (<= 0). The unclamped sum is the return value
 * plus *dropped: tests check it, since a sign error in a term would only show there. */
double metrics_kl_sum(const float *logp_ref /* [V] */, const float *logp_cfg /* [V] */, int64_t V,
                      double *dropped);

typedef struct {
  float kl, nll, dp;
  uint8_t top1;
} step_metrics;

/* Metrics of one step from the two log-softmax rows. */
void metrics_step(const float *logp_ref /* [V] */, int64_t argmax_ref,
                  const float *logp_cfg /* [V] */, int64_t argmax_cfg, int64_t V, int64_t target,
                  step_metrics *out);

#endif
