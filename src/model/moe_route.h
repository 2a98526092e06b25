/* MoE routing of one token (hf-hybrid-architectures.md A.3.3, B.3.4), shared by the CPU runtime
 * (layer_mlp.c), the GPU kernel (src/model_cuda/mc_moe.cu) and the kernel's CPU reference
 * (mc_ref.c): one copy of the arithmetic, `__host__ __device__` under nvcc. The only difference
 * between the paths is expf, which the GPU computes to within 2 ulp of the CPU's.
 *   Qwen3.5 / Qwen3-Next: softmax over the E logits, the k largest probabilities, renormalised
 *     when norm_topk (Qwen3.5-MoE always passes 1).
 *   Nemotron-H: sigmoid scores s; selection on s + correction bias within the topk_group best
 *     groups (a group's score: the sum of its two best); weights s of the chosen experts,
 *     normalised with +1e-20 when norm_topk, times routed_scaling.
 * The chosen (expert, weight) pairs come out in ascending expert order: the order in which the
 * experts' outputs are summed. */
#ifndef RSSM_MODEL_MOE_ROUTE_H
#define RSSM_MODEL_MOE_ROUTE_H

#include <math.h>
#include <stdint.h>

#include "quant/rssm_hd.h"

#define RSSM_MOE_MAX_GROUPS 1024 /* the loader refuses more (model_load.c) */

RSSM_HD float rssm_moe_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* idx [k] = the k largest of score [E] where allowed[e] != 0 (allowed may be NULL), in
 * descending order, ties to the lower index. */
RSSM_HD void rssm_moe_topk(const float *score /* [E] */, const float *allowed /* [E] or NULL */,
                           int64_t E, int64_t k, int32_t *idx /* [k] */) {
  for (int64_t j = 0; j < k; j++) {
    int64_t best = -1;
    for (int64_t e = 0; e < E; e++) {
      if (allowed && allowed[e] == 0.0f) continue;
      int taken = 0;
      for (int64_t i = 0; i < j; i++) taken |= idx[i] == e;
      if (taken) continue;
      if (best < 0 || score[e] > score[best]) best = e;
    }
    idx[j] = (int32_t)best;
  }
}

RSSM_HD void rssm_moe_route(const float *lg /* [E] router logits */, int64_t E, int64_t k,
                            int qwen, const float *corr_bias /* [E], Nemotron-H */, int norm_topk,
                            float routed_scaling, int64_t n_group, int64_t topk_group,
                            float *scratch /* [4][E] */, int32_t *ix /* [k] */,
                            float *w /* [k] */) {
  float *rr = scratch;      /* [E] probabilities / sigmoid scores */
  float *sc = rr + E;       /* [E] selection scores */
  float *allowed = sc + E;  /* [E] group mask */
  float *gs = allowed + E;  /* [E] group scores */
  if (qwen) {
    float mx = lg[0];
    for (int64_t e = 1; e < E; e++) mx = lg[e] > mx ? lg[e] : mx;
    float sum = 0.0f;
    for (int64_t e = 0; e < E; e++) {
      sc[e] = expf(lg[e] - mx);
      sum = sum + sc[e];
    }
    for (int64_t e = 0; e < E; e++) sc[e] = sc[e] / sum;
    rssm_moe_topk(sc, 0, E, k, ix);
    float ws = 0.0f;
    for (int64_t j = 0; j < k; j++) {
      w[j] = sc[ix[j]];
      ws = ws + w[j];
    }
    if (norm_topk)
      for (int64_t j = 0; j < k; j++) w[j] = w[j] / ws;
  } else {
    for (int64_t e = 0; e < E; e++) {
      rr[e] = rssm_moe_sigmoid(lg[e]);
      sc[e] = rr[e] + corr_bias[e];
      allowed[e] = 1.0f;
    }
    const int64_t per = E / n_group;
    if (topk_group < n_group) {
      for (int64_t gi = 0; gi < n_group; gi++) {
        int32_t two[2];
        const int64_t kk = per < 2 ? per : 2;
        rssm_moe_topk(sc + gi * per, 0, per, kk, two);
        float s2 = 0.0f;
        for (int64_t j = 0; j < kk; j++) s2 = s2 + sc[gi * per + two[j]];
        gs[gi] = s2;
      }
      int32_t keep[RSSM_MOE_MAX_GROUPS];
      rssm_moe_topk(gs, 0, n_group, topk_group, keep);
      for (int64_t e = 0; e < E; e++) allowed[e] = 0.0f;
      for (int64_t j = 0; j < topk_group; j++)
        for (int64_t e = keep[j] * per; e < (keep[j] + 1) * per; e++) allowed[e] = 1.0f;
    }
    rssm_moe_topk(sc, allowed, E, k, ix);
    float ws = 0.0f;
    for (int64_t j = 0; j < k; j++) {
      w[j] = rr[ix[j]];
      ws = ws + w[j];
    }
    if (norm_topk)
      for (int64_t j = 0; j < k; j++) w[j] = w[j] / (ws + 1e-20f);
    for (int64_t j = 0; j < k; j++) w[j] = w[j] * routed_scaling;
  }
  /* ascending expert id: the summation order of the experts' outputs */
  for (int64_t i = 1; i < k; i++)
    for (int64_t j = i; j > 0 && ix[j - 1] > ix[j]; j--) {
      int32_t ti = ix[j];
      ix[j] = ix[j - 1];
      ix[j - 1] = ti;
      float tw = w[j];
      w[j] = w[j - 1];
      w[j - 1] = tw;
    }
}

#endif
