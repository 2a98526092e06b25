/* The two ways of reading the state: output-only readouts over the ring (non-flush steps and
 * drafts) and materialisation of S by folding records onto a checkpoint (flushes, conventional).
 * All arithmetic goes through src/ssm/ssm_math.h, in the order documented there. */
#include <string.h>

#include "src/ssm/ssm_internal.h"
#include "src/ssm/ssm_math.h"

void ssm_readout(ssm_state *st, const float *C, int n, const float *y, float *out) {
  const ssm_dims *d = &st->dims;
  const int H = d->H, dv = d->dv, dk = d->dk, G = d->G, hpg = H / G;
  /* k_j . y once per key group: the heads of a group share it (the small K^T Q GEMM). */
  for (int g = 0; g < G; g++)
    for (int j = 1; j <= n; j++) {
      const float *kj = st->rec_k + ((size_t)ssm_slot(st, j) * G + g) * dk;
      st->dots[(size_t)g * st->cap + (j - 1)] = rssm_dot_w32(kj, y + (size_t)g * dk, dk);
    }
  for (int hd = 0; hd < H; hd++) {
    const int g = hd / hpg;
    for (int j = 1; j <= n; j++) {
      size_t slot = (size_t)ssm_slot(st, j);
      st->alpha_tmp[j - 1] = st->rec_alpha[slot * H + hd];
      st->xs[j - 1] = st->rec_x + (slot * H + hd) * dv;
    }
    rssm_decay_weights(st->alpha_tmp, n, st->w);
    for (int j = 0; j < n; j++)
      st->coef[j] = rssm_readout_coef(st->w[j + 1], st->dots[(size_t)g * st->cap + j]);
    const float *yg = y + (size_t)g * dk;
    /* Appendix F (skip=THR): when the checkpoint's weight gamma_n = w[0] is below THR (compared
     * as doubles), this head's checkpoint is not read and C_i . y counts as +0, which is exactly
     * the readout with C = 0. Without the key (skip = 0) the test is always false. */
    st->ckpt_reads++;
    if (st->cfg.skip > 0.0 && (double)st->w[0] < st->cfg.skip) {
      st->ckpt_skips++;
      for (int i = 0; i < dv; i++)
        out[(size_t)hd * dv + i] = rssm_readout_row(0.0f, st->w[0], st->xs, st->coef, n, i);
      continue;
    }
    for (int i = 0; i < dv; i++) {
      float cdot = rssm_dot_w32(C + ((size_t)hd * dv + i) * dk, yg, dk);
      out[(size_t)hd * dv + i] = rssm_readout_row(cdot, st->w[0], st->xs, st->coef, n, i);
    }
  }
}

void ssm_gdn_u_readout(ssm_state *st, const float *C, int j) {
  const ssm_dims *d = &st->dims;
  const int H = d->H, dv = d->dv, G = d->G, dk = d->dk;
  size_t slot = (size_t)ssm_slot(st, j);
  /* S_{j-1} k_j from the checkpoint and records 1..j-1 (k_j read in place from the ring). */
  ssm_readout(st, C, j - 1, st->rec_k + slot * G * dk, st->otmp);
  for (int hd = 0; hd < H; hd++) {
    float alpha = st->rec_alpha[slot * H + hd], beta = st->rec_beta[slot * H + hd];
    const float *v = st->rec_v + (slot * H + hd) * dv;
    float *u = st->rec_x + (slot * H + hd) * dv;
    for (int i = 0; i < dv; i++) u[i] = rssm_gdn_u(v[i], beta, alpha, st->otmp[(size_t)hd * dv + i]);
  }
}

void ssm_materialise(ssm_state *st, const float *C, int n, int recompute_from, float *S) {
  const ssm_dims *d = &st->dims;
  const int H = d->H, dv = d->dv, dk = d->dk, G = d->G, hpg = H / G;
  const int gdn = d->kind == SSM_GDN;
  if (S != C) memcpy(S, C, (size_t)H * dv * dk * sizeof(float));
  /* Rows are independent (a GDN u_j[i] only needs row i of S_{j-1}), so each row runs through all
   * records in order: the same order as one warp per row on the GPU. */
  for (int hd = 0; hd < H; hd++) {
    const int g = hd / hpg;
    for (int i = 0; i < dv; i++) {
      float *row = S + ((size_t)hd * dv + i) * dk;
      for (int j = 1; j <= n; j++) {
        size_t slot = (size_t)ssm_slot(st, j);
        float alpha = st->rec_alpha[slot * H + hd];
        const float *k = st->rec_k + (slot * G + g) * dk;
        float *x = st->rec_x + (slot * H + hd) * dv + i;
        if (gdn && j >= recompute_from) {
          float sk = rssm_dot_w32(row, k, dk);
          *x = rssm_gdn_u(st->rec_v[(slot * H + hd) * dv + i], st->rec_beta[slot * H + hd], alpha,
                          sk);
        }
        rssm_fold_row(row, alpha, *x, k, dk);
      }
    }
  }
}

void ssm_output_from_state(const ssm_state *st, const float *S, const float *q, float *o) {
  const ssm_dims *d = &st->dims;
  const int H = d->H, dv = d->dv, dk = d->dk, hpg = H / d->G;
  for (int hd = 0; hd < H; hd++) {
    const float *qg = q + (size_t)(hd / hpg) * dk;
    for (int i = 0; i < dv; i++)
      o[(size_t)hd * dv + i] = rssm_dot_w32(S + ((size_t)hd * dv + i) * dk, qg, dk);
  }
}
