/* model_random_build: a `model` with random weights from a config.json (model_random.h). */
#include "src/io/errbuf.h"
#include "src/model/model_random.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the plan: every array to allocate, and how to fill it --- */

typedef enum { FILL_UNIFORM = 0, FILL_CONST, FILL_A_LOG, FILL_DT_BIAS } fill_kind;

typedef struct {
  float *p;      /* [n] */
  int64_t n;
  fill_kind kind;
  float a;       /* FILL_UNIFORM: half-width; FILL_CONST: the value */
  uint64_t key;  /* per-array generator key */
} fill_job;

typedef struct {
  fill_job *jobs; /* [njobs] */
  int njobs, cap;
  uint64_t seed;
  int failed;     /* 1 after an allocation failure */
  int64_t bytes;  /* allocated so far */
  int64_t floats;
} planner;

static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/* malloc n floats and record how to fill them; NULL after (or on) a failure. */
static float *arr(planner *P, int64_t n, fill_kind kind, float a) {
  if (P->failed) return NULL;
  if (n <= 0) n = 1;
  if (P->njobs == P->cap) {
    int nc = P->cap ? 2 * P->cap : 256;
    fill_job *nj = realloc(P->jobs, (size_t)nc * sizeof *nj); /* [nc] */
    if (!nj) {
      P->failed = 1;
      return NULL;
    }
    P->jobs = nj;
    P->cap = nc;
  }
  float *p = malloc((size_t)n * sizeof *p); /* [n] */
  if (!p) {
    P->failed = 1;
    return NULL;
  }
  fill_job *j = &P->jobs[P->njobs];
  j->p = p;
  j->n = n;
  j->kind = kind;
  j->a = a;
  j->key = mix64(P->seed ^ mix64((uint64_t)P->njobs + 1));
  P->njobs++;
  P->bytes += n * (int64_t)sizeof(float);
  P->floats += n;
  return p;
}

/* standard deviation 0.02 as a uniform distribution: half-width 0.02 sqrt(3) */
#define W_HALF 0.034641016f

static float *mat(planner *P, int64_t rows, int64_t cols) {
  return arr(P, rows * cols, FILL_UNIFORM, W_HALF);
}
static float *ones(planner *P, int64_t n) { return arr(P, n, FILL_CONST, 1.0f); }
static float *zeros(planner *P, int64_t n) { return arr(P, n, FILL_CONST, 0.0f); }

/* ---- the fill --- */

static float value_at(const fill_job *j, int64_t i) {
  if (j->kind == FILL_CONST) return j->a;
  const uint64_t x = mix64(j->key + (uint64_t)i * 0x9e3779b97f4a7c15ULL);
  /* u uniform on (0, 1): 24 random bits, centred in their interval */
  const float u = ((float)(x >> 40) + 0.5f) * (1.0f / 16777216.0f);
  switch (j->kind) {
    case FILL_UNIFORM:
      return (2.0f * u - 1.0f) * j->a;
    case FILL_A_LOG:
      return (float)log(1.0 + 15.0 * (double)u);
    case FILL_DT_BIAS: {
      const double dt = exp(log(0.001) + (double)u * (log(0.1) - log(0.001)));
      return (float)(dt + log(-expm1(-dt))); /* softplus^-1(dt) */
    }
    default:
      return 0.0f;
  }
}

#define CHUNK ((int64_t)1 << 22)

typedef struct {
  const planner *P;
  const int64_t *chunk0; /* [njobs + 1] first global chunk of each job */
  atomic_llong next;     /* next global chunk to fill */
} filler;

