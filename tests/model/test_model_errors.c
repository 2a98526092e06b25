/* Bad checkpoints through the real executable: each gets exit status 2 and one line on stderr
 * that names the file or tensor, what was expected and what was found. Every case starts from a
 * valid tiny checkpoint written by the test (tiny_models.c) and corrupts one thing. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "src/model/model_config.h"
#include "src/model/safetensors.h"
#include "tests/cli/cli_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/model/tiny_models.h"

static const char *dir;
static tt_list L;
static char cfg[8192];

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir != NULL);
  tiny_build(TINY_QWEN35_TEXT, &L, cfg, sizeof cfg);
  char p[TPATH_MAX];
  int32_t tok[4] = {1, 2, 3, 4};
  cr_assert_eq(write_tokens_i32(tpath(p, dir, "tokens.npy"), tok, 4), 0);
}
static void teardown(void) {
  tt_free(&L);
  tdir_remove(dir);
}

/* Runs logits; expects status `want` and, for failures, one stderr line containing every
 * needle. */
static void expect_fail(const char *tokens_name, const char *const *needles) {
  char tok[TPATH_MAX], out[TPATH_MAX], errp[TPATH_MAX], model_arg[TPATH_MAX];
  snprintf(model_arg, sizeof model_arg, "%s", dir);
  tpath(tok, dir, tokens_name ? tokens_name : "tokens.npy");
  tpath(out, dir, "out.npy");
  tpath(errp, dir, "stderr.txt");
  char *argv[] = {(char *)RSSM_BIN, (char *)"logits", (char *)"--model", model_arg,
                  (char *)"--tokens", tok, (char *)"--out", out, NULL};
  int st = run_prog(argv, NULL, errp);
  char *e = slurp(errp, NULL);
  cr_assert(WIFEXITED(st), "did not exit normally");
  cr_expect_eq(WEXITSTATUS(st), 2, "exit status %d (expected 2); stderr: %s", WEXITSTATUS(st),
               e ? e : "");
  cr_expect(e && is_one_line(e), "stderr is not one line: '%s'", e ? e : "");
  for (int i = 0; needles && needles[i]; i++)
    cr_expect(e && strstr(e, needles[i]), "stderr '%s' lacks '%s'", e ? e : "", needles[i]);
  cr_expect(!file_exists(out), "output written despite the error");
  free(e);
}

static void write_cfg(const char *text) {
  char p[TPATH_MAX];
  cr_assert_eq(write_text(tpath(p, dir, "config.json"), text), 0);
}

static void write_model(void) {
  char p[TPATH_MAX];
  cr_assert_eq(tt_write(&L, tpath(p, dir, "model.safetensors")), 0);
}

