/* A hybrid model held in fp32 for CPU decoding (docs/model-runtime.md).
 *
 * Lifecycle: model_load / model_free (weights), model_state_build / model_state_free (per
 * sequence: conv windows, KV caches, one SSM engine state per SSM layer).
 * Decoding: model_forward(n tokens) then model_commit(a): a conventional or replay configuration
 * runs n = 1 and commits 1; a spec configuration runs its T drafts at once (ssm_verify) and
 * commits the accepted a (rejected K/V and conv inputs are simply overwritten later).
 *
 * Weights are converted to fp32 at load and rearranged only where that removes a layout
 * difference between families, so that one code path serves all of them:
 *  - Qwen3-Next's interleaved in_proj_qkvz / in_proj_ba become Qwen3.5's [q | k | v], z, b, a;
 *  - Qwen's gated q_proj (per head: query D rows, then gate D rows) becomes [queries | gates];
 *  - fused or per-expert MoE tensors become one [E][...] array.
 * The SSM states are the engine's ([head][dv][dk], SPEC section 1); they start at zero, as in
 * Hugging Face, so no Hugging Face state layout is ever read. */
#ifndef RSSM_MODEL_MODEL_H
#define RSSM_MODEL_MODEL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "src/io/status.h"
#include "src/model/model_config.h"
#include "src/ssm/ssm_engine.h"

typedef struct {
  float *w_qkv;    /* [2*Hk*dk + Hv*dv][H], rows [q (Hk x dk) | k (Hk x dk) | v (Hv x dv)] */
  float *w_z;      /* [Hv*dv][H] */
  float *w_b;      /* [Hv][H] */
  float *w_a;      /* [Hv][H] */
  float *conv_w;   /* [conv_dim][K], column K-1 multiplies the current token */
  float *dt_bias;  /* [Hv] */
  float *A_log;    /* [Hv] */
  float *norm;     /* [dv], plain w */
  float *w_out;    /* [H][Hv*dv] */
} gdn_weights;

typedef struct {
  float *w_q;      /* [nH*D][H] queries; Qwen: followed by the gates, [2*nH*D][H] in all */
  float *w_k;      /* [nKV*D][H] */
  float *w_v;      /* [nKV*D][H] */
  float *w_o;      /* [H][nH*D] */
  float *q_norm;   /* [D] (1+w), Qwen only; NULL otherwise */
  float *k_norm;   /* [D] (1+w), Qwen only; NULL otherwise */
} attn_weights;

typedef struct {
  float *w_in;     /* [d_inner + conv_dim + Hm][H]: rows [z | xBC | dt] */
  float *conv_w;   /* [conv_dim][K] */
  float *conv_b;   /* [conv_dim] or NULL */
  float *A_log;    /* [Hm] */
  float *D;        /* [Hm] */
  float *dt_bias;  /* [Hm] */
  float *norm;     /* [d_inner], plain w */
  float *w_out;    /* [H][d_inner] */
} mamba2_weights;

typedef struct {
  float *w_gate;   /* [I][H], NULL for relu2 */
  float *w_up;     /* [I][H] */
  float *w_down;   /* [H][I] */
  int64_t I;
} mlp_weights;

typedef struct {
  float *router;      /* [E][H] */
  float *corr_bias;   /* [E] Nemotron-H only; NULL otherwise */
  float *w_gate;      /* [E][I][Din] Qwen only (first half of gate_up_proj); NULL otherwise */
  float *w_up;        /* [E][I][Din] */
  float *w_down;      /* [E][Din][I] */
  float *fc1_latent;  /* [latent][H] or NULL */
  float *fc2_latent;  /* [H][latent] or NULL */
  mlp_weights shared; /* shared expert; I = 0 when absent */
  float *shared_gate; /* [H] Qwen: sigmoid(shared_gate . u) scales the shared expert; or NULL */
  int64_t Din;        /* latent size, or H */
} moe_weights;

typedef struct {
  int kind;           /* block_kind */
  int layer;
  float *norm;        /* [H] pre-norm of this block */
  gdn_weights gdn;
  attn_weights attn;
  mamba2_weights mamba;
  mlp_weights mlp;
  moe_weights moe;
  int ssm_index;      /* index among SSM blocks (engine layer id), -1 otherwise */
  int attn_index;     /* index among attention blocks, -1 otherwise */
} model_block_w;

typedef struct {
  model_config cfg;
  char dir[4096];
  float *embed;       /* [V_rows][H]: rows V .. V_rows-1 are padding, never read */
  float *final_norm;  /* [H] */
  float *lm_head;     /* [V_rows][H]; == embed when tied; only rows < V make logits */
  int nblocks;
  model_block_w *blocks; /* [nblocks] */
  int n_ssm, n_attn;
  int64_t n_params;   /* floats loaded */
  int64_t n_unused;   /* checkpoint tensors the model does not read (a vision tower, MTP heads) */
  char first_unused[256]; /* the first of them by name, "" if none */
} model;