static void *fill_worker(void *arg) {
  filler *F = arg;
  const planner *P = F->P;
  const int64_t total = F->chunk0[P->njobs];
  int jb = 0;
  for (;;) {
    const int64_t c = (int64_t)atomic_fetch_add(&F->next, 1);
    if (c >= total) break;
    if (c < F->chunk0[jb]) jb = 0; /* chunks are handed out in order; this never happens */
    while (F->chunk0[jb + 1] <= c) jb++;
    const fill_job *j = &P->jobs[jb];
    const int64_t i0 = (c - F->chunk0[jb]) * CHUNK;
    const int64_t i1 = i0 + CHUNK < j->n ? i0 + CHUNK : j->n;
    float *p = j->p; /* [n] */
    if (j->kind == FILL_UNIFORM) { /* the bulk of the weights: value_at's arithmetic, inline */
      const uint64_t key = j->key;
      const float a = j->a;
      for (int64_t i = i0; i < i1; i++) {
        const uint64_t x = mix64(key + (uint64_t)i * 0x9e3779b97f4a7c15ULL);
        const float u = ((float)(x >> 40) + 0.5f) * (1.0f / 16777216.0f);
        p[i] = (2.0f * u - 1.0f) * a;
      }
    } else {
      for (int64_t i = i0; i < i1; i++) p[i] = value_at(j, i);
    }
  }
  return NULL;
}

static int fill_all(const planner *P, int threads) {
  int64_t *chunk0 = malloc((size_t)(P->njobs + 1) * sizeof *chunk0); /* [njobs + 1] */
  if (!chunk0) return -1;
  chunk0[0] = 0;
  for (int i = 0; i < P->njobs; i++) chunk0[i + 1] = chunk0[i] + (P->jobs[i].n + CHUNK - 1) / CHUNK;
  filler F;
  F.P = P;
  F.chunk0 = chunk0;
  atomic_init(&F.next, 0);
  if (threads <= 0) {
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    threads = nc > 0 ? (int)nc : 1;
  }
  if (threads > 64) threads = 64;
  pthread_t tid[64];
  int started = 0;
  for (int t = 1; t < threads; t++) {
    if (pthread_create(&tid[started], NULL, fill_worker, &F) != 0) break;
    started++;
  }
  fill_worker(&F); /* this thread works too; the result does not depend on who fills what */
  for (int t = 0; t < started; t++) pthread_join(tid[t], NULL);
  free(chunk0);
  return 0;
}

/* ---- the arrays of each block kind, as model_load makes them --- */

static void plan_mlp(planner *P, mlp_weights *w, int64_t H, int64_t I, int gated) {
  w->I = I;
  if (gated) w->w_gate = mat(P, I, H);
  w->w_up = mat(P, I, H);
  w->w_down = mat(P, H, I);
}

