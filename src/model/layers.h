/* The block kinds of the CPU forward (internal to src/model). Each takes the normed input of n
 * tokens and writes the block output of those tokens (added to the residual by forward.c):
 *   u: [n][H] in, y: [n][H] out, work: scratch of at least *_work_floats(m, n) floats.
 * Token t sits at position s->pos + t. */
#ifndef RSSM_MODEL_LAYERS_H
#define RSSM_MODEL_LAYERS_H

#include "src/model/model.h"

/* Several states of one model advanced through one block together (model_forward_many): every
 * state s[j] holds its normed input in s[j]->u ([n][H]), gets the block output in s[j]->y
 * ([n][H]) and uses s[j]->work as scratch (at least *_work_floats(m, n) floats). The linear
 * layers run row-outer over all ns * n token vectors (matvec_many: per (row, vector) the same
 * dot_f32 as a single-state forward, so each state's result is bit-identical to running it
 * alone); the per-state work (conv, norms, SSM engine, attention over its own KV cache) runs
 * state by state. xp and yp are scratch lists of at least ns * n pointers: entry j * n + t is
 * (state j, token t). */
typedef struct {
  model_state *const *s; /* [ns], all of the same model */
  int ns, n;
  const float **xp;      /* [ns * n] */
  float **yp;            /* [ns * n] */
} layer_batch;

int64_t gdn_work_floats(const model *m, int n);
/* Returns 0, or -1 with *failed = the index of the state whose SSM engine refused the step. */
int gdn_forward(layer_batch *lb, int bi /* block index */, int *failed);

int64_t mamba2_work_floats(const model *m, int n);
int mamba2_forward(layer_batch *lb, int bi, int *failed);

int64_t attn_work_floats(const model *m, int n, int64_t max_ctx);
void attn_forward(layer_batch *lb, int bi);

int64_t mlp_work_floats(const model *m, int n);
void mlp_forward(layer_batch *lb, int bi);
/* MoE: routing differs per state and token, so it runs state by state (u, y, work as above). */
void moe_forward(const model *m, const model_block_w *b, int n, const float *u /* [n][H] */,
                 float *y /* [n][H] */, float *work);

/* Causal depthwise conv over a window of committed inputs and this round's: win holds K-1+n rows
 * of C channels (oldest first; the caller has written this round's inputs at rows K-1..K-2+n).
 * out[t][c] = silu(sum_k w[c][k] * win[t+k][c] + bias[c]) for t < n. */
void conv_silu(const float *win /* [K-1+n][C] */, const float *w /* [C][K] */,
               const float *bias /* [C] or NULL */, int64_t C, int64_t K, int n,
               float *out /* [n][C] */);

#endif
