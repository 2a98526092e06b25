/* Padding rows of the output layer (SPEC section 5, docs/contract.md "Per-step metrics"): a tiny
 * checkpoint whose embedding and lm_head have vocab_size rows but whose tokenizer.json has fewer
 * ids. The run's vocabulary is the tokenizer's; every metric equals an independent double
 * computation over the first V_real logits of the same weights without padding; values planted in
 * the padding rows (huge, NaN, inf) change no bit of any dataset; a tokenizer larger than
 * vocab_size, or malformed, is refused with one line and exit 2. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/decode/decoder.h"
#include "src/driver/run_data.h"
#include "src/driver/run_h5.h"
#include "src/io/status.h"
#include "src/ssm/ssm_config.h"
#include "tests/cli/cli_test_util.h"
#include "tests/driver/driver_test_util.h"
#include "tests/model/tiny_models.h"

#define PAD 23   /* padding rows: V_real = vocab_size - PAD */
#define STEPS 24
#define SEQS 2

static const char *dir;
static char errf[TPATH_MAX];
static const char *const MODELS[] = {"clean", "padA", "padB", "bad"};

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir);
  tpath(errf, dir, "err.txt");
}

static void teardown(void) {
  static const char *const files[] = {"config.json", "model.safetensors", "tokenizer.json"};
  char p[TPATH_MAX + 64];
  for (int m = 0; m < 4; m++) {
    for (int f = 0; f < 3; f++) {
      snprintf(p, sizeof p, "%s/%s/%s", dir, MODELS[m], files[f]);
      unlink(p);
    }
    snprintf(p, sizeof p, "%s/%s", dir, MODELS[m]);
    rmdir(p);
  }
  tdir_remove(dir);
}
TestSuite(vocab_pad, .init = setup, .fini = teardown);

/* tokenizer.json with ids 0 .. vr-3 in model.vocab and vr-1 as an added token (vr-2 is a hole:
 * the size is the largest id + 1, as the tokenizers library counts it). */
static void write_tokenizer(const char *model_dir, int64_t vr) {
  size_t cap = 64 + 24 * (size_t)vr, n = 0;
  char *t = malloc(cap);
  cr_assert(t);
  n += (size_t)snprintf(t + n, cap - n, "{\"model\": {\"type\": \"BPE\", \"vocab\": {");
  for (int64_t i = 0; i <= vr - 3; i++)
    n += (size_t)snprintf(t + n, cap - n, "%s\"t%lld\": %lld", i ? ", " : "", (long long)i,
                          (long long)i);
  snprintf(t + n, cap - n, "}}, \"added_tokens\": [{\"id\": %lld, \"content\": \"<eos>\"}]}",
           (long long)(vr - 1));
  char p[TPATH_MAX + 32];
  snprintf(p, sizeof p, "%s/tokenizer.json", model_dir);
  put_text(p, t);
  free(t);
}

/* Rows >= vr of the embedding and lm_head set to garbage of the given kind (0: none). */
static void plant(tt_list *l, int64_t vr, int kind) {
  static const char *const names[] = {"model.embed_tokens.weight", "backbone.embeddings.weight",
                                      "lm_head.weight"};
  for (int i = 0; i < 3; i++) {
    const tt_tensor *t = tt_find(l, names[i]);
    if (!t || kind == 0) continue;
    const int64_t H = t->shape[1];
    for (int64_t q = vr * H; q < t->n; q++)
      t->data[q] = kind == 1 ? (q % 2 ? 3.0e4f : -1.0e3f) : (q % 3 ? NAN : INFINITY);
  }
}

/* dir/name: the tiny checkpoint (same seed, so the same real rows) with padding garbage of kind
 * and, when vr > 0, a tokenizer of vr ids. */
static void make_model(tiny_kind kind, const char *name, int64_t vr, int garbage) {
  char md[TPATH_MAX];
  tpath(md, dir, name);
  cr_assert_eq(mkdir(md, 0755), 0);
  tt_list l;
  char cfg[8192];
  tiny_build(kind, &l, cfg, sizeof cfg);
  plant(&l, vr, garbage);
  cr_assert_eq(tiny_write(md, &l, cfg), 0);
  tt_free(&l);
  if (vr > 0) write_tokenizer(md, vr);
}

