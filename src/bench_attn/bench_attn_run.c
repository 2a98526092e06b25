/* The timing run of `bench attention` (bench_attn.h; method in docs/bench-attention.md).
 *
 * Per (shape, rows R): the split count of variants 2-4 (--splits or attn_lab_splits for R rows at
 * the largest position; variant 1, the shipped decode, always at the runtime's own count
 * attn_lab_splits_shipped), then every variant checked (bench_attn_check.h; a failing or refusing
 * variant is not timed), then one allocation of K and V for R rows up to the largest position,
 * filled on the device with uniform(-1, 1) (never 0), and per position P (every row at pos = P - 1)
 * each variant: warm-up launches, then reps launches each preceded by a read of 2 x L2 bytes
 * (outside the timed interval: K and V never start in L2, as in a model step where the other
 * layers ran in between; a read, not a memset, so that no dirty lines are left whose write-back
 * would fall inside the timed interval), timed with CUDA events; the median is reported.
 *
 * Byte model per step: K and V of every row up to P, 2 R P nKV D 4, plus q and out (and the
 * gates when gated), R nH D 4 each. The partial sums the split kernels write and the combine
 * reads are not counted: they are the kernels' overhead, which the percent of copy shows. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/bench_attn/bench_attn.h"
#include "src/bench_attn/bench_attn_check.h"
#include "src/io/cli_opts.h"
#include "src/model_cuda/mc_bandwidth.h"

#define CMD "bench attention"

typedef struct {
  const char *shape;
  int R, nsplit, variant;
  int64_t P;
  double us, bytes, gbps, pct;
  int best; /* the fastest variant at this (shape, R, P) */
} ba_point;

typedef struct {
  ba_point *p;
  int n, cap;
} ba_points;

static int ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 1;
  cli_error(CMD, "CUDA error in %s: %s", what, cudaGetErrorString(e));
  return 0;
}

/* The next point (ba_run sizes the list for every point of the options); NULL when full. */
static ba_point *add_point(ba_points *ps) {
  if (ps->n == ps->cap) return NULL;
  ba_point *x = &ps->p[ps->n++];
  memset(x, 0, sizeof *x);
  return x;
}

/* The device buffers of one (shape, R). */
typedef struct {
  float *q, *kc, *vc, *gate, *scratch, *out; /* [R][nH][D], [R][Pmax][nKV][D] x 2, [R][2 nH D], ..., [R][nH][D] */
  int *pos;                                  /* [R] */
  void *flush;                               /* [flush_bytes] zeros, then one float: the read's sink */
  size_t flush_bytes;
  cudaEvent_t e0, e1;
} ba_bufs;

static void free_bufs(ba_bufs *b) {
  cudaFree(b->q), cudaFree(b->kc), cudaFree(b->vc), cudaFree(b->gate), cudaFree(b->scratch);
  cudaFree(b->out), cudaFree(b->pos), cudaFree(b->flush);
  if (b->e0) cudaEventDestroy(b->e0);
  if (b->e1) cudaEventDestroy(b->e1);
  memset(b, 0, sizeof *b);
}

