/* The GEMMs of one decode step from a model's config (bench_gemm.h). The shapes are those
 * mc_step.cu gives cuBLAS (and bench e2e's byte model counts, e2e_weights_of in
 * src/bench_e2e/e2e_bytes.c): per block its input projection [in_rows][H] and its output
 * projection [H][out_cols], the MoE router, latent and shared-expert GEMMs (the routed experts
 * are not GEMMs: mc_moe.cu), the lm_head [V][H] last. Pure C. */
#include <stdio.h>
#include <string.h>

#include "src/bench_gemm/bench_gemm.h"

/* Appends one call of (name, rows, cols); -1 when a table is full. */
static int add(bg_step *s, const char *name, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return 0;
  int i = 0;
  while (i < s->n && !(strcmp(s->g[i].name, name) == 0 && s->g[i].rows == rows && s->g[i].cols == cols))
    i++;
  if (i == s->n) {
    if (s->n == BG_MAX_GEMMS) return -1;
    snprintf(s->g[i].name, sizeof s->g[i].name, "%s", name);
    s->g[i].rows = rows;
    s->g[i].cols = cols;
    s->g[i].count = 0;
    s->n++;
  }
  if (s->nseq == BG_MAX_STEP) return -1;
  s->seq[s->nseq] = i;
  s->inst[s->nseq++] = s->g[i].count++;
  return 0;
}

/* The GEMMs of one MoE block (bench e2e's e2e_weights_of, mc_step.cu's MoE branch). */
static int add_moe(bg_step *s, const model_config *c, int qwen) {
  const int64_t H = c->H, E = c->n_experts, Is = c->shared_inter;
  const int64_t Din = !qwen && c->latent > 0 ? c->latent : H;
  int rc = add(s, "moe.router", E + (qwen && Is > 0 ? 1 : 0), H); /* + Qwen's shared gate */
  if (Din != H) rc = rc || add(s, "moe.latent_in", Din, H) || add(s, "moe.latent_out", H, Din);
  if (Is > 0) rc = rc || add(s, "moe.shared_in", qwen ? 2 * Is : Is, H) || add(s, "moe.shared_out", H, Is);
  return rc;
}

int bg_step_of(const model_config *c, bg_step *s) {
  memset(s, 0, sizeof *s);
  const int64_t H = c->H;
  int rc = 0;
  for (int i = 0; i < c->nblocks && rc == 0; i++) {
    const int kind = c->blocks[i].kind;
    switch (kind) {
      case BK_GDN: { /* in: q, k, v (conv dims), z (vd), b and a (one per value head) */
        const int64_t cd = 2 * c->gdn_hk * c->gdn_dk + c->gdn_hv * c->gdn_dv, vd = c->gdn_hv * c->gdn_dv;
        rc = add(s, "gdn.in", cd + vd + 2 * c->gdn_hv, H) || add(s, "gdn.out", H, vd);
        break;
      }
      case BK_MAMBA2: { /* in: z (di), x B C (conv dims), dt (one per head) */
        const int64_t di = c->m_heads * c->m_head_dim, cd = di + 2 * c->m_groups * c->m_state;
        rc = add(s, "mamba.in", di + cd + c->m_heads, H) || add(s, "mamba.out", H, di);
        break;
      }
      case BK_QATTN:
      case BK_NATTN: { /* in: q (and Qwen's gate), k, v */
        const int64_t qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim;
        rc = add(s, "attn.in", (kind == BK_QATTN ? 2 * qd : qd) + 2 * kvd, H) || add(s, "attn.out", H, qd);
        break;
      }
      case BK_SWIGLU:
      case BK_RELU2:
        rc = add(s, "mlp.in", kind == BK_SWIGLU ? 2 * c->inter : c->inter, H) || add(s, "mlp.out", H, c->inter);
        break;
      case BK_QMOE:
      case BK_NMOE:
        rc = add_moe(s, c, kind == BK_QMOE);
        break;
      default:
        break;
    }
  }
  rc = rc || add(s, "lm_head", c->V, H); /* the embedding itself when tied */
  return rc ? -1 : 0;
}

int64_t bg_step_weight_elems(const bg_step *s) {
  int64_t n = 0;
  for (int i = 0; i < s->nseq; i++) n += s->g[s->seq[i]].rows * s->g[s->seq[i]].cols;
  return n;
}
