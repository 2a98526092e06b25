/* model_load / model_free: bind the safetensors tensors that config.json implies, check each
 * shape against the one derived from the config, convert to fp32 and remove the per-family layout
 * differences (see model.h). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/errbuf.h"
#include "src/model/linalg.h"
#include "src/model/model.h"
#include "src/model/safetensors.h"

void model_set_threads(int n) { linalg_set_threads(n); }

typedef struct {
  st_archive ar;
  model *m;
  const char *prefix;   /* "model.language_model.", "model.", "backbone." */
  char *err;
  size_t errlen;
  int rc;
  uint8_t *used;        /* [ar.ntensors] read by the model */
} loader;

/* Find tensor `name` (already prefixed), and note that the model reads it. */
static const st_tensor *find(loader *L, const char *name) {
  const st_tensor *t = st_find(&L->ar, name);
  if (t && L->used) L->used[t - L->ar.tensors] = 1;
  return t;
}

/* After loading: a tensor PREFIX.layers.N.* with N >= nlayers is an error; other unread tensors
 * are counted (model.h). */
static int check_unused(loader *L, model *m) {
  size_t pl = strlen(L->prefix);
  for (int64_t i = 0; i < L->ar.ntensors; i++) {
    const char *name = L->ar.tensors[i].name;
    if (L->used[i]) continue;
    long layer = -1;
    if (strncmp(name, L->prefix, pl) == 0 && strncmp(name + pl, "layers.", 7) == 0)
      layer = strtol(name + pl + 7, NULL, 10);
    if (layer >= m->cfg.nlayers) {
      rssm_fail(L->err, L->errlen, "%s: tensor %s belongs to layer %ld, but config.json describes "
                "%lld layers (expected the layer list to cover every layer of the checkpoint)",
                m->dir, name, layer, (long long)m->cfg.nlayers);
      return RSSM_ERR_INPUT;
    }
    if (m->n_unused++ == 0) snprintf(m->first_unused, sizeof m->first_unused, "%s", name);
  }
  return RSSM_OK;
}

/* Load `name` with exactly the given shape into a new fp32 array. Returns NULL and sets L->rc
 * on failure (missing, wrong shape, unsupported dtype, out of memory). */
static float *load_exact(loader *L, const char *name, int ndim, const int64_t *shape) {
  if (L->rc != RSSM_OK) return NULL;
  const st_tensor *t = find(L, name);
  char exp[256], got[256];
  st_shape_string(ndim, shape, exp, sizeof exp);
  if (!t) {
    rssm_fail(L->err, L->errlen, "%s: tensor '%s' missing from the checkpoint (expected shape %s)",
              L->m->dir, name, exp);
    L->rc = RSSM_ERR_INPUT;
    return NULL;
  }
  int same = t->ndim == ndim;
  for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
  if (!same) {
    st_shape_string(t->ndim, t->shape, got, sizeof got);
    rssm_fail(L->err, L->errlen, "%s: tensor '%s': shape %s (expected %s from config.json)",
              L->ar.files[t->file].path, name, got, exp);
    L->rc = RSSM_ERR_INPUT;
    return NULL;
  }
  float *out = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof *out); /* [numel] */
  if (!out) {
    rssm_fail(L->err, L->errlen, "%s: out of memory for tensor '%s' (%" PRId64 " floats)",
              L->m->dir, name, t->numel);
    L->rc = RSSM_ERR_IO;
    return NULL;
  }
  int rc = st_to_f32(&L->ar, t, out, L->err, L->errlen);
  if (rc != RSSM_OK) {
    free(out);
    L->rc = rc;
    return NULL;
  }
  L->m->n_params += t->numel;
  return out;
}

/* PREFIX layers.LAYER.SUFFIX */
static float *ld(loader *L, const char *suffix, int layer, int ndim, int64_t d0, int64_t d1,
                 int64_t d2) {
  char name[512];
  snprintf(name, sizeof name, "%slayers.%d.%s", L->prefix, layer, suffix);
  int64_t shape[3] = {d0, d1, d2};
  return load_exact(L, name, ndim, shape);
}

static int has(loader *L, const char *suffix, int layer) {
  char name[512];
  snprintf(name, sizeof name, "%slayers.%d.%s", L->prefix, layer, suffix);
  return find(L, name) != NULL;
}

