/* model_random_build (src/model/model_random.h): random weights from a config.json alone.
 * The shapes equal model_load's for the same config (checked through the parameter count on the
 * trained fixtures, and by the CPU forward running on them), the values are finite and bounded,
 * the result depends on the seed only (not on the thread count), a tiny random model decodes
 * through the CPU forward with finite logits, and the 4B configurations of data/shapes parse to
 * the parameter counts of the reference (~4.2 G and ~4.0 G). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/model/model.h"
#include "src/model/model_random.h"

static const char *const fixtures[] = {RSSM_SOURCE_DIR "/data/models/qwen35-gdn-tiny",
                                       RSSM_SOURCE_DIR "/data/models/nemotronh-m2-tiny"};

/* the arrays every model has, with their lengths: embed, final norm, lm_head, and per block the
 * pre-norm and its first input projection */
static int64_t first_matrix(const model *m, int i, const float **p) {
  const model_block_w *b = &m->blocks[i];
  const model_config *c = &m->cfg;
  switch (b->kind) {
    case BK_GDN:
      *p = b->gdn.w_qkv;
      return (2 * c->gdn_hk * c->gdn_dk + c->gdn_hv * c->gdn_dv) * c->H;
    case BK_MAMBA2:
      *p = b->mamba.w_in;
      return (2 * c->m_heads * c->m_head_dim + 2 * c->m_groups * c->m_state + c->m_heads) * c->H;
    case BK_QATTN:
    case BK_NATTN:
      *p = b->attn.w_k;
      return c->n_kv_heads * c->head_dim * c->H;
    case BK_SWIGLU:
    case BK_RELU2:
      *p = b->mlp.w_up;
      return b->mlp.I * c->H;
    default:
      *p = NULL;
      return 0;
  }
}

static int same_model(const model *a, const model *b) {
  const int64_t VH = a->cfg.V * a->cfg.H;
  if (a->n_params != b->n_params || a->nblocks != b->nblocks) return 0;
  if (memcmp(a->embed, b->embed, (size_t)VH * sizeof(float)) != 0) return 0;
  if (memcmp(a->lm_head, b->lm_head, (size_t)VH * sizeof(float)) != 0) return 0;
  for (int i = 0; i < a->nblocks; i++) {
    const float *pa, *pb;
    const int64_t n = first_matrix(a, i, &pa);
    first_matrix(b, i, &pb);
    if (n && memcmp(pa, pb, (size_t)n * sizeof(float)) != 0) return 0;
  }
  return 1;
}

Test(model_random, same_shapes_as_the_checkpoint) {
  for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
    char err[512];
    model ld, rn;
    cr_assert_eq(model_load(fixtures[f], &ld, err, sizeof err), RSSM_OK, "%s", err);
    cr_assert_eq(model_random_build(fixtures[f], 7, 2, &rn, err, sizeof err), RSSM_OK, "%s", err);
    cr_assert_eq(rn.n_params, ld.n_params, "%s: %lld random floats, %lld loaded", fixtures[f],
                 (long long)rn.n_params, (long long)ld.n_params);
    cr_assert_eq(model_random_floats(&rn.cfg), rn.n_params);
    cr_assert_eq(rn.nblocks, ld.nblocks);
    cr_assert_eq(rn.n_ssm, ld.n_ssm);
    cr_assert_eq(rn.n_attn, ld.n_attn);
    cr_assert_eq(rn.lm_head == rn.embed, ld.lm_head == ld.embed);
    for (int i = 0; i < rn.nblocks; i++) {
      cr_assert_eq(rn.blocks[i].kind, ld.blocks[i].kind);
      cr_assert_eq(rn.blocks[i].ssm_index, ld.blocks[i].ssm_index);
      cr_assert_eq(rn.blocks[i].attn_index, ld.blocks[i].attn_index);
    }
    /* values: weights within the uniform bound, norms the identity */
    const int64_t VH = rn.cfg.V * rn.cfg.H;
    double sq = 0;
    for (int64_t i = 0; i < VH; i++) {
      cr_assert(fabsf(rn.embed[i]) <= 0.0347f, "embed[%lld] = %g", (long long)i, rn.embed[i]);
      sq += (double)rn.embed[i] * rn.embed[i];
    }
    const double sd = sqrt(sq / (double)VH);
    cr_assert(sd > 0.018 && sd < 0.022, "embedding standard deviation %g (expected 0.02)", sd);
    for (int64_t i = 0; i < rn.cfg.H; i++)
      cr_assert_eq(rn.final_norm[i], rn.cfg.norm_plus_one ? 0.0f : 1.0f);
    model_free(&ld);
    model_free(&rn);
  }
}

