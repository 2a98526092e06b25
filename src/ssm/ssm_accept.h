/* The seeded acceptance model of spec rounds (SPEC section 2): how many of a round's T drafts
 * are accepted. One draw per (sequence, round), shared by every layer of the model, so the
 * driver calls it once per round and passes a to ssm_commit of each layer. */
#ifndef RSSM_SSM_ACCEPT_H
#define RSSM_SSM_ACCEPT_H

#include <stdint.h>

#include "src/ssm/ssm_config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The Philox stream nibble of acceptance draws. Counter of draw d (d = 0, 1, ...) of round r of
 * sequence s, key = the run's seed (low word, high word):
 *   { d >> 2, r, s, SSM_ACCEPT_STREAM },  word (d & 3) of the output.
 * This is the stochastic-rounding counter shape of quant/quant.h for "layer 0, head 0, sequence
 * s, event r, element d" on stream 4, which no SR stream uses (QSR_STREAM_* < 4), so acceptance
 * bits never coincide with rounding bits. */
#define SSM_ACCEPT_STREAM 4u

/* a in [1, T] for round `round` (0-based, counted per sequence) of sequence `sequence`:
 *   fixed:A  -> A;
 *   uniform  -> 1 + floor(b * T / 2^32), b the 32 bits of draw 0;
 *   geom:P   -> a = 1; while a < T: u = (bits of draw a-1 >> 8) * 2^-24; if u < P then a++ else
 *               stop (P = 1 always accepts all T).
 * Returns 0 when c is not a spec configuration. */
int ssm_accept_draw(const ssm_config *c, uint64_t seed, uint32_t sequence, uint32_t round);

#ifdef __cplusplus
}
#endif
#endif
