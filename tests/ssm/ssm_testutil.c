/* Helpers of the SSM engine tests (see ssm_testutil.h). */
#include "tests/ssm/ssm_testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ssm/ssm_accept.h"

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double unif(uint64_t *x) { return (double)(splitmix(x) >> 11) * (1.0 / 9007199254740992.0); }
/* U(-1, 1) without values too close to zero */
static float sym(uint64_t *x) {
  for (;;) {
    double u = 2.0 * unif(x) - 1.0;
    if (fabs(u) > 1e-4) return (float)u;
  }
}

static void *xcalloc(size_t n, size_t size) {
  void *p = calloc(n ? n : 1, size);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    abort();
  }
  return p;
}

static void normalise(float *x, int n, double scale) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
  double f = scale / sqrt(s);
  for (int i = 0; i < n; i++) x[i] = (float)(x[i] * f);
}

void tu_stream_make(tu_stream *s, const ssm_dims *d, int N, uint64_t seed, double ua, double ub) {
  tu_stream_make_aniso(s, d, N, seed, ua, ub, 0, 1.0);
}

void tu_stream_make_aniso(tu_stream *s, const ssm_dims *d, int N, uint64_t seed, double ua,
                          double ub, int key_rank, double key_leak) {
  memset(s, 0, sizeof *s);
  s->d = *d;
  s->N = N;
  const size_t H = (size_t)d->H, dv = (size_t)d->dv, dk = (size_t)d->dk, G = (size_t)d->G;
  uint64_t x = seed * 0x2545F4914F6CDD1Dull + 1;
  s->alpha = xcalloc((size_t)N * H, sizeof(float));
  s->v = xcalloc((size_t)N * H * dv, sizeof(float));
  s->k = xcalloc((size_t)N * G * dk, sizeof(float));
  s->q = xcalloc((size_t)N * G * dk, sizeof(float));
  if (d->kind == SSM_GDN) s->beta = xcalloc((size_t)N * H, sizeof(float));
  for (size_t t = 0; t < (size_t)N; t++) {
    for (size_t h = 0; h < H; h++) {
      double e = ua + (ub - ua) * unif(&x);
      s->alpha[t * H + h] = (float)(1.0 - pow(10.0, -e));
      if (s->beta) s->beta[t * H + h] = (float)(0.05 + 0.9 * unif(&x));
      for (size_t i = 0; i < dv; i++) s->v[(t * H + h) * dv + i] = sym(&x);
    }
    for (size_t g = 0; g < G; g++) {
      float *k = s->k + (t * G + g) * dk, *q = s->q + (t * G + g) * dk;
      for (size_t c = 0; c < dk; c++) {
        k[c] = sym(&x);
        q[c] = sym(&x);
        if (key_rank > 0 && c >= (size_t)key_rank) k[c] = (float)(k[c] * key_leak);
      }
      if (d->kind == SSM_GDN) {
        normalise(k, (int)dk, 1.0);
        normalise(q, (int)dk, 1.0 / sqrt((double)dk));
      }
    }
  }
}

void tu_stream_free(tu_stream *s) {
  free(s->alpha);
  free(s->beta);
  free(s->v);
  free(s->k);
  free(s->q);
  memset(s, 0, sizeof *s);
}

ssm_inputs tu_at(const tu_stream *s, int t) {
  const size_t H = (size_t)s->d.H, hv = H * (size_t)s->d.dv, gk = (size_t)s->d.G * s->d.dk;
  ssm_inputs in;
  in.alpha = s->alpha + (size_t)t * H;
  in.beta = s->beta ? s->beta + (size_t)t * H : NULL;
  in.v = s->v + (size_t)t * hv;
  in.k = s->k + (size_t)t * gk;
  in.q = s->q + (size_t)t * gk;
  return in;
}

ssm_config tu_config(const char *text) {
  ssm_config c;
  char err[256];
  if (ssm_config_parse(text, &c, err, sizeof err) != 0) {
    fprintf(stderr, "bad test configuration '%s': %s\n", text, err);
    abort();
  }
  return c;
}

double tu_rel(const float *a, const float *ref, size_t n) {
  double md = 0.0, mr = 0.0;
  for (size_t i = 0; i < n; i++) {
    double dd = fabs((double)a[i] - (double)ref[i]), r = fabs((double)ref[i]);
    if (!(dd <= md)) md = dd; /* NaN propagates as an infinite error */
    if (r > mr) mr = r;
  }
  if (md != md) return INFINITY;
  return mr > 0.0 ? md / mr : md;
}

static void build_or_die(ssm_state *st, const ssm_config *cfg, const ssm_dims *d, uint64_t seed) {
  ssm_ids ids = {seed, 3, 7};
  char err[256];
  if (ssm_state_build(st, cfg, d, &ids, err, sizeof err) != 0) {
    fprintf(stderr, "ssm_state_build: %s\n", err);
    abort();
  }
}

void tu_reference(const tu_stream *s, int N, float *o, float *S) {
  ssm_config cfg = tu_config("conventional state=fp32");
  ssm_state st;
  build_or_die(&st, &cfg, &s->d, 1);
  const size_t hv = (size_t)s->d.H * s->d.dv, hvk = hv * (size_t)s->d.dk;
  for (int t = 0; t < N; t++) {
    ssm_inputs in = tu_at(s, t);
    if (ssm_step(&st, &in, o + (size_t)t * hv) != 0) abort();
    if (S) memcpy(S + (size_t)t * hvk, st.main.deq, hvk * sizeof(float));
  }
  ssm_state_free(&st);
}

long tu_run(const ssm_config *cfg, const tu_stream *s, int N, uint64_t seed, const tu_hooks *hk) {
  ssm_state st;
  build_or_die(&st, cfg, &s->d, seed);
  const size_t hv = (size_t)s->d.H * s->d.dv;
  long rc = 0;
  if (cfg->strategy != SSM_SPEC) {
    float *o = xcalloc(hv, sizeof(float));
    for (int t = 0; t < N && rc == 0; t++) {
      ssm_inputs in = tu_at(s, t);
      if (ssm_step(&st, &in, o) != 0) rc = -1;
      else {
        if (hk && hk->on_output) hk->on_output(hk->ctx, t, o, 1);
        if (st.flushed && hk && hk->on_flush) hk->on_flush(hk->ctx, &st, t + 1);
      }
    }
    free(o);
  } else {
    const int T = cfg->T;
    if (s->N < N + T - 1) abort();
    float *o = xcalloc((size_t)T * hv, sizeof(float));
    uint32_t round = 0;
    for (int p = 0; p < N && rc == 0; round++) {
      ssm_inputs in = tu_at(s, p);
      if (ssm_verify(&st, &in, o) != 0) {
        rc = -1;
        break;
      }
      /* a flush inside verify folded tokens 0..p-1 */
      if (st.flushed && hk && hk->on_flush) hk->on_flush(hk->ctx, &st, p);
      int a = ssm_accept_draw(cfg, seed, st.ids.sequence, round);
      for (int j = 0; j < T && p + j < N; j++)
        if (hk && hk->on_output) hk->on_output(hk->ctx, p + j, o + (size_t)j * hv, j < a);
      if (ssm_commit(&st, a) != 0) rc = -1;
      p += a;
    }
    free(o);
  }
  if (rc == 0) rc = (long)st.nflush;
  ssm_state_free(&st);
  return rc;
}