static long file_size(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

Test(model_errors, valid_checkpoint_runs, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  write_model();
  char tok[TPATH_MAX], out[TPATH_MAX];
  tpath(tok, dir, "tokens.npy");
  tpath(out, dir, "out.npy");
  char *argv[] = {(char *)RSSM_BIN, (char *)"logits", (char *)"--model", (char *)dir,
                  (char *)"--tokens", tok, (char *)"--out", out, NULL};
  int st = run_prog(argv, NULL, NULL);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  cr_assert(file_exists(out));
}

Test(model_errors, truncated_file, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  write_model();
  char p[TPATH_MAX];
  tpath(p, dir, "model.safetensors");
  /* cut 10 bytes: only the last tensor in the file (the final norm, 64 bytes) runs short */
  cr_assert_eq(truncate(p, file_size(p) - 10), 0);
  const char *n[] = {"model.safetensors", "out of range", L.t[L.n - 1].name, NULL};
  expect_fail(NULL, n);
}

Test(model_errors, file_shorter_than_length_field, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  char p[TPATH_MAX];
  cr_assert_eq(write_bytes(tpath(p, dir, "model.safetensors"), "abc", 3), 0);
  const char *n[] = {"model.safetensors", "3 bytes", "expected at least 8", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, header_length_past_end, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  write_model();
  char p[TPATH_MAX];
  tpath(p, dir, "model.safetensors");
  FILE *f = fopen(p, "r+b");
  cr_assert(f);
  unsigned char big[8] = {0, 0, 0, 0, 1, 0, 0, 0}; /* 2^32 */
  fwrite(big, 1, 8, f);
  fclose(f);
  const char *n[] = {"model.safetensors", "header length 4294967296", "past the end", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, offsets_out_of_range, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  cJSON *h = tt_header(&L);
  const char *name = L.t[2].name;
  cJSON *e = cJSON_GetObjectItem(h, name);
  cJSON_ReplaceItemInObject(e, "data_offsets", cJSON_CreateIntArray((int[]){0, 1 << 30}, 2));
  char p[TPATH_MAX];
  cr_assert_eq(tt_write_with_header(&L, h, tpath(p, dir, "model.safetensors")), 0);
  cJSON_Delete(h);
  const char *n[] = {"model.safetensors", name, "out of range", "1073741824", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, overlapping_tensors, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  /* two tensors of the same size: layer 0's input and post-attention norms */
  cJSON *h = tt_header(&L);
  cJSON *a = cJSON_GetObjectItem(h, "model.layers.0.input_layernorm.weight");
  cJSON *b = cJSON_GetObjectItem(h, "model.layers.0.post_attention_layernorm.weight");
  cr_assert(a && b);
  cJSON_ReplaceItemInObject(b, "data_offsets",
                            cJSON_Duplicate(cJSON_GetObjectItem(a, "data_offsets"), 1));
  char p[TPATH_MAX];
  cr_assert_eq(tt_write_with_header(&L, h, tpath(p, dir, "model.safetensors")), 0);
  cJSON_Delete(h);
  const char *n[] = {"model.safetensors", "overlap", "input_layernorm", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, size_not_matching_shape, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  cJSON *h = tt_header(&L);
  cJSON *e = cJSON_GetObjectItem(h, "model.layers.0.linear_attn.dt_bias");
  cJSON_ReplaceItemInObject(e, "shape", cJSON_CreateIntArray((int[]){7}, 1));
  char p[TPATH_MAX];
  cr_assert_eq(tt_write_with_header(&L, h, tpath(p, dir, "model.safetensors")), 0);
  cJSON_Delete(h);
  const char *n[] = {"model.safetensors", "linear_attn.dt_bias", "span 24 bytes",
                     "expected 28", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, negative_shape, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  cJSON *h = tt_header(&L);
  cJSON *e = cJSON_GetObjectItem(h, "model.layers.0.linear_attn.dt_bias");
  cJSON_ReplaceItemInObject(e, "shape", cJSON_CreateIntArray((int[]){-6}, 1));
  char p[TPATH_MAX];
  cr_assert_eq(tt_write_with_header(&L, h, tpath(p, dir, "model.safetensors")), 0);
  cJSON_Delete(h);
  const char *n[] = {"model.safetensors", "linear_attn.dt_bias", "shape[0]", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, shape_mismatch_with_config, .init = setup, .fini = teardown) {
  /* config.json says intermediate_size 47 while the checkpoint holds 48 */
  char c2[8192];
  snprintf(c2, sizeof c2, "%s", cfg);
  char *k = strstr(c2, "\"intermediate_size\": 48");
  cr_assert(k);
  memcpy(k, "\"intermediate_size\": 47", 23);
  write_cfg(c2);
  write_model();
  const char *n[] = {"model.layers.0.mlp.gate_proj.weight", "[48, 32]", "expected [47, 32]",
                     NULL};
  expect_fail(NULL, n);
}

Test(model_errors, missing_tensor, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  tt_remove(&L, "model.layers.2.linear_attn.A_log");
  write_model();
  const char *n[] = {"model.layers.2.linear_attn.A_log", "missing", "expected shape [6]", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, unknown_model_type, .init = setup, .fini = teardown) {
  char c2[8192];
  snprintf(c2, sizeof c2, "%s", cfg);
  char *k = strstr(c2, "qwen3_5_text");
  memcpy(k, "llama3_5_txt", 12);
  write_cfg(c2);
  write_model();
  const char *n[] = {"config.json", "unknown model_type 'llama3_5_txt'", "nemotron_h", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, unsupported_dtype_f8, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  /* A_log of layer 0 declared F8_E4M3: one byte per element, offsets shrunk to match (a gap
   * after it is allowed); the loader refuses the dtype by name when it converts the tensor */
  const char *name = "model.layers.0.linear_attn.A_log";
  cJSON *h = tt_header(&L);
  cJSON *e = cJSON_GetObjectItem(h, name);
  cJSON *o = cJSON_GetObjectItem(e, "data_offsets");
  int b0 = cJSON_GetArrayItem(o, 0)->valueint;
  cJSON_ReplaceItemInObject(e, "dtype", cJSON_CreateString("F8_E4M3"));
  cJSON_ReplaceItemInObject(e, "data_offsets", cJSON_CreateIntArray((int[]){b0, b0 + 6}, 2));
  char p[TPATH_MAX];
  cr_assert_eq(tt_write_with_header(&L, h, tpath(p, dir, "model.safetensors")), 0);
  cJSON_Delete(h);
  const char *n[] = {name, "dtype F8_E4M3 is not supported", "expected F32, BF16 or F16", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, unsupported_dtype_i64, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  const char *name = "model.layers.0.linear_attn.dt_bias";
  cJSON *h = tt_header(&L);
  cJSON *e = cJSON_GetObjectItem(h, name);
  cJSON_ReplaceItemInObject(e, "dtype", cJSON_CreateString("I64"));
  cJSON_ReplaceItemInObject(e, "shape", cJSON_CreateIntArray((int[]){3}, 1));
  char p[TPATH_MAX];
  cr_assert_eq(tt_write_with_header(&L, h, tpath(p, dir, "model.safetensors")), 0);
  cJSON_Delete(h);
  /* the shape check comes first: [3] is not [6] */
  const char *n[] = {name, "shape [3]", "expected [6]", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, unknown_dtype_name, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  cJSON *h = tt_header(&L);
  cJSON *e = cJSON_GetObjectItem(h, "model.norm.weight");
  cJSON_ReplaceItemInObject(e, "dtype", cJSON_CreateString("Q4_K"));
  char p[TPATH_MAX];
  cr_assert_eq(tt_write_with_header(&L, h, tpath(p, dir, "model.safetensors")), 0);
  cJSON_Delete(h);
  const char *n[] = {"model.norm.weight", "unknown dtype 'Q4_K'", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, header_not_json, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  char p[TPATH_MAX];
  unsigned char buf[8 + 5] = {5, 0, 0, 0, 0, 0, 0, 0, '{', 'x', 'y', 'z', '!'};
  cr_assert_eq(write_bytes(tpath(p, dir, "model.safetensors"), buf, sizeof buf), 0);
  const char *n[] = {"model.safetensors", "not a JSON object", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, missing_config, .init = setup, .fini = teardown) {
  write_model();
  const char *n[] = {"config.json", "cannot open", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, token_out_of_vocab, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  write_model();
  char p[TPATH_MAX];
  int32_t tok[3] = {1, 80, 2}; /* vocab is 80 */
  cr_assert_eq(write_tokens_i32(tpath(p, dir, "bad_tokens.npy"), tok, 3), 0);
  const char *n[] = {"bad_tokens.npy", "token[1] = 80", "vocab 80", NULL};
  expect_fail("bad_tokens.npy", n);
}

Test(model_errors, sharded_index_missing_tensor, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  char p[TPATH_MAX];
  cr_assert_eq(tt_write(&L, tpath(p, dir, "shard-1.safetensors")), 0);
  cr_assert_eq(write_text(tpath(p, dir, "model.safetensors.index.json"),
                          "{\"metadata\": {}, \"weight_map\": {\"model.norm.weight\": "
                          "\"shard-1.safetensors\", \"model.ghost.weight\": "
                          "\"shard-1.safetensors\"}}"),
               0);
  const char *n[] = {"model.safetensors.index.json", "model.ghost.weight", "missing", NULL};
  expect_fail(NULL, n);
}

Test(model_errors, sharded_index_valid, .init = setup, .fini = teardown) {
  /* two shards: the first half of the tensors in one file, the rest in another */
  write_cfg(cfg);
  tt_list a, b;
  tt_init(&a, 0);
  tt_init(&b, 0);
  char map[65536];
  size_t used = (size_t)snprintf(map, sizeof map, "{\"weight_map\": {");
  for (int i = 0; i < L.n; i++) {
    tt_list *dst = i < L.n / 2 ? &a : &b;
    const tt_tensor *t = &L.t[i];
    float *d = tt_add(dst, t->name, t->ndim, t->shape[0], t->shape[1], t->shape[2], 0, 0);
    memcpy(d, t->data, sizeof(float) * (size_t)t->n);
    dst->t[dst->n - 1].bf16 = t->bf16;
    used += (size_t)snprintf(map + used, sizeof map - used, "%s\"%s\": \"%s\"", i ? ", " : "",
                             t->name, i < L.n / 2 ? "m-1.safetensors" : "m-2.safetensors");
  }
  snprintf(map + used, sizeof map - used, "}}");
  char p[TPATH_MAX];
  cr_assert_eq(tt_write(&a, tpath(p, dir, "m-1.safetensors")), 0);
  cr_assert_eq(tt_write(&b, tpath(p, dir, "m-2.safetensors")), 0);
  cr_assert_eq(write_text(tpath(p, dir, "model.safetensors.index.json"), map), 0);
  char tok[TPATH_MAX], out[TPATH_MAX];
  tpath(tok, dir, "tokens.npy");
  tpath(out, dir, "out.npy");
  char *argv[] = {(char *)RSSM_BIN, (char *)"logits", (char *)"--model", (char *)dir,
                  (char *)"--tokens", tok, (char *)"--out", out, NULL};
  int st = run_prog(argv, NULL, NULL);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  tt_free(&a);
  tt_free(&b);
}

/* Usage errors of the command itself: exit 2 and one line naming the option. */
static void expect_usage(char *const *args, const char *needle) {
  char errp[TPATH_MAX];
  tpath(errp, dir, "stderr.txt");
  char *argv[16];
  int n = 0;
  argv[n++] = (char *)RSSM_BIN;
  argv[n++] = (char *)"logits";
  for (; args[n - 2]; n++) argv[n] = args[n - 2];
  argv[n] = NULL;
  int st = run_prog(argv, NULL, errp);
  char *e = slurp(errp, NULL);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 2, "status %d; stderr: %s", st, e ? e : "");
  cr_expect(e && is_one_line(e), "stderr not one line: %s", e ? e : "");
  cr_expect(e && strstr(e, needle), "stderr '%s' lacks '%s'", e ? e : "", needle);
  free(e);
}

Test(model_errors, usage_errors, .init = setup, .fini = teardown) {
  write_cfg(cfg);
  write_model();
  char tok[TPATH_MAX], out[TPATH_MAX];
  tpath(tok, dir, "tokens.npy");
  tpath(out, dir, "out.npy");
  char *d = (char *)dir;
  {
    char *a[] = {(char *)"--tokens", tok, (char *)"--out", out, NULL};
    expect_usage(a, "missing --model");
  }
  {
    char *a[] = {(char *)"--model", d, (char *)"--tokens", tok, (char *)"--out", out,
                 (char *)"--bogus", NULL};
    expect_usage(a, "'--bogus'");
  }
  {
    char *a[] = {(char *)"--model", d, (char *)"--tokens", tok, (char *)"--out", out,
                 (char *)"--steps", (char *)"5", NULL};
    expect_usage(a, "--steps 5 exceeds the 4 tokens");
  }
  {
    char *a[] = {(char *)"--model", d, (char *)"--tokens", tok, (char *)"--out", out,
                 (char *)"--threads", (char *)"0", NULL};
    expect_usage(a, "--threads '0'");
  }
  {
    char *a[] = {(char *)"--model", d, (char *)"--tokens", tok, (char *)"--out", out,
                 (char *)"--config", (char *)"replay L=4 ckpt=fp32 hp=fp16 lp=fp8", NULL};
    expect_usage(a, "--config");
  }
  {
    char *a[] = {(char *)"--model", d, (char *)"--tokens", tok, (char *)"--out",
                 (char *)"x.csv", NULL};
    expect_usage(a, "expected a .h5 or .npy");
  }
  {
    char *a[] = {(char *)"--model", d, (char *)"--tokens", tok, (char *)"--out", out,
                 (char *)"--model", d, NULL};
    expect_usage(a, "--model given twice");
  }
}

/* Random damage to a valid file (bytes flipped in the header, random truncation): the reader
 * either refuses it with RSSM_ERR_INPUT or accepts it with every tensor inside the file (under
 * the sanitizer build this also checks that no byte outside the mapping is read). */
Test(model_errors, safetensors_random_damage, .init = setup, .fini = teardown) {
  char p[TPATH_MAX];
  write_model();
  size_t len;
  unsigned char *good = (unsigned char *)slurp(tpath(p, dir, "model.safetensors"), &len);
  cr_assert(good && len > 8);
  uint64_t hl = 0;
  for (int i = 7; i >= 0; i--) hl = (hl << 8) | good[i];
  uint64_t rng = 42;
  unsigned char *bad = malloc(len);
  char path[TPATH_MAX];
  tpath(path, dir, "damaged.safetensors");
  for (int it = 0; it < 300; it++) {
    memcpy(bad, good, len);
    size_t n = len;
    int flips = 1 + (int)(rng_next(&rng) % 4);
    for (int f = 0; f < flips; f++) {
      size_t at = (size_t)(rng_next(&rng) % (hl + 8));
      bad[at] = (unsigned char)rng_next(&rng);
    }
    if (rng_next(&rng) % 4 == 0) n = (size_t)(rng_next(&rng) % len);
    cr_assert_eq(write_bytes(path, bad, n), 0);
    st_archive ar;
    char err[512];
    int rc = st_open_file(path, &ar, err, sizeof err);
    cr_assert(rc == RSSM_OK || rc == RSSM_ERR_INPUT, "iteration %d: status %d (%s)", it, rc, err);
    if (rc == RSSM_OK) {
      const unsigned char *base = ar.files[0].map;
      for (int64_t t = 0; t < ar.ntensors; t++) {
        const st_tensor *x = &ar.tensors[t];
        int64_t bytes = x->numel * st_dtype_size(x->dtype);
        cr_assert(x->data >= base && x->data + bytes <= base + ar.files[0].size,
                  "iteration %d: tensor %s outside the file", it, x->name);
      }
      st_close(&ar);
    }
  }
  free(bad);
  free(good);
}

/* Random damage to config.json: parsed or refused with RSSM_ERR_INPUT, never a crash. */
Test(model_errors, config_random_damage, .init = setup, .fini = teardown) {
  tt_list nl;
  char ncfg[8192];
  tiny_build(TINY_NEMOTRON_H, &nl, ncfg, sizeof ncfg); /* the richer config (Infinity, MoE) */
  tt_free(&nl);
  const char *texts[2] = {cfg, ncfg};
  uint64_t rng = 7;
  char buf[8192], p[TPATH_MAX];
  tpath(p, dir, "config.json");
  for (int it = 0; it < 400; it++) {
    const char *src = texts[it % 2];
    size_t n = strlen(src);
    memcpy(buf, src, n);
    int flips = 1 + (int)(rng_next(&rng) % 3);
    for (int f = 0; f < flips; f++) buf[rng_next(&rng) % n] = (char)(32 + rng_next(&rng) % 95);
    if (rng_next(&rng) % 4 == 0) n = (size_t)(rng_next(&rng) % n);
    cr_assert_eq(write_bytes(p, buf, n), 0);
    model_config c;
    char err[512];
    int rc = model_config_load(dir, &c, err, sizeof err);
    cr_assert(rc == RSSM_OK || rc == RSSM_ERR_INPUT, "iteration %d: status %d (%s)", it, rc, err);
    if (rc == RSSM_OK) model_config_free(&c);
  }
}
