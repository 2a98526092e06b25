/* Tiny random checkpoints of each family, and an independent straightforward reference forward
 * (double precision, Hugging Face layouts and equations read directly from the tensors, HF's
 * [Hv][dk][dv] GDN state, no shared code with src/model or src/ssm) to check the runtime. */
#ifndef RSSM_TESTS_MODEL_TINY_MODELS_H
#define RSSM_TESTS_MODEL_TINY_MODELS_H

#include <stddef.h>
#include <stdint.h>

#include "tests/model/model_test_util.h"

typedef enum {
  TINY_QWEN35_TEXT = 0, /* qwen3_5_text, model. prefix, dense SwiGLU, tied embeddings */
  TINY_QWEN35_MOE,      /* qwen3_5_moe wrapped (text_config), model.language_model., fused experts */
  TINY_QWEN3_NEXT,      /* qwen3_next: interleaved qkvz/ba, per-expert keys, mlp_only_layers */
  TINY_NEMOTRON_H       /* nemotron_h: M * M - E, latent MoE with groups, Infinity in config */
} tiny_kind;

/* Fill l (seeded) and write config.json text into cfg. */
void tiny_build(tiny_kind kind, tt_list *l, char *cfg, size_t cap);
int64_t tiny_vocab(tiny_kind kind);

/* The Nemotron-H model's time_step_limit (default [0, inf], written as [0.0, Infinity]): what
 * tiny_build writes into config.json and the clamp tiny_reference applies to dt at position 0
 * (the contract), or at every position when every_step is 1 (the contract it replaced; tests
 * show the two apart). */
void tiny_set_dt_limit(double lo, double hi, int every_step);

/* Write DIR/config.json and DIR/model.safetensors. Returns 0 or -1. */
int tiny_write(const char *dir, const tt_list *l, const char *cfg);

/* Reference logits [n][V] of a token sequence decoded one at a time. */
void tiny_reference(tiny_kind kind, const tt_list *l, const int32_t *tok, int n,
                    double *logits /* [n][V] */);

#endif
