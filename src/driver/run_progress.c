/* Progress by time (run_progress.h). */
#include "src/driver/run_progress.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct run_progress {
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop;
  int bar;
  double interval, t0;
  int64_t N, decoders, done0;
  atomic_llong units;     /* decoder steps counted since the start */
  atomic_llong complete;  /* steps known complete (block boundaries) */
};

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void report(run_progress *p) {
  double el = mono_s() - p->t0;
  int64_t est = p->done0 + (int64_t)(atomic_load(&p->units) / p->decoders);
  int64_t full = (int64_t)atomic_load(&p->complete);
  if (est < full) est = full;
  if (est > p->N) est = p->N;
  double rate = el > 0 ? (double)(est - p->done0) / el : 0.0;
  double eta = rate > 0 ? (double)(p->N - est) / rate : 0.0;
  int pct = p->N ? (int)(100 * est / p->N) : 100;
  if (p->bar) {
    char bar[32];
    int w = 30, fill = p->N ? (int)(w * est / p->N) : w;
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = '\0';
    fprintf(stderr, "\r[%s] %lld/%lld steps  %.1f steps/s  ETA %d:%02d:%02d ", bar,
            (long long)est, (long long)p->N, rate, (int)(eta / 3600), (int)fmod(eta / 60, 60),
            (int)fmod(eta, 60));
  } else {
    fprintf(stderr, "replayssm run: %.0f s: step ~%lld of %lld (%d%%), %.1f steps/s, about %.0f s "
            "left\n", el, (long long)est, (long long)p->N, pct, rate, eta);
  }
  fflush(stderr);
}

static void *loop(void *arg) {
  run_progress *p = arg;
  pthread_mutex_lock(&p->mu);
  while (!p->stop) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    double s = (double)until.tv_sec + 1e-9 * (double)until.tv_nsec + p->interval;
    until.tv_sec = (time_t)s;
    until.tv_nsec = (long)((s - (double)until.tv_sec) * 1e9);
    int rc = 0;
    while (!p->stop && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&p->cv, &p->mu, &until);
    if (!p->stop) report(p);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

run_progress *run_progress_start(int64_t N, int64_t decoders, int64_t done, double interval,
                                 int bar) {
  run_progress *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->N = N;
  p->decoders = decoders > 0 ? decoders : 1;
  p->done0 = done;
  p->interval = interval;
  p->bar = bar;
  p->t0 = mono_s();
  atomic_init(&p->units, 0);
  atomic_init(&p->complete, done);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  if (pthread_create(&p->thread, NULL, loop, p) != 0) {
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->cv);
    free(p);
    return NULL;
  }
  return p;
}

void run_progress_add(run_progress *p, int64_t n) {
  if (p) atomic_fetch_add_explicit(&p->units, n, memory_order_relaxed);
}

void run_progress_steps(run_progress *p, int64_t done) {
  if (p) atomic_store(&p->complete, done);
}

void run_progress_stop(run_progress *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_signal(&p->cv);
  pthread_mutex_unlock(&p->mu);
  pthread_join(p->thread, NULL);
  if (p->bar) {
    atomic_store(&p->units, 0);
    report(p);
    fputc('\n', stderr);
  }
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  free(p);
}
