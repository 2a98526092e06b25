/* The lockstep run loop (run.h): the driver's side of a run. It opens the model and an engine
 * (engine.h: the CPU lockstep engine, or the GPU's with --device cuda), feeds it the blocks of
 * the token windows, and owns everything else: the metric buffers, the HDF5 file, checkpoints,
 * resume, signals and progress. */
#include "src/driver/run.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "src/io/version.h"
#include "src/driver/run_h5.h"
#include "src/driver/run_internal.h"
#include "src/driver/run_identity.h"
#include "src/driver/run_outputs.h"
#include "src/driver/run_progress.h"
#include "src/driver/run_signal.h"
#include "src/io/out_lock.h"
#include "src/io/status.h"
#include "src/io/atomic_file.h"
#include "src/tokens/token_source.h"

#ifndef RSSM_GIT_COMMIT
#define RSSM_GIT_COMMIT "unknown"
#endif

/* ------------------------------------------------------------------ setup ----------------- */

static void runner_free(runner *r) {
  free(r->tok);
  run_data_free(&r->d);
  rssm_engine_close(r->engine); /* before the model it was opened from */
  free(r->engine_cfgs);
  rssm_model_close(r->m);
  memset(r, 0, sizeof *r);
}

/* The CPU engine's decoder steps, into the progress reporter (started after the engine). */
static void count_steps(void *ctx, int64_t n) {
  const runner *r = ctx;
  run_progress_add(r->prog, n);
}

/* The engine of the run: the CPU lockstep engine, or with --device cuda the GPU's (it holds
 * every row's state on the device). */
static int open_engine(runner *r, const run_options *o, char *err, size_t errlen) {
  char m[1024], where[EXP_PATH_MAX + 32];
  r->engine_cfgs = calloc((size_t)r->C + 1, sizeof *r->engine_cfgs);
  if (!r->engine_cfgs) {
    snprintf(err, errlen, "out of memory");
    return RSSM_ERR_IO;
  }
  for (int64_t c = 0; c < r->C; c++) r->engine_cfgs[c] = r->e->configs[c].cfg;
  const rssm_engine_params ep = {r->m,      &r->e->reference, r->engine_cfgs, r->K,      r->C,
                                 r->N,      r->e->seed,       r->d.offset,    r->B,      o->threads,
                                 count_steps, r};
  if (o->cuda) {
    int rc = cuda_engine_open(&ep, &r->engine, m, sizeof m);
    if (rc != RSSM_OK) snprintf(err, errlen, "--device cuda: %s", m);
    return rc;
  }
  int failed = -2;
  int rc = cpu_engine_open(&ep, &r->engine, &failed, m, sizeof m);
  if (rc == RSSM_OK) return RSSM_OK;
  if (failed >= 0) {
    experiment_where(r->e, r->e->configs[failed].line, "--config", where, sizeof where);
    snprintf(err, errlen, "%s: configuration '%s': %s", where, r->e->configs[failed].cfg.name, m);
  } else {
    snprintf(err, errlen, "%s%s", failed == -1 ? "reference: " : "", m);
  }
  return rc;
}

/* A block of the engine: every row from r->b0 to b1; *done as the engine's block. */
static int engine_block(runner *r, int64_t b1, int64_t *done, char *err, size_t errlen) {
  float *kl[EXP_MAX_CONFIGS], *nll[EXP_MAX_CONFIGS], *dp[EXP_MAX_CONFIGS];
  uint8_t *top1[EXP_MAX_CONFIGS];
  int64_t *fnf[EXP_MAX_CONFIGS];
  for (int64_t c = 0; c < r->C; c++) {
    kl[c] = r->d.cfg[c].kl;
    nll[c] = r->d.cfg[c].nll;
    dp[c] = r->d.cfg[c].dp;
    top1[c] = r->d.cfg[c].top1;
    fnf[c] = r->d.cfg[c].first_nonfinite;
  }
  const rssm_engine_out out = {r->d.ref_nll, kl, nll, dp, top1, fnf};
  return r->engine->ops->block(r->engine, r->tok, r->b0, b1, &out, done, err, errlen);
}

