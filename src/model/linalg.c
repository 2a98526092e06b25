/* fp32 building blocks (see linalg.h). */
#include "src/model/linalg.h"

#include <math.h>
#include <pthread.h>

static int g_threads = 2;

void linalg_set_threads(int n) { g_threads = n < 1 ? 1 : (n > 64 ? 64 : n); }
int linalg_threads(void) { return g_threads; }

float dot_f32(const float *a, const float *b, int64_t n) {
  float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int l = 0; l < 8; l++) p[l] = p[l] + a[i + l] * b[i + l];
  for (int l = 0; i + l < n; l++) p[l] = p[l] + a[i + l] * b[i + l];
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

typedef struct {
  const float *W, *x; /* [rows][cols], [cols] */
  float *y;           /* [rows] */
  int64_t r0, r1, cols;
} mv_job;

static void *mv_run(void *arg) {
  mv_job *j = arg;
  for (int64_t r = j->r0; r < j->r1; r++) j->y[r] = dot_f32(j->W + r * j->cols, j->x, j->cols);
  return NULL;
}

/* Below this many multiply-adds a thread costs more than it saves. */
#define MV_THREAD_MIN (1 << 17)

void matvec(const float *W, const float *x, float *y, int64_t rows, int64_t cols) {
  int nt = g_threads;
  if (nt > 1 && rows * cols >= MV_THREAD_MIN && rows >= nt) {
    pthread_t tid[64];
    mv_job jobs[64];
    int started[64];
    /* contiguous row ranges: thread t takes [t*rows/nt, (t+1)*rows/nt) */
    for (int t = 0; t < nt; t++) {
      jobs[t] = (mv_job){W, x, y, rows * t / nt, rows * (t + 1) / nt, cols};
      started[t] = 0;
    }
    for (int t = 1; t < nt; t++)
      started[t] = pthread_create(&tid[t], NULL, mv_run, &jobs[t]) == 0;
    mv_run(&jobs[0]);
    /* a thread that could not start: do its rows here (same arithmetic per row) */
    for (int t = 1; t < nt; t++) {
      if (started[t]) pthread_join(tid[t], NULL);
      else mv_run(&jobs[t]);
    }
    return;
  }
  for (int64_t r = 0; r < rows; r++) y[r] = dot_f32(W + r * cols, x, cols);
}

void rmsnorm(const float *x, const float *w, int plus_one, double eps, float *y, int64_t n) {
  float ss = dot_f32(x, x, n);
  float inv = 1.0f / sqrtf(ss / (float)n + (float)eps);
  for (int64_t i = 0; i < n; i++) {
    float v = x[i] * inv;
    if (w) v = v * (plus_one ? 1.0f + w[i] : w[i]);
    y[i] = v;
  }
}

float silu_f(float x) { return x / (1.0f + expf(-x)); }
float sigmoid_f(float x) { return 1.0f / (1.0f + expf(-x)); }
float softplus_f(float x) { return x > 20.0f ? x : log1pf(expf(x)); }
