/* `replayssm bench kernels` (docs/bench-kernels.md): the GPU SSM kernels of src/ssm_cuda on the
 * paper's four shapes, every timed configuration first checked bit for bit against the CPU engine
 * (ssm_check.h) on a small batch of desynchronised rows.
 *
 * Method. Each measurement is a CUDA Graph of whole operations (all rows active, rows in phase),
 * replayed after warm-up and timed with CUDA events around each replay; the reported time is the
 * median over the replays. So that no state sits in L2 between its uses, a workload holds K
 * copies of its state, K * (state bytes) >= 2.5 x L2, and the graph runs the copies in turn (step
 * s of every copy before step s + 1 of any). The copy bandwidth (cudaMemcpyAsync device to
 * device and a float4 copy kernel, 1 GiB, reads + writes) is measured in the same run.
 *
 * Parts (--parts):
 *   std     standard decoding, fp32, L = 16, batch sweep: the conventional step; the replay window
 *           (L - 1 non-flush steps, then the flush step: two graphs, so both are also reported
 *           alone), amortised per token, flush included (paper Fig. 2 kernel bars, Fig. 8)
 *   window  the replay window L = 4 .. 64 at batch 256 (Fig. 9)
 *   spec    verification of T drafts at batch 256: the per-draft snapshot baseline (1 read, T
 *           writes) and output-only verification with a = 1 and a = T, per round, amortised
 *           over the rounds between two flushes (Figs. 4, 7, 10)
 *   lp      the non-flush step reading its checkpoint in fp32, bf16, fp16, fp8, nvfp4, mxfp4
 *           (split hp=fp32 lp=F; Fig. 11)
 *   skip    Appendix F: the checkpoint bytes a decay threshold would let non-flush steps skip
 *           (a byte count over the timing inputs' decays; no kernel skips anything)
 *
 * Byte model (paper Appendix C.3, per head and window of L tokens, fp32 state):
 *   M_conv = 8 L dv dk,  M_replay = 4 (L + 1) dv dk + (L - 1)(L + 2)/2 r
 * with r the bytes of one record: the paper's r = 2 dv + 2 dk + 4 (16-bit records), and what this
 * engine's readouts read per head, r = 4 + 4 dv + 4 dk G / H (fp32 alpha, x or GDN u, and the
 * group's k shared by H / G heads). GB/s columns divide the model bytes (engine r) by the
 * measured time. */
#include "src/bench_kernels/bench_kernels.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <gsl/gsl_statistics_double.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quant/format.h"
#include "src/bench_kernels/bk_options.h"
#include "src/bench_kernels/bk_workload.h"
#include "src/bench_kernels/snapshot.h"
#include "src/bench_kernels/ssm_check.h"
#include "src/bench_kernels/targets.h"
#include "src/io/cli_opts.h"
#include "src/model_cuda/mc_bandwidth.h"
#include "src/ssm/ssm_config.h"
#include "src/ssm/ssm_engine.h"
#include "src/ssm_cuda/ssm_cuda.h"

#define CMD "bench kernels"

/* ------------------------------------------------------------------------------------------------
 * Results: one row per measurement, printed as tables and written as CSV or JSON
 * --------------------------------------------------------------------------------------------- */

typedef struct {
  char part[8], shape[32], kind[8], config[96], variant[24];
  int B, L, T, a, copies;
  double us;          /* per token (std, window), per round (spec), per non-flush step (lp) */
  double us_nonflush; /* replay: one non-flush step; -1 where not applicable */
  double us_flush;    /* replay: the flush step */
  double model_bytes; /* per `us`, byte model with this engine's record size */
  double gbps, pct_copy;
  double rel_conv;     /* us / conventional step at the same shape and batch */
  double model_ratio;  /* model bytes / conventional model bytes (what bandwidth alone predicts) */
  double model_ratio_paper; /* the same with the paper's r = 2 dv + 2 dk + 4 */
  char check[8];       /* pass, FAIL, or - (not a kernel: skip part) */
} result;

typedef struct {
  result *r;
  int n, cap;
} results;

static result *add_result(results *rs) {
  if (rs->n == rs->cap) {
    int cap = rs->cap ? 2 * rs->cap : 64;
    result *p = realloc(rs->r, (size_t)cap * sizeof *p);
    if (!p) return NULL;
    rs->r = p;
    rs->cap = cap;
  }
  result *x = &rs->r[rs->n++];
  memset(x, 0, sizeof *x);
  x->us_nonflush = x->us_flush = -1.0;
  snprintf(x->check, sizeof x->check, "pass");
  return x;
}

/* ------------------------------------------------------------------------------------------------
 * Small helpers
 * --------------------------------------------------------------------------------------------- */

/* What a readout reads per head and record in this engine: alpha, x (GDN: u) [dv] and the key
 * group's k [dk], shared by the H / G heads of the group, all fp32. (GDN also writes beta and v
 * once per token and reads v once to form u; the C.3 term counts only the repeated reads.) */
static double record_bytes_engine(const ssm_dims *d) {
  return 4.0 + 4.0 * d->dv + 4.0 * d->dk * d->G / d->H;
}
static double record_bytes_paper(const ssm_dims *d) { return 2.0 * d->dv + 2.0 * d->dk + 4.0; }

