/* The library API of the model runtime: resume from a saved state continues bit-identically
 * (model_state_save/load plus the engines' ssm_snapshot), for a conventional, a replay and a spec
 * configuration; and model_forward's own input checks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ssm/ssm_snapshot.h"
#include "src/model/model.h"
#include "src/ssm/ssm_accept.h"
#include "tests/cli/cli_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/model/tiny_models.h"

#define NTOK 30

static const char *dir;
static void setup(void) {
  dir = tdir_make();
  cr_assert(dir);
}
static void teardown(void) { tdir_remove(dir); }

static void load_tiny(tiny_kind kind, model *m) {
  tt_list l;
  char cfg[8192], err[512];
  tiny_build(kind, &l, cfg, sizeof cfg);
  cr_assert_eq(tiny_write(dir, &l, cfg), 0);
  tt_free(&l);
  cr_assert_eq(model_load(dir, m, err, sizeof err), RSSM_OK, "%s", err);
}

/* Decode tokens [from, to) in rounds (T per round for spec), writing logits rows; round counter
 * and acceptance as in `replayssm logits`. Returns the position reached. */
static int64_t decode(model_state *s, const ssm_config *cfg, const int64_t *tok, int64_t from,
                      int64_t to, uint32_t *round, float *logits /* [NTOK + T][V] */) {
  const int T = cfg->strategy == SSM_SPEC ? cfg->T : 1;
  const int64_t V = s->m->cfg.V;
  int64_t done = from;
  char err[512];
  while (done < to) {
    int64_t drafts[16];
    for (int t = 0; t < T; t++) drafts[t] = tok[done + t];
    cr_assert_eq(model_forward(s, drafts, T, logits + done * V, err, sizeof err), RSSM_OK, "%s",
                 err);
    int a = T == 1 ? 1 : ssm_accept_draw(cfg, 7, 0, (*round)++);
    cr_assert_eq(model_commit(s, a), 0);
    done += a;
  }
  return done;
}

/* Full state = model part + every engine's snapshot, concatenated. */
static unsigned char *save_all(model_state *s, int64_t *len) {
  int64_t n = model_state_bytes(s);
  for (int i = 0; i < model_state_ssm_count(s); i++) n += ssm_snapshot_bytes(model_state_ssm(s, i));
  unsigned char *buf = malloc((size_t)n), *p = buf;
  cr_assert(buf);
  model_state_save(s, p);
  p += model_state_bytes(s);
  for (int i = 0; i < model_state_ssm_count(s); i++) {
    ssm_snapshot_save(model_state_ssm(s, i), p);
    p += ssm_snapshot_bytes(model_state_ssm(s, i));
  }
  *len = n;
  return buf;
}

static void load_all(model_state *s, const unsigned char *buf, int64_t len) {
  char err[512];
  /* the model part's length depends on the saved position: find it by elimination */
  int64_t eng = 0;
  for (int i = 0; i < model_state_ssm_count(s); i++) eng += ssm_snapshot_bytes(model_state_ssm(s, i));
  cr_assert_eq(model_state_load(s, buf, len - eng, err, sizeof err), RSSM_OK, "%s", err);
  const unsigned char *p = buf + (len - eng);
  for (int i = 0; i < model_state_ssm_count(s); i++) {
    int64_t n = ssm_snapshot_bytes(model_state_ssm(s, i));
    cr_assert_eq(ssm_snapshot_load(model_state_ssm(s, i), p, n), 0);
    p += n;
  }
}

