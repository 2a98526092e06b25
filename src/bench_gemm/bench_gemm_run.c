/* The checks and the timing run of `bench gemm` (bench_gemm.h; method in docs/bench-gemm.md).
 *
 * Per (model, precision): the step's GEMMs from the model's config.json (bg_step_of), the cublas
 * variant's tile (--tile, or the runtime's mc_row_tile_for of the step's GEMM weight bytes), then
 * every variant checked on every distinct GEMM at the --rows counts (bench_gemm_check.h; a variant
 * that fails or refuses any GEMM is not timed), then the weights of every call of the step
 * allocated and filled on the device (each call its own weights, as in a model), and per R:
 *  - per distinct GEMM and variant: --warmup untimed calls, then --reps calls each preceded by a
 *    read of 2 x L2 bytes outside the timed interval (the weights never start in L2: in a model
 *    step the other layers ran in between; a read, not a memset, leaves no dirty lines whose
 *    write-back would be timed), CUDA events around the call, the median (mc_bench_median_us);
 *  - per variant, the whole step: the same with every GEMM call of the step, in the runtime's
 *    order, between the two events (one L2 flush before the step); and the same step captured
 *    once into a CUDA graph and replayed ("step in graph", what the runtime does; "best:" picks
 *    by it).
 * bf16 calls include the rounding of X to bf16 (the runtime does it once per GEMM too).
 *
 * Byte model: the weight bytes the call reads once, rows cols (4 or 2): GB/s = those / time and
 * %copy = GB/s over the copy bandwidth of the same run. X (R cols) and Y (R rows) are not counted:
 * at R <= 64 they are <= 64 / rows (or / cols) of the weights, and a variant that reads the
 * weights several times (cublas on R / tile tiles) shows it as a lower percent. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/bench_gemm/bench_gemm.h"
#include "src/bench_gemm/bench_gemm_check.h"
#include "src/io/cli_opts.h"
#include "src/model_cuda/mc_bandwidth.h"
#include "src/model_cuda/mc_tile.h"

#define CMD "bench gemm"

static int ok(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 1;
  cli_error(CMD, "CUDA error in %s: %s", what, cudaGetErrorString(e));
  return 0;
}

/* The device state of one (model, precision). */
typedef struct {
  void *w[BG_MAX_GEMMS];   /* [count][rows][cols] fp32 or bf16: every call's own weights */
  float *X, *Y, *scratch;  /* [2 RMAX][maxcols], [2 RMAX][maxrows], [max scratch] */
  uint16_t *xb;            /* [2 RMAX][maxcols] */
  void *flush;             /* [flush_bytes] zeros, then one float: the read's sink */
  size_t flush_bytes;
  cudaEvent_t e0, e1;
  cudaStream_t stream;     /* the lab's launches (a stream, not the legacy one, so that the step
                              can be captured into a graph); events stay on the legacy stream,
                              which waits for it */
  gemm_lab_ctx *ctx;
  int splits[BG_MAX_GEMMS]; /* variant 2's split count per distinct GEMM */
} bg_bufs;

static void free_bufs(bg_bufs *b) {
  for (int i = 0; i < BG_MAX_GEMMS; i++) cudaFree(b->w[i]);
  cudaFree(b->X), cudaFree(b->Y), cudaFree(b->scratch), cudaFree(b->xb), cudaFree(b->flush);
  if (b->e0) cudaEventDestroy(b->e0);
  if (b->e1) cudaEventDestroy(b->e1);
  gemm_lab_destroy(b->ctx);
  if (b->stream) cudaStreamDestroy(b->stream);
  memset(b, 0, sizeof *b);
}