static void run_ok(const char *const *args) {
  int rc = rssm(errf, args);
  char *e = slurp(errf, NULL);
  cr_assert_eq(rc, 0, "replayssm %s failed (%d): %s", args[0], rc, e);
  free(e);
}

/* log-softmax of x[n] in double */
static void log_softmax_d(const float *x, int64_t n, double *out /* [n] */) {
  double mx = -INFINITY, s = 0;
  for (int64_t i = 0; i < n; i++) mx = x[i] > mx ? x[i] : mx;
  for (int64_t i = 0; i < n; i++) s += exp((double)x[i] - mx);
  for (int64_t i = 0; i < n; i++) out[i] = (double)x[i] - mx - log(s);
}

static int64_t argmax(const float *x, int64_t n) {
  int64_t a = 0;
  for (int64_t i = 1; i < n; i++)
    if (x[i] > x[a]) a = i;
  return a;
}

/* The logits [N][V] of sequence k's tokens (x_t = tok[t]) under spec, decoded in this process on
 * model m (the checkpoint without padding: all V rows). */
static void decode(const rssm_model *m, const char *spec, uint64_t seed, uint32_t seq,
                   const int32_t *tok, float *out /* [STEPS][V] */) {
  char err[512];
  ssm_config c;
  cr_assert_eq(ssm_config_parse(spec, &c, err, sizeof err), 0, "%s: %s", spec, err);
  rssm_decoder_params p = {&c, seed, seq, STEPS + 1};
  rssm_decoder *d;
  cr_assert_eq(rssm_decoder_open(m, &p, &d, err, sizeof err), RSSM_OK, "%s", err);
  for (int t = 0; t < STEPS; t++)
    cr_assert_eq(d->ops->step(d, tok[t], out + (int64_t)t * m->vocab, err, sizeof err), RSSM_OK,
                 "%s", err);
  rssm_decoder_free(d);
}

/* Observed on this machine against the double computation (worst of qwen3.5 text and nemotron-h):
 * |kl| 5.9e-10, |nll| 1.7e-6 (reference nll; 1.6e-6 for the configurations), |dp| 3.1e-8;
 * 10x that. */
#define KL_TOL 6e-9
#define NLL_TOL 2e-5
#define DP_TOL 3e-7

typedef struct {
  double kl, nll, dp, ref_nll; /* worst differences */
  double full_nll;             /* the largest |nll over all V rows - recorded nll| */
} diffs;

/* Every metric of configuration ci of sequence k in d against the double computation from the
 * clean checkpoint's logits (cut to vr, and over all rows for full_nll). */
static void compare(const run_data *d, int ci, int64_t k, const rssm_model *clean, int64_t vr,
                    diffs *w) {
  const int64_t V = clean->vocab;
  float *ref = malloc(sizeof(float) * (size_t)(STEPS * V));
  float *cfg = malloc(sizeof(float) * (size_t)(STEPS * V));
  double *lr = malloc(sizeof(double) * (size_t)V), *lc = malloc(sizeof(double) * (size_t)V);
  cr_assert(ref && cfg && lr && lc);
  const int32_t *tok = d->tokens + k * (STEPS + 1);
  decode(clean, d->reference, d->seed, (uint32_t)(d->offset + k), tok, ref);
  decode(clean, d->cfg[ci].spec, d->seed, (uint32_t)(d->offset + k), tok, cfg);
  for (int t = 0; t < STEPS; t++) {
    const float *r = ref + t * V, *c = cfg + t * V;
    const int32_t y = tok[t + 1];
    log_softmax_d(r, vr, lr);
    log_softmax_d(c, vr, lc);
    double kl = 0;
    for (int64_t i = 0; i < vr; i++) kl += exp(lr[i]) * (lr[i] - lc[i]);
    const int64_t at = k * STEPS + t;
    const run_cfg_data *g = &d->cfg[ci];
    w->kl = fmax(w->kl, fabs((double)g->kl[at] - kl));
    w->nll = fmax(w->nll, fabs((double)g->nll[at] + lc[y]));
    w->ref_nll = fmax(w->ref_nll, fabs((double)d->ref_nll[at] + lr[y]));
    w->dp = fmax(w->dp, fabs((double)g->dp[at] - (exp(lc[y]) - exp(lr[y]))));
    cr_assert_eq(g->top1[at], argmax(r, vr) == argmax(c, vr), "%s step %d: top1", g->name, t);
    log_softmax_d(c, V, lc); /* what a run that kept the padding rows would record */
    w->full_nll = fmax(w->full_nll, fabs((double)g->nll[at] + lc[y]));
  }
  free(ref);
  free(cfg);
  free(lr);
  free(lc);
}