static void plan_block(planner *P, const model_config *c, model_block_w *b) {
  const int64_t H = c->H;
  /* pre-norms are the identity: 0 under Qwen's (1+w), 1 under Nemotron-H's plain w */
  b->norm = c->norm_plus_one ? zeros(P, H) : ones(P, H);
  switch (b->kind) {
    case BK_GDN: {
      gdn_weights *g = &b->gdn;
      const int64_t kd = c->gdn_hk * c->gdn_dk, vd = c->gdn_hv * c->gdn_dv;
      const int64_t conv_dim = 2 * kd + vd, K = c->gdn_kernel;
      g->w_qkv = mat(P, conv_dim, H);
      g->w_z = mat(P, vd, H);
      g->w_b = mat(P, c->gdn_hv, H);
      g->w_a = mat(P, c->gdn_hv, H);
      g->conv_w = arr(P, conv_dim * K, FILL_UNIFORM, (float)(1.0 / sqrt((double)K)));
      g->dt_bias = arr(P, c->gdn_hv, FILL_DT_BIAS, 0.0f);
      g->A_log = arr(P, c->gdn_hv, FILL_A_LOG, 0.0f);
      g->norm = ones(P, c->gdn_dv); /* plain w */
      g->w_out = mat(P, H, vd);
      break;
    }
    case BK_QATTN:
    case BK_NATTN: {
      attn_weights *a = &b->attn;
      const int64_t qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim;
      a->w_q = mat(P, (b->kind == BK_QATTN ? 2 : 1) * qd, H);
      a->w_k = mat(P, kvd, H);
      a->w_v = mat(P, kvd, H);
      a->w_o = mat(P, H, qd);
      if (b->kind == BK_QATTN) {
        a->q_norm = zeros(P, c->head_dim);
        a->k_norm = zeros(P, c->head_dim);
      }
      break;
    }
    case BK_MAMBA2: {
      mamba2_weights *w = &b->mamba;
      const int64_t di = c->m_heads * c->m_head_dim, conv_dim = di + 2 * c->m_groups * c->m_state;
      const int64_t K = c->m_kernel;
      w->w_in = mat(P, di + conv_dim + c->m_heads, H);
      w->conv_w = arr(P, conv_dim * K, FILL_UNIFORM, (float)(1.0 / sqrt((double)K)));
      if (c->m_conv_bias) w->conv_b = zeros(P, conv_dim);
      w->A_log = arr(P, c->m_heads, FILL_A_LOG, 0.0f);
      w->D = ones(P, c->m_heads);
      w->dt_bias = arr(P, c->m_heads, FILL_DT_BIAS, 0.0f);
      w->norm = ones(P, di);
      w->w_out = mat(P, H, di);
      break;
    }
    case BK_SWIGLU:
    case BK_RELU2:
      plan_mlp(P, &b->mlp, H, c->inter, b->kind == BK_SWIGLU);
      break;
    case BK_QMOE:
    case BK_NMOE: {
      moe_weights *w = &b->moe;
      const int64_t E = c->n_experts, I = c->moe_inter;
      const int64_t Din = b->kind == BK_NMOE && c->latent > 0 ? c->latent : H;
      w->Din = Din;
      w->router = mat(P, E, H);
      if (b->kind == BK_QMOE) w->w_gate = mat(P, E * I, Din);
      w->w_up = mat(P, E * I, Din);
      w->w_down = mat(P, E * Din, I);
      if (b->kind == BK_NMOE) {
        w->corr_bias = zeros(P, E);
        if (c->latent > 0) {
          w->fc1_latent = mat(P, Din, H);
          w->fc2_latent = mat(P, H, Din);
        }
      }
      if (c->shared_inter > 0) {
        plan_mlp(P, &w->shared, H, c->shared_inter, b->kind == BK_QMOE);
        if (b->kind == BK_QMOE) w->shared_gate = mat(P, 1, H);
      }
      break;
    }
    default:
      break;
  }
}

/* the sizes the block kinds present need (model_load checks the same against the tensors) */
static const char *missing_size(const model_config *c) {
  for (int i = 0; i < c->nblocks; i++) {
    const int k = c->blocks[i].kind;
    if ((k == BK_SWIGLU || k == BK_RELU2) && c->inter <= 0) return "intermediate_size > 0";
    if ((k == BK_QMOE || k == BK_NMOE) &&
        (c->n_experts <= 0 || c->moe_inter <= 0 || c->topk <= 0 || c->topk > c->n_experts))
      return "num_experts > 0, moe_intermediate_size > 0 and num_experts_per_tok in [1, experts]";
  }
  return NULL;
}

