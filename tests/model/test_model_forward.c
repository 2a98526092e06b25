/* The CPU forward against an independent double-precision reference on tiny random checkpoints
 * of each family (GDN + gated attention + SwiGLU/MoE stacks; Mamba-2 + attention + relu2 + latent
 * MoE stacks), through the real `replayssm logits` executable. Also: .h5 output, thread-count
 * invariance, and every kind of state configuration running end to end. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "src/io/npy.h"
#include "tests/cli/cli_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/model/tiny_models.h"

#define NTOK 40

static const char *dir;

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir != NULL);
}
static void teardown(void) { tdir_remove(dir); }

/* Run `replayssm logits` on dir with extra args; returns the exit status. */
static int run_logits(const char *out, const char *config, const char *threads) {
  char model_arg[TPATH_MAX], tok[TPATH_MAX], errp[TPATH_MAX];
  snprintf(model_arg, sizeof model_arg, "%s", dir);
  tpath(tok, dir, "tokens.npy");
  tpath(errp, dir, "stderr.txt");
  char *argv[16];
  int a = 0;
  argv[a++] = (char *)RSSM_BIN;
  argv[a++] = (char *)"logits";
  argv[a++] = (char *)"--model";
  argv[a++] = model_arg;
  argv[a++] = (char *)"--tokens";
  argv[a++] = tok;
  argv[a++] = (char *)"--out";
  argv[a++] = (char *)out;
  if (config) {
    argv[a++] = (char *)"--config";
    argv[a++] = (char *)config;
  }
  if (threads) {
    argv[a++] = (char *)"--threads";
    argv[a++] = (char *)threads;
  }
  argv[a] = NULL;
  int st = run_prog(argv, NULL, errp);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    char *e = slurp(errp, NULL);
    fprintf(stderr, "replayssm logits failed: %s\n", e ? e : "?");
    free(e);
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* max_i |a_i - b_i| / max_i |b_i| over one step's V logits, both fp32. */
static double rel_err_f32(const float *a /* [V] */, const float *b /* [V] */, int64_t V) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < V; i++) num = fmax(num, fabs((double)a[i] - b[i])), den = fmax(den, fabs((double)b[i]));
  return num / den;
}

/* Tolerances about 10x the worst observed here (max |ours - ref| / max |ref| over a step):
 * the reference forward 3.6e-7..6.4e-7 over the five kinds, replay/spec with fp32 checkpoints
 * 3.0e-7..6.7e-7 from the reference and 3.0e-7..7.1e-7 from standard decoding. The floor of the
 * quantised configurations' change from standard decoding is 10x below the smallest observed
 * (6.5e-4, conventional bf16 on the qwen3.5 text model; the others 1.5e-3..7.7e-2). */
#define NEAR_TOL 7e-6
#define FP32_STD_TOL 7e-6
#define QUANT_FLOOR 6e-5

static void make_tokens(int32_t *tok, int n, int64_t V, uint64_t seed) {
  for (int i = 0; i < n; i++) tok[i] = (int32_t)(rng_next(&seed) % (uint64_t)V);
}

