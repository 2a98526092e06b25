/* Shared helpers of the SSM engine tests: seeded random inputs, a driver that runs one
 * configuration over a token stream (standard steps or spec rounds), and error measures. */
#ifndef RSSM_TESTS_SSM_TESTUTIL_H
#define RSSM_TESTS_SSM_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "src/ssm/ssm_config.h"
#include "src/ssm/ssm_engine.h"

/* A token stream of N tokens for one layer and one sequence. */
typedef struct {
  ssm_dims d;
  int N;
  float *alpha; /* [N][H]     1 - 10^-U(ua, ub), i.i.d. per token and head */
  float *beta;  /* [N][H]     GDN: U(0.05, 0.95); NULL for Mamba-2 */
  float *v;     /* [N][H][dv] U(-1, 1) */
  float *k;     /* [N][G][dk] Mamba-2: U(-1, 1); GDN: L2-normalised */
  float *q;     /* [N][G][dk] Mamba-2: U(-1, 1); GDN: L2-normalised times dk^-1/2 */
} tu_stream;

/* No component is ever exactly zero. */
void tu_stream_make(tu_stream *s, const ssm_dims *d, int N, uint64_t seed, double ua, double ub);
/* The same, with keys concentrated near a subspace: components key_rank..dk-1 of every raw key
 * are scaled by key_leak before normalisation (key_rank = 0: isotropic, as tu_stream_make). */
void tu_stream_make_aniso(tu_stream *s, const ssm_dims *d, int N, uint64_t seed, double ua,
                          double ub, int key_rank, double key_leak);
void tu_stream_free(tu_stream *s);
/* Inputs starting at token t (n = however many the caller uses). */
ssm_inputs tu_at(const tu_stream *s, int t);

/* Parses text or aborts the test program with the parser's message. */
ssm_config tu_config(const char *text);

/* max |a - ref| / max |ref| over n elements (0 when both are zero). */
double tu_rel(const float *a, const float *ref, size_t n);

/* Conventional fp32 through the engine over tokens 0..N-1: o [N][H][dv] and, if S is not NULL,
 * the state after each token, S [N][H][dv][dk]. */
void tu_reference(const tu_stream *s, int N, float *o, float *S);

/* Callbacks of tu_run. pos is the token index of an output; accepted is 0 for spec drafts that
 * the round rejected (their outputs are still the teacher-forced ones, so they can be checked).
 * steps_done is the number of tokens folded into the checkpoint that was just stored. */
typedef struct {
  void (*on_output)(void *ctx, int pos, const float *o /* [H][dv] */, int accepted);
  void (*on_flush)(void *ctx, const ssm_state *st, int steps_done);
  void *ctx;
} tu_hooks;

/* Runs cfg over tokens 0..N-1 of s (spec needs s->N >= N + T - 1). Returns the number of
 * flushes (stores for conventional), or -1 when the engine refuses. */
long tu_run(const ssm_config *cfg, const tu_stream *s, int N, uint64_t seed, const tu_hooks *hk);

#endif
