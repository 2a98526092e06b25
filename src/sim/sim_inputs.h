/* Synthetic layer inputs for `replayssm ssm-sim`: a reproducible stream of per-step SSM inputs.
 *
 * Each head h has a fixed decay alpha_h = 1 - 10^-U(a, b), drawn once from the seed, so a head's
 * timescale 1/(1 - alpha_h) is known and the Appendix C.6 theory applies per head. Per step:
 *   v[h][dv] ~ N(0, 1); beta[h] ~ U(beta_lo, beta_hi) (GDN only);
 *   Mamba-2: k, q [g][dk] ~ N(0, 1/dk) (B and C of a normalised model);
 *   GDN:     k, q [g][dk] Gaussian directions, L2-normalised, q then scaled by dk^-1/2.
 * Steps are drawn in order from one GSL generator (mt19937), so every configuration that reads
 * the stream from the start sees the same inputs. A window keeps the next few steps so that a
 * spec round can read T steps ahead of the reference. */
#ifndef RSSM_SIM_INPUTS_H
#define RSSM_SIM_INPUTS_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

#include "src/ssm/ssm_engine.h"

typedef struct {
  ssm_dims dims;
  double decay_lo, decay_hi; /* alpha_h = 1 - 10^-U(decay_lo, decay_hi) */
  double beta_lo, beta_hi;   /* GDN write strength range */
  uint64_t seed;
} sim_input_params;

typedef struct {
  sim_input_params p;
  gsl_rng *rng;
  float *decay;          /* [H] alpha_h */
  int window;            /* steps held: [generated - window, generated) */
  int64_t generated;     /* steps drawn so far */
  /* ring of `window` steps, position p in slot p % window */
  float *alpha;          /* [window][H] */
  float *beta;           /* [window][H] */
  float *v;              /* [window][H][dv] */
  float *k;              /* [window][G][dk] */
  float *q;              /* [window][G][dk] */
  /* contiguous copies handed to the engine */
  float *c_alpha, *c_beta, *c_v, *c_k, *c_q; /* [window][...] as above */
} sim_inputs;

/* window >= the largest number of steps read at once (T of a spec configuration, or 1).
 * Returns 0 or -1 (out of memory). */
int sim_inputs_build(sim_inputs *s, const sim_input_params *p, int window);
void sim_inputs_free(sim_inputs *s);

/* Inputs of the n consecutive steps [pos, pos + n), token-major and contiguous, valid until the
 * next call. Steps are generated on demand; pos must not be below (generated - window), i.e. a
 * caller reads forward with at most `window` steps of look-back. Returns 0, or -1 if that rule is
 * broken or n > window. */
int sim_inputs_get(sim_inputs *s, int64_t pos, int n, ssm_inputs *out);

#endif