/* Build, write, decode with the reference config and compare with the reference per step. */
static void check_family(tiny_kind kind) {
  tt_list l;
  char cfg[8192];
  tiny_build(kind, &l, cfg, sizeof cfg);
  cr_assert_eq(tiny_write(dir, &l, cfg), 0);
  const int64_t V = tiny_vocab(kind);
  int32_t tok[NTOK];
  make_tokens(tok, NTOK, V, 99 + (uint64_t)kind);
  char p[TPATH_MAX], out[TPATH_MAX];
  cr_assert_eq(write_tokens_i32(tpath(p, dir, "tokens.npy"), tok, NTOK), 0);
  double *ref = malloc(sizeof(double) * NTOK * (size_t)V);
  tiny_reference(kind, &l, tok, NTOK, ref);

  tpath(out, dir, "logits.npy");
  cr_assert_eq(run_logits(out, NULL, NULL), 0);
  npy_f32 got;
  char err[512];
  cr_assert_eq(npy_load_f32(out, &got, err, sizeof err), 0, "%s", err);
  cr_assert_eq(got.shape.ndim, 2);
  cr_assert_eq(got.shape.dim[0], NTOK);
  cr_assert_eq(got.shape.dim[1], V);
  double worst = 0;
  for (int t = 0; t < NTOK; t++) {
    double e = rel_err(got.data + t * V, ref + t * V, V);
    cr_expect(e <= NEAR_TOL, "kind %d step %d: max|ours - ref| / max|ref| = %g", (int)kind, t, e);
    if (e > worst) worst = e;
  }
  fprintf(stderr, "tiny kind %d: worst step relative error %.3g\n", (int)kind, worst);

  /* one thread gives the same bits */
  char out1[TPATH_MAX];
  tpath(out1, dir, "logits1.npy");
  cr_assert_eq(run_logits(out1, NULL, "1"), 0);
  npy_f32 one;
  cr_assert_eq(npy_load_f32(out1, &one, err, sizeof err), 0, "%s", err);
  cr_expect(memcmp(one.data, got.data, sizeof(float) * NTOK * (size_t)V) == 0,
            "logits depend on the thread count");
  npy_f32_free(&one);

  /* replay with fp32 checkpoints and spec with fp32 are reassociations of the reference */
  const char *near[] = {"replay L=4 ckpt=fp32", "spec L=8 T=3 ckpt=fp32 accept=uniform"};
  for (int c = 0; c < 2; c++) {
    tpath(out1, dir, "logits_c.npy");
    cr_assert_eq(run_logits(out1, near[c], NULL), 0, "config %s", near[c]);
    npy_f32 o;
    cr_assert_eq(npy_load_f32(out1, &o, err, sizeof err), 0, "%s", err);
    double w = 0, wstd = 0;
    for (int t = 0; t < NTOK; t++) {
      double e = rel_err(o.data + t * V, ref + t * V, V);
      cr_expect(e <= NEAR_TOL, "config '%s' kind %d step %d: rel err %g", near[c], (int)kind, t, e);
      w = fmax(w, e);
      wstd = fmax(wstd, rel_err_f32(o.data + t * V, got.data + t * V, V));
    }
    fprintf(stderr, "tiny kind %d '%s': worst vs reference %.3g, vs standard decoding %.3g\n",
            (int)kind, near[c], w, wstd);
    cr_expect(wstd <= FP32_STD_TOL, "config '%s' kind %d: %.3g from standard decoding", near[c],
              (int)kind, wstd);
    npy_f32_free(&o);
  }
  /* quantised configurations change the logits: each above a floor from standard decoding and
     each different from the others (a runtime that ran them all as fp32 fails here) */
  const char *quant[] = {"conventional state=bf16", "replay L=4 ckpt=nvfp4/sr",
                         "replay L=4 hp=fp16/sr lp=fp8", "spec L=8 T=2 hp=fp32 lp=nvfp4 accept=geom:0.7"};
  npy_f32 q[4];
  for (int c = 0; c < 4; c++) {
    tpath(out1, dir, "logits_q.npy");
    cr_assert_eq(run_logits(out1, quant[c], NULL), 0, "config %s", quant[c]);
    cr_assert_eq(npy_load_f32(out1, &q[c], err, sizeof err), 0, "%s", err);
    for (int64_t i = 0; i < q[c].shape.count; i++)
      cr_assert(isfinite(q[c].data[i]), "config '%s': non-finite logit", quant[c]);
    double w = 0;
    for (int t = 0; t < NTOK; t++) w = fmax(w, rel_err_f32(q[c].data + t * V, got.data + t * V, V));
    fprintf(stderr, "tiny kind %d '%s': worst relative change %.3g\n", (int)kind, quant[c], w);
    cr_assert(w >= QUANT_FLOOR, "config '%s' kind %d: worst relative change %.3g below %.0e: the "
              "state format has no effect", quant[c], (int)kind, w, QUANT_FLOOR);
    for (int e = 0; e < c; e++)
      cr_assert(memcmp(q[c].data, q[e].data, sizeof(float) * NTOK * (size_t)V) != 0,
                "configs '%s' and '%s' give identical logits", quant[e], quant[c]);
  }
  for (int c = 0; c < 4; c++) npy_f32_free(&q[c]);
  npy_f32_free(&got);
  free(ref);
  tt_free(&l);
}

