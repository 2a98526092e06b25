/* parallel_for (parallel.h) with pthreads and a mutex-protected counter. */
#include "src/decode/parallel.h"

#include <pthread.h>

typedef struct {
  pthread_mutex_t mu;
  int64_t next, n;
  int rc;
  parallel_fn fn;
  void *ctx;
} pool;

typedef struct {
  pool *p;
  int thread;
} worker_arg;

static void *worker(void *arg) {
  worker_arg *w = arg;
  pool *p = w->p;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    int64_t item = p->rc == 0 && p->next < p->n ? p->next++ : -1;
    pthread_mutex_unlock(&p->mu);
    if (item < 0) break;
    int rc = p->fn(p->ctx, item, w->thread);
    if (rc != 0) {
      pthread_mutex_lock(&p->mu);
      if (p->rc == 0) p->rc = rc;
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

int parallel_for(int64_t n, int threads, parallel_fn fn, void *ctx) {
  pool p = {PTHREAD_MUTEX_INITIALIZER, 0, n, 0, fn, ctx};
  enum { MAXT = 256 };
  if (threads < 1) threads = 1;
  if (threads > MAXT) threads = MAXT;
  if ((int64_t)threads > n) threads = n > 0 ? (int)n : 1;
  pthread_t tid[MAXT];
  worker_arg args[MAXT];
  int started = 0;
  for (int t = 1; t < threads; t++) {
    args[t] = (worker_arg){&p, t};
    if (pthread_create(&tid[t], NULL, worker, &args[t]) != 0) break;
    started = t;
  }
  args[0] = (worker_arg){&p, 0};
  worker(&args[0]); /* the calling thread works too; a failed create just means fewer helpers */
  for (int t = 1; t <= started; t++) pthread_join(tid[t], NULL);
  pthread_mutex_destroy(&p.mu);
  return p.rc;
}
