/* Flushes happen exactly where SPEC section 2 says (replay: when h reaches L; spec: before
 * verification when h + T > L; conventional: every step stores), a non-flush operation leaves the
 * checkpoint bytes unchanged, and each store uses the SR event and stream of SPEC section 4. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "src/ssm/ssm_accept.h"
#include "tests/ssm/ssm_testutil.h"

static const ssm_dims dims_m2 = {SSM_MAMBA2, 4, 16, 40, 2};
static const ssm_dims dims_gdn = {SSM_GDN, 4, 16, 40, 2};

static size_t blob_bytes(const ssm_ckpt *c, const ssm_state *st) {
  return (size_t)st->dims.H * (size_t)c->lay.bytes_per_matrix;
}

typedef struct {
  unsigned char *main, *lp;
} snap;

static snap snap_take(const ssm_state *st) {
  snap s = {malloc(blob_bytes(&st->main, st)), NULL};
  cr_assert(s.main);
  memcpy(s.main, st->main.blob, blob_bytes(&st->main, st));
  if (st->cfg.split) {
    s.lp = malloc(blob_bytes(&st->lp, st));
    cr_assert(s.lp);
    memcpy(s.lp, st->lp.blob, blob_bytes(&st->lp, st));
  }
  return s;
}
static int snap_same(const snap *s, const ssm_state *st) {
  int same = memcmp(s->main, st->main.blob, blob_bytes(&st->main, st)) == 0;
  if (st->cfg.split) same = same && memcmp(s->lp, st->lp.blob, blob_bytes(&st->lp, st)) == 0;
  return same;
}
static void snap_free(snap *s) {
  free(s->main);
  free(s->lp);
}

/* The blob of checkpoint c must be exactly the encoding of st->S (the fp32 S just stored) with
 * event index `event` on c's stream: this pins the event numbering and the stream choice. */
static void check_encoding(const ssm_state *st, const ssm_ckpt *c, uint32_t event) {
  const int H = st->dims.H;
  uint64_t mid[64];
  uint32_t ev[64];
  cr_assert_leq(H, 64);
  for (int h = 0; h < H; h++) {
    mid[h] = qsr_matrix_id(st->ids.layer, (uint32_t)h, st->ids.sequence);
    ev[h] = event;
    cr_assert_eq(st->event[h], event + 1, "head %d: event counter %u after event %u", h,
                 st->event[h], event);
  }
  qsr_params sr = {st->ids.seed, mid, ev, c->stream};
  unsigned char *blob = malloc(blob_bytes(c, st));
  cr_assert(blob);
  q_encode_cpu(&c->fmt, &c->lay, H, st->S, blob, &sr);
  cr_assert(memcmp(blob, c->blob, blob_bytes(c, st)) == 0, "stored bytes differ from Q(S) at event %u",
            event);
  free(blob);
}

static void build(ssm_state *st, const char *text, const ssm_dims *d, uint64_t seed) {
  ssm_config cfg = tu_config(text);
  ssm_ids ids = {seed, 5, 11};
  char err[200];
  cr_assert_eq(ssm_state_build(st, &cfg, d, &ids, err, sizeof err), 0, "%s", err);
}

static void replay_schedule(const char *text, const ssm_dims *d) {
  enum { N = 300 };
  tu_stream s;
  tu_stream_make(&s, d, N, 3, 0.3, 3.0);
  ssm_state st;
  build(&st, text, d, 77);
  const int L = st.cfg.L;
  float o[4 * 16];
  for (int t = 0; t < N; t++) {
    snap before = snap_take(&st);
    ssm_inputs in = tu_at(&s, t);
    cr_assert_eq(ssm_step(&st, &in, o), 0);
    int expect = (t + 1) % L == 0;
    cr_assert_eq(st.flushed, expect, "%s: step %d flushed=%d", text, t, st.flushed);
    cr_assert_eq(st.h, (t + 1) % L, "%s: step %d h=%d", text, t, st.h);
    cr_assert_eq(st.nflush, (uint64_t)((t + 1) / L));
    if (expect) {
      cr_assert(!snap_same(&before, &st), "%s: flush at step %d stored nothing new", text, t);
      check_encoding(&st, &st.main, (uint32_t)(st.nflush - 1));
      if (st.cfg.split) check_encoding(&st, &st.lp, (uint32_t)(st.nflush - 1));
    } else {
      cr_assert(snap_same(&before, &st), "%s: non-flush step %d changed the checkpoint", text, t);
    }
    snap_free(&before);
  }
  ssm_state_free(&st);
  tu_stream_free(&s);
}