/* Allocates and fills; 0, 1 (a CUDA error, printed) or 3 (does not fit: the caller skips). */
static int alloc_bufs(bg_bufs *b, const bg_step *s, gemm_lab_prec p, int sms, const char *key) {
  memset(b, 0, sizeof *b);
  int64_t maxr = 0, maxc = 0;
  size_t scratch = 1;
  const double es = gemm_lab_wbytes(p);
  for (int i = 0; i < s->n; i++) {
    if (s->g[i].rows > maxr) maxr = s->g[i].rows;
    if (s->g[i].cols > maxc) maxc = s->g[i].cols;
    b->splits[i] = gemm_lab_splits(s->g[i].rows, s->g[i].cols, p, sms);
    const size_t f = gemm_lab_scratch_floats(GEMM_LAB_MAX_R, s->g[i].rows, b->splits[i]);
    if (f > scratch) scratch = f;
  }
  int dev = 0, l2 = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
  b->flush_bytes = (size_t)(l2 > 0 ? l2 : 64 << 20) * 2;
  const size_t nx = (size_t)2 * GEMM_LAB_MAX_R * maxc, ny = (size_t)2 * GEMM_LAB_MAX_R * maxr;
  const double need = es * (double)bg_step_weight_elems(s) + 6.0 * nx + 4.0 * ny + 4.0 * scratch +
                      (double)b->flush_bytes + (256 << 20);
  size_t fr = 0, tot = 0;
  if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && need > 0.9 * (double)fr) {
    printf("%-9s %s skipped: needs %.1f GiB, %.1f GiB free\n", key, gemm_lab_prec_name(p), need / 1073741824.0,
           (double)fr / 1073741824.0);
    return 3;
  }
  for (int i = 0; i < s->n; i++) {
    const int64_t n = (int64_t)s->g[i].count * s->g[i].rows * s->g[i].cols;
    if (!ok(cudaMalloc(&b->w[i], (size_t)((double)n * es) + 16), "allocation") ||
        gemm_lab_fill(p, b->w[i], n, (uint32_t)(101 + i), NULL) != 0)
      return 1;
  }
  if (!ok(cudaMalloc((void **)&b->X, nx * 4), "allocation") || !ok(cudaMalloc((void **)&b->xb, nx * 2 + 16), "allocation") ||
      !ok(cudaMalloc((void **)&b->Y, ny * 4), "allocation") ||
      !ok(cudaMalloc((void **)&b->scratch, scratch * 4), "allocation") ||
      !ok(cudaMalloc(&b->flush, b->flush_bytes + 16), "allocation") ||
      !ok(cudaMemset(b->flush, 0, b->flush_bytes + 16), "allocation") || !ok(cudaEventCreate(&b->e0), "event") ||
      !ok(cudaEventCreate(&b->e1), "event"))
    return 1;
  if (mc_fill_uniform(b->X, nx, 17, -1.0f, 1.0f, NULL) || !ok(cudaDeviceSynchronize(), "fill")) return 1;
  if (!ok(cudaStreamCreate(&b->stream), "stream")) return 1;
  if (!(b->ctx = gemm_lab_create(b->stream))) {
    cli_error(CMD, "cuBLAS handle or workspace: creation failed");
    return 1;
  }
  return 0;
}

/* One call of distinct GEMM gi on the weights of its instance inst. */
static int call(bg_bufs *b, const bg_step *s, int gi, int inst, int variant, gemm_lab_prec p, int R, int tile) {
  const bg_gemm *g = &s->g[gi];
  const char *w = (const char *)b->w[gi] + (size_t)inst * g->rows * g->cols * gemm_lab_wbytes(p);
  return gemm_lab_run(b->ctx, variant, p, w, b->X, b->xb, b->scratch, b->Y, R, g->rows, g->cols, tile,
                      b->splits[gi]);
}

/* What time_it launches: one GEMM (gi >= 0) or the whole step's sequence (gi < 0). */
typedef struct {
  bg_bufs *b;
  const bg_step *s;
  int gi, variant, R, tile;
  gemm_lab_prec p;
} bg_timed;

static int timed_call(void *ctx) {
  const bg_timed *t = ctx;
  if (t->gi >= 0) return call(t->b, t->s, t->gi, 0, t->variant, t->p, t->R, t->tile);
  int rc = 0;
  for (int i = 0; i < t->s->nseq && rc == 0; i++)
    rc = call(t->b, t->s, t->s->seq[i], t->s->inst[i], t->variant, t->p, t->R, t->tile);
  return rc;
}

/* Median microseconds of one GEMM (gi >= 0) or of the whole step (gi < 0), or -1 (printed). */
static double time_it(bg_bufs *b, const bg_step *s, int gi, int variant, gemm_lab_prec p, int R, int tile,
                      const bg_options *o) {
  bg_timed t = {b, s, gi, variant, R, tile, p};
  char what[64];
  snprintf(what, sizeof what, "variant %s", gemm_lab_name(variant));
  return mc_bench_median_us(CMD, what, timed_call, &t, o->warmup, o->reps, o->flush ? b->flush : NULL,
                            b->flush_bytes, b->e0, b->e1);
}

/* What time_graph launches: the step's graph. */
typedef struct {
  cudaGraphExec_t exec;
  cudaStream_t stream;
} bg_graph;

static int graph_launch(void *ctx) {
  const bg_graph *g = ctx;
  return cudaGraphLaunch(g->exec, g->stream) == cudaSuccess ? 0 : -1;
}

/* Median microseconds of the whole step captured once into a CUDA graph and replayed, as the
 * runtime replays its step (the gaps between a graph's kernels are shorter than between plain
 * launches, and the tiny models' GEMMs are bound by them), or -1 (printed). */