/* Per-expert tensors `...experts.{j}.NAME.weight` [r][c] stacked into [E][r][c]. */
static float *ld_experts(loader *L, const char *sub, int layer, const char *what,
                         int64_t E, int64_t r, int64_t c) {
  if (L->rc != RSSM_OK) return NULL;
  float *all = NULL; /* [E][r][c], allocated once expert 0 has proved r x c against the file */
  for (int64_t j = 0; j < E; j++) {
    char name[640];
    snprintf(name, sizeof name, "%slayers.%d.%s.experts.%" PRId64 ".%s.weight", L->prefix, layer,
             sub, j, what);
    int64_t shape[2] = {r, c};
    float *one = load_exact(L, name, 2, shape);
    if (!one) {
      free(all);
      return NULL;
    }
    if (!all && !(all = malloc((size_t)(E * r * c) * sizeof *all))) {
      free(one);
      rssm_fail(L->err, L->errlen, "%s: out of memory for layer %d experts", L->m->dir, layer);
      L->rc = RSSM_ERR_IO;
      return NULL;
    }
    memcpy(all + j * r * c, one, (size_t)(r * c) * sizeof *one);
    free(one);
  }
  return all;
}

/* --- one loader per block kind --------------------------------------------------------------- */

static void load_gdn(loader *L, model_block_w *b) {
  const model_config *c = &L->m->cfg;
  const int64_t H = c->H, Hk = c->gdn_hk, Hv = c->gdn_hv, dk = c->gdn_dk, dv = c->gdn_dv;
  const int64_t K = c->gdn_kernel, r = Hv / Hk, key_dim = Hk * dk, value_dim = Hv * dv;
  const int64_t conv_dim = 2 * key_dim + value_dim;
  const int l = b->layer;
  gdn_weights *g = &b->gdn;
  /* Qwen3-Next's fused, interleaved layout, wherever it appears (a transformers version may
   * also save either family in the other's layout) */
  if (has(L, "linear_attn.in_proj_qkvz.weight", l) ||
      (c->family == MF_QWEN3_NEXT && !has(L, "linear_attn.in_proj_qkv.weight", l))) {
    /* [Hk][2dk + 2 r dv][H]: per key head q_g | k_g | v_g (r heads) | z_g (r heads) */
    const int64_t per = 2 * dk + 2 * r * dv;
    float *qkvz = ld(L, "linear_attn.in_proj_qkvz.weight", l, 2, Hk * per, H, 0);
    float *ba = ld(L, "linear_attn.in_proj_ba.weight", l, 2, 2 * Hv, H, 0);
    if (L->rc == RSSM_OK) {
      g->w_qkv = malloc((size_t)(conv_dim * H) * sizeof(float));
      g->w_z = malloc((size_t)(value_dim * H) * sizeof(float));
      g->w_b = malloc((size_t)(Hv * H) * sizeof(float));
      g->w_a = malloc((size_t)(Hv * H) * sizeof(float));
      if (!g->w_qkv || !g->w_z || !g->w_b || !g->w_a) {
        rssm_fail(L->err, L->errlen, "%s: out of memory (layer %d)", L->m->dir, l);
        L->rc = RSSM_ERR_IO;
      } else {
        const size_t row = (size_t)H * sizeof(float);
        for (int64_t gk = 0; gk < Hk; gk++) {
          const float *src = qkvz + gk * per * H;
          memcpy(g->w_qkv + (gk * dk) * H, src, (size_t)dk * row);
          memcpy(g->w_qkv + (key_dim + gk * dk) * H, src + dk * H, (size_t)dk * row);
          memcpy(g->w_qkv + (2 * key_dim + gk * r * dv) * H, src + 2 * dk * H,
                 (size_t)(r * dv) * row);
          memcpy(g->w_z + (gk * r * dv) * H, src + (2 * dk + r * dv) * H, (size_t)(r * dv) * row);
          const float *bsrc = ba + gk * 2 * r * H;
          memcpy(g->w_b + (gk * r) * H, bsrc, (size_t)r * row);
          memcpy(g->w_a + (gk * r) * H, bsrc + r * H, (size_t)r * row);
        }
      }
    }
    free(qkvz);
    free(ba);
  } else {
    g->w_qkv = ld(L, "linear_attn.in_proj_qkv.weight", l, 2, conv_dim, H, 0);
    g->w_z = ld(L, "linear_attn.in_proj_z.weight", l, 2, value_dim, H, 0);
    g->w_b = ld(L, "linear_attn.in_proj_b.weight", l, 2, Hv, H, 0);
    g->w_a = ld(L, "linear_attn.in_proj_a.weight", l, 2, Hv, H, 0);
  }
  g->conv_w = ld(L, "linear_attn.conv1d.weight", l, 3, conv_dim, 1, K);
  if (L->rc == RSSM_OK && has(L, "linear_attn.conv1d.bias", l)) {
    rssm_fail(L->err, L->errlen,
              "%s: tensor '%slayers.%d.linear_attn.conv1d.bias' present "
              "(expected none: the GDN conv has no bias)",
              L->m->dir, L->prefix, l);
    L->rc = RSSM_ERR_INPUT;
  }
  g->dt_bias = ld(L, "linear_attn.dt_bias", l, 1, Hv, 0, 0);
  g->A_log = ld(L, "linear_attn.A_log", l, 1, Hv, 0, 0);
  g->norm = ld(L, "linear_attn.norm.weight", l, 1, dv, 0, 0);
  g->w_out = ld(L, "linear_attn.out_proj.weight", l, 2, H, value_dim, 0);
}

