/* The block kinds of the CPU forward (internal to src/model). Each takes the normed input of n
 * tokens and writes the block output of those tokens (added to the residual by forward.c):
 *   u: [n][H] in, y: [n][H] out, work: scratch of at least *_work_floats(m, n) floats.
 * Token t sits at position s->pos + t. */
#ifndef RSSM_MODEL_LAYERS_H
#define RSSM_MODEL_LAYERS_H

#include "src/model/model.h"

int64_t gdn_work_floats(const model *m, int n);
int gdn_forward(model_state *s, const model_block_w *b, block_state *bs, int n,
                const float *u /* [n][H] */, float *y /* [n][H] */, float *work);

int64_t mamba2_work_floats(const model *m, int n);
int mamba2_forward(model_state *s, const model_block_w *b, block_state *bs, int n,
                   const float *u /* [n][H] */, float *y /* [n][H] */, float *work);

int64_t attn_work_floats(const model *m, int n, int64_t max_ctx);
void attn_forward(model_state *s, const model_block_w *b, block_state *bs, int n,
                  const float *u /* [n][H] */, float *y /* [n][H] */, float *work);

int64_t mlp_work_floats(const model *m, int n);
void mlp_forward(const model *m, const model_block_w *b, int n, const float *u /* [n][H] */,
                 float *y /* [n][H] */, float *work);
void moe_forward(const model *m, const model_block_w *b, int n, const float *u /* [n][H] */,
                 float *y /* [n][H] */, float *work);

/* Causal depthwise conv over a window of committed inputs and this round's: win holds K-1+n rows
 * of C channels (oldest first; the caller has written this round's inputs at rows K-1..K-2+n).
 * out[t][c] = silu(sum_k w[c][k] * win[t+k][c] + bias[c]) for t < n. */
void conv_silu(const float *win /* [K-1+n][C] */, const float *w /* [C][K] */,
               const float *bias /* [C] or NULL */, int64_t C, int64_t K, int n,
               float *out /* [n][C] */);

#endif