static double time_graph(bg_bufs *b, const bg_step *s, int variant, gemm_lab_prec p, int R, int tile,
                         const bg_options *o) {
  bg_timed t = {b, s, -1, variant, R, tile, p};
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  if (!ok(cudaStreamBeginCapture(b->stream, cudaStreamCaptureModeThreadLocal), "graph capture")) return -1.0;
  const int rc = timed_call(&t);
  const cudaError_t e = cudaStreamEndCapture(b->stream, &graph);
  if (rc != 0 || e != cudaSuccess) {
    cli_error(CMD, "variant %s: the step could not be captured into a graph (%s)", gemm_lab_name(variant),
              rc != 0 ? "a launch failed" : cudaGetErrorString(e));
    if (graph) cudaGraphDestroy(graph);
    (void)cudaGetLastError();
    return -1.0;
  }
  double us = -1.0;
  if (ok(cudaGraphInstantiate(&exec, graph, 0), "graph instantiation")) {
    bg_graph g = {exec, b->stream};
    char what[64];
    snprintf(what, sizeof what, "variant %s (graph)", gemm_lab_name(variant));
    us = mc_bench_median_us(CMD, what, graph_launch, &g, o->warmup, o->reps, o->flush ? b->flush : NULL,
                            b->flush_bytes, b->e0, b->e1);
    cudaGraphExecDestroy(exec);
  }
  cudaGraphDestroy(graph);
  return us;
}

/* Checks every variant on every distinct GEMM; passed[v] = 1 for those to time. Returns the
 * failures. */
static int check_all(const bg_step *s, gemm_lab_prec p, int tile, const char *key, const bg_options *o,
                     int *passed /* [NVARIANTS] */) {
  int fails = 0;
  for (int k = 0; k < o->nvariants; k++) passed[o->variants[k]] = 1;
  for (int i = 0; i < s->n; i++)
    for (int k = 0; k < o->nvariants; k++) {
      const int v = o->variants[k];
      const bg_gemm *g = &s->g[i];
      if (!gemm_lab_has_prec(v, p)) { /* the mma variants at fp32: not a variant of this precision */
        passed[v] = 0;
        continue;
      }
      gemm_check_result r;
      char err[256] = "";
      if (gemm_check_variant(v, p, g->rows, g->cols, o->rows, o->nrows, tile, 0, &r, err, sizeof err) != 0) {
        printf("check %-9s %s %-14s %6lld x %-6lld %-7s: CUDA error (%s)\n", key, gemm_lab_prec_name(p), g->name,
               (long long)g->rows, (long long)g->cols, gemm_lab_name(v), err);
        passed[v] = 0;
        fails++;
        continue;
      }
      if (!r.ran) {
        printf("check %-9s %s %-14s %6lld x %-6lld %-7s: not supported (not timed)\n", key, gemm_lab_prec_name(p),
               g->name, (long long)g->rows, (long long)g->cols, gemm_lab_name(v));
        passed[v] = 0;
        continue;
      }
      printf("check %-9s %s %-14s %6lld x %-6lld %-7s splits %2d: %s  max|gpu-fp64|/A %.2e (%.3f of its bound), "
             "cpu-order diffs %lld, row-invariance diffs %lld%s\n",
             key, gemm_lab_prec_name(p), g->name, (long long)g->rows, (long long)g->cols, gemm_lab_name(v), r.nsplit,
             r.ok ? "pass" : "FAIL", r.worst_rel, r.worst_ratio, (long long)r.cpu_diff, (long long)r.inv_diff,
             gemm_lab_is_order(v) ? "" : " (reported, not required)");
      if (!r.ok) {
        passed[v] = 0;
        fails++;
      }
    }
  return fails;
}