Test(model_forward, qwen35_text_dense_tied, .init = setup, .fini = teardown, .timeout = 300) {
  check_family(TINY_QWEN35_TEXT);
}
Test(model_forward, qwen35_moe_wrapped, .init = setup, .fini = teardown, .timeout = 300) {
  check_family(TINY_QWEN35_MOE);
}
Test(model_forward, qwen3_next_interleaved, .init = setup, .fini = teardown, .timeout = 300) {
  check_family(TINY_QWEN3_NEXT);
}
Test(model_forward, nemotron_h_mamba2_moe, .init = setup, .fini = teardown, .timeout = 300) {
  check_family(TINY_NEMOTRON_H);
}

Test(model_forward, h5_output_matches_npy, .init = setup, .fini = teardown, .timeout = 300) {
  tt_list l;
  char cfg[8192];
  tiny_build(TINY_NEMOTRON_H, &l, cfg, sizeof cfg);
  cr_assert_eq(tiny_write(dir, &l, cfg), 0);
  int32_t tok[8];
  make_tokens(tok, 8, tiny_vocab(TINY_NEMOTRON_H), 5);
  char p[TPATH_MAX], o1[TPATH_MAX], o2[TPATH_MAX];
  cr_assert_eq(write_tokens_i32(tpath(p, dir, "tokens.npy"), tok, 8), 0);
  cr_assert_eq(run_logits(tpath(o1, dir, "l.npy"), NULL, NULL), 0);
  cr_assert_eq(run_logits(tpath(o2, dir, "l.h5"), NULL, NULL), 0);
  npy_f32 a;
  char err[256];
  cr_assert_eq(npy_load_f32(o1, &a, err, sizeof err), 0);
  hid_t f = H5Fopen(o2, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert(f >= 0);
  hid_t ds = H5Dopen2(f, "/logits", H5P_DEFAULT);
  cr_assert(ds >= 0);
  hid_t sp = H5Dget_space(ds);
  hsize_t dims[2];
  cr_assert_eq(H5Sget_simple_extent_ndims(sp), 2);
  H5Sget_simple_extent_dims(sp, dims, NULL);
  cr_assert_eq(dims[0], 8);
  cr_assert_eq((int64_t)dims[1], tiny_vocab(TINY_NEMOTRON_H));
  float *b = malloc(sizeof(float) * dims[0] * dims[1]);
  cr_assert(H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, b) >= 0);
  cr_expect(memcmp(a.data, b, sizeof(float) * dims[0] * dims[1]) == 0);
  H5Sclose(sp);
  H5Dclose(ds);
  H5Fclose(f);
  cr_expect_eq(count_entries_containing(dir, ".tmp."), 0);
  free(b);
  npy_f32_free(&a);
  tt_free(&l);
}

/* A .tok.zst stream (replayssm tokens: one token per byte) decodes like the .npy of the same ids. */
Test(model_forward, tok_zst_tokens, .init = setup, .fini = teardown, .timeout = 300) {
  tt_list l;
  char cfg[8192];
  tiny_build(TINY_QWEN35_TEXT, &l, cfg, sizeof cfg); /* vocab 80: bytes 48..74 below */
  cr_assert_eq(tiny_write(dir, &l, cfg), 0);
  const char text[] = "0123456789:;<=>?@ABCDEFGHIJ";
  const int n = (int)sizeof text - 1;
  char p[TPATH_MAX], zst[TPATH_MAX], errp[TPATH_MAX];
  cr_assert_eq(write_text(tpath(p, dir, "text.txt"), text), 0);
  tpath(zst, dir, "t.tok.zst");
  char *targv[] = {(char *)RSSM_BIN, (char *)"tokens", (char *)"--out", zst, p, NULL};
  int st = run_prog(targv, NULL, tpath(errp, dir, "tok_err.txt"));
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "replayssm tokens failed");
  int32_t ids[64];
  for (int i = 0; i < n; i++) ids[i] = (int32_t)(unsigned char)text[i];
  cr_assert_eq(write_tokens_i32(tpath(p, dir, "tokens.npy"), ids, n), 0);
  char o1[TPATH_MAX], o2[TPATH_MAX];
  cr_assert_eq(run_logits(tpath(o1, dir, "a.npy"), NULL, NULL), 0);
  char *argv[] = {(char *)RSSM_BIN, (char *)"logits", (char *)"--model", (char *)dir,
                  (char *)"--tokens", zst, (char *)"--out", tpath(o2, dir, "b.npy"), NULL};
  st = run_prog(argv, NULL, NULL);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "logits on a .tok.zst failed");
  size_t la, lb;
  char *a = slurp(o1, &la), *b = slurp(o2, &lb);
  cr_assert(a && b);
  cr_expect(la == lb && memcmp(a, b, la) == 0, ".tok.zst and .npy tokens give different logits");
  free(a);
  free(b);
  tt_free(&l);
}

