/* fp32 building blocks (see linalg.h). */
#include "src/model/linalg.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

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

/* ---- row-outer products over several vectors (matvec_many) ----
 * GCC vector extensions (plain SSE on x86-64, no -march needed): lanes 0-3 of dot_f32's eight
 * partial sums in one vector, lanes 4-7 in another; each lane does exactly dot_f32's operations
 * (p[l] = p[l] + a * b, no contraction under ISO C), so every result has its bits. */
typedef float v4f __attribute__((vector_size(16)));

static inline v4f ld4(const float *p) {
  v4f v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline float lanes_reduce(v4f lo, v4f hi, const float *a, const float *b, int64_t i,
                                 int64_t n) {
  float p[8];
  memcpy(p, &lo, sizeof lo);
  memcpy(p + 4, &hi, sizeof hi);
  for (int l = 0; i + l < n; l++) p[l] = p[l] + a[i + l] * b[i + l];
  return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7]));
}

/* out[j] = dot_f32(w, x[j], n) for j < 4, 2, 1: the accumulators are named variables so that
 * they stay in registers (GCC -O2 keeps an array of them in memory). */
#define DOT_LANES(j)                                   \
  do {                                                 \
    lo##j = lo##j + wl * ld4(x##j + i);                \
    hi##j = hi##j + wh * ld4(x##j + i + 4);            \
  } while (0)

static void dot4(const float *w, const float *const *x, int64_t n, float *out) {
  const float *x0 = x[0], *x1 = x[1], *x2 = x[2], *x3 = x[3];
  const v4f z = {0.0f, 0.0f, 0.0f, 0.0f};
  v4f lo0 = z, hi0 = z, lo1 = z, hi1 = z, lo2 = z, hi2 = z, lo3 = z, hi3 = z;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const v4f wl = ld4(w + i), wh = ld4(w + i + 4);
    DOT_LANES(0);
    DOT_LANES(1);
    DOT_LANES(2);
    DOT_LANES(3);
  }
  out[0] = lanes_reduce(lo0, hi0, w, x0, i, n);
  out[1] = lanes_reduce(lo1, hi1, w, x1, i, n);
  out[2] = lanes_reduce(lo2, hi2, w, x2, i, n);
  out[3] = lanes_reduce(lo3, hi3, w, x3, i, n);
}

static void dot2(const float *w, const float *const *x, int64_t n, float *out) {
  const float *x0 = x[0], *x1 = x[1];
  const v4f z = {0.0f, 0.0f, 0.0f, 0.0f};
  v4f lo0 = z, hi0 = z, lo1 = z, hi1 = z;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const v4f wl = ld4(w + i), wh = ld4(w + i + 4);
    DOT_LANES(0);
    DOT_LANES(1);
  }
  out[0] = lanes_reduce(lo0, hi0, w, x0, i, n);
  out[1] = lanes_reduce(lo1, hi1, w, x1, i, n);
}

static void dot1(const float *w, const float *const *x, int64_t n, float *out) {
  const float *x0 = x[0];
  const v4f z = {0.0f, 0.0f, 0.0f, 0.0f};
  v4f lo0 = z, hi0 = z;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const v4f wl = ld4(w + i), wh = ld4(w + i + 4);
    DOT_LANES(0);
  }
  out[0] = lanes_reduce(lo0, hi0, w, x0, i, n);
}

typedef struct {
  const float *W;
  const float *const *x; /* [nx] -> [cols] */
  float *const *y;       /* [nx] -> [rows] */
  int nx;
  int64_t r0, r1, cols;
} mvm_job;

static void *mvm_run(void *arg) {
  const mvm_job *jb = arg;
  float o[4];
  for (int64_t r = jb->r0; r < jb->r1; r++) {
    const float *w = jb->W + r * jb->cols; /* [cols] */
    int j = 0;
    for (; j + 4 <= jb->nx; j += 4) {
      dot4(w, jb->x + j, jb->cols, o);
      for (int q = 0; q < 4; q++) jb->y[j + q][r] = o[q];
    }
    if (j + 2 <= jb->nx) {
      dot2(w, jb->x + j, jb->cols, o);
      jb->y[j][r] = o[0];
      jb->y[j + 1][r] = o[1];
      j += 2;
    }
    if (j < jb->nx) {
      dot1(w, jb->x + j, jb->cols, o);
      jb->y[j][r] = o[0];
    }
  }
  return NULL;
}

void matvec_many(const float *W, int64_t rows, int64_t cols, const float *const *x,
                 float *const *y, int nx) {
  if (nx < 1 || rows < 1) return;
  int nt = g_threads;
  if (nt > 1 && rows * cols * nx >= MV_THREAD_MIN && rows >= nt) {
    pthread_t tid[64];
    mvm_job jobs[64];
    int started[64];
    for (int t = 0; t < nt; t++) {
      jobs[t] = (mvm_job){W, x, y, nx, rows * t / nt, rows * (t + 1) / nt, cols};
      started[t] = 0;
    }
    for (int t = 1; t < nt; t++)
      started[t] = pthread_create(&tid[t], NULL, mvm_run, &jobs[t]) == 0;
    mvm_run(&jobs[0]);
    for (int t = 1; t < nt; t++) {
      if (started[t]) pthread_join(tid[t], NULL);
      else mvm_run(&jobs[t]);
    }
    return;
  }
  mvm_job one = {W, x, y, nx, 0, rows, cols};
  mvm_run(&one);
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
