/* The toy backend of the decoder interface (decoder.h): a tiny deterministic hybrid built in C
 * from a seed, so that the driver and its tests run without model files (docs/driver.md).
 *
 *   x_0 = E[token]                                   byte vocabulary, V = 256, width D = 64
 *   per SSM layer l (two): u = rmsnorm(x); inputs from u (below); o = the state engine's S q
 *                          (plus D_h x for Mamba-2); x += W_o rmsnorm_head(o)
 *   logits = gain * W_r rmsnorm(x) + b
 * GDN layers: H = 4 value heads (dv = 32), G = 2 key heads (dk = 32); q, k L2-normalised (q times
 * dk^-1/2), alpha = sigmoid(w_a.u + c_h) with c_h set for alpha ~ 1 - 10^-U(1,2.5), beta =
 * sigmoid(w_b.u). Mamba-2 layers: H = 4 heads of P = 32, G = 1 group of N = 32; dt = softplus,
 * alpha = exp(dt A_h), v = dt x. The state is read through a per-head RMS norm, so the output
 * depends on the state's direction, not its scale, and every relative state error reaches the
 * logits; the gain (4) keeps the distributions far from uniform. */
#ifndef RSSM_DECODE_TOY_MODEL_H
#define RSSM_DECODE_TOY_MODEL_H

#include <stddef.h>

#include "src/decode/decoder.h"

/* name: "gdn", "mamba2" or "mamba2-big" (input projections x 1e5: states near 1e6, beyond fp16's
 * range, so that tests can make a configuration go non-finite), optionally followed by ":SEED".
 * Returns RSSM_OK or RSSM_ERR_INPUT. */
int toy_model_open(const char *name, rssm_model **out, char *err, size_t errlen);

#endif
