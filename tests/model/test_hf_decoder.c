/* The decoder-interface backend (src/decode/hf_decoder.h) on the transformers fixtures: step-by-step
 * logits match ref_logits.npy, spec verify/commit rounds match them too, and a decoder saved
 * mid-way and loaded into a fresh one continues bit-identically. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/npy.h"
#include "src/decode/hf_decoder.h"
#include "src/ssm/ssm_accept.h"
#include "src/ssm/ssm_config.h"

#define FIXTURES RSSM_SOURCE_DIR "/tests/fixtures"
#define NSTEP 64

typedef struct {
  npy_f32 ref;
  npy_index tok;
} golden;

static void load_golden(const char *fx, golden *g) {
  char p[4400], err[512];
  snprintf(p, sizeof p, "%s/ref_logits.npy", fx);
  cr_assert_eq(npy_load_f32(p, &g->ref, err, sizeof err), 0, "%s", err);
  snprintf(p, sizeof p, "%s/tokens.npy", fx);
  cr_assert_eq(npy_load_index(p, &g->tok, err, sizeof err), 0, "%s", err);
}

static double rel(const float *a, const float *b, int64_t n) {
  double md = 0, mx = 0;
  for (int64_t i = 0; i < n; i++) {
    double d = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    if (!(d <= md)) md = d;
    double m = b[i] < 0 ? -b[i] : b[i];
    if (m > mx) mx = m;
  }
  return mx > 0 ? md / mx : md;
}

/* Decode tokens [from, to) into out rows; spec in rounds with seeded acceptance. */
static int64_t run(rssm_decoder *d, const ssm_config *cfg, const golden *g, int64_t from,
                   int64_t to, uint32_t *round, float *out /* [to + T][V] */) {
  char err[512];
  const int64_t V = d->vocab;
  int64_t done = from;
  while (done < to) {
    if (d->T == 0) {
      cr_assert_eq(d->ops->step(d, g->tok.data[done], out + done * V, err, sizeof err), 0, "%s",
                   err);
      done++;
    } else {
      cr_assert_eq(d->ops->verify(d, g->tok.data + done, d->T, out + done * V, err, sizeof err),
                   0, "%s", err);
      int a = ssm_accept_draw(cfg, 5, 0, (*round)++);
      cr_assert_eq(d->ops->commit(d, a, err, sizeof err), 0, "%s", err);
      done += a;
    }
  }
  return done;
}

static void check(const char *name, const char *cfg_text) {
  char fx[4200], err[512];
  snprintf(fx, sizeof fx, "%s/%s", FIXTURES, name);
  golden g;
  load_golden(fx, &g);
  rssm_model *m;
  cr_assert_eq(hf_model_open(fx, &m, err, sizeof err), 0, "%s", err);
  cr_expect(strncmp(m->checksum, "crc32:", 6) == 0, "%s", m->checksum);
  cr_assert_eq(m->vocab, g.ref.shape.dim[1]);
  ssm_config cfg;
  cr_assert_eq(ssm_config_parse(cfg_text, &cfg, err, sizeof err), 0, "%s", err);
  const int T = cfg.strategy == SSM_SPEC ? cfg.T : 1;
  rssm_decoder_params p = {&cfg, 5, 0, NSTEP + T};
  const int64_t V = m->vocab;
  float *a = calloc((size_t)((NSTEP + T) * V), sizeof(float));
  float *b = calloc((size_t)((NSTEP + T) * V), sizeof(float));
  rssm_decoder *d1, *d2, *d3;
  cr_assert_eq(rssm_decoder_open(m, &p, &d1, err, sizeof err), 0, "%s", err);
  uint32_t r1 = 0;
  run(d1, &cfg, &g, 0, NSTEP, &r1, a);
  for (int t = 0; t < NSTEP; t++)
    cr_expect(rel(a + t * V, g.ref.data + t * V, V) <= 1e-4, "%s [%s] step %d: rel %g", name,
              cfg_text, t, rel(a + t * V, g.ref.data + t * V, V));
  /* save mid-way, load into a fresh decoder, continue */
  cr_assert_eq(rssm_decoder_open(m, &p, &d2, err, sizeof err), 0, "%s", err);
  uint32_t r2 = 0;
  int64_t mid = run(d2, &cfg, &g, 0, NSTEP / 2, &r2, b);
  int64_t len = d2->ops->state_bytes(d2);
  unsigned char *buf = malloc((size_t)len);
  cr_assert_eq(d2->ops->save(d2, buf, err, sizeof err), 0, "%s", err);
  rssm_decoder_free(d2);
  cr_assert_eq(rssm_decoder_open(m, &p, &d3, err, sizeof err), 0, "%s", err);
  cr_assert_eq(d3->ops->load(d3, buf, len, err, sizeof err), 0, "%s", err);
  cr_expect_neq(d3->ops->load(d3, buf, len - 1, err, sizeof err), 0);
  cr_assert_eq(d3->ops->load(d3, buf, len, err, sizeof err), 0, "%s", err);
  run(d3, &cfg, &g, mid, NSTEP, &r2, b);
  cr_expect(memcmp(a, b, sizeof(float) * (size_t)(NSTEP * V)) == 0,
            "%s [%s]: resumed decoder differs", name, cfg_text);
  free(buf);
  rssm_decoder_free(d1);
  rssm_decoder_free(d3);
  rssm_model_close(m);
  free(a);
  free(b);
  npy_f32_free(&g.ref);
  npy_index_free(&g.tok);
}

Test(hf_decoder, qwen3_5_vl_conventional) { check("qwen3_5_vl", "conventional state=fp32"); }
Test(hf_decoder, nemotron_h_moe_replay) { check("nemotron_h_moe", "replay L=8 ckpt=fp32"); }
Test(hf_decoder, qwen3_next_spec) { check("qwen3_next", "spec L=8 T=4 ckpt=fp32 accept=uniform"); }

Test(hf_decoder, not_a_model) {
  rssm_model *m;
  char err[512];
  cr_expect_eq(hf_model_open("/nonexistent-model-dir", &m, err, sizeof err), RSSM_ERR_INPUT);
  cr_expect(strstr(err, "config.json"), "%s", err);
}