/* Load config.json and the safetensors weights of a Hugging Face model directory. Every tensor
 * the config implies must exist with the derived shape; errors name the tensor, the expected and
 * the found shape. A tensor of a layer beyond the config's layers is an error (config and
 * checkpoint disagree on the architecture, e.g. a layer list of the wrong length); other unread
 * tensors are counted in n_unused (real checkpoints carry vision towers and MTP heads). Returns RSSM_OK, RSSM_ERR_INPUT or RSSM_ERR_IO with one line in err. */
int model_load(const char *dir, model *m, char *err, size_t errlen);
/* One warning line on out when the checkpoint holds tensors the model does not read. */
void model_warn_unused(const model *m, FILE *out);
void model_free(model *m);

/* Threads for the large matrix-vector products (default 2). Results do not depend on it. */
void model_set_threads(int n);

/* Per-block decode state of one sequence. */
typedef struct {
  float *conv_win;    /* [K-1+tmax][conv_dim]: committed inputs (K-1 rows) then this round's */
  ssm_state eng;      /* SSM blocks */
  int eng_built;
  float *kcache;      /* [max_ctx][nKV][D] attention blocks */
  float *vcache;      /* [max_ctx][nKV][D] */
} block_state;

typedef struct {
  const model *m;
  ssm_config cfg;
  int tmax;           /* tokens per forward: 1, or T for spec */
  int64_t max_ctx;    /* positions the KV caches hold */
  int64_t pos;        /* committed tokens */
  block_state *bs;    /* [nblocks] */
  /* scratch, sized for tmax tokens */
  float *h;           /* [tmax][H] residual stream */
  float *u;           /* [tmax][H] normed block input */
  float *y;           /* [tmax][H] block output */
  float *work;        /* [work_len] per-block scratch */
  int64_t work_len;
} model_state;

/* cfg: the SSM strategy for every SSM layer (SPEC section 6); seed and sequence feed the engine's
 * stochastic rounding. max_ctx: the most positions this sequence will reach (KV capacity). */
int model_state_build(model_state *s, const model *m, const ssm_config *cfg, uint64_t seed,
                      uint32_t sequence, int64_t max_ctx, char *err, size_t errlen);
void model_state_free(model_state *s);

/* Run n tokens (1 <= n <= tmax; spec requires n == T) at positions pos..pos+n-1 and write their
 * logits [n][V]. Returns RSSM_OK, or RSSM_ERR_INPUT with a message (token out of range, context
 * full, wrong n). */
int model_forward(model_state *s, const int64_t *tokens /* [n] */, int n,
                  float *logits /* [n][V] */, char *err, size_t errlen);
/* Run n tokens in each of ns states of the same model together (tokens [ns][n]; logits[j] gets
 * state j's [n][V]). Each state's logits and new state are bit-identical to model_forward on it
 * alone: only the loop order differs (each weight row meets every state's vectors while it is in
 * L1; the per-state work, SSM engines included, runs state by state). The states may have
 * different configurations but must be distinct and share n (1 outside spec). On an error,
 * *failed (when not NULL) is the index of the state concerned; nothing has changed when the
 * error is RSSM_ERR_INPUT, while after an engine failure (RSSM_ERR_IO) the states are unusable. */
int model_forward_many(model_state *const *s, int ns, const int64_t *tokens /* [ns][n] */, int n,
                       float *const *logits /* [ns] -> [n][V] */, int *failed, char *err,
                       size_t errlen);
/* Keep the first a tokens of the last forward (a = n outside spec). */
int model_commit(model_state *s, int a);

/* Resume (model_snapshot.c): between a commit and the next forward, the state apart from the SSM
 * engines is pos, the committed conv windows and K/V rows 0..pos-1. model_state_bytes is the
 * exact size of model_state_save's output at this moment; model_state_load accepts only what a
 * save from a state built with the same model and parameters wrote (RSSM_ERR_INPUT otherwise).
 * The engines are saved by the caller through model_state_ssm (src/ssm/ssm_snapshot.h). */
int64_t model_state_bytes(const model_state *s);
void model_state_save(const model_state *s, unsigned char *buf /* [model_state_bytes] */);
int model_state_load(model_state *s, const unsigned char *buf /* [len] */, int64_t len,
                     char *err, size_t errlen);
int model_state_ssm_count(const model_state *s);
/* The engine state of the i-th SSM block (0 <= i < model_state_ssm_count), or NULL. */
ssm_state *model_state_ssm(model_state *s, int i);

#endif
