/* Sharded checkpoints in the released layouts (issue 22, docs/real-checkpoints.md), written the
 * way transformers' save_pretrained writes them (tt_write_sharded: model-0000i-of-0000n
 * .safetensors + model.safetensors.index.json, every tensor BF16):
 *
 *  - Qwen3.5 as released: model_type qwen3_5 with text_config, tensors model.language_model.*,
 *    tied embeddings (no lm_head.weight), plus model.visual.* and mtp.* tensors the runtime must
 *    skip (scripts/make_4b_checkpoints.py writes the 4B one on the GPU);
 *  - Nemotron-H: tensors backbone.*, untied lm_head.
 *
 * Both decode through the real executable. Then each fault of issue 22 is planted in both: a
 * missing shard, an index naming a file that is not there, a shard truncated in its data and in
 * its header, a wrong shard (another checkpoint's, or this checkpoint's other shard under the
 * name), and offsets that only a 32-bit reader would accept. Each gets exit status 2 and one
 * stderr line that names the file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/cli/cli_test_util.h"
#include "tests/model/model_test_util.h"
#include "tests/model/tiny_models.h"

#define NSHARDS 3

static const char *dir;

static void setup(void) {
  dir = tdir_make();
  cr_assert(dir != NULL);
  char p[TPATH_MAX];
  int32_t tok[6] = {1, 2, 3, 4, 5, 6};
  cr_assert_eq(write_tokens_i32(tpath(p, dir, "tokens.npy"), tok, 6), 0);
}
static void teardown(void) { tdir_remove(dir); }

/* buf [TPATH_MAX] = a/b */
static char *join(char *buf, const char *a, const char *b) {
  int w = snprintf(buf, TPATH_MAX, "%s/%s", a, b);
  cr_assert(w > 0 && w < TPATH_MAX);
  return buf;
}

/* The tiny qwen3_5_text model wrapped as the release is: config under text_config with
 * model_type qwen3_5 on top (tie_word_embeddings at both levels), tensors renamed model. ->
 * model.language_model., a vision tower and an MTP head that the text decode never reads. */
static void build_qwen_vl(tt_list *l, char *cfg, size_t cap) {
  char text[8192];
  tiny_build(TINY_QWEN35_TEXT, l, text, sizeof text);
  for (int i = 0; i < l->n; i++) {
    char nm[160];
    cr_assert(strncmp(l->t[i].name, "model.", 6) == 0);
    snprintf(nm, sizeof nm, "model.language_model.%s", l->t[i].name + 6);
    snprintf(l->t[i].name, sizeof l->t[i].name, "%s", nm);
  }
  tt_add(l, "model.visual.patch_embed.proj.weight", 2, 16, 12, 0, 0.1f, 0.0f);
  tt_add(l, "model.visual.blocks.0.attn.qkv.weight", 2, 48, 16, 0, 0.1f, 0.0f);
  tt_add(l, "model.visual.merger.linear_fc2.weight", 2, 32, 16, 0, 0.1f, 0.0f);
  tt_add(l, "mtp.fc.weight", 2, 32, 64, 0, 0.1f, 0.0f);
  for (int i = 0; i < l->n; i++) l->t[i].bf16 = 0, tt_set_bf16(l, l->t[i].name);
  cJSON *tc = cJSON_Parse(text);
  cr_assert(tc != NULL);
  cJSON_ReplaceItemInObject(tc, "model_type", cJSON_CreateString("qwen3_5_text"));
  cJSON *top = cJSON_CreateObject();
  cJSON *arch = cJSON_AddArrayToObject(top, "architectures");
  cJSON_AddItemToArray(arch, cJSON_CreateString("Qwen3_5ForConditionalGeneration"));
  cJSON_AddStringToObject(top, "model_type", "qwen3_5");
  cJSON_AddBoolToObject(top, "tie_word_embeddings", 1);
  cJSON_AddItemToObject(top, "text_config", tc);
  cJSON *vc = cJSON_AddObjectToObject(top, "vision_config");
  cJSON_AddStringToObject(vc, "model_type", "qwen3_5");
  cJSON_AddNumberToObject(vc, "depth", 1);
  char *s = cJSON_Print(top);
  cr_assert(s && strlen(s) < cap);
  snprintf(cfg, cap, "%s", s);
  free(s);
  cJSON_Delete(top);
}

