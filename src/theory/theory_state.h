/* Realistic state matrices for `replayssm theory` (theory.h): each matrix's rows are a sum of
 * decaying random outer products (a low-rank core, as a recurrent state accumulates v k^T terms),
 * each row scaled to unit mean square, times a per-row scale spread over three decades
 * (10^U(-3, 0)), so that every format's scales see the spread of magnitudes a real state has.
 * The row scales are drawn once; the regime decides how the field behind them moves. */
#ifndef RSSM_THEORY_THEORY_STATE_H
#define RSSM_THEORY_THEORY_STATE_H

#include <gsl/gsl_rng.h>
#include <stdint.h>

#include "src/theory/theory.h"

typedef struct {
  gsl_rng *rng;
  th_regime regime;
  int nmat, dv, dk;
  double rho;
  int64_t n;          /* nmat * dv * dk */
  double *z;          /* [n] the field behind the state, rows of unit mean square */
  double *w;          /* [n] scratch: a fresh field */
  double *rowscale;   /* [nmat * dv], fixed over time */
  double *vec;        /* scratch: dv + dk */
  float *S;           /* [n] the state handed to the quantiser */
} th_state;

/* Returns 0, or -1 when memory runs out. */
int th_state_init(th_state *s, th_regime regime, int nmat, int dv, int dk, double rho,
                  uint64_t seed);
/* Advances to step t (t = 0 draws the initial state) and refreshes s->S. */
void th_state_next(th_state *s, int64_t t);
void th_state_free(th_state *s);

#endif