static void load_attn(loader *L, model_block_w *b, const char *sub) {
  const model_config *c = &L->m->cfg;
  const int64_t H = c->H, nH = c->n_heads, nKV = c->n_kv_heads, D = c->head_dim;
  const int l = b->layer;
  attn_weights *a = &b->attn;
  char f[256];
  const int gated = b->kind == BK_QATTN;
  snprintf(f, sizeof f, "%s.q_proj.weight", sub);
  float *q = ld(L, f, l, 2, (gated ? 2 : 1) * nH * D, H, 0);
  if (q && gated) {
    /* per head h: rows [h*2D, h*2D+D) query, [h*2D+D, (h+1)*2D) gate -> [queries | gates] */
    a->w_q = malloc((size_t)(2 * nH * D * H) * sizeof(float));
    if (!a->w_q) {
      rssm_fail(L->err, L->errlen, "%s: out of memory (layer %d)", L->m->dir, l);
      L->rc = RSSM_ERR_IO;
    } else {
      for (int64_t h = 0; h < nH; h++) {
        memcpy(a->w_q + h * D * H, q + (2 * h) * D * H, (size_t)(D * H) * sizeof(float));
        memcpy(a->w_q + (nH + h) * D * H, q + (2 * h + 1) * D * H,
               (size_t)(D * H) * sizeof(float));
      }
    }
    free(q);
  } else {
    a->w_q = q;
  }
  snprintf(f, sizeof f, "%s.k_proj.weight", sub);
  a->w_k = ld(L, f, l, 2, nKV * D, H, 0);
  snprintf(f, sizeof f, "%s.v_proj.weight", sub);
  a->w_v = ld(L, f, l, 2, nKV * D, H, 0);
  snprintf(f, sizeof f, "%s.o_proj.weight", sub);
  a->w_o = ld(L, f, l, 2, H, nH * D, 0);
  if (gated) {
    snprintf(f, sizeof f, "%s.q_norm.weight", sub);
    a->q_norm = ld(L, f, l, 1, D, 0, 0);
    snprintf(f, sizeof f, "%s.k_norm.weight", sub);
    a->k_norm = ld(L, f, l, 1, D, 0, 0);
  }
}

static void load_mamba(loader *L, model_block_w *b) {
  const model_config *c = &L->m->cfg;
  const int64_t H = c->H, Hm = c->m_heads, P = c->m_head_dim, G = c->m_groups, N = c->m_state;
  const int64_t d_inner = Hm * P, conv_dim = d_inner + 2 * G * N, K = c->m_kernel;
  const int l = b->layer;
  mamba2_weights *w = &b->mamba;
  w->w_in = ld(L, "mixer.in_proj.weight", l, 2, d_inner + conv_dim + Hm, H, 0);
  w->conv_w = ld(L, "mixer.conv1d.weight", l, 3, conv_dim, 1, K);
  if (c->m_conv_bias) w->conv_b = ld(L, "mixer.conv1d.bias", l, 1, conv_dim, 0, 0);
  w->A_log = ld(L, "mixer.A_log", l, 1, Hm, 0, 0);
  w->D = ld(L, "mixer.D", l, 1, Hm, 0, 0);
  w->dt_bias = ld(L, "mixer.dt_bias", l, 1, Hm, 0, 0);
  w->norm = ld(L, "mixer.norm.weight", l, 1, d_inner, 0, 0);
  w->w_out = ld(L, "mixer.out_proj.weight", l, 2, H, d_inner, 0);
}

