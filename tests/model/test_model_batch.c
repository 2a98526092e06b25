/* The batched forward (model_forward_many) and the decoder interface's step_many against the
 * single-state forward: several states of one model, under different configurations, advanced
 * together must give the same logits bit for bit as each state advanced alone, on the tiny
 * checkpoints of every family (tests/model/tiny_models.c), on the transformers fixtures
 * (tests/fixtures/) and on the trained data/models/qwen35-gdn-tiny. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/decode/decoder.h"
#include "src/decode/hf_decoder.h"
#include "src/model/linalg.h"
#include "src/model/model.h"
#include "src/ssm/ssm_accept.h"
#include "src/ssm/ssm_config.h"
#include "tests/cli/cli_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/model/tiny_models.h"

#define NSTEP 24
#define MAXS 8

/* Configurations of the non-spec states (the first is the fp32 reference). */
static const char *const STEP_CFGS[] = {
    "conventional state=fp32",
    "replay L=4 ckpt=fp32",
    "replay L=4 ckpt=nvfp4/sr",
    "replay L=8 hp=fp16/sr lp=nvfp4",
    "conventional state=fp8/sr",
    "conventional state=bf16",
};
#define NSTEP_CFGS ((int)(sizeof STEP_CFGS / sizeof STEP_CFGS[0]))

static const char *dir;
static void setup(void) {
  dir = tdir_make();
  cr_assert(dir);
}
static void teardown(void) { tdir_remove(dir); }

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static void parse(const char *text, ssm_config *cfg) {
  char err[512];
  cr_assert_eq(ssm_config_parse(text, cfg, err, sizeof err), 0, "%s: %s", text, err);
}

/* ns states of m, state j under cfgs[j % ncfg], sequence j. */
static void build_states(const model *m, model_state *s, int ns, const char *const *cfgs,
                         int ncfg, int64_t max_ctx) {
  char err[512];
  for (int j = 0; j < ns; j++) {
    ssm_config cfg;
    parse(cfgs[j % ncfg], &cfg);
    cr_assert_eq(model_state_build(&s[j], m, &cfg, 11, (uint32_t)j, max_ctx, err, sizeof err),
                 RSSM_OK, "%s", err);
  }
}

/* Steps NSTEP tokens through ns states alone and through ns other states together (state j
 * starts `lag * j` tokens later, so positions differ within a batch); every logit must match
 * bit for bit. */
static void check_steps(const model *m, int ns, int lag, const char *what) {
  const int64_t V = m->cfg.V;
  const int total = NSTEP + lag * (ns - 1);
  int64_t *tok = malloc((size_t)(total + ns) * sizeof *tok);
  float *alone = malloc((size_t)ns * (size_t)total * (size_t)V * sizeof(float));
  float *batch = malloc((size_t)ns * (size_t)total * (size_t)V * sizeof(float));
  cr_assert(tok && alone && batch);
  for (int i = 0; i < total + ns; i++) tok[i] = (int64_t)(mix((uint64_t)i * 31 + 5) % (uint64_t)V);
  model_state a[MAXS], b[MAXS];
  build_states(m, a, ns, STEP_CFGS, NSTEP_CFGS, total + 1);
  build_states(m, b, ns, STEP_CFGS, NSTEP_CFGS, total + 1);
  char err[512];
  /* state j decodes tokens tok[j + t] for t < total - lag * j */
  for (int j = 0; j < ns; j++)
    for (int t = 0; t < total - lag * j; t++) {
      cr_assert_eq(model_forward(&a[j], &tok[j + t], 1, alone + ((size_t)j * total + t) * V, err,
                                 sizeof err), RSSM_OK, "%s", err);
      cr_assert_eq(model_commit(&a[j], 1), 0);
    }
  for (int step = 0; step < total; step++) {
    model_state *ss[MAXS];
    int64_t tk[MAXS];
    float *lg[MAXS];
    int n = 0;
    for (int j = 0; j < ns; j++) {
      int t = step - lag * j; /* state j joins at step lag * j */
      if (t < 0) continue;
      ss[n] = &b[j];
      tk[n] = tok[j + t];
      lg[n] = batch + ((size_t)j * total + t) * V;
      n++;
    }
    int failed = 99;
    cr_assert_eq(model_forward_many(ss, n, tk, 1, lg, &failed, err, sizeof err), RSSM_OK, "%s",
                 err);
    cr_assert_eq(failed, -1);
    for (int i = 0; i < n; i++) cr_assert_eq(model_commit(ss[i], 1), 0);
  }
  for (int j = 0; j < ns; j++) {
    size_t off = (size_t)j * total * V, len = (size_t)(total - lag * j) * V;
    cr_assert(memcmp(alone + off, batch + off, len * sizeof(float)) == 0,
              "%s: state %d (%s) differs between the batched and the single-state forward",
              what, j, STEP_CFGS[j % NSTEP_CFGS]);
    model_state_free(&a[j]);
    model_state_free(&b[j]);
  }
  free(tok);
  free(alone);
  free(batch);
}

