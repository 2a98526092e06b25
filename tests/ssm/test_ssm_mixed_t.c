/* Verification rounds with their own number of drafts (ssm_verify_n, issue 17 point 4): the rows
 * of one batch may verify different T, including T = 0.
 *
 * - A state configured with T_max that verifies n drafts every round is, bit for bit, a state
 *   configured with T = n (the flush test h + n > L, the drafts' readouts and the commit range
 *   all follow this round's n): same outputs, checkpoint bytes, events, flush counts and
 *   committed records (compared by value: the rings have L + T_max and L + n slots).
 * - A round with n = 0 leaves the whole state untouched (every buffer and scalar compared with
 *   memcmp) and writes no output; a run with random n in 0..T_max is identical, after every
 *   round with drafts, to the same run with its n = 0 rounds left out.
 * Exact equality is the right tolerance: both sides run the same engine code on the same operands
 * (the slot index of a record is the only thing that differs, and no arithmetic reads it).
 * Inputs: seeded random streams with no zero component; acceptance lengths from a fixed seed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/ssm/ssm_testutil.h"

static const ssm_dims dims_m2 = {SSM_MAMBA2, 4, 12, 40, 2};
static const ssm_dims dims_gdn = {SSM_GDN, 4, 12, 40, 2};

/* Strategy tails appended to "spec L=%d T=%d ": shared fp32, split with NVFP4 reads, SR fp8. */
static const char *const tails[] = {"ckpt=fp32", "hp=fp32 lp=nvfp4", "ckpt=fp8/sr"};