static void load_mlp(loader *L, mlp_weights *w, int layer, const char *sub, int gated,
                     int64_t I) {
  const int64_t H = L->m->cfg.H;
  char f[256];
  w->I = I;
  if (gated) {
    snprintf(f, sizeof f, "%s.gate_proj.weight", sub);
    w->w_gate = ld(L, f, layer, 2, I, H, 0);
  }
  snprintf(f, sizeof f, "%s.up_proj.weight", sub);
  w->w_up = ld(L, f, layer, 2, I, H, 0);
  snprintf(f, sizeof f, "%s.down_proj.weight", sub);
  w->w_down = ld(L, f, layer, 2, H, I, 0);
}

static void load_qmoe(loader *L, model_block_w *b) {
  const model_config *c = &L->m->cfg;
  const int64_t H = c->H, E = c->n_experts, I = c->moe_inter;
  const int l = b->layer;
  moe_weights *w = &b->moe;
  w->Din = H;
  w->router = ld(L, "mlp.gate.weight", l, 2, E, H, 0);
  if (has(L, "mlp.experts.gate_up_proj", l)) {
    /* fused [E][2I][H]: per expert the first I rows are gate, the next I up */
    float *gu = ld(L, "mlp.experts.gate_up_proj", l, 3, E, 2 * I, H);
    if (gu) {
      w->w_gate = malloc((size_t)(E * I * H) * sizeof(float));
      w->w_up = malloc((size_t)(E * I * H) * sizeof(float));
      if (!w->w_gate || !w->w_up) {
        rssm_fail(L->err, L->errlen, "%s: out of memory (layer %d)", L->m->dir, l);
        L->rc = RSSM_ERR_IO;
      } else {
        for (int64_t e = 0; e < E; e++) {
          memcpy(w->w_gate + e * I * H, gu + e * 2 * I * H, (size_t)(I * H) * sizeof(float));
          memcpy(w->w_up + e * I * H, gu + (e * 2 + 1) * I * H, (size_t)(I * H) * sizeof(float));
        }
      }
      free(gu);
    }
    w->w_down = ld(L, "mlp.experts.down_proj", l, 3, E, H, I);
  } else {
    w->w_gate = ld_experts(L, "mlp", l, "gate_proj", E, I, H);
    w->w_up = ld_experts(L, "mlp", l, "up_proj", E, I, H);
    w->w_down = ld_experts(L, "mlp", l, "down_proj", E, H, I);
  }
  if (c->shared_inter > 0) {
    load_mlp(L, &w->shared, l, "mlp.shared_expert", 1, c->shared_inter);
    w->shared_gate = ld(L, "mlp.shared_expert_gate.weight", l, 2, 1, H, 0);
  }
}

static void load_nmoe(loader *L, model_block_w *b) {
  const model_config *c = &L->m->cfg;
  const int64_t H = c->H, E = c->n_experts, I = c->moe_inter;
  const int64_t Din = c->latent > 0 ? c->latent : H;
  const int l = b->layer;
  moe_weights *w = &b->moe;
  w->Din = Din;
  w->router = ld(L, "mixer.gate.weight", l, 2, E, H, 0);
  w->corr_bias = ld(L, "mixer.gate.e_score_correction_bias", l, 1, E, 0, 0);
  if (has(L, "mixer.experts.up_proj", l)) {
    w->w_up = ld(L, "mixer.experts.up_proj", l, 3, E, I, Din);
    w->w_down = ld(L, "mixer.experts.down_proj", l, 3, E, Din, I);
  } else {
    w->w_up = ld_experts(L, "mixer", l, "up_proj", E, I, Din);
    w->w_down = ld_experts(L, "mixer", l, "down_proj", E, Din, I);
  }
  if (c->latent > 0) {
    w->fc1_latent = ld(L, "mixer.fc1_latent_proj.weight", l, 2, Din, H, 0);
    w->fc2_latent = ld(L, "mixer.fc2_latent_proj.weight", l, 2, H, Din, 0);
  }
  if (c->shared_inter > 0) load_mlp(L, &w->shared, l, "mixer.shared_experts", 0, c->shared_inter);
}