/* Allocates and fills; 0, 1 (a CUDA error, printed) or 3 (does not fit: the caller skips). */
static int alloc_bufs(ba_bufs *b, const ba_shape *s, int R, int64_t Pmax, size_t scratch_floats) {
  memset(b, 0, sizeof *b);
  const size_t qd = (size_t)s->nH * s->D, cache = (size_t)R * (size_t)Pmax * s->nKV * s->D;
  int dev = 0, l2 = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
  b->flush_bytes = (size_t)(l2 > 0 ? l2 : 64 << 20) * 2;
  const double need = 4.0 * (2.0 * cache + 4.0 * R * qd + scratch_floats) + b->flush_bytes;
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && need > 0.95 * (double)fr) {
    printf("%-8s R=%-4d skipped: needs %.1f GiB, %.1f GiB free\n", s->key, R, need / 1073741824.0,
           (double)fr / 1073741824.0);
    return 3;
  }
  if (!ok(cudaMalloc((void **)&b->q, R * qd * 4), "allocation") ||
      !ok(cudaMalloc((void **)&b->kc, cache * 4), "allocation") ||
      !ok(cudaMalloc((void **)&b->vc, cache * 4), "allocation") ||
      !ok(cudaMalloc((void **)&b->gate, 2 * R * qd * 4), "allocation") ||
      !ok(cudaMalloc((void **)&b->scratch, scratch_floats * 4), "allocation") ||
      !ok(cudaMalloc((void **)&b->out, R * qd * 4), "allocation") ||
      !ok(cudaMalloc((void **)&b->pos, (size_t)R * sizeof(int)), "allocation") ||
      !ok(cudaMalloc(&b->flush, b->flush_bytes + 16), "allocation") ||
      !ok(cudaMemset(b->flush, 0, b->flush_bytes + 16), "allocation") || !ok(cudaEventCreate(&b->e0), "event") ||
      !ok(cudaEventCreate(&b->e1), "event"))
    return 1;
  if (mc_fill_uniform(b->q, R * qd, 11, -1.0f, 1.0f, NULL) || mc_fill_uniform(b->kc, cache, 12, -1.0f, 1.0f, NULL) ||
      mc_fill_uniform(b->vc, cache, 13, -1.0f, 1.0f, NULL) || mc_fill_uniform(b->gate, 2 * R * qd, 14, -2.0f, 2.0f, NULL) ||
      !ok(cudaDeviceSynchronize(), "fill"))
    return 1;
  return 0;
}

/* What time_variant launches: one decode of `variant` at the uploaded positions. */
typedef struct {
  ba_bufs *b;
  const ba_shape *s;
  int R, nsplit, variant;
  int64_t Pmax;
} ba_timed;

static int timed_decode(void *ctx) {
  const ba_timed *t = ctx;
  const ba_bufs *b = t->b;
  const int64_t ld = 2 * (int64_t)t->s->nH * t->s->D;
  return attn_lab_decode(t->variant, b->q, b->kc, b->vc, b->pos, NULL, t->Pmax,
                         t->s->gated ? b->gate : NULL, ld, b->scratch, b->out, t->R, t->s->nH,
                         t->s->nKV, t->s->D, t->nsplit, NULL);
}

/* Median microseconds of `variant` at the uploaded positions, or -1 (printed). */
static double time_variant(ba_bufs *b, const ba_shape *s, int R, int64_t Pmax, int nsplit, int variant,
                           const ba_options *o) {
  ba_timed t = {b, s, R, nsplit, variant, Pmax};
  char what[96];
  snprintf(what, sizeof what, "%s R=%d: variant %s", s->key, R, attn_lab_name(variant));
  return mc_bench_median_us(CMD, what, timed_decode, &t, o->warmup, o->reps, b->flush, b->flush_bytes,
                            b->e0, b->e1);
}

/* The split count variant v runs at: the runtime's for the shipped decode (what a model batch
 * fixes), nsplit (--splits or attn_lab_splits) for the lab's variants. */
static int splits_of(int v, int nsplit, const ba_shape *s, int sms) {
  return v == ATTN_LAB_SHIPPED ? attn_lab_splits_shipped(s->nKV, sms) : nsplit;
}