static void write_inputs(int64_t vr, const char *model) {
  char toks[TPATH_MAX], ini[TPATH_MAX], text[512];
  int32_t ids[200];
  uint64_t s = 17;
  for (int i = 0; i < 200; i++) ids[i] = (int32_t)(rng_next(&s) % (uint64_t)vr);
  cr_assert_eq(write_npy_raw(tpath(toks, dir, "t.npy"), 1,
                             "{'descr': '<i4', 'fortran_order': False, 'shape': (200,), }", ids,
                             sizeof ids), 0);
  snprintf(text, sizeof text,
           "model = %s\ntokens = t.npy\nsequences = %d\nsteps = %d\nseed = 5\nblock = 8\n"
           "[config shared]\nspec = replay L=8 ckpt=nvfp4/sr\n"
           "[config eager]\nspec = conventional state=fp8/sr\n", model, SEQS, STEPS);
  put_text(tpath(ini, dir, "exp.ini"), text);
}

static void check(tiny_kind kind) {
  const int64_t V = tiny_vocab(kind), vr = V - PAD;
  make_model(kind, "clean", 0, 0);
  make_model(kind, "padA", vr, 1);
  make_model(kind, "padB", vr, 2);
  char ini[TPATH_MAX], a[TPATH_MAX], b[TPATH_MAX], md[TPATH_MAX], err[1024], why[512];
  tpath(ini, dir, "exp.ini");
  write_inputs(vr, "padA");
  run_ok((const char *[]){"run", ini, "--out", tpath(a, dir, "a.h5"), "--quiet", NULL});
  write_inputs(vr, "padB");
  run_ok((const char *[]){"run", ini, "--out", tpath(b, dir, "b.h5"), "--quiet", NULL});
  /* (c) the padding rows' values reach no metric: huge finite garbage and NaN/inf give the same
   * bits in every dataset */
  cr_assert_eq(h5_datasets_equal(a, b, why, sizeof why), 0, "padding garbage changed: %s", why);

  run_data d;
  cr_assert_eq(run_h5_read(a, &d, err, sizeof err), RSSM_OK, "%s", err);
  /* (a) the run's vocabulary is the tokenizer's; the rows are recorded beside it */
  cr_assert_eq(d.vocab, vr, "vocab %lld (expected %lld)", (long long)d.vocab, (long long)vr);
  cr_assert_eq(d.vocab_rows, V, "vocab_rows %lld (expected %lld)", (long long)d.vocab_rows,
               (long long)V);
  rssm_model *clean, *pad;
  cr_assert_eq(rssm_model_open(tpath(md, dir, "clean"), &clean, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(rssm_model_open(tpath(md, dir, "padA"), &pad, err, sizeof err), RSSM_OK, "%s", err);
  cr_assert_eq(clean->vocab, V);
  cr_assert_eq(pad->vocab, vr);
  cr_assert_eq(pad->vocab_rows, V);
  /* the padded model's decoder gives exactly the first vr logits of the unpadded one */
  float *lc = malloc(sizeof(float) * (size_t)(STEPS * V)), *lp = malloc(sizeof(float) * (size_t)(STEPS * vr));
  cr_assert(lc && lp);
  decode(clean, d.cfg[0].spec, d.seed, 0, d.tokens, lc);
  decode(pad, d.cfg[0].spec, d.seed, 0, d.tokens, lp);
  for (int t = 0; t < STEPS; t++)
    cr_assert_eq(memcmp(lc + t * V, lp + t * vr, sizeof(float) * (size_t)vr), 0,
                 "step %d: padded logits differ from the first %lld", t, (long long)vr);
  free(lc);
  free(lp);
  /* (b) every metric against the double computation over the first vr logits */
  diffs w = {0, 0, 0, 0, 0};
  for (int ci = 0; ci < d.nconfig; ci++)
    for (int64_t k = 0; k < d.K; k++) compare(&d, ci, k, clean, vr, &w);
  fprintf(stderr, "vocab_pad kind %d: |kl| %.2e |nll| %.2e |dp| %.2e |ref nll| %.2e; over all "
          "%lld rows nll would differ by %.2e\n", (int)kind, w.kl, w.nll, w.dp, w.ref_nll,
          (long long)V, w.full_nll);
  cr_assert(w.kl <= KL_TOL, "kl differs by %.3e (tolerance %.0e)", w.kl, KL_TOL);
  cr_assert(w.nll <= NLL_TOL, "nll differs by %.3e (tolerance %.0e)", w.nll, NLL_TOL);
  cr_assert(w.ref_nll <= NLL_TOL, "reference nll differs by %.3e", w.ref_nll);
  cr_assert(w.dp <= DP_TOL, "dp differs by %.3e (tolerance %.0e)", w.dp, DP_TOL);
  /* the comparison can tell the two vocabularies apart: over all V rows the nll is far off */
  cr_assert(w.full_nll > 100 * NLL_TOL, "nll over all rows differs only by %.3e", w.full_nll);
  rssm_model_close(clean);
  rssm_model_close(pad);
  run_data_free(&d);
}

Test(vocab_pad, qwen35_tied_embedding) { check(TINY_QWEN35_TEXT); }
Test(vocab_pad, nemotron_h_lm_head) { check(TINY_NEMOTRON_H); }

/* exit 2 and one line naming the file and the field */
static void refused(const char *tokenizer, const char *const *want) {
  char md[TPATH_MAX], p[TPATH_MAX + 32], ini[TPATH_MAX], out[TPATH_MAX];
  make_model(TINY_NEMOTRON_H, "bad", 0, 0);
  tpath(md, dir, "bad");
  snprintf(p, sizeof p, "%s/tokenizer.json", md);
  put_text(p, tokenizer);
  write_inputs(40, "bad");
  int rc = rssm(errf, (const char *[]){"run", tpath(ini, dir, "exp.ini"), "--out",
                                       tpath(out, dir, "x.h5"), "--quiet", NULL});
  char *e = slurp(errf, NULL);
  cr_assert(e);
  cr_assert_eq(rc, 2, "exit %d (expected 2): %s", rc, e);
  cr_assert(strstr(e, "tokenizer.json") != NULL, "message does not name the file: %s", e);
  for (int i = 0; want[i]; i++) cr_assert(strstr(e, want[i]) != NULL, "'%s' missing: %s", want[i], e);
  char *nl = strchr(e, '\n');
  cr_assert(nl == NULL || nl[1] == '\0', "more than one line: %s", e);
  free(e);
}

Test(vocab_pad, tokenizer_larger_than_vocab_size) {
  /* tiny Nemotron-H has vocab_size 72: id 72 needs 73 rows */
  refused("{\"model\": {\"vocab\": {\"a\": 0, \"b\": 1}}, \"added_tokens\": [{\"id\": 72}]}",
          (const char *[]){"added_tokens[0].id", "73", "vocab_size 72", NULL});
}
Test(vocab_pad, tokenizer_not_json) {
  refused("{\"model\": {\"vocab\": {\"a\": 0,", (const char *[]){"not a JSON object", NULL});
}
Test(vocab_pad, tokenizer_vocab_not_ids) {
  refused("{\"model\": {\"vocab\": {\"a\": 0, \"b\": -1}}}",
          (const char *[]){"model.vocab[\"b\"]", "not an id", NULL});
}
Test(vocab_pad, tokenizer_without_model) {
  refused("{\"added_tokens\": []}", (const char *[]){"field model", NULL});
}