/* Sizes that config.json must give for the block kinds present. */
static int check_sizes(const model *m, char *err, size_t errlen) {
  const model_config *c = &m->cfg;
  for (int i = 0; i < c->nblocks; i++) {
    int k = c->blocks[i].kind;
    const char *need = NULL;
    if ((k == BK_SWIGLU || k == BK_RELU2) && c->inter <= 0) need = "intermediate_size > 0";
    if ((k == BK_QMOE || k == BK_NMOE) && (c->n_experts <= 0 || c->moe_inter <= 0))
      need = "num_experts/n_routed_experts and moe_intermediate_size > 0";
    if (!need && (k == BK_QMOE || k == BK_NMOE) && (c->topk <= 0 || c->topk > c->n_experts))
      need = "num_experts_per_tok in [1, number of experts]";
    if (!need && k == BK_NMOE && (c->topk_group > c->n_group || c->n_group > 1024 ||
                         c->topk > c->topk_group * (c->n_experts / c->n_group)))
      need = "topk_group <= n_group <= 1024 and num_experts_per_tok <= topk_group * experts "
             "per group";
    if (!need && (k == BK_QMOE || k == BK_NMOE) && c->topk > 1024) need = "num_experts_per_tok <= 1024";
    if (need) {
      rssm_fail(err, errlen, "%s: layer %d (%s) needs %s", c->path, c->blocks[i].layer,
                block_kind_name((block_kind)k), need);
      return RSSM_ERR_INPUT;
    }
  }
  return RSSM_OK;
}

int model_load(const char *dir, model *m, char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  snprintf(m->dir, sizeof m->dir, "%s", dir);
  int rc = model_config_load(dir, &m->cfg, err, errlen);
  if (rc != RSSM_OK) return rc;
  rc = check_sizes(m, err, errlen);
  if (rc != RSSM_OK) {
    model_config_free(&m->cfg);
    return rc;
  }
  loader L;
  memset(&L, 0, sizeof L);
  L.m = m;
  L.err = err;
  L.errlen = errlen;
  rc = st_open_dir(dir, &L.ar, err, errlen);
  if (rc != RSSM_OK) {
    model_config_free(&m->cfg);
    return rc;
  }
  const model_config *c = &m->cfg;
  /* prefix: whichever naming holds the embedding (HF renames on load, so both occur on disk) */
  static const char *const qwen_prefixes[] = {"model.language_model.", "model.", NULL};
  static const char *const nem_prefixes[] = {"backbone.", "model.", NULL};
  const char *const *pre = c->family == MF_NEMOTRON_H ? nem_prefixes : qwen_prefixes;
  const char *emb_name = NULL;
  char name[512];
  for (; *pre && !emb_name; pre++) {
    const char *cands[] = {"embed_tokens.weight", "embeddings.weight", "embedding.weight"};
    for (int i = 0; i < 3 && !emb_name; i++) {
      snprintf(name, sizeof name, "%s%s", *pre, cands[i]);
      if (st_find(&L.ar, name)) {
        L.prefix = *pre;
        emb_name = cands[i];
      }
    }
  }
  if (!emb_name) {
    rssm_fail(err, errlen, "%s: no embedding tensor (expected %s)", dir,
              c->family == MF_NEMOTRON_H ? "backbone.embeddings.weight or model.embeddings.weight"
                                         : "model.language_model.embed_tokens.weight or "
                                           "model.embed_tokens.weight");
    st_close(&L.ar);
    model_config_free(&m->cfg);
    return RSSM_ERR_INPUT;
  }
  L.rc = RSSM_OK;
  L.used = calloc((size_t)L.ar.ntensors + 1, 1);
  if (!L.used) {
    rssm_fail(err, errlen, "%s: out of memory", dir);
    st_close(&L.ar);
    model_config_free(&m->cfg);
    return RSSM_ERR_IO;
  }
  snprintf(name, sizeof name, "%s%s", L.prefix, emb_name);
  /* vocab_size rows, padding included (only the first V are ever read) */
  int64_t vh[2] = {c->V_rows, c->H};
  m->embed = load_exact(&L, name, 2, vh);
  int64_t h1[1] = {c->H};
  snprintf(name, sizeof name, "%s%s", L.prefix,
           c->family == MF_NEMOTRON_H ? "norm_f.weight" : "norm.weight");
  m->final_norm = load_exact(&L, name, 1, h1);
  if (c->tie_embeddings) {
    m->lm_head = m->embed;
  } else {
    m->lm_head = load_exact(&L, "lm_head.weight", 2, vh);
  }

  m->nblocks = c->nblocks;
  m->blocks = calloc((size_t)(c->nblocks > 0 ? c->nblocks : 1), sizeof *m->blocks);
  if (!m->blocks && L.rc == RSSM_OK) {
    rssm_fail(err, errlen, "%s: out of memory", dir);
    L.rc = RSSM_ERR_IO;
  }
  for (int i = 0; i < c->nblocks && L.rc == RSSM_OK; i++) {
    model_block_w *b = &m->blocks[i];
    b->kind = c->blocks[i].kind;
    b->layer = c->blocks[i].layer;
    b->ssm_index = -1;
    b->attn_index = -1;
    const int l = b->layer;
    switch (b->kind) {
      case BK_GDN:
        b->norm = ld(&L, "input_layernorm.weight", l, 1, c->H, 0, 0);
        load_gdn(&L, b);
        b->ssm_index = m->n_ssm++;
        break;
      case BK_QATTN:
        b->norm = ld(&L, "input_layernorm.weight", l, 1, c->H, 0, 0);
        load_attn(&L, b, "self_attn");
        b->attn_index = m->n_attn++;
        break;
      case BK_SWIGLU:
        b->norm = ld(&L, "post_attention_layernorm.weight", l, 1, c->H, 0, 0);
        load_mlp(&L, &b->mlp, l, "mlp", 1, c->inter);
        break;
      case BK_QMOE:
        b->norm = ld(&L, "post_attention_layernorm.weight", l, 1, c->H, 0, 0);
        load_qmoe(&L, b);
        break;
      case BK_MAMBA2:
        b->norm = ld(&L, "norm.weight", l, 1, c->H, 0, 0);
        load_mamba(&L, b);
        b->ssm_index = m->n_ssm++;
        break;
      case BK_NATTN:
        b->norm = ld(&L, "norm.weight", l, 1, c->H, 0, 0);
        load_attn(&L, b, "mixer");
        b->attn_index = m->n_attn++;
        break;
      case BK_RELU2:
        b->norm = ld(&L, "norm.weight", l, 1, c->H, 0, 0);
        load_mlp(&L, &b->mlp, l, "mixer", 0, c->inter);
        break;
      case BK_NMOE:
        b->norm = ld(&L, "norm.weight", l, 1, c->H, 0, 0);
        load_nmoe(&L, b);
        break;
      default:
        break;
    }
  }
  if (L.rc == RSSM_OK) L.rc = check_unused(&L, m);
  free(L.used);
  st_close(&L.ar);
  if (L.rc != RSSM_OK) {
    model_free(m);
    return L.rc;
  }
  return RSSM_OK;
}