Test(ssm_flush, replay_flushes_when_h_reaches_L) {
  const char *cfgs[] = {"replay L=1 ckpt=nvfp4/sr", "replay L=3 ckpt=fp8/sr",
                        "replay L=16 ckpt=nvfp4/sr", "replay L=16 hp=fp16/sr lp=nvfp4",
                        "replay L=5 hp=bf16/sr lp=mxfp4/sr gdn_u=cached"};
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    replay_schedule(cfgs[i], &dims_m2);
    replay_schedule(cfgs[i], &dims_gdn);
  }
}

Test(ssm_flush, conventional_stores_every_step) {
  enum { N = 50 };
  tu_stream s;
  tu_stream_make(&s, &dims_gdn, N, 4, 0.3, 3.0);
  ssm_state st;
  build(&st, "conventional state=fp8/sr", &dims_gdn, 9);
  float o[4 * 16];
  for (int t = 0; t < N; t++) {
    ssm_inputs in = tu_at(&s, t);
    cr_assert_eq(ssm_step(&st, &in, o), 0);
    cr_assert(st.flushed);
    check_encoding(&st, &st.main, (uint32_t)t);
  }
  ssm_state_free(&st);
  tu_stream_free(&s);
}

static void spec_schedule(const char *text, const ssm_dims *d) {
  enum { N = 400 };
  tu_stream s;
  ssm_state st;
  build(&st, text, d, 78);
  const int T = st.cfg.T, L = st.cfg.L;
  tu_stream_make(&s, d, N + T, 5, 0.3, 3.0);
  float *o = malloc((size_t)T * d->H * d->dv * sizeof(float));
  cr_assert(o);
  int p = 0, nflush = 0;
  for (uint32_t round = 0; p < N; round++) {
    snap before = snap_take(&st);
    int h0 = st.h, expect = h0 + T > L;
    ssm_inputs in = tu_at(&s, p);
    cr_assert_eq(ssm_verify(&st, &in, o), 0);
    cr_assert_eq(st.flushed, expect, "%s: round %u h=%d flushed=%d", text, round, h0, st.flushed);
    if (expect) {
      nflush++;
      cr_assert_eq(st.h, 0);
      check_encoding(&st, &st.main, (uint32_t)(nflush - 1));
      if (st.cfg.split) check_encoding(&st, &st.lp, (uint32_t)(nflush - 1));
    } else {
      cr_assert_eq(st.h, h0, "verification must not move h");
      cr_assert(snap_same(&before, &st), "%s: non-flush round %u changed the checkpoint", text,
                round);
    }
    snap_free(&before);
    before = snap_take(&st);
    int a = ssm_accept_draw(&st.cfg, 78, st.ids.sequence, round);
    int h1 = st.h;
    cr_assert_eq(ssm_commit(&st, a), 0);
    cr_assert_eq(st.h, h1 + a);
    cr_assert_leq(st.h, L, "committed records never exceed L");
    cr_assert(snap_same(&before, &st), "commit changed the checkpoint");
    snap_free(&before);
    p += a;
  }
  cr_assert_gt(nflush, 10);
  free(o);
  ssm_state_free(&st);
  tu_stream_free(&s);
}

Test(ssm_flush, spec_flushes_when_h_plus_T_exceeds_L) {
  const char *cfgs[] = {"spec L=16 T=4 ckpt=nvfp4/sr accept=uniform",
                        "spec L=16 T=3 hp=fp16/sr lp=fp8 accept=geom:0.8",
                        "spec L=6 T=6 ckpt=int8/sr accept=fixed:2",
                        "spec L=9 T=2 hp=fp32 lp=nvfp4 accept=fixed:2"};
  for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
    spec_schedule(cfgs[i], &dims_m2);
    spec_schedule(cfgs[i], &dims_gdn);
  }
}

