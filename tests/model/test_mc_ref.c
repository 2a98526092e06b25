/* src/model_cuda/mc_ref.c (the CPU references that gpu_check_mc_kernels holds the GPU kernels
 * to) against the CPU runtime's own layer code, bit for bit, without a GPU: each block kind of
 * the tiny models is run by its layer function (layers.h) on one state, and each mc_ref function
 * is fed the same inputs and must reproduce the intermediate values the layer left in its
 * scratch, its conv window and its KV cache. Reached: conv_step, gdn_prep, rmsnorm, mul_silu,
 * mamba2_prep, mamba2_gate (its gate and norm; the layer adds the D skip in place, so the skip's
 * input is gone), rope_tables + qk_prepare, attn_decode, swiglu, relu2, moe_route,
 * moe_experts and moe_shared_add (against moe_forward's output). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "src/model/layers.h"
#include "src/model/linalg.h"
#include "src/model_cuda/mc_ref.h"
#include "tests/cli/cli_test_util.h"
#include "tests/model/tiny_models.h"

static const char *dir;
static model m;
static model_state s;

static void same(const float *got, const float *want, int64_t n, const char *what, int bi) {
  for (int64_t i = 0; i < n; i++)
    cr_assert(memcmp(&got[i], &want[i], sizeof(float)) == 0,
              "block %d %s[%lld]: mc_ref %a, layer %a", bi, what, (long long)i, (double)got[i],
              (double)want[i]);
}

static float *alloc_f(int64_t n) {
  float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
  cr_assert(p);
  return p;
}

/* Loads the tiny model of kind into m and builds s (conventional fp32), advanced by 3 tokens so
 * that conv windows and KV caches hold history. */