/* Checks every variant; passed[v] = 1 for those to time. Returns the failures. */
static int check_all(const ba_shape *s, int nsplit_lab, int sms, const ba_options *o,
                     int *passed /* [NVARIANTS + 1] */) {
  int fails = 0;
  for (int i = 0; i < o->nvariants; i++) {
    const int v = o->variants[i];
    const int nsplit = splits_of(v, nsplit_lab, s, sms);
    attn_check_result res;
    char err[256] = "";
    if (attn_check_variant(v, s->nH, s->nKV, s->D, s->gated, nsplit, &res, err, sizeof err) != 0) {
      printf("check %-8s %-9s splits %4d: CUDA error (%s)\n", s->key, attn_lab_name(v), nsplit, err);
      fails++;
      continue;
    }
    if (!res.ran) {
      printf("check %-8s %-9s splits %4d: not supported for this shape (not timed)\n", s->key, attn_lab_name(v), nsplit);
      continue;
    }
    printf("check %-8s %-9s splits %4d: %s  max|gpu-fp64|/fp64 %.2e (%.3f of its bound), max|gpu-cpu|/fp64 %.2e "
           "(cpu-fp64 %.2e)\n",
           s->key, attn_lab_name(v), nsplit, res.ok ? "pass" : "FAIL", res.worst_rel, res.worst_ratio, res.worst_cpu,
           res.worst_cpu_rel);
    if (res.ok) passed[v] = 1;
    else fails++;
  }
  return fails;
}

/* One (shape, R): check, allocate, time every position. Returns 0, or 1 on a failure. */
static int run_config(const ba_shape *s, int R, int sms, double copy, const ba_options *o, ba_points *ps) {
  int64_t Pmax = 0;
  for (int i = 0; i < o->npositions; i++)
    if (o->positions[i] > Pmax) Pmax = o->positions[i];
  const int nsplit = o->splits > 0 ? o->splits : attn_lab_splits(R, s->nKV, Pmax, sms);
  printf("\n%s (%s): R=%d rows, nH=%d nKV=%d D=%d%s; variants 2-4 with %d splits per (row, kv head), "
         "shipped with %d\n",
         s->key, s->name, R, s->nH, s->nKV, s->D, s->gated ? " gated" : "", nsplit,
         attn_lab_splits_shipped(s->nKV, sms));
  int passed[ATTN_LAB_NVARIANTS + 1] = {0};
  int rc = check_all(s, nsplit, sms, o, passed) ? 1 : 0;
  size_t scratch = 0;
  for (int v = 1; v <= ATTN_LAB_NVARIANTS; v++) {
    size_t f = attn_lab_scratch_floats(R, s->nH, s->D, splits_of(v, nsplit, s, sms));
    if (f > scratch) scratch = f;
  }
  ba_bufs b;
  int arc = alloc_bufs(&b, s, R, Pmax, scratch);
  if (arc != 0) {
    free_bufs(&b);
    return arc == 3 ? rc : 1;
  }
  printf("%-8s %5s %8s %-9s %6s %10s %12s %8s %7s\n", "shape", "R", "P", "variant", "splits", "us", "bytes",
         "GB/s", "%copy");
  int *hp = malloc((size_t)R * sizeof *hp);
  for (int i = 0; i < o->npositions && hp && rc == 0; i++) {
    const int64_t P = o->positions[i];
    for (int r = 0; r < R; r++) hp[r] = (int)(P - 1);
    if (!ok(cudaMemcpy(b.pos, hp, (size_t)R * sizeof(int), cudaMemcpyHostToDevice), "positions")) {
      rc = 1;
      break;
    }
    const double bytes = 4.0 * (2.0 * R * (double)P * s->nKV * s->D + (2.0 + s->gated) * R * s->nH * s->D);
    int first = ps->n, best = -1;
    for (int k = 0; k < o->nvariants; k++) {
      const int v = o->variants[k];
      if (!passed[v]) continue;
      const int ns = splits_of(v, nsplit, s, sms);
      const double us = time_variant(&b, s, R, Pmax, ns, v, o);
      if (us < 0) {
        rc = 1;
        break;
      }
      ba_point *x = add_point(ps);
      if (!x) {
        rc = 1;
        break;
      }
      *x = (ba_point){s->key, R, ns, v, P, us, bytes, bytes / (us * 1e3), 0.0, 0};
      x->pct = 100.0 * x->gbps / copy;
      if (best < 0 || us < ps->p[best].us) best = ps->n - 1;
      printf("%-8s %5d %8lld %-9s %6d %10.2f %12.4g %8.1f %6.1f%%\n", s->key, R, (long long)P, attn_lab_name(v),
             x->nsplit, us, bytes, x->gbps, x->pct);
    }
    if (best >= first && best >= 0) {
      ps->p[best].best = 1;
      printf("%-8s %5d %8lld best: %s (%.1f%% of copy)\n", s->key, R, (long long)P, attn_lab_name(ps->p[best].variant),
             ps->p[best].pct);
    }
  }
  free(hp);
  free_bufs(&b);
  return rc;
}