static void check_resume(tiny_kind kind, const char *cfg_text) {
  model m;
  load_tiny(kind, &m);
  ssm_config cfg;
  char err[512];
  cr_assert_eq(ssm_config_parse(cfg_text, &cfg, err, sizeof err), 0, "%s", err);
  const int T = cfg.strategy == SSM_SPEC ? cfg.T : 1;
  const int64_t V = m.cfg.V, cap = NTOK + T;
  int64_t tok[NTOK + 16];
  uint64_t seed = 3;
  for (int i = 0; i < NTOK + 16; i++) tok[i] = (int64_t)(rng_next(&seed) % (uint64_t)V);
  float *a = calloc((size_t)((NTOK + T) * V), sizeof(float));
  float *b = calloc((size_t)((NTOK + T) * V), sizeof(float));

  model_state s1, s2, s3;
  cr_assert_eq(model_state_build(&s1, &m, &cfg, 11, 0, cap, err, sizeof err), RSSM_OK, "%s", err);
  uint32_t r1 = 0;
  decode(&s1, &cfg, tok, 0, NTOK, &r1, a);

  cr_assert_eq(model_state_build(&s2, &m, &cfg, 11, 0, cap, err, sizeof err), RSSM_OK, "%s", err);
  uint32_t r2 = 0;
  int64_t mid = decode(&s2, &cfg, tok, 0, NTOK / 2, &r2, b);
  int64_t len;
  unsigned char *buf = save_all(&s2, &len);
  model_state_free(&s2);
  cr_assert_eq(model_state_build(&s3, &m, &cfg, 11, 0, cap, err, sizeof err), RSSM_OK, "%s", err);
  load_all(&s3, buf, len);
  cr_assert_eq(s3.pos, mid);
  decode(&s3, &cfg, tok, mid, NTOK, &r2, b);
  cr_expect(memcmp(a, b, sizeof(float) * (size_t)(NTOK * V)) == 0,
            "'%s': resumed decoding differs from uninterrupted decoding", cfg_text);
  free(buf);
  model_state_free(&s1);
  model_state_free(&s3);
  free(a);
  free(b);
  model_free(&m);
}

Test(model_state, resume_conventional_qwen, .init = setup, .fini = teardown) {
  check_resume(TINY_QWEN3_NEXT, "conventional state=fp8/sr");
}
Test(model_state, resume_replay_nemotron, .init = setup, .fini = teardown) {
  check_resume(TINY_NEMOTRON_H, "replay L=4 hp=fp16/sr lp=nvfp4");
}
Test(model_state, resume_spec_qwen, .init = setup, .fini = teardown) {
  check_resume(TINY_QWEN35_MOE, "spec L=8 T=3 ckpt=nvfp4/sr accept=uniform");
}

Test(model_state, load_refuses_foreign_bytes, .init = setup, .fini = teardown) {
  model m;
  load_tiny(TINY_NEMOTRON_H, &m);
  ssm_config cfg;
  char err[512];
  cr_assert_eq(ssm_config_parse("conventional state=fp32", &cfg, err, sizeof err), 0);
  model_state s;
  cr_assert_eq(model_state_build(&s, &m, &cfg, 0, 0, 8, err, sizeof err), RSSM_OK);
  unsigned char junk[64] = "not a snapshot";
  cr_expect_eq(model_state_load(&s, junk, sizeof junk, err, sizeof err), RSSM_ERR_INPUT);
  int64_t n = model_state_bytes(&s);
  unsigned char *buf = malloc((size_t)n + 4);
  model_state_save(&s, buf);
  cr_expect_eq(model_state_load(&s, buf, n + 4, err, sizeof err), RSSM_ERR_INPUT);
  cr_expect(strstr(err, "bytes"), "%s", err);
  cr_expect_eq(model_state_load(&s, buf, n, err, sizeof err), RSSM_OK, "%s", err);
  free(buf);
  model_state_free(&s);
  model_free(&m);
}

Test(model_state, forward_checks_inputs, .init = setup, .fini = teardown) {
  model m;
  load_tiny(TINY_QWEN35_TEXT, &m);
  ssm_config cfg;
  char err[512];
  cr_assert_eq(ssm_config_parse("conventional state=fp32", &cfg, err, sizeof err), 0);
  model_state s;
  cr_assert_eq(model_state_build(&s, &m, &cfg, 0, 0, 2, err, sizeof err), RSSM_OK);
  float *lg = malloc(sizeof(float) * (size_t)m.cfg.V * 2);
  int64_t bad = m.cfg.V, good[2] = {1, 2};
  cr_expect_eq(model_forward(&s, &bad, 1, lg, err, sizeof err), RSSM_ERR_INPUT);
  cr_expect(strstr(err, "out of range"), "%s", err);
  cr_expect_eq(model_forward(&s, good, 2, lg, err, sizeof err), RSSM_ERR_INPUT); /* n > tmax */
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(model_forward(&s, good, 1, lg, err, sizeof err), RSSM_OK, "%s", err);
    cr_assert_eq(model_commit(&s, 1), 0);
  }
  cr_expect_eq(model_forward(&s, good, 1, lg, err, sizeof err), RSSM_ERR_INPUT); /* full */
  cr_expect(strstr(err, "context full"), "%s", err);
  free(lg);
  model_state_free(&s);
  model_free(&m);
}