static void build_nemotron(tt_list *l, char *cfg, size_t cap) {
  tiny_build(TINY_NEMOTRON_H, l, cfg, cap);
  for (int i = 0; i < l->n; i++) l->t[i].bf16 = 0, tt_set_bf16(l, l->t[i].name);
}

typedef void (*builder)(tt_list *, char *, size_t);
static const builder builders[2] = {build_qwen_vl, build_nemotron};
static const char *const model_names[2] = {"qwen3.5 (VL-wrapped)", "nemotron_h"};

/* DIR/mK: model k's sharded checkpoint; returns its folder in buf. */
static char *write_model(int k, char *buf) {
  tt_list l;
  static char cfg[16384];
  builders[k](&l, cfg, sizeof cfg);
  char name[16];
  snprintf(name, sizeof name, "m%d", k);
  tpath(buf, dir, name);
  cr_assert(mkdir(buf, 0755) == 0 || access(buf, F_OK) == 0);
  char p[TPATH_MAX];
  cr_assert_eq(write_text(join(p, buf, "config.json"), cfg), 0);
  cr_assert_eq(tt_write_sharded(&l, buf, NSHARDS), 0);
  tt_free(&l);
  return buf;
}

static char *shard_path(char *buf, const char *mdir, int i) {
  char nm[64];
  tt_shard_name(nm, sizeof nm, i, NSHARDS);
  return join(buf, mdir, nm);
}

/* replayssm logits on mdir: the exit status; stderr into *errtext (malloc'ed). */
static int run_logits(const char *mdir, char **errtext) {
  char tok[TPATH_MAX], out[TPATH_MAX], errp[TPATH_MAX];
  tpath(tok, dir, "tokens.npy");
  tpath(out, dir, "out.npy");
  tpath(errp, dir, "stderr.txt");
  unlink(out);
  char *argv[] = {(char *)RSSM_BIN, (char *)"logits", (char *)"--model", (char *)mdir,
                  (char *)"--tokens", tok, (char *)"--out", out, NULL};
  int st = run_prog(argv, NULL, errp);
  *errtext = slurp(errp, NULL);
  cr_assert(WIFEXITED(st), "did not exit normally");
  return WEXITSTATUS(st);
}

/* Exit 2, one line, naming `file` (a path inside mdir) and containing `what`. */
static void expect_refused(int k, const char *mdir, const char *file, const char *what) {
  char *e = NULL;
  int rc = run_logits(mdir, &e);
  cr_expect_eq(rc, 2, "%s: exit status %d (expected 2); stderr: %s", model_names[k], rc,
               e ? e : "");
  cr_expect(e && is_one_line(e), "%s: stderr is not one line: '%s'", model_names[k], e ? e : "");
  cr_expect(e && strstr(e, file), "%s: stderr '%s' does not name %s", model_names[k], e ? e : "",
            file);
  cr_expect(e && strstr(e, what), "%s: stderr '%s' lacks '%s'", model_names[k], e ? e : "", what);
  free(e);
}

Test(model_shards, released_layouts_decode, .init = setup, .fini = teardown) {
  for (int k = 0; k < 2; k++) {
    char m[TPATH_MAX];
    write_model(k, m);
    char *e = NULL;
    int rc = run_logits(m, &e);
    cr_expect_eq(rc, 0, "%s: exit %d: %s", model_names[k], rc, e ? e : "");
    if (k == 0) /* the vision tower and the MTP head are skipped, and said to be */
      cr_expect(e && strstr(e, "not read by the model"), "no unused-tensor warning: %s",
                e ? e : "");
    free(e);
  }
}

Test(model_shards, missing_shard, .init = setup, .fini = teardown) {
  for (int k = 0; k < 2; k++) {
    char m[TPATH_MAX], s[TPATH_MAX];
    write_model(k, m);
    cr_assert_eq(unlink(shard_path(s, m, 2)), 0);
    expect_refused(k, m, s, "cannot open");
  }
}

Test(model_shards, index_names_absent_file, .init = setup, .fini = teardown) {
  for (int k = 0; k < 2; k++) {
    char m[TPATH_MAX], p[TPATH_MAX];
    write_model(k, m);
    /* the last tensor of the map moved to a shard that was never written */
    join(p, m, "model.safetensors.index.json");
    char *idx = slurp(p, NULL);
    cr_assert(idx);
    cJSON *root = cJSON_Parse(idx);
    free(idx);
    cJSON *wm = cJSON_GetObjectItem(root, "weight_map");
    cJSON *last = wm->child;
    while (last->next) last = last->next;
    cJSON_SetValuestring(last, "model-00004-of-00003.safetensors");
    char *text = cJSON_Print(root);
    cr_assert_eq(write_text(p, text), 0);
    free(text);
    cJSON_Delete(root);
    char want[TPATH_MAX];
    join(want, m, "model-00004-of-00003.safetensors");
    expect_refused(k, m, want, "cannot open");
  }
}

