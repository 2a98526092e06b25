/* The byte model of `bench e2e` (e2e_bytes.h). */
#include "src/bench_e2e/e2e_bytes.h"

#include <string.h>

#include "quant/format.h"

static void add_shape(e2e_weights *w, int64_t rows, int64_t cols) {
  if (rows <= 0 || cols <= 0) return;
  w->gemm_floats += rows * cols;
  for (int i = 0; i < w->nshape; i++)
    if (w->rows[i] == rows && w->cols[i] == cols) {
      w->count[i]++;
      return;
    }
  if (w->nshape < 64) {
    w->rows[w->nshape] = rows;
    w->cols[w->nshape] = cols;
    w->count[w->nshape++] = 1;
  }
}

/* The GEMMs of one step, as mc_step.cu issues them (one per block input, one per block output,
 * the MoE router / latent / shared-expert GEMMs, the lm_head), from the config alone; n_params:
 * the model's floats (model_load's count, equal to model_random_floats). */
void e2e_weights_of(const model_config *c, int64_t n_params, e2e_weights *w) {
  memset(w, 0, sizeof *w);
  const int64_t H = c->H;
  for (int i = 0; i < c->nblocks; i++) {
    const int kind = c->blocks[i].kind;
    switch (kind) {
      case BK_GDN: {
        const int64_t cd = 2 * c->gdn_hk * c->gdn_dk + c->gdn_hv * c->gdn_dv,
                      vd = c->gdn_hv * c->gdn_dv;
        add_shape(w, cd + vd + 2 * c->gdn_hv, H);
        add_shape(w, H, vd);
        break;
      }
      case BK_MAMBA2: {
        const int64_t di = c->m_heads * c->m_head_dim, cd = di + 2 * c->m_groups * c->m_state;
        add_shape(w, di + cd + c->m_heads, H);
        add_shape(w, H, di);
        break;
      }
      case BK_QATTN:
      case BK_NATTN: {
        const int64_t qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim;
        add_shape(w, (kind == BK_QATTN ? 2 * qd : qd) + 2 * kvd, H);
        add_shape(w, H, qd);
        break;
      }
      case BK_SWIGLU:
      case BK_RELU2:
        add_shape(w, kind == BK_SWIGLU ? 2 * c->inter : c->inter, H);
        add_shape(w, H, c->inter);
        break;
      case BK_QMOE:
      case BK_NMOE: {
        const int q = kind == BK_QMOE;
        const int64_t E = c->n_experts, I = c->moe_inter, Is = c->shared_inter;
        const int64_t Din = !q && c->latent > 0 ? c->latent : H;
        add_shape(w, E + (q && Is > 0 ? 1 : 0), H); /* router (+ Qwen's shared-expert gate) */
        if (Din != H) {
          add_shape(w, Din, H);
          add_shape(w, H, Din);
        }
        if (Is > 0) {
          add_shape(w, q ? 2 * Is : Is, H);
          add_shape(w, H, Is);
        }
        w->expert_floats += (q ? 3 : 2) * E * I * Din;
        break;
      }
      default:
        break;
    }
  }
  add_shape(w, c->V, H); /* lm_head (the embedding itself when tied) */
  const int64_t embed = c->tie_embeddings ? 0 : c->V * c->H; /* gathered, not streamed */
  w->other_floats = n_params - w->gemm_floats - w->expert_floats - embed;
  if (w->other_floats < 0) w->other_floats = 0;
}

/* State bytes of one row of one SSM layer per step for configuration f (docs/gpu-runtime.md):
 * conventional: the state read and written in its format; replay: the checkpoint read at every
 * step, plus its rewrite and a second read at each flush (every L steps); the ring of records
 * (< 2% at the 4B shapes) is not counted. */
static double ssm_row_bytes(const ssm_config *f, int64_t heads, int64_t dv, int64_t dk) {
  qlayout a, b;
  if (f->strategy == SSM_CONVENTIONAL) {
    if (qlayout_of(&f->state, dv, dk, &a) != 0) return 0;
    return 2.0 * (double)heads * (double)a.bytes_per_matrix;
  }
  if (!f->split) {
    if (qlayout_of(&f->ckpt, dv, dk, &a) != 0) return 0;
    return (double)heads * (double)a.bytes_per_matrix * (1.0 + 2.0 / f->L);
  }
  if (qlayout_of(&f->hp, dv, dk, &a) != 0 || qlayout_of(&f->lp, dv, dk, &b) != 0) return 0;
  return (double)heads *
         ((double)b.bytes_per_matrix +
          (2.0 * (double)a.bytes_per_matrix + 2.0 * (double)b.bytes_per_matrix) / f->L);
}

e2e_bytes e2e_bytes_per_step(const model_config *c, const e2e_weights *w, int wbytes,
                             const ssm_config *cfgs /* [C] */, int C, int K, double mean_pos) {
  const int R = C * K;
  e2e_bytes b;
  memset(&b, 0, sizeof b);
  b.weight = (double)w->gemm_floats * wbytes + 4.0 * (double)(w->expert_floats + w->other_floats) +
             4.0 * (double)R * (double)c->H;
  for (int i = 0; i < c->nblocks; i++) {
    const int kind = c->blocks[i].kind;
    if (kind == BK_GDN || kind == BK_MAMBA2) {
      const int gdn = kind == BK_GDN;
      const int64_t heads = gdn ? c->gdn_hv : c->m_heads, dv = gdn ? c->gdn_dv : c->m_head_dim,
                    dk = gdn ? c->gdn_dk : c->m_state;
      const int64_t cd = gdn ? 2 * c->gdn_hk * c->gdn_dk + c->gdn_hv * c->gdn_dv
                             : c->m_heads * c->m_head_dim + 2 * c->m_groups * c->m_state;
      const int64_t kc = gdn ? c->gdn_kernel : c->m_kernel;
      for (int ci = 0; ci < C; ci++) b.state += (double)K * ssm_row_bytes(&cfgs[ci], heads, dv, dk);
      b.state += (double)R * 2.0 * 4.0 * (double)((kc - 1) * cd); /* conv window read + write */
    } else if (kind == BK_QATTN || kind == BK_NATTN) {
      const double kvd = (double)(c->n_kv_heads * c->head_dim);
      /* K and V: rows 0..pos read (pos + 1), one written */
      b.kv += (double)R * 2.0 * 4.0 * kvd * (mean_pos + 2.0);
    }
  }
  b.total = b.weight + b.state + b.kv;
  return b;
}
