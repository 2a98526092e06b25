/* `bench e2e --spec T1,T2,..` (bench_spec.h, docs/gpu-runtime.md "bench e2e"): spec rounds
 * against standard steps, committed tokens per second.
 *
 * For one device model and K streams: the standard step is a lockstep batch of one
 * configuration (`replay L=16 ckpt=fp32`, K rows, CUDA Graph on, metrics on: the run engine's
 * step); each spec case is a spec batch of `spec L=max(16,T) T=T ckpt=fp32 accept=A` (K rows)
 * for A in fixed:T (every draft accepted: the ceiling), uniform and geom:0.7, played in rounds
 * as the run engine plays them (a per row from ssm_accept_draw, T random drafts, metrics against
 * a reference ring filled from the standard batch's rows). W untimed rounds (steps), then N
 * timed ones in blocks of B with the host clock around each block; reported: the median time per
 * round (step), the mean accepted tokens per row and round, and tokens committed per second =
 * committed tokens of a block / its time, median over blocks (for standard steps K / time per
 * step). The standard step includes no reference row and the spec round no lockstep step: in a
 * run the reference steps once per committed position whatever the configurations do. */
#include <gsl/gsl_statistics_double.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/bench_e2e/bench_spec.h"
#include "src/io/status.h"
#include "src/model_cuda/mc_model.h"
#include "src/ssm/ssm_accept.h"
#include "src/ssm/ssm_config.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

/* The standard step's timing into *ms_step; the batch is kept (its last step fills the ring). */
static int time_standard(mc_model *g, int64_t V, int K, const bench_spec_opts *o,
                         const uint32_t *seqs, mc_batch **out, double *ms_step, char *err,
                         size_t errlen) {
  ssm_config cfg;
  int rc = ssm_config_parse("replay L=16 ckpt=fp32", &cfg, err, errlen) == 0 ? RSSM_OK
                                                                             : RSSM_ERR_INPUT;
  const int64_t nsteps = o->warmup + o->blocks * o->block;
  if (rc == RSSM_OK)
    rc = mc_batch_build(out, g, &cfg, 1, K, o->seed, seqs, nsteps + 1, err, errlen);
  if (rc != RSSM_OK) return rc;
  mc_batch_use_graph(*out, 1);
  int64_t *x = malloc((size_t)K * sizeof *x), *y = malloc((size_t)K * sizeof *y); /* [K] */
  mc_row_metrics *met = malloc((size_t)K * sizeof *met);                         /* [K] */
  double *bt = malloc((size_t)o->blocks * sizeof *bt);                           /* [blocks] */
  if (!x || !y || !met || !bt) rc = RSSM_ERR_IO, snprintf(err, errlen, "out of host memory");
  double t0 = 0;
  for (int64_t t = 0; rc == RSSM_OK && t < nsteps; t++) {
    const int64_t b = t - o->warmup;
    if (b >= 0 && b % o->block == 0) t0 = now_s();
    for (int k = 0; k < K; k++) {
      x[k] = (int64_t)(mix(o->seed + (uint64_t)k * 1000003u + (uint64_t)t) % (uint64_t)V);
      y[k] = (int64_t)(mix(o->seed + (uint64_t)k * 1000003u + (uint64_t)t + 1) % (uint64_t)V);
    }
    rc = mc_batch_step(*out, x, y, NULL, met, err, errlen);
    if (rc == RSSM_OK && b >= 0 && b % o->block == o->block - 1)
      bt[b / o->block] = (now_s() - t0) / (double)o->block;
  }
  if (rc == RSSM_OK) *ms_step = 1e3 * gsl_stats_median(bt, 1, (size_t)o->blocks);
  free(x), free(y), free(met), free(bt);
  return rc;
}