static int write_json(const char *path, const ba_points *ps, const char *device, double copy, const char *date) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    cli_error(CMD, "%s: cannot write", tmp);
    return 1;
  }
  fprintf(f, "{\"device\": \"%s\", \"date\": \"%s\", \"copy_gbps\": %.1f, \"points\": [\n", device, date, copy);
  for (int i = 0; i < ps->n; i++) {
    const ba_point *x = &ps->p[i];
    fprintf(f,
            "  {\"shape\": \"%s\", \"rows\": %d, \"positions\": %lld, \"variant\": \"%s\", \"splits\": %d, "
            "\"us\": %.3f, \"bytes\": %.0f, \"gbps\": %.2f, \"pct_copy\": %.2f, \"best\": %s}%s\n",
            x->shape, x->R, (long long)x->P, attn_lab_name(x->variant), x->nsplit, x->us, x->bytes, x->gbps, x->pct,
            x->best ? "true" : "false", i + 1 < ps->n ? "," : "");
  }
  fprintf(f, "]}\n");
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    cli_error(CMD, "%s: write failed", path);
    remove(tmp);
    return 1;
  }
  return 0;
}

int ba_run(const ba_options *o) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* a run cut short keeps every finished line */
  struct cudaDeviceProp prop;
  char date[64], dev[300];
  const int drc = mc_bench_device(CMD, &prop, date, sizeof date);
  if (drc != 0) return drc;
  snprintf(dev, sizeof dev, "%s", prop.name);
  for (char *p = dev; *p; p++)
    if (*p == '"' || *p == '\\') *p = ' ';
  printf("replayssm bench attention: %s, %d SMs, %.0f MiB, L2 %d MiB; %s\n", prop.name, prop.multiProcessorCount,
         (double)prop.totalGlobalMem / 1048576.0, prop.l2CacheSize >> 20, date);
  const double copy = mc_bench_copy_line(CMD, 10);
  if (copy <= 0.0) return 1;
  printf("timing: median of %d launches after %d warm-up, L2 flushed before each\n", o->reps, o->warmup);
  int nshapes = 0, rc = 0;
  const ba_shape *all = ba_shapes(&nshapes);
  ba_points ps = {NULL, 0, 0};
  for (int i = 0; i < o->nshapes; i++) /* one point per (shape, rows, position, variant) at most */
    ps.cap += (o->nrows ? o->nrows : all[o->shapes[i]].nrows) * o->npositions * o->nvariants;
  ps.p = calloc((size_t)ps.cap, sizeof *ps.p);
  if (!ps.p) {
    cli_error(CMD, "out of host memory");
    return 1;
  }
  for (int i = 0; i < o->nshapes; i++) {
    const ba_shape *s = &all[o->shapes[i]];
    const int *rows = o->nrows ? o->rows : s->rows;
    const int nrows = o->nrows ? o->nrows : s->nrows;
    for (int k = 0; k < nrows; k++) {
      if (run_config(s, rows[k], prop.multiProcessorCount, copy, o, &ps) != 0) rc = 1;
      if (o->json && write_json(o->json, &ps, dev, copy, date) != 0) rc = 1;
    }
  }
  if (o->json && rc == 0) printf("\nwrote %d points to %s\n", ps.n, o->json);
  printf("%s\n", rc == 0 ? "PASS: every check passed" : "FAIL: a check failed or a CUDA error (see above)");
  free(ps.p);
  return rc;
}