Test(model_shards, truncated_shard_data, .init = setup, .fini = teardown) {
  for (int k = 0; k < 2; k++) {
    char m[TPATH_MAX], s[TPATH_MAX];
    write_model(k, m);
    shard_path(s, m, 2);
    size_t n = 0;
    free(slurp(s, &n));
    cr_assert_eq(truncate(s, (off_t)n - 6), 0); /* the shard's last tensor runs short */
    expect_refused(k, m, s, "out of range");
  }
}

Test(model_shards, truncated_shard_header, .init = setup, .fini = teardown) {
  for (int k = 0; k < 2; k++) {
    char m[TPATH_MAX], s[TPATH_MAX];
    write_model(k, m);
    cr_assert_eq(truncate(shard_path(s, m, 3), 40), 0); /* cut inside the JSON header */
    expect_refused(k, m, s, "past the end");
    cr_assert_eq(truncate(s, 5), 0); /* shorter than the length field */
    expect_refused(k, m, s, "expected at least 8");
  }
}

Test(model_shards, wrong_shard_from_another_checkpoint, .init = setup, .fini = teardown) {
  for (int k = 0; k < 2; k++) {
    char m0[TPATH_MAX], m1[TPATH_MAX], dst[TPATH_MAX], src[TPATH_MAX];
    write_model(0, m0); /* both fresh: the other model's shard 2 as it was written */
    write_model(1, m1);
    const char *mine = k == 0 ? m0 : m1, *other = k == 0 ? m1 : m0;
    shard_path(dst, mine, 2);
    size_t n = 0;
    char *bytes = slurp(shard_path(src, other, 2), &n);
    cr_assert(bytes);
    cr_assert_eq(write_bytes(dst, bytes, n), 0);
    free(bytes);
    expect_refused(k, mine, dst, "missing from");
  }
}

Test(model_shards, wrong_shard_of_the_same_checkpoint, .init = setup, .fini = teardown) {
  for (int k = 0; k < 2; k++) {
    char m[TPATH_MAX], s2[TPATH_MAX], s3[TPATH_MAX];
    write_model(k, m);
    size_t n = 0;
    char *bytes = slurp(shard_path(s3, m, 3), &n);
    cr_assert(bytes);
    cr_assert_eq(write_bytes(shard_path(s2, m, 2), bytes, n), 0); /* shard 3 under shard 2's name */
    free(bytes);
    expect_refused(k, m, s2, "appears in both");
  }
}

/* A tensor of 2^30 + 1 F32 elements (2^32 + 4 bytes) in a shard whose data block is 4 bytes:
 * a reader that kept offsets or sizes in 32 bits would see [0, 4) and accept it. */
Test(model_shards, offsets_past_32_bits, .init = setup, .fini = teardown) {
  for (int k = 0; k < 2; k++) {
    char m[TPATH_MAX], s[TPATH_MAX], p[TPATH_MAX];
    write_model(k, m);
    shard_path(s, m, 3);
    const char *hdr = "{\"big.weight\": {\"dtype\": \"F32\", \"shape\": [1073741825], "
                      "\"data_offsets\": [0, 4294967300]}}";
    size_t hl = strlen(hdr);
    unsigned char buf[256];
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)(((uint64_t)hl >> (8 * i)) & 0xff);
    memcpy(buf + 8, hdr, hl);
    memset(buf + 8 + hl, 0, 4);
    cr_assert_eq(write_bytes(s, buf, 8 + hl + 4), 0);
    /* the index lists it in shard 3 */
    join(p, m, "model.safetensors.index.json");
    char *idx = slurp(p, NULL);
    cJSON *root = cJSON_Parse(idx);
    free(idx);
    char nm[64];
    tt_shard_name(nm, sizeof nm, 3, NSHARDS);
    cJSON_AddStringToObject(cJSON_GetObjectItem(root, "weight_map"), "big.weight", nm);
    char *text = cJSON_Print(root);
    cr_assert_eq(write_text(p, text), 0);
    free(text);
    cJSON_Delete(root);
    expect_refused(k, m, s, "4294967300");
  }
}