static void open_model(tiny_kind kind) {
  dir = tdir_make();
  cr_assert(dir);
  tt_list l;
  char cfg[8192], err[512];
  tiny_build(kind, &l, cfg, sizeof cfg);
  cr_assert_eq(tiny_write(dir, &l, cfg), 0);
  tt_free(&l);
  cr_assert_eq(model_load(dir, &m, err, sizeof err), RSSM_OK, "%s", err);
  ssm_config c;
  cr_assert_eq(ssm_config_parse("conventional state=fp32", &c, err, sizeof err), 0, "%s", err);
  cr_assert_eq(model_state_build(&s, &m, &c, 1, 0, 16, err, sizeof err), RSSM_OK, "%s", err);
  float *logits = alloc_f(m.cfg.V);
  for (int t = 0; t < 3; t++) {
    int64_t tok = (t * 7 + 3) % m.cfg.V;
    cr_assert_eq(model_forward(&s, &tok, 1, logits, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_commit(&s, 1), 0);
  }
  free(logits);
}

static void close_model(void) {
  model_state_free(&s);
  model_free(&m);
  tdir_remove(dir);
}

static void random_input(uint64_t seed) {
  for (int64_t i = 0; i < m.cfg.H; i++) s.u[i] = rng_spread(&seed, -3, 1);
}

static layer_batch one_state(const float **xp, float **yp) {
  static model_state *ss[1];
  ss[0] = &s;
  return (layer_batch){ss, 1, 1, xp, yp};
}

/* Copies the committed conv window ([K-1][C]) of block bi, then runs the SSM block's layer
 * function on s; returns the copy. */
static float *run_ssm_block(int bi, int64_t K, int64_t C, int (*fwd)(layer_batch *, int, int *)) {
  float *win = alloc_f((K - 1) * C);
  memcpy(win, s.bs[bi].conv_win, (size_t)((K - 1) * C) * sizeof(float));
  const float *xp[1];
  float *yp[1];
  layer_batch lb = one_state(xp, yp);
  int failed = -1;
  cr_assert_eq(fwd(&lb, bi, &failed), 0);
  return win;
}

static void check_gdn(int bi) {
  const model_config *c = &m.cfg;
  const gdn_weights *g = &m.blocks[bi].gdn;
  const int64_t Hk = c->gdn_hk, Hv = c->gdn_hv, dk = c->gdn_dk, dv = c->gdn_dv, K = c->gdn_kernel;
  const int64_t kd = Hk * dk, vd = Hv * dv, C = 2 * kd + vd;
  float *win = run_ssm_block(bi, K, C, gdn_forward);
  /* the layer's scratch for n = 1 (layer_gdn.c bufs_of) */
  const float *cv = s.work, *z = cv + C, *bb = z + vd, *al = bb + 2 * Hv, *be = al + Hv;
  const float *q = be + Hv, *k = q + kd, *v = k + kd, *o = v + vd, *og = o + vd;
  float *out = alloc_f(C), *rq = alloc_f(kd), *rk = alloc_f(kd), *rv = alloc_f(vd);
  float *ra = alloc_f(Hv), *rb = alloc_f(Hv), *t = alloc_f(vd);
  mc_ref_conv_step(win, s.bs[bi].conv_win + (K - 1) * C, C, g->conv_w, NULL, out, 1, C, (int)K);
  same(out, cv, C, "gdn conv", bi);
  mc_ref_gdn_prep(cv, bb, 2 * Hv, 0, Hv, g->A_log, g->dt_bias, rq, rk, rv, ra, rb, 1, (int)Hk,
                  (int)Hv, (int)dk, (int)dv);
  same(rq, q, kd, "gdn q", bi);
  same(rk, k, kd, "gdn k", bi);
  same(rv, v, vd, "gdn v", bi);
  same(ra, al, Hv, "gdn alpha", bi);
  same(rb, be, Hv, "gdn beta", bi);
  mc_ref_rmsnorm(o, t, 1, (int)Hv, (int)dv, vd, g->norm, 0, 0, (float)c->eps);
  mc_ref_mul_silu(t, z, vd, 1, vd);
  same(t, og, vd, "gdn gated norm", bi);
  free(win), free(out), free(rq), free(rk), free(rv), free(ra), free(rb), free(t);
}

static void check_mamba2(int bi) {
  const model_config *c = &m.cfg;
  const mamba2_weights *w = &m.blocks[bi].mamba;
  const int64_t Hm = c->m_heads, P = c->m_head_dim, G = c->m_groups, N = c->m_state;
  const int64_t K = c->m_kernel, di = Hm * P, C = di + 2 * G * N, in_rows = di + C + Hm;
  float *win = run_ssm_block(bi, K, C, mamba2_forward);
  /* layer_mamba2.c's scratch for n = 1 */
  const float *zx = s.work, *cv = zx + in_rows, *al = cv + C, *v = al + Hm, *Bm = v + di;
  const float *Cm = Bm + G * N, *o = Cm + G * N, *tg = o + di;
  float *out = alloc_f(C), *ra = alloc_f(Hm), *rv = alloc_f(di), *rB = alloc_f(G * N);
  float *rC = alloc_f(G * N), *t = alloc_f(di), *zeroD = alloc_f(Hm);
  mc_ref_conv_step(win, zx + di, in_rows, w->conv_w, w->conv_b, out, 1, C, (int)K);
  same(out, cv, C, "mamba2 conv", bi);
  const int pos[1] = {(int)s.pos}; /* the layer's position in this forward */
  mc_ref_mamba2_prep(zx, in_rows, di + C, cv, C, w->A_log, w->dt_bias, (float)c->dt_limit_lo,
                     (float)c->dt_limit_hi, pos, ra, rv, rB, rC, 1, (int)Hm, (int)P, (int)G,
                     (int)N);
  same(ra, al, Hm, "mamba2 alpha", bi);
  same(rv, v, di, "mamba2 v", bi);
  same(rB, Bm, G * N, "mamba2 B", bi);
  same(rC, Cm, G * N, "mamba2 C", bi);
  /* o already holds o + D x: the gate with D = 0 adds an exact 0 */
  mc_ref_mamba2_gate(o, cv, C, zx, in_rows, zeroD, t, 1, (int)Hm, (int)P);
  mc_ref_rmsnorm(t, t, 1, (int)G, (int)(di / G), di, w->norm, 1, 0, (float)c->eps);
  same(t, tg, di, "mamba2 gated norm", bi);
  free(win), free(out), free(ra), free(rv), free(rB), free(rC), free(t), free(zeroD);
}

static void check_attn(int bi) {
  const model_config *c = &m.cfg;
  const model_block_w *b = &m.blocks[bi];
  const attn_weights *a = &b->attn;
  const int gated = b->kind == BK_QATTN;
  const int64_t nH = c->n_heads, nKV = c->n_kv_heads, D = c->head_dim, qd = nH * D, kvd = nKV * D;
  const int64_t mc = s.max_ctx, ld = 2 * qd + 2 * kvd, pos = s.pos;
  /* the raw projections, by matvec (matvec_many's bits, linalg.h) */
  float *qkv = alloc_f(ld), *kc = alloc_f(mc * kvd), *vc = alloc_f(mc * kvd);
  matvec(a->w_q, s.u, qkv, gated ? 2 * qd : qd, c->H);
  const int64_t k_off = gated ? 2 * qd : qd;
  matvec(a->w_k, s.u, qkv + k_off, kvd, c->H);
  matvec(a->w_v, s.u, qkv + k_off + kvd, kvd, c->H);
  memcpy(kc, s.bs[bi].kcache, (size_t)(mc * kvd) * sizeof(float));
  memcpy(vc, s.bs[bi].vcache, (size_t)(mc * kvd) * sizeof(float));
  const float *xp[1];
  float *yp[1];
  layer_batch lb = one_state(xp, yp);
  attn_forward(&lb, bi);
  const int rd = (int)c->rotary_dim;
  float *cs = alloc_f(mc * (rd / 2)), *sn = alloc_f(mc * (rd / 2)), *q = alloc_f(qd), *o = alloc_f(qd);
  if (gated) mc_ref_rope_tables(c->rope_theta, rd, mc, cs, sn);
  int p = (int)pos;
  mc_ref_qk_prepare(qkv, ld, gated, a->q_norm, a->k_norm, cs, sn, rd, (float)c->eps, &p, q, kc, vc,
                    mc, 1, (int)nH, (int)nKV, (int)D);
  same(q, s.work, qd, "attention q", bi);
  same(kc + pos * kvd, s.bs[bi].kcache + pos * kvd, kvd, "attention k", bi);
  same(vc + pos * kvd, s.bs[bi].vcache + pos * kvd, kvd, "attention v", bi);
  mc_ref_attn_decode(q, kc, vc, &p, mc, gated ? qkv : NULL, ld, o, 1, (int)nH, (int)nKV, (int)D);
  same(o, s.work + 2 * qd + mc, qd, "attention output", bi);
  free(qkv), free(kc), free(vc), free(cs), free(sn), free(q), free(o);
}

static void check_mlp(int bi) {
  const mlp_weights *w = &m.blocks[bi].mlp;
  const int64_t I = w->I;
  float *gu = alloc_f(2 * I), *act = alloc_f(I);
  if (w->w_gate) matvec(w->w_gate, s.u, gu, I, m.cfg.H);
  matvec(w->w_up, s.u, gu + I, I, m.cfg.H);
  const float *xp[1];
  float *yp[1];
  layer_batch lb = one_state(xp, yp);
  mlp_forward(&lb, bi);
  if (w->w_gate) mc_ref_swiglu(gu, act, 1, I);
  else mc_ref_relu2(gu + I, act, 1, I);
  same(act, s.work + I, I, w->w_gate ? "swiglu" : "relu2", bi);
  free(gu), free(act);
}

/* The dense shared expert as the GPU computes it: matvecs and the activation references. */
static void shared_expert(const mlp_weights *sh, const float *u, float *out) {
  const int64_t H = m.cfg.H, I = sh->I;
  float *gu = alloc_f(2 * I), *act = alloc_f(I);
  if (sh->w_gate) matvec(sh->w_gate, u, gu, I, H);
  matvec(sh->w_up, u, gu + I, I, H);
  if (sh->w_gate) mc_ref_swiglu(gu, act, 1, I);
  else mc_ref_relu2(gu + I, act, 1, I);
  matvec(sh->w_down, act, out, H, I);
  free(gu), free(act);
}

static void check_moe(int bi) {
  const model_config *c = &m.cfg;
  const model_block_w *b = &m.blocks[bi];
  const moe_weights *w = &b->moe;
  const int64_t H = c->H, E = c->n_experts, k = c->topk, Din = w->Din, I = c->moe_inter;
  float *y = alloc_f(H);
  moe_forward(&m, b, 1, s.u, y, s.work);
  float *logits = alloc_f(E), *wt = alloc_f(k), *xl = alloc_f(Din), *acc = alloc_f(Din);
  float *ry = alloc_f(H), *sh = alloc_f(H);
  int32_t *idx = calloc((size_t)k, sizeof(int32_t));
  cr_assert(idx);
  matvec(w->router, s.u, logits, E, H);
  mc_ref_moe_route(logits, E, w->corr_bias, b->kind == BK_QMOE, E, k, c->norm_topk,
                   (float)c->routed_scaling, c->n_group, c->topk_group, idx, wt, 1);
  const float *x = s.u;
  if (w->fc1_latent) {
    matvec(w->fc1_latent, s.u, xl, Din, H);
    x = xl;
  }
  mc_ref_moe_experts(x, Din, idx, wt, w->w_gate, w->w_up, w->w_down, acc, 1, k, I, Din);
  if (w->fc2_latent) matvec(w->fc2_latent, acc, ry, H, Din);
  else memcpy(ry, acc, (size_t)H * sizeof(float));
  if (w->shared.I > 0) {
    shared_expert(&w->shared, s.u, sh);
    float glogit = w->shared_gate ? dot_f32(w->shared_gate, s.u, H) : 0.0f;
    mc_ref_moe_shared_add(ry, sh, w->shared_gate ? &glogit : NULL, 1, 1, H);
  }
  same(ry, y, H, "moe output", bi);
  free(y), free(logits), free(wt), free(xl), free(acc), free(ry), free(sh), free(idx);
}

static void check_kind(tiny_kind kind, int want_kinds) {
  open_model(kind);
  int seen = 0;
  for (int bi = 0; bi < m.nblocks; bi++) {
    random_input(100 + (uint64_t)bi);
    switch (m.blocks[bi].kind) {
      case BK_GDN: check_gdn(bi); break;
      case BK_MAMBA2: check_mamba2(bi); break;
      case BK_QATTN:
      case BK_NATTN: check_attn(bi); break;
      case BK_SWIGLU:
      case BK_RELU2: check_mlp(bi); break;
      case BK_QMOE:
      case BK_NMOE: check_moe(bi); break;
      default: cr_assert_fail("block %d: unknown kind %d", bi, m.blocks[bi].kind);
    }
    seen |= 1 << m.blocks[bi].kind;
  }
  cr_assert_eq(seen, want_kinds, "block kinds seen %#x, expected %#x", seen, want_kinds);
  close_model();
}

Test(mc_ref, qwen35_text_gdn_gated_attention_swiglu) {
  check_kind(TINY_QWEN35_TEXT, 1 << BK_GDN | 1 << BK_QATTN | 1 << BK_SWIGLU);
}
Test(mc_ref, qwen35_moe) { check_kind(TINY_QWEN35_MOE, 1 << BK_GDN | 1 << BK_QATTN | 1 << BK_QMOE); }
Test(mc_ref, nemotron_h_mamba2_attention_relu2_moe) {
  check_kind(TINY_NEMOTRON_H, 1 << BK_MAMBA2 | 1 << BK_NATTN | 1 << BK_RELU2 | 1 << BK_NMOE);
}