/* config.json's time_step_limit clamps the Mamba-2 dt at position 0 (the reference's prompt,
 * processed by the chunked scan that takes dt_limit) and not in single-token decode (mamba_ssm's
 * selective_state_update takes no limit; docs/contract.md, "Mamba-2 dt limit"). A limit that binds
 * on both sides: the runtime follows the double reference that clamps position 0 only, the clamp
 * visibly changes the logits (so the check exercises it), and a reference that clamps every
 * position is far off (so the check tells the two contracts apart). */
Test(model_forward, nemotron_h_dt_limit, .init = setup, .fini = teardown, .timeout = 300) {
  tt_list l;
  char cfg[8192];
  const int64_t V = tiny_vocab(TINY_NEMOTRON_H);
  int32_t tok[NTOK];
  make_tokens(tok, NTOK, V, 5);
  double *free_ref = malloc(sizeof(double) * NTOK * (size_t)V);
  double *ref = malloc(sizeof(double) * NTOK * (size_t)V);
  double *every = malloc(sizeof(double) * NTOK * (size_t)V);
  cr_assert(free_ref && ref && every);
  tiny_build(TINY_NEMOTRON_H, &l, cfg, sizeof cfg);
  tiny_reference(TINY_NEMOTRON_H, &l, tok, NTOK, free_ref);
  tt_free(&l);
  tiny_set_dt_limit(0.5, 1.5, 1);
  tiny_build(TINY_NEMOTRON_H, &l, cfg, sizeof cfg);
  tiny_reference(TINY_NEMOTRON_H, &l, tok, NTOK, every);
  tt_free(&l);
  tiny_set_dt_limit(0.5, 1.5, 0);
  tiny_build(TINY_NEMOTRON_H, &l, cfg, sizeof cfg);
  tiny_reference(TINY_NEMOTRON_H, &l, tok, NTOK, ref);
  tiny_set_dt_limit(0.0, INFINITY, 0);
  cr_assert(strstr(cfg, "\"time_step_limit\": [0.5, 1.5]"), "%s", cfg);
  cr_assert_eq(tiny_write(dir, &l, cfg), 0);
  char p[TPATH_MAX], out[TPATH_MAX], err[512];
  cr_assert_eq(write_tokens_i32(tpath(p, dir, "tokens.npy"), tok, NTOK), 0);
  cr_assert_eq(run_logits(tpath(out, dir, "logits.npy"), NULL, NULL), 0);
  npy_f32 got;
  cr_assert_eq(npy_load_f32(out, &got, err, sizeof err), 0, "%s", err);
  double worst = 0, moved = 0, apart = 0;
  for (int t = 0; t < NTOK; t++) {
    worst = fmax(worst, rel_err(got.data + t * V, ref + t * V, V));
    double num = 0, den = 0, num_e = 0;
    for (int64_t i = 0; i < V; i++) {
      num = fmax(num, fabs(ref[t * V + i] - free_ref[t * V + i]));
      num_e = fmax(num_e, fabs(ref[t * V + i] - every[t * V + i]));
      den = fmax(den, fabs(free_ref[t * V + i]));
    }
    moved = fmax(moved, num / den);
    apart = fmax(apart, num_e / den);
  }
  fprintf(stderr, "dt limit [0.5, 1.5]: worst vs the reference clamping position 0 %.3g; the clamp "
          "moves the reference by %.3g; clamping every position would differ by %.3g\n", worst,
          moved, apart);
  cr_assert_leq(worst, NEAR_TOL, "dt-limited forward off the reference by %.3g", worst);
  cr_assert_gt(moved, 1000 * NEAR_TOL, "the limit does not bind (%.3g)", moved);
  cr_assert_gt(apart, 1000 * NEAR_TOL, "clamping past position 0 changes nothing (%.3g)", apart);
  npy_f32_free(&got);
  free(ref);
  free(every);
  free(free_ref);
  tt_free(&l);
}