/* Appendix C.3 per head and window of L tokens. */
static double m_conv(const ssm_dims *d, int L) { return 8.0 * L * d->dv * d->dk; }
static double m_replay(const ssm_dims *d, int L, double r) {
  return 4.0 * (L + 1) * d->dv * d->dk + (double)(L - 1) * (L + 2) / 2.0 * r;
}

static size_t ckpt_bytes(const char *fmt_text, const ssm_dims *d) {
  qformat f;
  qlayout lay;
  char err[128];
  if (qformat_parse(fmt_text, &f, err, sizeof err) != 0 || qlayout_of(&f, d->dv, d->dk, &lay) != 0) return 0;
  return (size_t)lay.bytes_per_matrix;
}

/* ------------------------------------------------------------------------------------------------
 * Checks, once per (shape, configuration)
 * --------------------------------------------------------------------------------------------- */

typedef struct {
  char key[160];
  int ok;
} check_memo;

typedef struct {
  check_memo m[512];
  int n, failures;
  int batch;
} checks;

/* Checks cfg_text (snap_T > 0: the snapshot baseline) on shape sh before it is timed; the result
 * is remembered. Prints one line. Returns 1 when bit-identical. */
static int check_config(checks *ck, const bk_shape *sh, const char *cfg_text, int snap_T) {
  char key[160];
  snprintf(key, sizeof key, "%s|%s|%d", sh->key, cfg_text ? cfg_text : "", snap_T);
  for (int i = 0; i < ck->n; i++)
    if (strcmp(ck->m[i].key, key) == 0) return ck->m[i].ok;
  ssm_check_tally t;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int ok;
  char what[128];
  if (snap_T > 0) {
    snprintf(what, sizeof what, "snapshot baseline T=%d", snap_T);
    ok = ssm_check_snapshot(&sh->d, ck->batch < 4 ? ck->batch : 4, snap_T, 3, &t) == 0;
  } else {
    ssm_config cfg;
    char err[200];
    if (ssm_config_parse(cfg_text, &cfg, err, sizeof err) != 0) return 0;
    /* row b is inactive for its first b % L steps (b < check rows), then reaches its flush
       within L more active operations (a spec round with a = 1 within L - T + 1), about one in 23
       operations being inactive; the explicit flush comes after that, and a few operations
       follow it */
    int L = cfg.strategy == SSM_CONVENTIONAL ? 1 : cfg.L;
    int steps = cfg.strategy == SSM_CONVENTIONAL ? 12 : L + L / 8 + ck->batch + 8;
    snprintf(what, sizeof what, "%s", cfg_text);
    ok = ssm_check_run(cfg_text, &sh->d, ck->batch, steps, steps - 4, 1, &t) == 0;
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double sec = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  printf("check %-22s %-44s %s: %lld outputs, %lld ckpt bytes, %lld+%lld+%lld differ (%.1f s)%s%s\n", sh->name,
         what, ok ? "bit-identical" : "FAIL", t.outputs, t.ckpt_bytes, t.out_diff, t.ckpt_diff, t.state_diff, sec,
         t.text[0] ? "; " : "", t.text);
  fflush(stdout);
  if (ck->n < (int)(sizeof ck->m / sizeof ck->m[0])) {
    snprintf(ck->m[ck->n].key, sizeof ck->m[ck->n].key, "%s", key);
    ck->m[ck->n++].ok = ok;
  }
  if (!ok) ck->failures++;
  return ok;
}

/* ------------------------------------------------------------------------------------------------
 * Measurements
 * --------------------------------------------------------------------------------------------- */

typedef struct {
  bk_options *o;
  results *rs;
  checks *ck;
  double copy_gbps;
  int cuda_failed;
  /* conventional fp32 step per (shape, batch), the reference of every ratio */
  double conv_us[BK_N_SHAPES][BK_MAX_LIST + 1];
  int conv_B[BK_N_SHAPES][BK_MAX_LIST + 1];
  int nconv[BK_N_SHAPES];
  /* the timing inputs' decays, U(alpha_lo, alpha_hi) (bk_workload_build): 0.9 .. 0.9999 except
     while part skip times its threshold on faster decays */
  float alpha_lo, alpha_hi;
} bench;

/* Times a standard-decoding configuration: conventional (one graph of a step per copy) or replay
 * (the L - 1 non-flush steps, then the flush step). us per token; nf and fl per step. */
static int time_standard(bench *bn, const char *cfg_text, const ssm_dims *d, int B, double *us, double *nf,
                         double *fl, int *copies) {
  bk_workload w;
  int rc = -1;
  cudaGraphExec_t g[2] = {NULL, NULL};
  double *ms = NULL;
  *nf = *fl = -1.0;
  if (bk_workload_build(&w, cfg_text, d, B, 0, 1, bn->alpha_lo, bn->alpha_hi) != 0) goto done;
  *copies = w.K;
  const int it = bn->o->iters;
  ms = malloc((size_t)it * 2 * sizeof *ms);
  if (!ms) goto done;
  if (w.cfg.strategy == SSM_CONVENTIONAL) {
    if (bk_workload_graph(&w, 1, &g[0]) != 0 || bk_time_graphs(&w, g, 1, bn->o->warmup, it, ms) != 0) goto done;
    *us = gsl_stats_median(ms, 1, (size_t)it) * 1000.0 / w.K;
  } else {
    const int L = w.cfg.L;
    if (bk_workload_graph(&w, L - 1, &g[0]) != 0 || bk_workload_graph(&w, 1, &g[1]) != 0 ||
        bk_time_graphs(&w, g, 2, bn->o->warmup, it, ms) != 0)
      goto done;
    double *a = malloc((size_t)it * sizeof *a), *f = malloc((size_t)it * sizeof *f),
           *s = malloc((size_t)it * sizeof *s);
    if (!a || !f || !s) {
      free(a), free(f), free(s);
      goto done;
    }
    for (int i = 0; i < it; i++) {
      a[i] = ms[2 * i];
      f[i] = ms[2 * i + 1];
      s[i] = a[i] + f[i];
    }
    *nf = gsl_stats_median(a, 1, (size_t)it) * 1000.0 / ((double)(L - 1) * w.K);
    *fl = gsl_stats_median(f, 1, (size_t)it) * 1000.0 / w.K;
    *us = gsl_stats_median(s, 1, (size_t)it) * 1000.0 / ((double)L * w.K);
    free(a), free(f), free(s);
  }
  rc = 0;
done:
  for (int j = 0; j < 2; j++)
    if (g[j]) cudaGraphExecDestroy(g[j]);
  free(ms);
  bk_workload_free(&w);
  if (rc != 0) bn->cuda_failed = 1;
  return rc;
}

/* Verification rounds: output-only (spec, accept=fixed:a) amortised over one flush cycle, or the
 * snapshot baseline (snap_T > 0), per round. */
static int time_rounds(bench *bn, const char *cfg_text, const ssm_dims *d, int B, int snap_T, int a, double *us,
                       int *copies) {
  bk_workload w;
  int rc = -1;
  cudaGraphExec_t g = NULL, g0 = NULL;
  double *ms = NULL;
  if (bk_workload_build(&w, cfg_text, d, B, snap_T, a, bn->alpha_lo, bn->alpha_hi) != 0) goto done;
  *copies = w.K;
  const int it = bn->o->iters;
  ms = malloc((size_t)it * sizeof *ms);
  if (!ms) goto done;
  int per = 1;
  if (!w.snap) {
    /* round 0 (h = 0) leaves h = a; then rounds 1..rf repeat: round r has h = r a and the first
       with h + T > L flushes, after which h = a again */
    const int L = w.cfg.L, T = w.cfg.T;
    per = (L - T) / a + 1;
    if (bk_workload_graph(&w, 1, &g0) != 0 || !bk_cuda_ok(cudaGraphLaunch(g0, w.s), "graph launch")) goto done;
  }
  if (bk_workload_graph(&w, per, &g) != 0 || bk_time_graphs(&w, &g, 1, bn->o->warmup, it, ms) != 0) goto done;
  *us = gsl_stats_median(ms, 1, (size_t)it) * 1000.0 / ((double)per * w.K);
  rc = 0;
done:
  if (g) cudaGraphExecDestroy(g);
  if (g0) cudaGraphExecDestroy(g0);
  free(ms);
  bk_workload_free(&w);
  if (rc != 0) bn->cuda_failed = 1;
  return rc;
}

/* The conventional fp32 step at (shape si, batch B): measured once, then remembered. */
static double conv_ref(bench *bn, int si, int B) {
  for (int i = 0; i < bn->nconv[si]; i++)
    if (bn->conv_B[si][i] == B) return bn->conv_us[si][i];
  const bk_shape *sh = &bk_shapes[si];
  double us = -1.0, nf, fl;
  int k;
  if (check_config(bn->ck, sh, "conventional state=fp32", 0) &&
      time_standard(bn, "conventional state=fp32", &sh->d, B, &us, &nf, &fl, &k) != 0)
    us = -1.0;
  if (bn->nconv[si] <= BK_MAX_LIST) {
    bn->conv_B[si][bn->nconv[si]] = B;
    bn->conv_us[si][bn->nconv[si]++] = us;
  }
  return us;
}

static void fill_common(result *r, const char *part, const bk_shape *sh, const char *cfg, int B) {
  snprintf(r->part, sizeof r->part, "%s", part);
  snprintf(r->shape, sizeof r->shape, "%s", sh->name);
  snprintf(r->kind, sizeof r->kind, "%s", sh->d.kind == SSM_GDN ? "gdn" : "mamba2");
  snprintf(r->config, sizeof r->config, "%s", cfg);
  r->B = B;
}

static void fill_rates(bench *bn, result *r, double conv_us) {
  r->gbps = r->us > 0 ? r->model_bytes / (r->us * 1e3) : 0.0;
  r->pct_copy = bn->copy_gbps > 0 ? 100.0 * r->gbps / bn->copy_gbps : 0.0;
  r->rel_conv = conv_us > 0 && r->us > 0 ? r->us / conv_us : 0.0;
}

/* The record of one timed replay configuration (parts std and window): times, the byte model
 * with this engine's and the paper's record sizes, rates against the conventional step cu.
 * NULL when out of memory. */
static result *replay_result(bench *bn, const char *part, const bk_shape *sh, const char *cfg, int B,
                             int L, double us, double nf, double fl, int k, int ok, double cu) {
  const ssm_dims *d = &sh->d;
  result *r = add_result(bn->rs);
  if (!r) return NULL;
  fill_common(r, part, sh, cfg, B);
  r->L = L;
  r->copies = k;
  r->us = us;
  r->us_nonflush = nf;
  r->us_flush = fl;
  r->model_bytes = (double)B * d->H * m_replay(d, L, record_bytes_engine(d)) / L;
  r->model_ratio = m_replay(d, L, record_bytes_engine(d)) / m_conv(d, L);
  r->model_ratio_paper = m_replay(d, L, record_bytes_paper(d)) / m_conv(d, L);
  if (!ok) snprintf(r->check, sizeof r->check, "FAIL");
  fill_rates(bn, r, cu);
  return r;
}

/* Part std: conventional and replay L = 16 over the batch sweep. */
static void part_std(bench *bn, int si) {
  const bk_shape *sh = &bk_shapes[si];
  const ssm_dims *d = &sh->d;
  const char *rcfg = "replay L=16 ckpt=fp32";
  const int L = 16;
  printf("\n== standard decoding, fp32 state, L = %d: %s (%s H=%d dv=%d dk=%d G=%d)\n", L, sh->name,
         d->kind == SSM_GDN ? "GDN" : "Mamba-2", d->H, d->dv, d->dk, d->G);
  printf("%6s %4s | %10s %8s %6s | %10s %10s %10s %8s %6s | %7s %7s %7s\n", "B", "K", "conv us", "GB/s", "%copy",
         "replay us", "nonflush", "flush", "GB/s", "%copy", "speedup", "model", "paper");
  int okc = check_config(bn->ck, sh, "conventional state=fp32", 0);
  int okr = check_config(bn->ck, sh, rcfg, 0);
  for (int bi = 0; bi < bn->o->nbatches; bi++) {
    const int B = bn->o->batches[bi];
    double cu = okc ? conv_ref(bn, si, B) : -1.0;
    result *rc = add_result(bn->rs);
    if (!rc) return;
    fill_common(rc, "std", sh, "conventional state=fp32", B);
    rc->L = L;
    rc->us = cu;
    rc->copies = bk_copies_for((double)d->H * d->dv * d->dk * 4.0 * B);
    rc->model_bytes = (double)B * d->H * m_conv(d, L) / L;
    rc->model_ratio = rc->model_ratio_paper = 1.0;
    if (!okc) snprintf(rc->check, sizeof rc->check, "FAIL");
    fill_rates(bn, rc, cu);
    double us = -1.0, nf = -1.0, fl = -1.0;
    int k = 0;
    if (okr) time_standard(bn, rcfg, d, B, &us, &nf, &fl, &k);
    result *rr = replay_result(bn, "std", sh, rcfg, B, L, us, nf, fl, k, okr, cu);
    if (!rr) return;
    printf("%6d %4d | %10.1f %8.1f %6.1f | %10.1f %10.1f %10.1f %8.1f %6.1f | %7.2f %7.2f %7.2f\n", B, rc->copies,
           cu, rc->gbps, rc->pct_copy, us, nf, fl, rr->gbps, rr->pct_copy, us > 0 && cu > 0 ? cu / us : 0.0,
           1.0 / rr->model_ratio, 1.0 / rr->model_ratio_paper);
    fflush(stdout);
  }
}

/* Part window: replay L = 4 .. 64 at B = 256. */
static void part_window(bench *bn, int si) {
  const bk_shape *sh = &bk_shapes[si];
  const ssm_dims *d = &sh->d;
  const int B = 256;
  printf("\n== replay window sweep, fp32, B = %d: %s\n", B, sh->name);
  printf("%4s | %10s %10s %10s %8s %6s | %7s %7s %7s\n", "L", "us/token", "nonflush", "flush", "GB/s", "%copy",
         "speedup", "model", "paper");
  double cu = conv_ref(bn, si, B);
  for (int li = 0; li < bn->o->nwindows; li++) {
    const int L = bn->o->windows[li];
    char cfg[64];
    snprintf(cfg, sizeof cfg, "replay L=%d ckpt=fp32", L);
    int ok = check_config(bn->ck, sh, cfg, 0);
    double us = -1.0, nf = -1.0, fl = -1.0;
    int k = 0;
    if (ok) time_standard(bn, cfg, d, B, &us, &nf, &fl, &k);
    result *r = replay_result(bn, "window", sh, cfg, B, L, us, nf, fl, k, ok, cu);
    if (!r) return;
    printf("%4d | %10.1f %10.1f %10.1f %8.1f %6.1f | %7.2f %7.2f %7.2f\n", L, us, nf, fl, r->gbps, r->pct_copy,
           us > 0 && cu > 0 ? cu / us : 0.0, 1.0 / r->model_ratio, 1.0 / r->model_ratio_paper);
    fflush(stdout);
  }
}

/* Part spec: snapshot baseline and output-only verification, T drafts, B = 256, L = 16. */
static void part_spec(bench *bn, int si) {
  const bk_shape *sh = &bk_shapes[si];
  const ssm_dims *d = &sh->d;
  const int B = 256, L = 16;
  printf("\n== speculative verification, fp32, L = %d, B = %d: %s (x std = time / conventional step)\n", L, B,
         sh->name);
  printf("%3s | %10s %7s %8s | %12s %7s | %12s %7s | %8s %8s\n", "T", "snapshot", "x std", "GB/s", "out-only a=1",
         "x std", "out-only a=T", "x std", "model sn", "model oo");
  double cu = conv_ref(bn, si, B);
  const double mat = 4.0 * d->dv * d->dk * d->H * B;
  for (int ti = 0; ti < bn->o->ndrafts; ti++) {
    const int T = bn->o->drafts[ti];
    if (T > L) continue;
    double us_sn = -1.0, us_a1 = -1.0, us_aT = -1.0;
    int k = 0;
    /* --targets-only: the target needs output-only a = 1 alone (no snapshot baseline, no a = T) */
    const int want_all = !bn->o->targets_only;
    int ok = want_all ? check_config(bn->ck, sh, NULL, T) : 0;
    if (ok) time_rounds(bn, NULL, d, B, T, 1, &us_sn, &k);
    result *r = add_result(bn->rs);
    if (!r) return;
    char cfg[96];
    snprintf(cfg, sizeof cfg, "snapshot T=%d", T);
    fill_common(r, "spec", sh, cfg, B);
    snprintf(r->variant, sizeof r->variant, "snapshot");
    r->L = L;
    r->T = T;
    r->a = 0;
    r->copies = k;
    r->us = us_sn;
    r->model_bytes = mat * (1.0 + T);
    r->model_ratio = r->model_ratio_paper = (1.0 + T) / 2.0;
    if (!ok) snprintf(r->check, sizeof r->check, want_all ? "FAIL" : "-");
    fill_rates(bn, r, cu);
    double gb_sn = r->gbps;
    for (int v = 0; v < 2; v++) {
      const int a = v == 0 ? 1 : T;
      if (v == 1 && (T == 1 || !want_all)) {
        us_aT = us_a1;
        break;
      }
      snprintf(cfg, sizeof cfg, "spec L=%d T=%d ckpt=fp32 accept=fixed:%d", L, T, a);
      int okv = check_config(bn->ck, sh, cfg, 0);
      double us = -1.0;
      if (okv) time_rounds(bn, cfg, d, B, 0, a, &us, &k);
      const int rf = (L - T) / a + 1; /* rounds per flush cycle */
      result *x = add_result(bn->rs);
      if (!x) return;
      fill_common(x, "spec", sh, cfg, B);
      snprintf(x->variant, sizeof x->variant, "output-only");
      x->L = L;
      x->T = T;
      x->a = a;
      x->copies = k;
      x->us = us;
      x->model_bytes = mat * (1.0 + 1.0 / rf);
      x->model_ratio = x->model_ratio_paper = (1.0 + 1.0 / rf) / 2.0;
      if (!okv) snprintf(x->check, sizeof x->check, "FAIL");
      fill_rates(bn, x, cu);
      if (v == 0) us_a1 = us;
      else us_aT = us;
    }
    printf("%3d | %10.1f %7.2f %8.1f | %12.1f %7.2f | %12.1f %7.2f | %8.2f %8.2f\n", T, us_sn,
           cu > 0 ? us_sn / cu : 0.0, gb_sn, us_a1, cu > 0 ? us_a1 / cu : 0.0, us_aT, cu > 0 ? us_aT / cu : 0.0,
           (1.0 + T) / 2.0, (1.0 + 1.0 / ((L - T) / T + 1)) / 2.0);
    fflush(stdout);
  }
}

/* Part lp: the non-flush step reading C_lp in each format (split hp=fp32 lp=F; fp32: the shared
 * fp32 checkpoint, the same read), B = 256, L = 16. */
static void part_lp(bench *bn, int si) {
  const bk_shape *sh = &bk_shapes[si];
  const ssm_dims *d = &sh->d;
  const int B = 256, L = 16;
  printf("\n== non-flush step by checkpoint read format, L = %d, B = %d: %s\n", L, B, sh->name);
  printf("%-8s %10s | %10s %8s %6s %8s | %10s\n", "read", "bytes/mat", "nonflush", "GB/s", "%copy", "vs fp32",
         "us/token");
  double cu = conv_ref(bn, si, B);
  double nf32 = -1.0;
  for (int fi = 0; fi < bn->o->nlp; fi++) {
    const char *fmt = bn->o->lp_formats[fi];
    char cfg[96];
    if (strcmp(fmt, "fp32") == 0) snprintf(cfg, sizeof cfg, "replay L=%d ckpt=fp32", L);
    else snprintf(cfg, sizeof cfg, "replay L=%d hp=fp32 lp=%s", L, fmt);
    int ok = check_config(bn->ck, sh, cfg, 0);
    double us = -1.0, nf = -1.0, fl = -1.0;
    int k = 0;
    if (ok) time_standard(bn, cfg, d, B, &us, &nf, &fl, &k);
    if (strcmp(fmt, "fp32") == 0) nf32 = nf;
    result *r = add_result(bn->rs);
    if (!r) return;
    fill_common(r, "lp", sh, cfg, B);
    snprintf(r->variant, sizeof r->variant, "%s", fmt);
    r->L = L;
    r->copies = k;
    r->us = nf; /* the non-flush step is what this part compares */
    r->us_nonflush = nf;
    r->us_flush = fl;
    size_t bpm = ckpt_bytes(fmt, d);
    r->model_bytes = (double)B * d->H * (double)bpm;
    r->model_ratio = r->model_ratio_paper = (double)bpm / (4.0 * d->dv * d->dk);
    if (!ok) snprintf(r->check, sizeof r->check, "FAIL");
    fill_rates(bn, r, cu);
    printf("%-8s %10zu | %10.1f %8.1f %6.1f %8.2f | %10.1f\n", fmt, bpm, nf, r->gbps, r->pct_copy,
           nf > 0 && nf32 > 0 ? nf32 / nf : 0.0, us);
    fflush(stdout);
  }
}

/* Part skip, timed (ro4, the only readout that skips): the non-flush step of `replay L=16
 * ckpt=fp32` with and without skip=thr on timing decays alpha ~ U(0.1, 0.6), constant per head
 * over the graph's steps, so that head h's checkpoint weight after n records is alpha^n and the
 * reads skipped are those with alpha^n < thr (counted here for the same decays). Rows: part skip,
 * variant "timed", us = the non-flush step, model_ratio = the fraction of head reads skipped. */
static void skip_timed(bench *bn, int si, double thr) {
  const bk_shape *sh = &bk_shapes[si];
  const int L = 16, B = 256;
  const float lo = 0.1f, hi = 0.6f;
  double skipped = 0.0;
  const int nsamp = 4096;
  for (int s = 0; s < nsamp; s++) { /* alpha on a uniform grid, one per head */
    const double alpha = lo + (hi - lo) * (s + 0.5) / nsamp;
    for (int n = 1; n < L; n++) skipped += pow(alpha, n) < thr ? 1.0 : 0.0;
  }
  const double frac = skipped / ((double)nsamp * (L - 1));
  char cfg[2][96];
  snprintf(cfg[0], sizeof cfg[0], "replay L=%d ckpt=fp32", L);
  snprintf(cfg[1], sizeof cfg[1], "replay L=%d ckpt=fp32 skip=%.3g", L, thr);
  double nf[2] = {-1.0, -1.0};
  bn->alpha_lo = lo;
  bn->alpha_hi = hi;
  for (int v = 0; v < 2; v++) {
    int ok = check_config(bn->ck, sh, cfg[v], 0);
    double us = -1.0, fl = -1.0;
    int k = 0;
    if (ok) time_standard(bn, cfg[v], &sh->d, B, &us, &nf[v], &fl, &k);
    result *r = add_result(bn->rs);
    if (!r) break;
    fill_common(r, "skip", sh, cfg[v], B);
    snprintf(r->variant, sizeof r->variant, "timed");
    if (!ok) snprintf(r->check, sizeof r->check, "FAIL");
    r->L = L;
    r->copies = k;
    r->us = r->us_nonflush = nf[v];
    r->us_flush = fl;
    r->model_ratio = r->model_ratio_paper = v == 1 ? frac : 0.0;
  }
  bn->alpha_lo = 0.9f;
  bn->alpha_hi = 0.9999f;
  printf("timed, alpha~U(%.1f:%.1f) per head, B = %d: non-flush step %.1f us, with skip=%.3g %.1f us "
         "(%.1f %% less); %.1f %% of head reads below the threshold\n",
         (double)lo, (double)hi, B, nf[0], thr, nf[1], nf[0] > 0 && nf[1] > 0 ? 100.0 * (1.0 - nf[1] / nf[0]) : 0.0,
         100.0 * frac);
  fflush(stdout);
}

/* Part skip (Appendix F): a non-flush step at h records since the flush could skip a head's
 * checkpoint read when gamma_h = prod of its h decays < threshold (the checkpoint's term
 * gamma_h C q is then below the threshold relative to C q). Counted over the decays the timing
 * inputs use (U(0.9, 0.9999), the same for every step here) and over the SPEC check distribution
 * (1 - 10^-U(0.5, 4)), per step of a window of L = 16, as bytes of fp32 checkpoint saved. No
 * kernel skips anything yet, and what a threshold costs in KL is a separate experiment
 * (docs/bench-kernels.md). */
static void part_skip(bench *bn, int si) {
  const bk_shape *sh = &bk_shapes[si];
  const ssm_dims *d = &sh->d;
  const int L = 16, B = 256, nsamp = 4096;
  const double thr = bn->o->skip_threshold;
  printf("\n== Appendix F: checkpoint reads skippable at gamma_h < %.3g, L = %d, B = %d: %s\n", thr, L, B,
         sh->name);
  printf("%-28s %14s %14s %10s\n", "decay distribution", "ckpt MB/step", "saved MB/step", "saved %");
  const char *names[2] = {"alpha~U(0.9:0.9999) timing", "alpha=1-10^-U(0.5:4) check"}; /* no commas: CSV */
  for (int dist = 0; dist < 2; dist++) {
    /* per head sample: the mean over non-flush steps h = 1..L-1 of [gamma_h < thr]; a
       deterministic low-discrepancy sample of decays, one per step */
    double skipped = 0.0;
    for (int s = 0; s < nsamp; s++) {
      double g = 1.0;
      for (int h = 1; h < L; h++) {
        double u = fmod((s * 0.7548776662466927) + h * 0.5698402909980532, 1.0);
        double alpha = dist == 0 ? 0.9 + 0.0999 * u : 1.0 - pow(10.0, -(0.5 + 3.5 * u));
        g *= alpha;
        if (g < thr) skipped += 1.0;
      }
    }
    double frac = skipped / ((double)nsamp * (L - 1)); /* of non-flush reads */
    double ck = (double)B * d->H * 4.0 * d->dv * d->dk;
    double per_step = ck * (L - 1) / L; /* non-flush reads per token, amortised */
    result *r = add_result(bn->rs);
    if (!r) return;
    fill_common(r, "skip", sh, names[dist], B);
    snprintf(r->variant, sizeof r->variant, "thr=%.3g", thr);
    snprintf(r->check, sizeof r->check, "-");
    r->L = L;
    r->us = -1.0;
    r->model_bytes = per_step * frac; /* bytes saved per token */
    r->model_ratio = frac;
    r->model_ratio_paper = frac;
    printf("%-28s %14.1f %14.1f %10.2f\n", names[dist], per_step / 1e6, per_step * frac / 1e6, 100.0 * frac);
  }
  skip_timed(bn, si, thr);
}

/* ------------------------------------------------------------------------------------------------
 * Issue 17's targets: met or missed, from the rows above (targets.h decides)
 * --------------------------------------------------------------------------------------------- */

/* Prints (when print) the verdict table of the shapes run and writes it to --targets. Returns 0,
 * or -1 when the CSV cannot be written. */
static int report_targets(const results *rs, const bk_options *o, int print) {
  bk_meas *m = calloc((size_t)(rs->n > 0 ? rs->n : 1), sizeof *m);
  bk_target t[BK_N_SHAPES * BK_N_TARGETS];
  const char *names[BK_N_SHAPES];
  if (!m) return -1;
  for (int i = 0; i < rs->n; i++) {
    const result *r = &rs->r[i];
    bk_meas x = {r->part, r->shape, r->config, r->variant, r->B, r->L, r->T, r->a, r->us, r->pct_copy, r->check};
    m[i] = x;
  }
  for (int i = 0; i < o->nshapes; i++) names[i] = bk_shapes[o->shapes[i]].name;
  int nt = bk_targets_eval(m, rs->n, names, o->nshapes, t);
  if (print) {
    printf("\n== issue 17 targets: measured value and verdict per shape\n");
    bk_targets_print(stdout, t, nt);
  }
  int rc = 0;
  if (o->targets_out) {
    FILE *f = fopen(o->targets_out, "w");
    if (!f || bk_targets_write_csv(f, t, nt) != 0) {
      cli_error(CMD, "cannot write %s", o->targets_out);
      rc = -1;
    }
    if (f && fclose(f) != 0) rc = -1;
  }
  free(m);
  return rc;
}

/* ------------------------------------------------------------------------------------------------
 * Output files
 * --------------------------------------------------------------------------------------------- */

static int write_results(const char *path, const results *rs, const char *device, double copy_gbps,
                         const char *date) {
  size_t n = strlen(path);
  int json = n >= 5 && strcmp(path + n - 5, ".json") == 0;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    cli_error(CMD, "%s: cannot write (%s)", tmp, strerror(errno));
    return 1;
  }
  if (json) {
    fprintf(f, "{\"device\": \"%s\", \"date\": \"%s\", \"copy_gbps\": %.1f, \"rows\": [\n", device, date,
            copy_gbps);
  } else {
    fprintf(f, "# replayssm bench kernels; device %s; %s; copy bandwidth %.1f GB/s\n", device, date, copy_gbps);
    fprintf(f,
            "part,shape,kind,config,variant,B,L,T,a,copies,us,us_nonflush,us_flush,model_bytes,gbps,pct_copy,"
            "rel_conv,model_ratio,model_ratio_paper,check\n");
  }
  for (int i = 0; i < rs->n; i++) {
    const result *r = &rs->r[i];
    if (json)
      fprintf(f,
              "  {\"part\": \"%s\", \"shape\": \"%s\", \"kind\": \"%s\", \"config\": \"%s\", \"variant\": \"%s\", "
              "\"B\": %d, \"L\": %d, \"T\": %d, \"a\": %d, \"copies\": %d, \"us\": %.3f, \"us_nonflush\": %.3f, "
              "\"us_flush\": %.3f, \"model_bytes\": %.0f, \"gbps\": %.2f, \"pct_copy\": %.2f, \"rel_conv\": %.4f, "
              "\"model_ratio\": %.4f, \"model_ratio_paper\": %.4f, \"check\": \"%s\"}%s\n",
              r->part, r->shape, r->kind, r->config, r->variant, r->B, r->L, r->T, r->a, r->copies, r->us,
              r->us_nonflush, r->us_flush, r->model_bytes, r->gbps, r->pct_copy, r->rel_conv, r->model_ratio,
              r->model_ratio_paper, r->check, i + 1 < rs->n ? "," : "");
    else
      fprintf(f, "%s,%s,%s,%s,%s,%d,%d,%d,%d,%d,%.3f,%.3f,%.3f,%.0f,%.2f,%.2f,%.4f,%.4f,%.4f,%s\n", r->part,
              r->shape, r->kind, r->config, r->variant, r->B, r->L, r->T, r->a, r->copies, r->us, r->us_nonflush,
              r->us_flush, r->model_bytes, r->gbps, r->pct_copy, r->rel_conv, r->model_ratio, r->model_ratio_paper,
              r->check);
  }
  if (json) fprintf(f, "]}\n");
  if (fclose(f) != 0 || rename(tmp, path) != 0) {
    cli_error(CMD, "%s: write failed (%s)", path, strerror(errno));
    remove(tmp);
    return 1;
  }
  return 0;
}