Test(model_random, deterministic_in_the_seed_not_the_threads) {
  char err[512];
  model a, b, c;
  cr_assert_eq(model_random_build(fixtures[1], 11, 1, &a, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(model_random_build(fixtures[1], 11, 3, &b, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(model_random_build(fixtures[1], 12, 3, &c, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert(same_model(&a, &b), "same seed, 1 and 3 threads: different weights");
  cr_assert(!same_model(&a, &c), "seeds 11 and 12 gave the same weights");
  /* SSM parameters in their documented ranges */
  for (int i = 0; i < a.nblocks; i++)
    if (a.blocks[i].kind == BK_MAMBA2)
      for (int64_t h = 0; h < a.cfg.m_heads; h++) {
        const float al = a.blocks[i].mamba.A_log[h], db = a.blocks[i].mamba.dt_bias[h];
        cr_assert(al >= 0.0f && al <= logf(16.0f) + 1e-6f, "A_log %g", al);
        const double dt = log1p(exp((double)db)); /* softplus */
        cr_assert(dt > 0.00099 && dt < 0.101, "softplus(dt_bias) = %g", dt);
      }
  model_free(&a);
  model_free(&b);
  model_free(&c);
}

Test(model_random, runs_through_the_cpu_forward) {
  for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
    char err[512];
    model m;
    cr_assert_eq(model_random_build(fixtures[f], 3, 2, &m, err, sizeof err), RSSM_OK, "%s", err);
    ssm_config cfg;
    cr_assert_eq(ssm_config_parse("conventional state=fp32", &cfg, err, sizeof err), 0, "%s", err);
    model_state s;
    const int N = 24;
    cr_assert_eq(model_state_build(&s, &m, &cfg, 1, 0, N, err, sizeof err), RSSM_OK, "%s", err);
    float *logits = malloc((size_t)m.cfg.V * sizeof *logits); /* [V] */
    cr_assert(logits);
    double maxabs = 0;
    for (int t = 0; t < N; t++) {
      const int64_t tok = (int64_t)((t * 37 + 5) % m.cfg.V);
      cr_assert_eq(model_forward(&s, &tok, 1, logits, err, sizeof err), RSSM_OK, "%s", err);
      cr_assert_eq(model_commit(&s, 1), RSSM_OK);
      for (int64_t v = 0; v < m.cfg.V; v++) {
        cr_assert(isfinite(logits[v]), "%s: step %d logit %lld not finite", fixtures[f], t,
                  (long long)v);
        if (fabs((double)logits[v]) > maxabs) maxabs = fabs((double)logits[v]);
      }
    }
    /* O(1) logits: the initialisation keeps activations bounded */
    cr_assert(maxabs > 1e-3 && maxabs < 100.0, "%s: max |logit| %g", fixtures[f], maxabs);
    free(logits);
    model_state_free(&s);
    model_free(&m);
  }
}

Test(model_random, bench_configs_have_the_reference_sizes) {
  const struct {
    const char *dir;
    double lo, hi;
    int nblocks, n_ssm_kind;
  } cases[] = {{RSSM_SOURCE_DIR "/data/shapes/qwen3.5-4b", 4.1e9, 4.3e9, 64, BK_GDN},
               {RSSM_SOURCE_DIR "/data/shapes/nemotron-3-nano-4b", 3.9e9, 4.1e9, 42, BK_MAMBA2}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    model_config c;
    char err[512];
    cr_assert_eq(model_config_load(cases[i].dir, &c, err, sizeof err), RSSM_OK, "%s", err);
    const double n = (double)model_random_floats(&c);
    cr_assert(n > cases[i].lo && n < cases[i].hi, "%s: %.4g parameters", cases[i].dir, n);
    cr_assert_eq(c.nblocks, cases[i].nblocks);
    int ssm = 0, attn = 0;
    for (int b = 0; b < c.nblocks; b++) {
      ssm += c.blocks[b].kind == cases[i].n_ssm_kind;
      attn += c.blocks[b].kind == BK_QATTN || c.blocks[b].kind == BK_NATTN;
    }
    cr_assert_eq(ssm, cases[i].n_ssm_kind == BK_GDN ? 24 : 21);
    cr_assert_eq(attn, cases[i].n_ssm_kind == BK_GDN ? 8 : 4);
    model_config_free(&c);
  }
}