int64_t model_random_floats(const model_config *c) {
  /* the plan without allocating: count with a planner that records sizes only */
  const int64_t H = c->H, V = c->V;
  int64_t n = V * H + H + (c->tie_embeddings ? 0 : V * H);
  for (int i = 0; i < c->nblocks; i++) {
    n += H;
    switch (c->blocks[i].kind) {
      case BK_GDN: {
        const int64_t kd = c->gdn_hk * c->gdn_dk, vd = c->gdn_hv * c->gdn_dv;
        const int64_t cd = 2 * kd + vd;
        n += cd * H + vd * H + 2 * c->gdn_hv * H + cd * c->gdn_kernel + 2 * c->gdn_hv +
             c->gdn_dv + H * vd;
        break;
      }
      case BK_QATTN:
      case BK_NATTN: {
        const int64_t qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim;
        n += (c->blocks[i].kind == BK_QATTN ? 2 : 1) * qd * H + 2 * kvd * H + H * qd;
        if (c->blocks[i].kind == BK_QATTN) n += 2 * c->head_dim;
        break;
      }
      case BK_MAMBA2: {
        const int64_t di = c->m_heads * c->m_head_dim, cd = di + 2 * c->m_groups * c->m_state;
        n += (di + cd + c->m_heads) * H + cd * c->m_kernel + (c->m_conv_bias ? cd : 0) +
             3 * c->m_heads + di + H * di;
        break;
      }
      case BK_SWIGLU:
        n += 3 * c->inter * H;
        break;
      case BK_RELU2:
        n += 2 * c->inter * H;
        break;
      case BK_QMOE:
      case BK_NMOE: {
        const int q = c->blocks[i].kind == BK_QMOE;
        const int64_t E = c->n_experts, I = c->moe_inter;
        const int64_t Din = !q && c->latent > 0 ? c->latent : H;
        n += E * H + (q ? 3 : 2) * E * I * Din;
        if (!q) n += E + (c->latent > 0 ? 2 * Din * H : 0);
        if (c->shared_inter > 0) n += (q ? 3 : 2) * c->shared_inter * H + (q ? H : 0);
        break;
      }
      default:
        break;
    }
  }
  return n;
}

int model_random_build(const char *config_dir, uint64_t seed, int threads, model *m, char *err,
                       size_t errlen) {
  memset(m, 0, sizeof *m);
  snprintf(m->dir, sizeof m->dir, "random:%s", config_dir);
  int rc = model_config_load(config_dir, &m->cfg, err, errlen);
  if (rc != RSSM_OK) return rc;
  const model_config *c = &m->cfg;
  const char *need = missing_size(c);
  if (need) {
    rssm_fail(err, errlen, "%s: the layer pattern needs %s", c->path, need);
    model_config_free(&m->cfg);
    return RSSM_ERR_INPUT;
  }
  planner P;
  memset(&P, 0, sizeof P);
  P.seed = seed;
  /* V rows: the rows a forward reads (with a tokenizer.json beside config.json, V < V_rows and
   * the padding rows are simply not built) */
  m->embed = mat(&P, c->V, c->H);
  m->final_norm = c->norm_plus_one ? zeros(&P, c->H) : ones(&P, c->H);
  m->lm_head = c->tie_embeddings ? m->embed : mat(&P, c->V, c->H);
  m->nblocks = c->nblocks;
  m->blocks = calloc((size_t)(c->nblocks > 0 ? c->nblocks : 1), sizeof *m->blocks);
  if (!m->blocks) P.failed = 1;
  for (int i = 0; !P.failed && i < c->nblocks; i++) {
    model_block_w *b = &m->blocks[i];
    b->kind = c->blocks[i].kind;
    b->layer = c->blocks[i].layer;
    b->ssm_index = b->kind == BK_GDN || b->kind == BK_MAMBA2 ? m->n_ssm++ : -1;
    b->attn_index = b->kind == BK_QATTN || b->kind == BK_NATTN ? m->n_attn++ : -1;
    plan_block(&P, c, b);
  }
  if (P.failed || fill_all(&P, threads) != 0) {
    rssm_fail(err, errlen,
              "%s: out of host memory for the random weights (%.2f GB allocated, "
              "%.2f GB needed)",
              c->path, (double)P.bytes / 1e9, (double)model_random_floats(c) * 4.0 / 1e9);
    free(P.jobs);
    model_free(m); /* frees every array allocated so far (NULL elsewhere) */
    return RSSM_ERR_IO;
  }
  m->n_params = P.floats;
  free(P.jobs);
  return RSSM_OK;
}
