/* Synthetic layer inputs for ssm-sim (see sim_inputs.h for the distributions). */
#include "src/sim/sim_inputs.h"

#include <gsl/gsl_randist.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The per-head decays come from their own generator, so they do not depend on the step count. */
#define SIM_DECAY_SEED_SALT 0x9E3779B97F4A7C15ULL

int sim_inputs_build(sim_inputs *s, const sim_input_params *p, int window) {
  memset(s, 0, sizeof *s);
  s->p = *p;
  s->window = window;
  const ssm_dims *d = &p->dims;
  size_t W = (size_t)window, H = (size_t)d->H, G = (size_t)d->G;
  size_t nv = W * H * (size_t)d->dv, nk = W * G * (size_t)d->dk;
  s->rng = gsl_rng_alloc(gsl_rng_mt19937);
  gsl_rng *drng = gsl_rng_alloc(gsl_rng_mt19937);
  s->decay = malloc(H * sizeof(float));
  s->alpha = malloc(W * H * sizeof(float));
  s->beta = malloc(W * H * sizeof(float));
  s->v = malloc(nv * sizeof(float));
  s->k = malloc(nk * sizeof(float));
  s->q = malloc(nk * sizeof(float));
  s->c_alpha = malloc(W * H * sizeof(float));
  s->c_beta = malloc(W * H * sizeof(float));
  s->c_v = malloc(nv * sizeof(float));
  s->c_k = malloc(nk * sizeof(float));
  s->c_q = malloc(nk * sizeof(float));
  if (!s->rng || !drng || !s->decay || !s->alpha || !s->beta || !s->v || !s->k || !s->q ||
      !s->c_alpha || !s->c_beta || !s->c_v || !s->c_k || !s->c_q) {
    if (drng) gsl_rng_free(drng);
    sim_inputs_free(s);
    return -1;
  }
  /* mt19937 takes an unsigned long seed: fold the 64-bit seed so both halves matter */
  gsl_rng_set(s->rng, (unsigned long)(p->seed ^ (p->seed >> 32)));
  uint64_t ds = p->seed ^ SIM_DECAY_SEED_SALT;
  gsl_rng_set(drng, (unsigned long)(ds ^ (ds >> 32)));
  for (size_t h = 0; h < H; h++) {
    double e = p->decay_lo + (p->decay_hi - p->decay_lo) * gsl_rng_uniform(drng);
    s->decay[h] = (float)(1.0 - pow(10.0, -e));
  }
  gsl_rng_free(drng);
  return 0;
}

void sim_inputs_free(sim_inputs *s) {
  if (s->rng) gsl_rng_free(s->rng);
  free(s->decay);
  free(s->alpha);
  free(s->beta);
  free(s->v);
  free(s->k);
  free(s->q);
  free(s->c_alpha);
  free(s->c_beta);
  free(s->c_v);
  free(s->c_k);
  free(s->c_q);
  memset(s, 0, sizeof *s);
}

/* x [n] ~ N(0, 1), then scaled by `scale`, or L2-normalised first when `normalise`. */
static void draw_vector(gsl_rng *r, float *x /* [n] */, int n, int normalise, double scale) {
  double ss = 0.0;
  for (int i = 0; i < n; i++) {
    double g = gsl_ran_gaussian_ziggurat(r, 1.0);
    x[i] = (float)g;
    ss += g * g;
  }
  double f = normalise ? scale / sqrt(ss > 0.0 ? ss : 1.0) : scale;
  for (int i = 0; i < n; i++) x[i] = (float)((double)x[i] * f);
}

static void generate_step(sim_inputs *s) {
  const ssm_dims *d = &s->p.dims;
  int slot = (int)(s->generated % s->window);
  int H = d->H, G = d->G, dv = d->dv, dk = d->dk;
  int gdn = d->kind == SSM_GDN;
  for (int h = 0; h < H; h++) {
    s->alpha[slot * H + h] = s->decay[h];
    s->beta[slot * H + h] =
        gdn ? (float)(s->p.beta_lo + (s->p.beta_hi - s->p.beta_lo) * gsl_rng_uniform(s->rng)) : 0.0f;
    draw_vector(s->rng, s->v + ((size_t)slot * H + h) * dv, dv, 0, 1.0);
  }
  double kq_scale = gdn ? 1.0 : 1.0 / sqrt((double)dk);
  for (int g = 0; g < G; g++) {
    draw_vector(s->rng, s->k + ((size_t)slot * G + g) * dk, dk, gdn, kq_scale);
    draw_vector(s->rng, s->q + ((size_t)slot * G + g) * dk, dk, gdn, gdn ? 1.0 / sqrt((double)dk) : kq_scale);
  }
  s->generated++;
}

int sim_inputs_get(sim_inputs *s, int64_t pos, int n, ssm_inputs *out) {
  const ssm_dims *d = &s->p.dims;
  if (n < 1 || n > s->window || pos < 0 || pos < s->generated - s->window) return -1;
  /* drawing up to pos + n overwrites only steps before pos + n - window <= pos */
  while (s->generated < pos + n) generate_step(s);
  size_t H = (size_t)d->H, G = (size_t)d->G, dv = (size_t)d->dv, dk = (size_t)d->dk;
  for (int t = 0; t < n; t++) {
    size_t slot = (size_t)((pos + t) % s->window);
    memcpy(s->c_alpha + t * H, s->alpha + slot * H, H * sizeof(float));
    memcpy(s->c_beta + t * H, s->beta + slot * H, H * sizeof(float));
    memcpy(s->c_v + t * H * dv, s->v + slot * H * dv, H * dv * sizeof(float));
    memcpy(s->c_k + t * G * dk, s->k + slot * G * dk, G * dk * sizeof(float));
    memcpy(s->c_q + t * G * dk, s->q + slot * G * dk, G * dk * sizeof(float));
  }
  out->alpha = s->c_alpha;
  out->beta = d->kind == SSM_GDN ? s->c_beta : NULL;
  out->v = s->c_v;
  out->k = s->c_k;
  out->q = s->c_q;
  return 0;
}
