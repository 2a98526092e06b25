/* The trained byte-level fixture models (data/models/qwen35-gdn-tiny, data/models/nemotronh-m2-tiny;
 * docs/trained-models.md) decoded on the CPU by `replayssm logits` over the first 512 bytes of
 * Moby-Dick (each directory's tokens.npy) against the reference logits stored beside them
 * (ref_logits.npy, float32 [512][256]). At every step
 *   max|ours - ref| / max|ref| <= 2.5e-5,
 * and the bits per byte of the 511 predictions computed from our logits must agree with the same
 * number computed from the reference logits to 2.5e-7 (and be a trained model's: below 3).
 * The references are transformers' cached step-by-step decode in fp32 from the bf16 weights on the
 * CPU of the GPU machine (scripts/train_fixture_models.py; for qwen35-gdn-tiny remade with
 * --reference-only from a fresh from_pretrained load, after the training run's own reference had
 * bf16-rounded RoPE frequencies). The independent float64 decode tests/trained/qwen35_reference.py
 * agrees with that reference to 3.8e-7
 * (docs/trained-models.md). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "src/io/npy.h"
#include "tests/cli/cli_test_util.h"

#define MODELS RSSM_SOURCE_DIR "/data/models"
/* 10x the worst observed here on the models of session 4, 2026-12-01 (nemotronh-m2-tiny 4.6e-7,
 * qwen35-gdn-tiny 2.1e-6; session 3's models 5.0e-7 and 1.5e-6); re-derive after retraining */
#define TOL 2.5e-5

/* -log2 softmax(row)[target], in double */
static double bits(const float *row, int64_t V, int64_t target) {
  double mx = row[0];
  for (int64_t i = 1; i < V; i++)
    if (row[i] > mx) mx = row[i];
  double s = 0;
  for (int64_t i = 0; i < V; i++) s += exp((double)row[i] - mx);
  return -((double)row[target] - mx - log(s)) / log(2.0);
}

static void check_model(const char *name) {
  char dir[TPATH_MAX], ref[TPATH_MAX], tok[TPATH_MAX], out[TPATH_MAX], errp[TPATH_MAX];
  tpath(dir, MODELS, name);
  tpath(ref, dir, "ref_logits.npy");
  tpath(tok, dir, "tokens.npy");
  const char *tmpdir = tdir_make();
  cr_assert(tmpdir);
  tpath(out, tmpdir, "ours.npy");
  tpath(errp, tmpdir, "stderr.txt");
  char err[512];
  npy_f32 theirs;
  cr_assert_eq(npy_load_f32(ref, &theirs, err, sizeof err), 0, "%s: %s", name, err);
  cr_assert_eq(theirs.shape.ndim, 2, "%s: ref_logits.npy is not 2-D", name);
  const int64_t N = theirs.shape.dim[0], V = theirs.shape.dim[1];
  cr_assert_eq(N, 512, "%s: expected 512 reference steps, found %lld", name, (long long)N);
  cr_assert_eq(V, 256, "%s: expected a byte vocabulary, found %lld", name, (long long)V);
  npy_index ids;
  cr_assert_eq(npy_load_index(tok, &ids, err, sizeof err), 0, "%s: %s", name, err);
  cr_assert_eq(ids.n, N, "%s: tokens.npy holds %lld ids", name, (long long)ids.n);

  char steps[32];
  snprintf(steps, sizeof steps, "%lld", (long long)N);
  char *argv[] = {(char *)RSSM_BIN, (char *)"logits", (char *)"--model", dir,
                  (char *)"--tokens", tok, (char *)"--steps", steps, (char *)"--out", out, NULL};
  int st = run_prog(argv, NULL, errp);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    char *e = slurp(errp, NULL);
    cr_assert_fail("%s: replayssm logits failed: %s", name, e ? e : "?");
  }
  npy_f32 ours;
  cr_assert_eq(npy_load_f32(out, &ours, err, sizeof err), 0, "%s: %s", name, err);
  cr_assert(ours.shape.ndim == 2 && ours.shape.dim[0] == N && ours.shape.dim[1] == V,
            "%s: our logits have the wrong shape", name);
  int bad = 0;
  double worst = 0, b_ours = 0, b_theirs = 0;
  for (int64_t t = 0; t < N; t++) {
    const float *a = ours.data + t * V, *b = theirs.data + t * V;
    double md = 0, mx = 0;
    for (int64_t i = 0; i < V; i++) {
      double d = fabs((double)a[i] - (double)b[i]);
      if (!(d <= md)) md = d;
      if (fabs((double)b[i]) > mx) mx = fabs((double)b[i]);
    }
    double rel = mx > 0 ? md / mx : md;
    if (!(rel <= worst)) worst = rel;
    if (!(rel <= TOL)) {
      if (bad < 5)
        cr_expect_fail("%s: step %lld: max|ours - ref| / max|ref| = %.3g (tolerance %g)",
                       name, (long long)t, rel, TOL);
      bad++;
    }
    if (t + 1 < N) {
      b_ours += bits(a, V, ids.data[t + 1]);
      b_theirs += bits(b, V, ids.data[t + 1]);
    }
  }
  b_ours /= (double)(N - 1);
  b_theirs /= (double)(N - 1);
  fprintf(stderr, "%s: %lld steps, worst relative error %.3g; bits per byte over %lld "
          "predictions: replayssm %.5f, reference %.5f (difference %.2e)\n", name, (long long)N, worst,
          (long long)(N - 1), b_ours, b_theirs, fabs(b_ours - b_theirs));
  cr_expect_eq(bad, 0, "%s: %d step(s) beyond tolerance", name, bad);
  /* 10x the observed difference (1.2e-8, 2.5e-8; the previous models 1.2e-8, 4.5e-8) */
  cr_expect(fabs(b_ours - b_theirs) <= 2.5e-7, "%s: bits per byte %.5f (replayssm) vs %.5f "
            "(reference)", name, b_ours, b_theirs);
  cr_expect(b_ours < 3.0, "%s: %.3f bits per byte is not a trained model's", name, b_ours);
  npy_f32_free(&ours);
  npy_f32_free(&theirs);
  npy_index_free(&ids);
  tdir_remove(tmpdir);
}

Test(trained_models, qwen35_gdn_tiny_matches_reference, .timeout = 600) {
  check_model("qwen35-gdn-tiny");
}

Test(trained_models, nemotronh_m2_tiny_matches_reference, .timeout = 600) {
  check_model("nemotronh-m2-tiny");
}