static uint64_t rng_next(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void build(ssm_state *st, int L, int T, const char *tail, const ssm_dims *d) {
  char text[160];
  snprintf(text, sizeof text, "spec L=%d T=%d %s accept=uniform", L, T, tail);
  ssm_config cfg = tu_config(text);
  ssm_ids ids = {0x77aa, 2, 5};
  char err[256];
  cr_assert_eq(ssm_state_build(st, &cfg, d, &ids, err, sizeof err), 0, "%s: %s", text, err);
}

static size_t blob_bytes(const ssm_state *st, const ssm_ckpt *c) {
  return (size_t)st->dims.H * (size_t)c->lay.bytes_per_matrix;
}

/* Checkpoints, events and counters equal; committed records 1..h equal by value. */
static int same_committed(const ssm_state *a, const ssm_state *b) {
  const ssm_dims *d = &a->dims;
  const size_t H = (size_t)d->H, dv = (size_t)d->dv, dk = (size_t)d->dk, G = (size_t)d->G;
  if (a->h != b->h || a->pending != b->pending || a->flushed != b->flushed ||
      a->nflush != b->nflush)
    return 0;
  if (memcmp(a->event, b->event, H * sizeof(uint32_t)) != 0) return 0;
  if (memcmp(a->main.blob, b->main.blob, blob_bytes(a, &a->main)) != 0) return 0;
  if (a->cfg.split && memcmp(a->lp.blob, b->lp.blob, blob_bytes(a, &a->lp)) != 0) return 0;
  for (int j = 1; j <= a->h; j++) {
    const size_t sa = (size_t)ssm_slot(a, j), sb = (size_t)ssm_slot(b, j);
    if (memcmp(a->rec_x + sa * H * dv, b->rec_x + sb * H * dv, H * dv * sizeof(float)) != 0 ||
        memcmp(a->rec_k + sa * G * dk, b->rec_k + sb * G * dk, G * dk * sizeof(float)) != 0 ||
        memcmp(a->rec_alpha + sa * H, b->rec_alpha + sb * H, H * sizeof(float)) != 0)
      return 0;
  }
  return 1;
}

/* Everything a round could change, copied (the scratch arrays are not state). */
typedef struct {
  ssm_state s;
  unsigned char *main, *lp;
  float *deq_main, *deq_lp, *ra, *rb, *rx, *rv, *rk;
  uint32_t *event;
} full_snap;

static void *dup(const void *p, size_t n) {
  if (!p) return NULL;
  void *q = malloc(n ? n : 1);
  cr_assert(q);
  memcpy(q, p, n);
  return q;
}

static int cmp_opt(const void *a, const void *b, size_t n) {
  if (!a || !b) return a == b ? 0 : 1;
  return memcmp(a, b, n);
}

static full_snap full_take(const ssm_state *st) {
  const ssm_dims *d = &st->dims;
  const size_t H = (size_t)d->H, dv = (size_t)d->dv, dk = (size_t)d->dk, G = (size_t)d->G;
  const size_t cap = (size_t)st->cap, mat = H * dv * dk * sizeof(float);
  full_snap f;
  f.s = *st;
  f.main = dup(st->main.blob, blob_bytes(st, &st->main));
  f.lp = st->cfg.split ? dup(st->lp.blob, blob_bytes(st, &st->lp)) : NULL;
  f.deq_main = dup(st->main.deq, mat);
  f.deq_lp = st->cfg.split ? dup(st->lp.deq, mat) : NULL;
  f.ra = dup(st->rec_alpha, cap * H * sizeof(float));
  f.rb = dup(st->rec_beta, cap * H * sizeof(float));
  f.rx = dup(st->rec_x, cap * H * dv * sizeof(float));
  f.rv = dup(st->rec_v, cap * H * dv * sizeof(float));
  f.rk = dup(st->rec_k, cap * G * dk * sizeof(float));
  f.event = dup(st->event, H * sizeof(uint32_t));
  return f;
}

static int full_same(const full_snap *f, const ssm_state *st) {
  const ssm_dims *d = &st->dims;
  const size_t H = (size_t)d->H, dv = (size_t)d->dv, dk = (size_t)d->dk, G = (size_t)d->G;
  const size_t cap = (size_t)st->cap, mat = H * dv * dk * sizeof(float);
  const ssm_state *o = &f->s;
  if (o->h != st->h || o->base != st->base || o->pending != st->pending ||
      o->flushed != st->flushed || o->nflush != st->nflush || o->ckpt_reads != st->ckpt_reads ||
      o->ckpt_skips != st->ckpt_skips)
    return 0;
  return memcmp(f->main, st->main.blob, blob_bytes(st, &st->main)) == 0 &&
         cmp_opt(f->lp, st->cfg.split ? st->lp.blob : NULL, blob_bytes(st, &st->lp)) == 0 &&
         memcmp(f->deq_main, st->main.deq, mat) == 0 &&
         cmp_opt(f->deq_lp, st->cfg.split ? st->lp.deq : NULL, mat) == 0 &&
         memcmp(f->ra, st->rec_alpha, cap * H * sizeof(float)) == 0 &&
         cmp_opt(f->rb, st->rec_beta, cap * H * sizeof(float)) == 0 &&
         memcmp(f->rx, st->rec_x, cap * H * dv * sizeof(float)) == 0 &&
         cmp_opt(f->rv, st->rec_v, cap * H * dv * sizeof(float)) == 0 &&
         memcmp(f->rk, st->rec_k, cap * G * dk * sizeof(float)) == 0 &&
         memcmp(f->event, st->event, H * sizeof(uint32_t)) == 0;
}

static void full_free(full_snap *f) {
  free(f->main);
  free(f->lp);
  free(f->deq_main);
  free(f->deq_lp);
  free(f->ra);
  free(f->rb);
  free(f->rx);
  free(f->rv);
  free(f->rk);
  free(f->event);
}

/* A state of T_max verifying n drafts per round against a state configured with T = n. */
static void fixed_n_matches_config(const ssm_dims *d, const char *tail, int L, int Tmax, int n) {
  enum { N = 160 };
  tu_stream s;
  tu_stream_make(&s, d, N + Tmax, 31 + (uint64_t)n, 0.3, 3.0);
  ssm_state x, y;
  build(&x, L, Tmax, tail, d);
  build(&y, L, n, tail, d);
  const size_t hv = (size_t)d->H * d->dv;
  float *ox = calloc((size_t)Tmax * hv, sizeof(float)), *oy = calloc((size_t)n * hv, sizeof(float));
  cr_assert(ox && oy);
  uint64_t rng = 0xabcdef + (uint64_t)n;
  int p = 0, flushes = 0;
  for (int round = 0; p < N; round++) {
    ssm_inputs in = tu_at(&s, p);
    cr_assert_eq(ssm_verify_n(&x, &in, n, ox), 0);
    cr_assert_eq(ssm_verify(&y, &in, oy), 0);
    flushes += y.flushed;
    cr_assert(memcmp(ox, oy, (size_t)n * hv * sizeof(float)) == 0,
              "%s n=%d round %d: outputs differ", tail, n, round);
    const int a = 1 + (int)(rng_next(&rng) % (uint64_t)n);
    cr_assert_eq(ssm_commit(&x, a), 0);
    cr_assert_eq(ssm_commit(&y, a), 0);
    cr_assert(same_committed(&x, &y), "%s n=%d round %d: states differ", tail, n, round);
    p += a;
  }
  cr_assert_gt(flushes, 2, "the run must cross flushes");
  free(ox);
  free(oy);
  ssm_state_free(&x);
  ssm_state_free(&y);
  tu_stream_free(&s);
}

Test(ssm_mixed_t, fixed_n_is_a_state_configured_with_that_t) {
  const ssm_dims *dims[] = {&dims_m2, &dims_gdn};
  for (int k = 0; k < 2; k++)
    for (int t = 0; t < 3; t++)
      for (int n = 1; n <= 7; n += 3) fixed_n_matches_config(dims[k], tails[t], 10, 8, n);
}

/* Random n in 0..T_max per round; the same run without its n = 0 rounds. */
static void zero_rounds_change_nothing(const ssm_dims *d, const char *tail) {
  enum { N = 200, L = 12, TM = 6 };
  tu_stream s;
  tu_stream_make(&s, d, N + TM, 77, 0.3, 3.0);
  ssm_state x, y;
  build(&x, L, TM, tail, d);
  build(&y, L, TM, tail, d);
  const size_t hv = (size_t)d->H * d->dv;
  float *ox = malloc((size_t)TM * hv * sizeof(float)), *oy = malloc((size_t)TM * hv * sizeof(float));
  float *sentinel = malloc((size_t)TM * hv * sizeof(float));
  cr_assert(ox && oy && sentinel);
  for (size_t i = 0; i < (size_t)TM * hv; i++) sentinel[i] = -1234.5f - (float)i;
  uint64_t rng = 0x5151;
  int p = 0, zeros = 0, sizes = 0;
  for (int round = 0; p < N; round++) {
    const int n = (int)(rng_next(&rng) % (uint64_t)(TM + 1)); /* 0..TM, 0 one round in 7 */
    ssm_inputs in = tu_at(&s, p);
    if (n == 0) {
      full_snap before = full_take(&x);
      memcpy(ox, sentinel, (size_t)TM * hv * sizeof(float));
      cr_assert_eq(ssm_verify_n(&x, &in, 0, ox), 0);
      cr_assert(full_same(&before, &x), "%s round %d: a round of 0 drafts changed the state", tail,
                round);
      cr_assert(memcmp(ox, sentinel, (size_t)TM * hv * sizeof(float)) == 0,
                "a round of 0 drafts wrote an output");
      cr_assert_eq(x.pending, 0);
      full_free(&before);
      zeros++;
      continue;
    }
    sizes |= 1 << n;
    cr_assert_eq(ssm_verify_n(&x, &in, n, ox), 0);
    cr_assert_eq(ssm_verify_n(&y, &in, n, oy), 0);
    cr_assert(memcmp(ox, oy, (size_t)n * hv * sizeof(float)) == 0, "%s round %d: outputs differ",
              tail, round);
    const int a = 1 + (int)(rng_next(&rng) % (uint64_t)n);
    cr_assert_eq(ssm_commit(&x, a), 0);
    cr_assert_eq(ssm_commit(&y, a), 0);
    full_snap fy = full_take(&y);
    cr_assert(full_same(&fy, &x), "%s round %d: states differ after the round", tail, round);
    full_free(&fy);
    p += a;
  }
  cr_assert_gt(zeros, 5);
  cr_assert_eq(sizes, 0x7e, "every n in 1..%d must occur", TM);
  free(ox);
  free(oy);
  free(sentinel);
  ssm_state_free(&x);
  ssm_state_free(&y);
  tu_stream_free(&s);
}

Test(ssm_mixed_t, zero_draft_rounds_leave_the_state_untouched) {
  for (int t = 0; t < 3; t++) {
    zero_rounds_change_nothing(&dims_m2, tails[t]);
    zero_rounds_change_nothing(&dims_gdn, tails[t]);
  }
}

Test(ssm_mixed_t, misuse_is_refused) {
  tu_stream s;
  tu_stream_make(&s, &dims_m2, 8, 9, 0.3, 3.0);
  ssm_state sp;
  build(&sp, 8, 4, "ckpt=fp32", &dims_m2);
  float o[4 * 4 * 12];
  ssm_inputs in = tu_at(&s, 0);
  cr_assert_eq(ssm_verify_n(&sp, &in, 5, o), -1, "more drafts than cfg.T");
  cr_assert_eq(ssm_verify_n(&sp, &in, -1, o), -1);
  cr_assert_eq(ssm_verify_n(&sp, NULL, 0, o), 0, "0 drafts need no inputs");
  cr_assert_eq(ssm_commit(&sp, 1), -1, "nothing to commit after 0 drafts");
  cr_assert_eq(ssm_verify_n(&sp, &in, 2, o), 0);
  cr_assert_eq(ssm_verify_n(&sp, &in, 0, o), -1, "a pending round must be committed first");
  cr_assert_eq(ssm_commit(&sp, 3), -1, "a <= this round's drafts");
  cr_assert_eq(ssm_commit(&sp, 2), 0);
  cr_assert_eq(sp.h, 2);
  ssm_state_free(&sp);
  tu_stream_free(&s);
}
