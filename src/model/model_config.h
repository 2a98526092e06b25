/* config.json of a Hugging Face hybrid checkpoint, reduced to what a decode step needs
 * (reference/hf-hybrid-architectures.md, parts A.1 and B.1).
 *
 * Families:
 *   qwen3_5 / qwen3_5_moe (released: keys under text_config, tensors under model.language_model.)
 *   qwen3_5_text / qwen3_5_moe_text (text-only export: top-level keys, tensors under model.)
 *   qwen3_next (fused in_proj_qkvz / in_proj_ba, per-expert keys)
 *   nemotron_h (hybrid_override_pattern or layers_block_type; tensors under backbone. or model.)
 *
 * The model is flattened into a list of residual blocks, each `h += f(norm(h))`: a Qwen layer is
 * two blocks (mixer, then MLP), a Nemotron-H layer is one. */
#ifndef RSSM_MODEL_CONFIG_H
#define RSSM_MODEL_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "src/io/status.h"

typedef enum { MF_QWEN3_5 = 0, MF_QWEN3_NEXT, MF_NEMOTRON_H } model_family;

typedef enum {
  BK_GDN = 0,   /* Gated DeltaNet (Qwen linear_attention) */
  BK_QATTN,     /* Qwen gated attention: q/k (1+w) norm, partial RoPE, sigmoid output gate */
  BK_MAMBA2,    /* Nemotron-H Mamba-2 mixer */
  BK_NATTN,     /* Nemotron-H attention: plain GQA, no RoPE */
  BK_SWIGLU,    /* down(silu(gate u) * up u) */
  BK_RELU2,     /* down(relu(up u)^2) */
  BK_QMOE,      /* Qwen MoE: softmax top-k router, SwiGLU experts, gated shared expert */
  BK_NMOE       /* Nemotron-H MoE: sigmoid router with correction bias, relu2 experts, latent */
} block_kind;

const char *block_kind_name(block_kind k);

typedef struct {
  int kind;        /* block_kind */
  int layer;       /* HF layer index */
} model_block;

typedef struct {
  char path[4096];          /* config.json, for messages */
  char model_type[64];      /* as written at the top level */
  model_family family;
  int text_wrapped;         /* 1: released qwen3_5(_moe) layout (text_config) */

  int64_t H, nlayers;
  /* V: the real vocabulary (logits per position; tokenizer.json's ids, model_real_vocab) and
   * V_rows: the rows of the embedding and lm_head (config.json's vocab_size). V <= V_rows; rows
   * V .. V_rows-1 are padding, never read (SPEC section 5: softmax over the real vocabulary). */
  int64_t V, V_rows;
  int tie_embeddings;
  double eps;
  int norm_plus_one;        /* Qwen: block, final and q/k norms are (1+w) */

  /* GDN (Qwen) */
  int64_t gdn_hk, gdn_hv, gdn_dk, gdn_dv, gdn_kernel;
  /* attention */
  int64_t n_heads, n_kv_heads, head_dim, rotary_dim;
  double rope_theta;
  /* dense MLP */
  int64_t inter;
  /* MoE */
  int64_t n_experts, topk, moe_inter, shared_inter, latent;
  int norm_topk;            /* renormalise the top-k weights */
  double routed_scaling;
  int64_t n_group, topk_group;
  /* Mamba-2 (Nemotron-H) */
  int64_t m_heads, m_head_dim, m_groups, m_state, m_kernel;
  int m_conv_bias;
  double dt_limit_lo, dt_limit_hi; /* time_step_limit: delta clamped to [lo, hi] (docs/model-runtime.md) */

  int nblocks;
  model_block *blocks;      /* [nblocks] */
} model_config;

/* Parse DIR/config.json. Returns RSSM_OK, RSSM_ERR_INPUT (missing/malformed config, unknown
 * model_type, inconsistent sizes) or RSSM_ERR_IO, with a one-line message in err. */
int model_config_load(const char *dir, model_config *c, char *err, size_t errlen);
void model_config_free(model_config *c);

/* The real vocabulary of the checkpoint in dir: with dir/tokenizer.json, one past the largest id
 * of its model.vocab (an object token -> id, or Unigram's list, whose ids are the positions) and
 * added_tokens; without one, rows (no padding). A malformed tokenizer.json, or one with more ids
 * than rows (config.json's vocab_size), is RSSM_ERR_INPUT with one line naming the file and the
 * field (model_vocab.c). */
int model_real_vocab(const char *dir, int64_t rows, int64_t *real, char *err, size_t errlen);

/* Exposed for tests: replace bare Infinity / -Infinity / NaN outside strings (as Python's json
 * writes them) by numbers cJSON can parse (+-1e999 overflow to +-inf; NaN becomes null). Returns
 * a malloc'ed NUL-terminated copy, or NULL when out of memory. */
char *model_json_fix_nonfinite(const char *text, size_t len);

#endif