/* Spec states: rounds of T drafts through model_forward_many (n = T) against each alone. */
static void check_spec(const model *m, const char *what) {
  static const char *const cfgs[] = {"spec L=8 T=3 ckpt=fp32 accept=uniform",
                                     "spec L=8 T=3 ckpt=nvfp4/sr accept=geom:0.7",
                                     "spec L=8 T=3 hp=fp16/sr lp=nvfp4 accept=uniform"};
  enum { NS = 3, T = 3, ROUNDS = 6 };
  const int64_t V = m->cfg.V;
  const int64_t ctx = ROUNDS * T + T;
  int64_t tok[ROUNDS * T + T];
  for (int i = 0; i < ROUNDS * T + T; i++) tok[i] = (int64_t)(mix((uint64_t)i + 99) % (uint64_t)V);
  model_state a[NS], b[NS];
  build_states(m, a, NS, cfgs, NS, ctx);
  build_states(m, b, NS, cfgs, NS, ctx);
  float *la = malloc((size_t)NS * T * (size_t)V * sizeof(float));
  float *lb = malloc((size_t)NS * T * (size_t)V * sizeof(float));
  cr_assert(la && lb);
  int64_t done[NS] = {0, 0, 0};
  char err[512];
  for (int r = 0; r < ROUNDS; r++) {
    int64_t drafts[NS * T];
    model_state *ss[NS];
    float *lg[NS];
    int acc[NS];
    for (int j = 0; j < NS; j++) {
      for (int t = 0; t < T; t++) drafts[j * T + t] = tok[done[j] + t];
      cr_assert_eq(model_forward(&a[j], &drafts[j * T], T, la + (size_t)j * T * V, err,
                                 sizeof err), RSSM_OK, "%s", err);
      ss[j] = &b[j];
      lg[j] = lb + (size_t)j * T * V;
      acc[j] = ssm_accept_draw(&a[j].cfg, 7, (uint32_t)j, (uint32_t)r);
    }
    cr_assert_eq(model_forward_many(ss, NS, drafts, T, lg, NULL, err, sizeof err), RSSM_OK, "%s",
                 err);
    cr_assert(memcmp(la, lb, (size_t)NS * T * (size_t)V * sizeof(float)) == 0,
              "%s: spec round %d differs", what, r);
    for (int j = 0; j < NS; j++) {
      cr_assert_eq(model_commit(&a[j], acc[j]), 0);
      cr_assert_eq(model_commit(&b[j], acc[j]), 0);
      done[j] += acc[j];
    }
  }
  for (int j = 0; j < NS; j++) {
    model_state_free(&a[j]);
    model_state_free(&b[j]);
  }
  free(la);
  free(lb);
}

static void check_model_dir(const char *path, const char *what) {
  model m;
  char err[512];
  cr_assert_eq(model_load(path, &m, err, sizeof err), RSSM_OK, "%s", err);
  check_steps(&m, NSTEP_CFGS, 0, what);
  check_steps(&m, 5, 3, what); /* different positions within a batch, 5 = 4 + 1 vectors */
  check_spec(&m, what);
  model_free(&m);
}

static void check_tiny(tiny_kind kind, const char *what) {
  tt_list l;
  char cfg[8192];
  tiny_build(kind, &l, cfg, sizeof cfg);
  cr_assert_eq(tiny_write(dir, &l, cfg), 0);
  tt_free(&l);
  check_model_dir(dir, what);
}

TestSuite(model_batch, .init = setup, .fini = teardown, .timeout = 600);

Test(model_batch, tiny_qwen35_text) { check_tiny(TINY_QWEN35_TEXT, "tiny qwen3_5_text"); }
Test(model_batch, tiny_qwen35_moe) { check_tiny(TINY_QWEN35_MOE, "tiny qwen3_5_moe"); }
Test(model_batch, tiny_qwen3_next) { check_tiny(TINY_QWEN3_NEXT, "tiny qwen3_next"); }
Test(model_batch, tiny_nemotron_h) { check_tiny(TINY_NEMOTRON_H, "tiny nemotron_h"); }