int bench_kernels_main(int argc, char **argv) {
  /* line-buffered, so that a run stopped by a time limit keeps every finished line */
  setvbuf(stdout, NULL, _IOLBF, 0);
  bk_options o;
  int rc = bk_parse_args(argc, argv, &o);
  if (rc < 0) return 0; /* --help */
  if (rc != 0) return rc;
  struct cudaDeviceProp prop;
  char date[64];
  rc = mc_bench_device(CMD, &prop, date, sizeof date);
  if (rc != 0) return rc;
  int drv = 0, rtv = 0;
  cudaDriverGetVersion(&drv);
  cudaRuntimeGetVersion(&rtv);
  printf("replayssm bench kernels: %s, %d SMs, %.0f MiB, L2 %d MiB, driver %d, runtime %d; %s\n", prop.name,
         prop.multiProcessorCount, (double)prop.totalGlobalMem / 1048576.0, prop.l2CacheSize >> 20, drv, rtv, date);
  const double copy = mc_bench_copy_line(CMD, o.iters < 10 ? 10 : o.iters);
  if (copy <= 0.0) return 1;
  printf("timing: median of %d graph replays after %d warm-up; checks on %d rows\n", o.iters, o.warmup,
         o.check_batch);
  fflush(stdout);

  static checks ck;
  memset(&ck, 0, sizeof ck);
  ck.batch = o.check_batch;
  /* the readouts' decoders (16-bit fast path, 8/4-bit tables) against the reference decoders,
     every code, before any kernel uses them */
  long long dbad = ssm_cuda_check_decoders();
  printf("check decoders (every code of bf16, fp16, fp8, fp8_e5m2, int8, mxfp8, nvfp4, mxfp4): %s (%lld differ)\n",
         dbad == 0 ? "bit-identical" : "FAIL", dbad);
  if (dbad != 0) ck.failures++;
  results rs = {NULL, 0, 0};
  static bench bn;
  memset(&bn, 0, sizeof bn);
  bn.o = &o;
  bn.rs = &rs;
  bn.ck = &ck;
  bn.copy_gbps = copy;
  bn.alpha_lo = 0.9f;
  bn.alpha_hi = 0.9999f;
  char dev[300];
  snprintf(dev, sizeof dev, "%s", prop.name);
  for (char *p = dev; *p; p++)
    if (*p == '"' || *p == ',') *p = ' ';
  /* part by part over all shapes, the file rewritten after each measurement group, so that a run
     cut short (a time limit) still leaves every finished table */
  static void (*const part_fn[5])(bench *, int) = {part_std, part_window, part_spec, part_lp, part_skip};
  static const int part_bit[5] = {BK_P_STD, BK_P_WINDOW, BK_P_SPEC, BK_P_LP, BK_P_SKIP};
  rc = 0;
  for (int p = 0; p < 5 && rc == 0; p++) {
    if (!(o.parts & part_bit[p])) continue;
    for (int i = 0; i < o.nshapes && rc == 0; i++) {
      part_fn[p](&bn, o.shapes[i]);
      if (o.out && write_results(o.out, &rs, dev, copy, date) != 0) rc = 1;
      /* the verdicts so far, so that a run cut short still leaves them */
      if (o.targets_out && report_targets(&rs, &o, 0) != 0) rc = 1;
    }
  }
  if (o.out && rc == 0) printf("\nwrote %d rows to %s\n", rs.n, o.out);
  if (report_targets(&rs, &o, 1) != 0) rc = 1;
  printf("%s: %d check(s) failed%s\n", ck.failures || bn.cuda_failed ? "FAIL" : "PASS", ck.failures,
         bn.cuda_failed ? ", and a CUDA error (see above)" : "");
  free(rs.r);
  if (ck.failures || bn.cuda_failed) rc = 1;
  return rc;
}