Test(ssm_flush, same_seed_same_bytes_other_seed_other_bytes) {
  enum { N = 64 };
  tu_stream s;
  tu_stream_make(&s, &dims_m2, N, 6, 0.3, 3.0);
  ssm_state a, b, c;
  build(&a, "replay L=8 ckpt=nvfp4/sr", &dims_m2, 100);
  build(&b, "replay L=8 ckpt=nvfp4/sr", &dims_m2, 100);
  build(&c, "replay L=8 ckpt=nvfp4/sr", &dims_m2, 101);
  float o[4 * 16];
  for (int t = 0; t < N; t++) {
    ssm_inputs in = tu_at(&s, t);
    cr_assert_eq(ssm_step(&a, &in, o), 0);
    cr_assert_eq(ssm_step(&b, &in, o), 0);
    cr_assert_eq(ssm_step(&c, &in, o), 0);
  }
  size_t n = blob_bytes(&a.main, &a);
  cr_assert(memcmp(a.main.blob, b.main.blob, n) == 0);
  cr_assert(memcmp(a.main.blob, c.main.blob, n) != 0, "the seed must reach the SR bits");
  ssm_state_free(&a);
  ssm_state_free(&b);
  ssm_state_free(&c);
  tu_stream_free(&s);
}

/* An explicit flush folds the committed records early; outputs stay those of the reference. */
Test(ssm_flush, explicit_flush_keeps_the_results) {
  enum { N = 200 };
  tu_stream s;
  tu_stream_make(&s, &dims_gdn, N, 8, 0.3, 3.0);
  const size_t hv = (size_t)dims_gdn.H * dims_gdn.dv;
  float *o_ref = malloc(N * hv * sizeof(float));
  cr_assert(o_ref);
  tu_reference(&s, N, o_ref, NULL);
  ssm_state st;
  build(&st, "replay L=16 hp=fp32 lp=fp32", &dims_gdn, 1);
  float o[4 * 16];
  for (int t = 0; t < N; t++) {
    ssm_inputs in = tu_at(&s, t);
    cr_assert_eq(ssm_step(&st, &in, o), 0);
    cr_assert_leq(tu_rel(o, o_ref + (size_t)t * hv, hv), 1e-5, "step %d", t);
    if (t % 7 == 3) {
      uint64_t nf = st.nflush;
      int h = st.h;
      ssm_flush(&st);
      cr_assert_eq(st.h, 0);
      cr_assert_eq(st.nflush, nf + (h > 0));
    }
  }
  free(o_ref);
  ssm_state_free(&st);
  tu_stream_free(&s);
}

Test(ssm_flush, misuse_is_refused) {
  tu_stream s;
  tu_stream_make(&s, &dims_m2, 8, 9, 0.3, 3.0);
  ssm_state r, sp;
  build(&r, "replay L=4 ckpt=fp32", &dims_m2, 1);
  build(&sp, "spec L=4 T=2 ckpt=fp32 accept=uniform", &dims_m2, 1);
  float o[2 * 4 * 16];
  ssm_inputs in = tu_at(&s, 0);
  cr_assert_eq(ssm_verify(&r, &in, o), -1, "verify on replay");
  cr_assert_eq(ssm_commit(&r, 1), -1, "commit on replay");
  cr_assert_eq(ssm_step(&sp, &in, o), -1, "step on spec");
  cr_assert_eq(ssm_commit(&sp, 1), -1, "commit before verify");
  cr_assert_eq(ssm_verify(&sp, &in, o), 0);
  cr_assert_eq(ssm_verify(&sp, &in, o), -1, "verify twice without commit");
  cr_assert_eq(ssm_commit(&sp, 0), -1);
  cr_assert_eq(ssm_commit(&sp, 3), -1);
  cr_assert_eq(ssm_commit(&sp, 2), 0);
  cr_assert_eq(sp.h, 2);
  ssm_state_free(&r);
  ssm_state_free(&sp);
  ssm_dims bad = {SSM_MAMBA2, 6, 16, 40, 4};
  ssm_config cfg = tu_config("replay ckpt=fp32");
  ssm_ids ids = {1, 0, 0};
  char err[200];
  cr_assert_eq(ssm_state_build(&r, &cfg, &bad, &ids, err, sizeof err), -1);
  cr_assert(strstr(err, "multiple") != NULL, "%s", err);
  tu_stream_free(&s);
}
