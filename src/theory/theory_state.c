/* State generator of `replayssm theory` (theory_state.h). */
#include "src/theory/theory_state.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { RANK = 8 };          /* outer products per matrix */
#define DECAY 0.8           /* weight of the j-th outer product: DECAY^j */
#define SCALE_DECADES 3.0   /* row scales 10^U(-3, 0) */

int th_state_init(th_state *s, th_regime regime, int nmat, int dv, int dk, double rho,
                  uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->regime = regime;
  s->nmat = nmat;
  s->dv = dv;
  s->dk = dk;
  s->rho = rho;
  s->n = (int64_t)nmat * dv * dk;
  s->rng = gsl_rng_alloc(gsl_rng_mt19937);
  s->z = malloc((size_t)s->n * sizeof *s->z);
  s->w = malloc((size_t)s->n * sizeof *s->w);
  s->rowscale = malloc((size_t)nmat * (size_t)dv * sizeof *s->rowscale);
  s->vec = malloc((size_t)(dv + dk) * sizeof *s->vec);
  s->S = malloc((size_t)s->n * sizeof *s->S);
  if (!s->rng || !s->z || !s->w || !s->rowscale || !s->vec || !s->S) {
    th_state_free(s);
    return -1;
  }
  /* each regime its own stream, so that adding a regime never changes another's numbers */
  uint64_t k = seed * 0x9E3779B97F4A7C15ull + (uint64_t)regime * 0xD1B54A32D192ED03ull + 1u;
  gsl_rng_set(s->rng, (unsigned long)(k ^ (k >> 29)));
  return 0;
}

void th_state_free(th_state *s) {
  if (s->rng) gsl_rng_free(s->rng);
  free(s->z);
  free(s->w);
  free(s->rowscale);
  free(s->vec);
  free(s->S);
  memset(s, 0, sizeof *s);
}

/* A fresh low-rank field into w: sum_j DECAY^j v_j k_j^T, each row scaled to unit mean square. */
static void fresh_field(th_state *s, double *w) {
  int64_t mat = (int64_t)s->dv * s->dk;
  for (int m = 0; m < s->nmat; m++) {
    double *wm = w + m * mat;
    memset(wm, 0, (size_t)mat * sizeof *wm);
    for (int j = 0; j < RANK; j++) {
      double g = pow(DECAY, (double)j);
      double *v = s->vec, *k = s->vec + s->dv;
      for (int r = 0; r < s->dv; r++) v[r] = gsl_ran_gaussian_ziggurat(s->rng, 1.0) * g;
      for (int c = 0; c < s->dk; c++) k[c] = gsl_ran_gaussian_ziggurat(s->rng, 1.0);
      for (int r = 0; r < s->dv; r++)
        for (int c = 0; c < s->dk; c++) wm[(int64_t)r * s->dk + c] += v[r] * k[c];
    }
    /* Each row to unit mean square: a low-rank field's row energies fluctuate by tens of percent
     * from draw to draw (chi-square of a few terms), which would make the error variance of any
     * one step a noisy sample; a real state's rows keep their size from step to step. */
    for (int r = 0; r < s->dv; r++) {
      double *row = wm + (int64_t)r * s->dk, ss = 0.0;
      for (int c = 0; c < s->dk; c++) ss += row[c] * row[c];
      double f = ss > 0.0 ? sqrt((double)s->dk / ss) : 0.0;
      for (int c = 0; c < s->dk; c++) row[c] *= f;
    }
  }
}

static void fresh_rowscales(th_state *s) {
  for (int i = 0; i < s->nmat * s->dv; i++)
    s->rowscale[i] = pow(10.0, -SCALE_DECADES * gsl_rng_uniform(s->rng));
}

void th_state_next(th_state *s, int64_t t) {
  if (t == 0) {
    /* a row keeps its magnitude over time, as a real state's rows do */
    fresh_rowscales(s);
    fresh_field(s, s->z);
  } else if (s->regime == TH_IID || s->regime == TH_CLOSED) {
    fresh_field(s, s->z); /* closed: z is the new input, the recurrence lives in the caller */
  } else if (s->regime == TH_AR1) {
    fresh_field(s, s->w);
    double c = sqrt(1.0 - s->rho * s->rho);
    for (int64_t i = 0; i < s->n; i++) s->z[i] = s->rho * s->z[i] + c * s->w[i];
  } else {
    return; /* fixed: S stays as it is */
  }
  for (int64_t i = 0; i < s->n; i++) s->S[i] = (float)(s->rowscale[i / s->dk] * s->z[i]);
}