static int is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Every fixture of tests/fixtures/MANIFEST (transformers checkpoints of all six layouts). */
Test(model_batch, transformers_fixtures) {
  FILE *f = fopen(RSSM_SOURCE_DIR "/tests/fixtures/MANIFEST", "r");
  /* committed with the fixtures: without it this test would check nothing */
  cr_assert(f, "tests/fixtures/MANIFEST is missing: the committed fixtures are gone");
  char line[256];
  int found = 0;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\r\n")] = '\0';
    if (line[0] == '#' || line[0] == '\0') continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/fixtures/%s", RSSM_SOURCE_DIR, line);
    cr_assert(is_dir(path), "fixture %s listed in MANIFEST is missing", line);
    check_model_dir(path, line);
    found++;
  }
  fclose(f);
  cr_assert(found > 0);
}

/* The quickstart's model, and its decoder interface: step_many against step. */
Test(model_batch, qwen35_gdn_tiny) {
  const char *path = RSSM_SOURCE_DIR "/data/models/qwen35-gdn-tiny";
  cr_assert(is_dir(path), "data/models/qwen35-gdn-tiny is missing");
  check_model_dir(path, "qwen35-gdn-tiny");
}

Test(model_batch, decoder_step_many) {
  const char *path = RSSM_SOURCE_DIR "/data/models/qwen35-gdn-tiny";
  rssm_model *m;
  char err[512];
  cr_assert_eq(hf_model_open(path, &m, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert(m->ops->step_many);
  const int64_t V = m->vocab;
  enum { ND = NSTEP_CFGS, STEPS = 40 };
  rssm_decoder *a[ND], *b[ND];
  ssm_config cfg[ND];
  for (int j = 0; j < ND; j++) {
    parse(STEP_CFGS[j], &cfg[j]);
    rssm_decoder_params p = {&cfg[j], 3, (uint32_t)(j / 2), STEPS + 1};
    cr_assert_eq(rssm_decoder_open(m, &p, &a[j], err, sizeof err), RSSM_OK, "%s", err);
    cr_assert_eq(rssm_decoder_open(m, &p, &b[j], err, sizeof err), RSSM_OK, "%s", err);
  }
  float *la = malloc((size_t)ND * (size_t)V * sizeof(float));
  float *lb = malloc((size_t)ND * (size_t)V * sizeof(float));
  cr_assert(la && lb);
  for (int t = 0; t < STEPS; t++) {
    int64_t tk[ND];
    float *lg[ND];
    for (int j = 0; j < ND; j++) {
      tk[j] = (int64_t)(mix((uint64_t)(t * ND + j)) % (uint64_t)V);
      cr_assert_eq(a[j]->ops->step(a[j], tk[j], la + (size_t)j * V, err, sizeof err), RSSM_OK,
                   "%s", err);
      lg[j] = lb + (size_t)j * V;
    }
    int failed = 99;
    cr_assert_eq(m->ops->step_many(m, b, ND, tk, lg, &failed, err, sizeof err), RSSM_OK, "%s",
                 err);
    cr_assert_eq(failed, -1);
    cr_assert(memcmp(la, lb, (size_t)ND * (size_t)V * sizeof(float)) == 0, "step %d differs", t);
  }
  /* the states match afterwards too */
  for (int j = 0; j < ND; j++) {
    int64_t na = a[j]->ops->state_bytes(a[j]), nb = b[j]->ops->state_bytes(b[j]);
    cr_assert_eq(na, nb);
    unsigned char *sa = malloc((size_t)na), *sb = malloc((size_t)nb);
    cr_assert(sa && sb);
    cr_assert_eq(a[j]->ops->save(a[j], sa, err, sizeof err), RSSM_OK);
    cr_assert_eq(b[j]->ops->save(b[j], sb, err, sizeof err), RSSM_OK);
    cr_assert(memcmp(sa, sb, (size_t)na) == 0, "decoder %d: saved states differ", j);
    free(sa);
    free(sb);
  }
  /* a spec decoder is refused, with its index */
  ssm_config sc;
  parse("spec L=8 T=3 ckpt=fp32 accept=uniform", &sc);
  rssm_decoder_params sp = {&sc, 3, 0, 16};
  rssm_decoder *spec;
  cr_assert_eq(rssm_decoder_open(m, &sp, &spec, err, sizeof err), RSSM_OK, "%s", err);
  rssm_decoder *mixed[2] = {b[0], spec};
  int64_t tk2[2] = {1, 2};
  float *lg2[2] = {lb, lb + V};
  int failed = -1;
  cr_assert_eq(m->ops->step_many(m, mixed, 2, tk2, lg2, &failed, err, sizeof err),
               RSSM_ERR_INPUT);
  cr_assert_eq(failed, 1);
  rssm_decoder_free(spec);
  for (int j = 0; j < ND; j++) {
    rssm_decoder_free(a[j]);
    rssm_decoder_free(b[j]);
  }
  free(la);
  free(lb);
  rssm_model_close(m);
}

/* matvec_many against dot_f32 per (row, vector): every width (tails of 0..7 lanes), 1..9 vectors
 * (the 4-, 2- and 1-vector kernels); unaligned vectors. Row threads split rows only, which
 * test_model_forward's one-thread-against-two check covers. */
Test(model_batch, matvec_many_is_dot_f32) {
  enum { ROWS = 37, MAXC = 70, MAXX = 9 };
  float *W = malloc((size_t)ROWS * MAXC * sizeof(float));
  float *X = malloc((size_t)MAXX * MAXC * sizeof(float));
  float *Y = malloc((size_t)MAXX * ROWS * sizeof(float));
  cr_assert(W && X && Y);
  for (int i = 0; i < ROWS * MAXC; i++)
    W[i] = (float)((double)(mix((uint64_t)i) >> 11) / 9007199254740992.0 - 0.5);
  for (int i = 0; i < MAXX * MAXC; i++)
    X[i] = (float)((double)(mix((uint64_t)i + 777777) >> 11) / 9007199254740992.0 - 0.5) * 3.0f;
  {
    for (int cols = 1; cols <= MAXC; cols++)
      for (int nx = 1; nx <= MAXX; nx++) {
        const float *xs[MAXX];
        float *ys[MAXX];
        for (int j = 0; j < nx; j++) {
          xs[j] = X + (size_t)j * MAXC + (j % 3); /* unaligned starts too */
          ys[j] = Y + (size_t)j * ROWS;
        }
        int c = cols - 2 < 1 ? cols : cols - 2; /* room for the offset */
        matvec_many(W, ROWS, c, xs, ys, nx);
        for (int j = 0; j < nx; j++)
          for (int r = 0; r < ROWS; r++) {
            float ref = dot_f32(W + (size_t)r * c, xs[j], c);
            cr_assert(memcmp(&ref, &ys[j][r], sizeof ref) == 0,
                      "cols %d, %d vectors: row %d of vector %d: %a, dot_f32 %a", c, nx, r, j,
                      (double)ys[j][r], (double)ref);
          }
      }
  }
  free(W);
  free(X);
  free(Y);
}

/* Input checks name the state concerned and change nothing. */
Test(model_batch, errors) {
  const char *path = RSSM_SOURCE_DIR "/data/models/qwen35-gdn-tiny";
  model m, m2;
  char err[512];
  cr_assert_eq(model_load(path, &m, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(model_load(path, &m2, err, sizeof err), RSSM_OK, "%s", err);
  model_state s[3];
  build_states(&m, s, 2, STEP_CFGS, NSTEP_CFGS, 4);
  build_states(&m2, s + 2, 1, STEP_CFGS, NSTEP_CFGS, 4);
  const int64_t V = m.cfg.V;
  float *lg_buf = malloc((size_t)3 * (size_t)V * sizeof(float));
  cr_assert(lg_buf);
  float *lg[3] = {lg_buf, lg_buf + V, lg_buf + 2 * V};
  model_state *ss[3] = {&s[0], &s[1], &s[2]};
  int failed = -1;
  int64_t bad[2] = {1, V};
  cr_assert_eq(model_forward_many(ss, 2, bad, 1, lg, &failed, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert_eq(failed, 1);
  cr_assert(strstr(err, "out of range"), "%s", err);
  cr_assert_eq(s[0].pos, 0);
  int64_t ok3[3] = {1, 2, 3};
  cr_assert_eq(model_forward_many(ss, 3, ok3, 1, lg, &failed, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert_eq(failed, 2);
  int64_t two[4] = {1, 2, 3, 4};
  cr_assert_eq(model_forward_many(ss, 2, two, 2, lg, &failed, err, sizeof err), RSSM_ERR_INPUT);
  cr_assert_eq(failed, 0);
  cr_assert_eq(model_forward_many(ss, 0, two, 1, lg, &failed, err, sizeof err), RSSM_OK);
  for (int j = 0; j < 3; j++) model_state_free(&s[j]);
  free(lg_buf);
  model_free(&m);
  model_free(&m2);
}