/* One spec case: its rounds timed; prints its line. */
static int time_spec(mc_model *g, int64_t V, int K, int T, const char *accept,
                     const bench_spec_opts *o, const uint32_t *seqs, const mc_batch *std,
                     double ms_std, char *err, size_t errlen) {
  char text[128];
  snprintf(text, sizeof text, "spec L=%d T=%d ckpt=fp32 accept=%s", T > 16 ? T : 16, T, accept);
  ssm_config cfg;
  if (ssm_config_parse(text, &cfg, err, errlen) != 0) return RSSM_ERR_INPUT;
  const int64_t rounds = o->warmup + o->blocks * o->block;
  const int slots = 64;
  mc_batch *b = NULL;
  mc_ref_ring *q = NULL;
  int rc = mc_batch_build_spec(&b, g, &cfg, 1, K, o->seed, seqs, rounds * T + T + 1, err, errlen);
  if (rc == RSSM_OK) rc = mc_ref_ring_build(&q, g, K, slots, err, errlen);
  /* every slot holds the standard batch's last rows: the metrics do their full work */
  for (int s = 0; rc == RSSM_OK && s < slots; s++) rc = mc_ref_ring_store(q, std, s, err, errlen);
  int64_t *dr = malloc((size_t)K * (size_t)T * sizeof *dr); /* [K][T] */
  int64_t *tg = malloc((size_t)K * (size_t)T * sizeof *tg); /* [K][T] */
  int *acc = malloc((size_t)K * sizeof *acc);                /* [K] */
  mc_row_metrics *met = malloc((size_t)K * (size_t)T * sizeof *met);
  double *bt = malloc((size_t)o->blocks * sizeof *bt), *rate = malloc((size_t)o->blocks * 8);
  if (rc == RSSM_OK && (!dr || !tg || !acc || !met || !bt || !rate))
    rc = RSSM_ERR_IO, snprintf(err, errlen, "out of host memory");
  double t0 = 0, committed = 0, sum_a = 0;
  for (int64_t r = 0; rc == RSSM_OK && r < rounds; r++) {
    const int64_t blk = r - o->warmup;
    if (blk >= 0 && blk % o->block == 0) t0 = now_s(), committed = 0;
    for (int k = 0; k < K; k++) {
      acc[k] = ssm_accept_draw(&cfg, o->seed, (uint32_t)k, (uint32_t)r);
      for (int j = 0; j < T; j++) {
        const uint64_t h = mix(o->seed ^ ((uint64_t)k << 40) ^ ((uint64_t)r << 8) ^ (uint64_t)j);
        dr[k * T + j] = (int64_t)(h % (uint64_t)V);
        tg[k * T + j] = (int64_t)(mix(h) % (uint64_t)V);
      }
    }
    rc = mc_batch_spec_round(b, q, dr, tg, acc, met, err, errlen);
    if (blk >= 0)
      for (int k = 0; k < K; k++) committed += acc[k], sum_a += acc[k];
    if (rc == RSSM_OK && blk >= 0 && blk % o->block == o->block - 1) {
      const double dt = now_s() - t0;
      bt[blk / o->block] = dt / (double)o->block;
      rate[blk / o->block] = committed / dt;
    }
  }
  if (rc == RSSM_OK) {
    const double ms = 1e3 * gsl_stats_median(bt, 1, (size_t)o->blocks);
    const double tps = gsl_stats_median(rate, 1, (size_t)o->blocks), tps_std = 1e3 * K / ms_std;
    const double mean_a = sum_a / ((double)K * (double)(o->blocks * o->block));
    printf("bench e2e spec: %s K=%d T=%d accept=%s: %.3f ms per round, mean a %.2f, %.0f tokens/s "
           "committed (standard step %.3f ms, %.0f tokens/s: x%.2f)\n",
           o->label, K, T, accept, ms, mean_a, tps, ms_std, tps_std, tps / tps_std);
    if (o->csv) {
      FILE *f = fopen(o->csv, "a");
      if (!f) {
        rc = RSSM_ERR_IO;
        snprintf(err, errlen, "%s: cannot append", o->csv);
      } else {
        if (ftell(f) == 0)
          fprintf(f, "label,K,T,accept,ms_per_round,mean_accepted,tokens_per_s,"
                     "standard_ms_per_step,standard_tokens_per_s,speedup\n");
        fprintf(f, "%s,%d,%d,%s,%.6f,%.4f,%.1f,%.6f,%.1f,%.4f\n", o->label, K, T, accept, ms,
                mean_a, tps, ms_std, tps_std, tps / tps_std);
        fclose(f);
      }
    }
    fflush(stdout);
  }
  free(dr), free(tg), free(acc), free(met), free(bt), free(rate);
  mc_ref_ring_free(q);
  mc_batch_free(b);
  return rc;
}

int bench_spec_measure(mc_model *g, int64_t V, int K, const int *Ts, int nT,
                       const bench_spec_opts *o, char *err, size_t errlen) {
  uint32_t *seqs = malloc((size_t)K * sizeof *seqs); /* [K] */
  if (!seqs) return snprintf(err, errlen, "out of host memory"), RSSM_ERR_IO;
  for (int k = 0; k < K; k++) seqs[k] = (uint32_t)k;
  mc_batch *std = NULL;
  double ms_std = 0;
  int rc = time_standard(g, V, K, o, seqs, &std, &ms_std, err, errlen);
  for (int i = 0; rc == RSSM_OK && i < nT; i++) {
    char fixed[32];
    snprintf(fixed, sizeof fixed, "fixed:%d", Ts[i]);
    const char *acc[3] = {fixed, "uniform", "geom:0.7"};
    for (int j = 0; rc == RSSM_OK && j < 3; j++)
      rc = time_spec(g, V, K, Ts[i], acc[j], o, seqs, std, ms_std, err, errlen);
  }
  mc_batch_free(std);
  free(seqs);
  return rc;
}