static void free_mlp(mlp_weights *w) {
  free(w->w_gate);
  free(w->w_up);
  free(w->w_down);
}

void model_free(model *m) {
  if (!m) return;
  for (int i = 0; i < m->nblocks && m->blocks; i++) {
    model_block_w *b = &m->blocks[i];
    free(b->norm);
    gdn_weights *g = &b->gdn;
    free(g->w_qkv); free(g->w_z); free(g->w_b); free(g->w_a); free(g->conv_w);
    free(g->dt_bias); free(g->A_log); free(g->norm); free(g->w_out);
    attn_weights *a = &b->attn;
    free(a->w_q); free(a->w_k); free(a->w_v); free(a->w_o); free(a->q_norm); free(a->k_norm);
    mamba2_weights *w = &b->mamba;
    free(w->w_in); free(w->conv_w); free(w->conv_b); free(w->A_log); free(w->D);
    free(w->dt_bias); free(w->norm); free(w->w_out);
    free_mlp(&b->mlp);
    moe_weights *e = &b->moe;
    free(e->router); free(e->corr_bias); free(e->w_gate); free(e->w_up); free(e->w_down);
    free(e->fc1_latent); free(e->fc2_latent); free(e->shared_gate);
    free_mlp(&e->shared);
  }
  free(m->blocks);
  if (m->lm_head != m->embed) free(m->lm_head);
  free(m->embed);
  free(m->final_norm);
  model_config_free(&m->cfg);
  memset(m, 0, sizeof *m);
}

void model_warn_unused(const model *m, FILE *out) {
  if (m->n_unused > 0)
    fprintf(out, "replayssm: warning: %s: %lld checkpoint tensor%s not read by the model (first: "
            "%s)\n", m->dir, (long long)m->n_unused, m->n_unused == 1 ? " is" : "s are",
            m->first_unused);
}