/* One model at one precision: check, allocate, time every R. Returns 0, or 1 on a failure. */
static int run_model(const bg_model *m, gemm_lab_prec p, int sms, double copy, const bg_options *o) {
  model_config c;
  char err[512];
  if (model_config_load(m->dir, &c, err, sizeof err) != 0) {
    cli_error(CMD, "%s: %s (run from the repository root)", m->key, err);
    return 1;
  }
  bg_step s;
  const int src = bg_step_of(&c, &s);
  model_config_free(&c);
  if (src != 0) {
    cli_error(CMD, "%s: more GEMMs per step than the bench's tables hold", m->key);
    return 1;
  }
  const double es = gemm_lab_wbytes(p), step_bytes = es * (double)bg_step_weight_elems(&s);
  const int tile = o->tile ? o->tile : mc_row_tile_for((int64_t)step_bytes, p == GEMM_LAB_BF16);
  printf("\n%s (%s, %s): %d GEMM calls per step (%d distinct), %.3g GB of weights; cublas on tiles of %d rows\n",
         m->key, m->name, gemm_lab_prec_name(p), s.nseq, s.n, step_bytes * 1e-9, tile);
  int passed[GEMM_LAB_NVARIANTS] = {0};
  int rc = check_all(&s, p, tile, m->key, o, passed) ? 1 : 0;
  gemm_check_release(); /* the check's weights: the step's own come next */
  bg_bufs b;
  const int arc = alloc_bufs(&b, &s, p, sms, m->key);
  if (arc != 0) {
    free_bufs(&b);
    return arc == 3 ? rc : 1;
  }
  printf("%-9s %-4s %3s %-14s %15s %5s %-7s %10s %8s %7s\n", "shape", "prec", "R", "gemm", "rows x cols", "calls",
         "variant", "us", "GB/s", "%copy");
  for (int ir = 0; ir < o->nrows && rc == 0; ir++) {
    const int R = o->rows[ir];
    for (int i = 0; i < s.n && rc == 0; i++) {
      const bg_gemm *g = &s.g[i];
      const double bytes = es * (double)(g->rows * g->cols);
      for (int k = 0; k < o->nvariants; k++) {
        const int v = o->variants[k];
        if (!passed[v]) continue;
        const double us = time_it(&b, &s, i, v, p, R, tile, o);
        if (us < 0) {
          rc = 1;
          break;
        }
        printf("%-9s %-4s %3d %-14s %7lld x %-6lld %5d %-7s %10.2f %8.1f %6.1f%%\n", m->key, gemm_lab_prec_name(p), R,
               g->name, (long long)g->rows, (long long)g->cols, g->count, gemm_lab_name(v), us, bytes / (us * 1e3),
               100.0 * bytes / (us * 1e3) / copy);
      }
    }
    int best = -1;
    double best_us = 0;
    for (int k = 0; k < o->nvariants && rc == 0; k++) {
      const int v = o->variants[k];
      if (!passed[v]) continue;
      const double us = time_it(&b, &s, -1, v, p, R, tile, o);
      if (us < 0) {
        rc = 1;
        break;
      }
      printf("%-9s %-4s %3d %-14s %15s %5d %-7s %10.2f %8.1f %6.1f%%\n", m->key, gemm_lab_prec_name(p), R, "step", "",
             s.nseq, gemm_lab_name(v), us, step_bytes / (us * 1e3), 100.0 * step_bytes / (us * 1e3) / copy);
      const double gus = time_graph(&b, &s, v, p, R, tile, o);
      if (gus < 0) {
        rc = 1;
        break;
      }
      printf("%-9s %-4s %3d %-14s %15s %5d %-7s %10.2f %8.1f %6.1f%%\n", m->key, gemm_lab_prec_name(p), R,
             "step in graph", "", s.nseq, gemm_lab_name(v), gus, step_bytes / (gus * 1e3),
             100.0 * step_bytes / (gus * 1e3) / copy);
      if (best < 0 || gus < best_us) best = v, best_us = gus;
    }
    if (best >= 0)
      printf("%-9s %-4s %3d best: %s (step in graph %.2f us, %.1f%% of copy)\n", m->key, gemm_lab_prec_name(p), R,
             gemm_lab_name(best), best_us, 100.0 * step_bytes / (best_us * 1e3) / copy);
  }
  free_bufs(&b);
  return rc;
}

int bg_run(const bg_options *o) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* a run cut short keeps every finished line */
  struct cudaDeviceProp prop;
  char date[64];
  const int drc = mc_bench_device(CMD, &prop, date, sizeof date);
  if (drc != 0) return drc;
  printf("replayssm bench gemm: %s, %d SMs, %.0f MiB, L2 %d MiB; %s\n", prop.name, prop.multiProcessorCount,
         (double)prop.totalGlobalMem / 1048576.0, prop.l2CacheSize >> 20, date);
  const double copy = mc_bench_copy_line(CMD, 10);
  if (copy <= 0.0) return 1;
  printf("timing: median of %d calls after %d warm-up, %s\n", o->reps, o->warmup,
         o->flush ? "L2 flushed before each" : "back to back (no L2 flush)");
  int nm = 0, rc = 0;
  const bg_model *all = bg_models(&nm);
  for (int i = 0; i < o->nmodels; i++)
    for (int k = 0; k < o->nprecs; k++)
      if (run_model(&all[o->models[i]], (gemm_lab_prec)o->precs[k], prop.multiProcessorCount, copy, o) != 0) rc = 1;
  printf("%s\n", rc == 0 ? "PASS: every check passed" : "FAIL: a check failed or a CUDA error (see above)");
  return rc;
}