/* Keys that apply only to some models: gdn_u=cached needs GDN layers. */
static int check_model_keys(const experiment *e, const rssm_model *m, char *err, size_t errlen) {
  char where[EXP_PATH_MAX + 32];
  for (int c = 0; c < e->nconfig; c++)
    if (e->configs[c].cfg.gdn_u == SSM_GDN_U_CACHED && m->gdn_layers == 0) {
      experiment_where(e, e->configs[c].line, "--config", where, sizeof where);
      snprintf(err, errlen, "%s: configuration '%s': gdn_u=cached applies to GDN layers, and "
               "model %s has none (expected no gdn_u= key)", where, e->configs[c].cfg.name,
               e->model);
      return RSSM_ERR_INPUT;
    }
  return RSSM_OK;
}

static int setup(runner *r, const experiment *e, const run_options *o, char *err, size_t errlen) {
  char where[EXP_PATH_MAX + 32], m[1024];
  memset(r, 0, sizeof *r);
  r->e = e;
  /* model first: its vocabulary checks the tokens */
  int rc = rssm_model_open(e->model, &r->m, m, sizeof m);
  if (rc != RSSM_OK) {
    experiment_where(e, e->model_line, "--model", where, sizeof where);
    snprintf(err, errlen, "%s: %s", where, m);
    return rc;
  }
  token_source src;
  rc = token_source_load(e->tokens, &src, m, sizeof m);
  if (rc != RSSM_OK) {
    experiment_where(e, e->tokens_line, "--tokens", where, sizeof where);
    snprintf(err, errlen, "%s: %s", where, m);
    return rc;
  }
  experiment_where(e, e->tokens_line, "--tokens", where, sizeof where);
  if (src.max_id >= r->m->vocab) {
    int64_t pos = 0;
    while (src.ids[pos] < r->m->vocab) pos++;
    snprintf(err, errlen, "%s: tokens '%s': token %lld has id %lld, outside the model's "
             "vocabulary [0, %lld)", where, e->tokens, (long long)pos, (long long)src.ids[pos],
             (long long)r->m->vocab);
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  if (src.n < e->steps + 1) {
    snprintf(err, errlen, "%s: tokens '%s' holds %lld tokens, fewer than steps + 1 = %lld", where,
             e->tokens, (long long)src.n, (long long)(e->steps + 1));
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  r->V = r->m->vocab;
  r->N = e->steps;
  r->C = e->nconfig;
  int64_t K_all = e->sequences;
  int64_t lo = K_all * o->shard_i / o->shard_n, hi = K_all * (o->shard_i + 1) / o->shard_n;
  r->K = hi - lo;
  if (r->K < 1) {
    snprintf(err, errlen, "--shard %d/%d: no sequences in this shard (%lld sequences in all)",
             o->shard_i, o->shard_n, (long long)K_all);
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  if (check_model_keys(e, r->m, err, errlen) != RSSM_OK) {
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  r->Tmax = 1;
  for (int c = 0; c < e->nconfig; c++)
    if (e->configs[c].cfg.strategy == SSM_SPEC && e->configs[c].cfg.T > r->Tmax)
      r->Tmax = e->configs[c].cfg.T;
  if (r->Tmax > 64) {
    snprintf(err, errlen, "a spec configuration has T = %d (at most 64)", r->Tmax);
    token_source_free(&src);
    return RSSM_ERR_INPUT;
  }
  /* block: at most ~256 MiB of reference rows, never fewer than Tmax steps */
  int64_t cap = (INT64_C(1) << 28) / (4 * r->V * r->K);
  r->B = e->block < cap ? e->block : cap;
  if (r->B < r->Tmax) r->B = r->Tmax;
  if (r->B > r->N) r->B = r->N;

  if (run_data_alloc(&r->d, r->K, r->N, (int)r->C) != 0) {
    snprintf(err, errlen, "out of memory for %lld x %lld steps of %lld configurations",
             (long long)r->K, (long long)r->N, (long long)r->C);
    token_source_free(&src);
    return RSSM_ERR_IO;
  }
  run_data *d = &r->d;
  snprintf(d->version, sizeof d->version, "%s", rssm_version());
  snprintf(d->commit, sizeof d->commit, "%s", RSSM_GIT_COMMIT);
  snprintf(d->model, sizeof d->model, "%s", e->model);
  snprintf(d->model_checksum, sizeof d->model_checksum, "%s", r->m->checksum);
  d->vocab = r->m->vocab;
  d->vocab_rows = r->m->vocab_rows;
  snprintf(d->tokens_path, sizeof d->tokens_path, "%s", e->tokens);
  snprintf(d->tokens_checksum, sizeof d->tokens_checksum, "crc32:%08x", src.crc);
  snprintf(d->tokenizer, sizeof d->tokenizer, "%s", src.tokenizer);
  ssm_config_to_string(&e->reference, d->reference, sizeof d->reference);
  d->experiment = experiment_to_text(e);
  d->seed = e->seed;
  d->sequences = K_all;
  d->offset = lo;
  snprintf(d->shard, sizeof d->shard, "%d/%d", o->shard_i, o->shard_n);
  for (int c = 0; c < e->nconfig; c++) {
    snprintf(d->cfg[c].name, sizeof d->cfg[c].name, "%s", e->configs[c].cfg.name);
    ssm_config_to_string(&e->configs[c].cfg, d->cfg[c].spec, sizeof d->cfg[c].spec);
  }
  r->tok = malloc((size_t)(r->K * (r->N + 1)) * sizeof(int64_t));
  d->identity = run_identity_text(d, o->cuda ? "cuda" : "cpu");
  if (!d->experiment || !d->identity || !r->tok) {
    snprintf(err, errlen, "out of memory setting up %lld sequences", (long long)r->K);
    token_source_free(&src);
    return RSSM_ERR_IO;
  }
  for (int64_t k = 0; k < r->K; k++) {
    int64_t start = token_window_start(src.n, r->N + 1, K_all, lo + k);
    d->window_start[k] = start;
    for (int64_t t = 0; t <= r->N; t++) {
      r->tok[k * (r->N + 1) + t] = src.ids[start + t];
      d->tokens[k * (r->N + 1) + t] = (int32_t)src.ids[start + t];
    }
  }
  token_source_free(&src);
  /* the fingerprint ties a checkpoint to this experiment, shard and build */
  uLong fp = crc32(0L, Z_NULL, 0);
  fp = crc32(fp, (const Bytef *)d->experiment, (uInt)strlen(d->experiment));
  fp = crc32(fp, (const Bytef *)d->shard, (uInt)strlen(d->shard));
  fp = crc32(fp, (const Bytef *)d->model_checksum, (uInt)strlen(d->model_checksum));
  fp = crc32(fp, (const Bytef *)d->tokens_checksum, (uInt)strlen(d->tokens_checksum));
  if (o->cuda) fp = crc32(fp, (const Bytef *)"cuda", 4); /* GPU row states are another format */
  r->fingerprint = ((uint64_t)fp << 32) ^ (uint64_t)(r->K * 1000003 + r->N);
  return open_engine(r, o, err, errlen);
}

/* ------------------------------------------------------------------ progress -------------- */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void progress(int64_t done, int64_t total, int64_t done0, double t0) {
  double el = now_s() - t0;
  double rate = el > 0 ? (double)(done - done0) / el : 0.0;
  double eta = rate > 0 ? (double)(total - done) / rate : 0.0;
  int w = 30, fill = total ? (int)(w * done / total) : w;
  char bar[64];
  for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
  bar[w] = '\0';
  fprintf(stderr, "\r[%s] %lld/%lld steps  %.1f steps/s  ETA %d:%02d:%02d ", bar, (long long)done,
          (long long)total, rate, (int)(eta / 3600), (int)fmod(eta / 60, 60), (int)fmod(eta, 60));
  fflush(stderr);
}

/* ------------------------------------------------------------------ the run --------------- */

/* The run's file state: every sequence has its first n steps written. */
static void set_written(runner *r, int64_t n) {
  r->written = n;
  for (int64_t k = 0; k < r->K; k++) r->d.steps_written[k] = n;
}

/* Before anything is written: the outputs' paths, an existing output or checkpoint, setup, and
 * what --resume finds. *done: out is already this experiment's complete result. */
static int prepare(runner *r, const experiment *e, const run_options *o, const char *ckpt,
                   int *done, char *err, size_t errlen) {
  *done = 0;
  int have_out = access(o->out, F_OK) == 0, have_ckpt = access(ckpt, F_OK) == 0;
  if (have_out && !o->force && !o->resume) {
    snprintf(err, errlen, "%s: exists (use --force to overwrite it)", o->out);
    return RSSM_ERR_INPUT;
  }
  if (have_ckpt && !o->resume && !o->force) {
    snprintf(err, errlen, "%s: an interrupted run's checkpoint exists (use --resume to continue "
             "it or --force to start over)", ckpt);
    return RSSM_ERR_INPUT;
  }
  if (o->force && !o->resume) unlink(ckpt);
  int rc = setup(r, e, o, err, errlen);
  if (rc != RSSM_OK) return rc;
  int plan = RESUME_FRESH;
  if (o->resume) {
    rc = run_resume_plan(r, o->out, ckpt, &plan, err, errlen);
    if (rc != RSSM_OK) return rc;
  }
  if (plan == RESUME_DONE) {
    fprintf(stderr, "replayssm run: %s is complete; nothing to resume\n", o->out);
    *done = 1;
    return RSSM_OK;
  }
  if (!o->quiet) {
    fprintf(stderr, "replayssm run: %s -> %s (shard %s: sequences %lld..%lld of %lld)\n"
            "model: %s\n# effective experiment\n%s", e->file[0] ? e->file : "(command line)",
            o->out, r->d.shard, (long long)r->d.offset, (long long)(r->d.offset + r->K - 1),
            (long long)r->d.sequences, r->m->description, r->d.experiment);
    if (plan == RESUME_CKPT)
      fprintf(stderr, "replayssm run: resuming at step %lld of %lld\n", (long long)r->b0,
              (long long)r->N);
  }
  set_written(r, r->written);
  return RSSM_OK;
}

/* One line after a SIGTERM/SIGINT: where the run stopped, what is kept, how to go on. */
static void say_stopped(int sig, int64_t step, int64_t N, const char *part, const char *ckpt) {
  fprintf(stderr, "replayssm run: stopped by %s after step %lld of %lld; %s holds the steps "
          "written and %s the state: rerun the same command with --resume to continue\n",
          sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal", (long long)step,
          (long long)N, part, ckpt);
}

int run_experiment(const experiment *e, const run_options *o, char *err, size_t errlen) {
  double t_start = now_s();
  char part[4200], ckpt[4200];
  snprintf(part, sizeof part, "%s.part", o->out);
  snprintf(ckpt, sizeof ckpt, "%s.ckpt", o->out);
  /* the paths first (they write nothing), then the lock, before anything is written */
  int rc = run_outputs_check(e, o->out, err, errlen);
  if (rc != RSSM_OK) return rc;
  out_lock lock;
  rc = out_lock_take(o->out, &lock, err, errlen);
  if (rc != RSSM_OK) return rc;
  runner r;
  memset(&r, 0, sizeof r);
  int finished = 0;
  rc = prepare(&r, e, o, ckpt, &finished, err, errlen);
  if (rc != RSSM_OK || finished) {
    runner_free(&r);
    out_lock_release(&lock);
    return rc;
  }
  run_signal_install();
  run_h5 *h = run_h5_create(part, &r.d, err, errlen);
  if (!h) {
    run_signal_restore();
    runner_free(&r);
    out_lock_release(&lock);
    return RSSM_ERR_IO;
  }
  /* a resumed run rewrites what its checkpoint holds: the old .part may be torn */
  rc = run_h5_write_columns(h, &r.d, 0, r.written, err, errlen);

  const char *kill_env = getenv("RSSM_TEST_KILL_AFTER_BLOCK");
  long kill_after = kill_env ? atol(kill_env) : -1;
  long blocks = 0;
  int64_t last_ckpt = r.b0;
  double t0 = now_s();
  int64_t done0 = r.written;
  int stop = 0; /* the signal that asked the run to stop (run_signal.h) */
  /* reports by time between the blocks' (RSSM_PROGRESS_SECONDS, default 5) */
  const char *pe = getenv("RSSM_PROGRESS_SECONDS");
  double every = pe && atof(pe) > 0 ? atof(pe) : 5.0;
  if (!o->quiet && rc == RSSM_OK)
    r.prog = run_progress_start(r.N, r.K * (r.C + 1), r.written, every, o->progress);
  /* RSSM_BLOCK_TIMES=1: one stderr line per block with its wall time (time per step at the
   * start and end of a run, docs/real-checkpoints.md) */
  const char *bt = getenv("RSSM_BLOCK_TIMES");
  const int block_times = bt && strcmp(bt, "1") == 0;
  while (rc == RSSM_OK && r.b0 < r.N) {
    int64_t b1 = r.b0 + r.B < r.N ? r.b0 + r.B : r.N;
    int64_t complete = b1;
    const double tb = now_s();
    rc = engine_block(&r, b1, &complete, err, errlen);
    if (rc != RSSM_OK) break;
    if (block_times) {
      const double dt = now_s() - tb;
      fprintf(stderr, "replayssm run: block steps %lld..%lld: %.4f s, %.3f ms per step\n",
              (long long)r.b0, (long long)b1, dt, 1e3 * dt / (double)(b1 > r.b0 ? b1 - r.b0 : 1));
    }
    r.b0 = b1;
    int64_t written0 = r.written;
    set_written(&r, complete);
    rc = run_h5_write_columns(h, &r.d, written0, r.written, err, errlen);
    int64_t done = r.written;
    stop = run_signal_pending();
    if (rc == RSSM_OK && r.b0 < r.N && (stop || r.b0 - last_ckpt >= e->checkpoint_every)) {
      rc = run_ckpt_save(&r, ckpt, err, errlen);
      last_ckpt = r.b0;
      /* batch jobs (no terminal) get one progress line per checkpoint instead of a bar */
      if (rc == RSSM_OK && !o->progress && !o->quiet) {
        double el = now_s() - t0, rate = el > 0 ? (double)(done - done0) / el : 0.0;
        fprintf(stderr, "replayssm run: step %lld of %lld, %.1f steps/s, checkpoint %s\n",
                (long long)done, (long long)r.N, rate, ckpt);
      }
    }
    run_progress_steps(r.prog, done);
    if (o->progress) progress(done, r.N, done0, t0);
    if (++blocks == kill_after) raise(SIGKILL); /* tests: die between two blocks */
    if (stop && rc == RSSM_OK && r.b0 < r.N) break;
  }
  run_signal_restore();
  run_progress_stop(r.prog);
  r.prog = NULL;
  if (rc == RSSM_OK && run_h5_set_wall_seconds(h, now_s() - t_start) != 0) {
    snprintf(err, errlen, "%s: writing the attribute wall_seconds failed", part);
    rc = RSSM_ERR_IO;
  }
  if (run_h5_close(h) != 0 && rc == RSSM_OK) {
    snprintf(err, errlen, "%s: closing the HDF5 file failed", part);
    rc = RSSM_ERR_IO;
  }
  if (rc == RSSM_OK && stop && r.b0 < r.N) {
    say_stopped(stop, r.b0, r.N, part, ckpt);
    runner_free(&r);
    out_lock_release(&lock);
    return 128 + stop;
  }
  if (rc == RSSM_OK) rc = atomic_commit(part, o->out, err, errlen);
  if (rc == RSSM_OK) unlink(ckpt);
  if (rc == RSSM_OK && !o->quiet)
    fprintf(stderr, "replayssm run: wrote %s (%lld sequences x %lld steps, %lld configurations)\n",
            o->out, (long long)r.K, (long long)r.N, (long long)r.C);
  runner_free(&r);
  out_lock_release(&lock);
  return rc;
}
