/* The bad-input matrix (issue 10): malformed inputs of every kind, each made from a small valid
 * one, run through the real executable. Every case must end with exit status exactly 2 (never a
 * signal, never 0 or 1) and exactly one line on stderr that names the file (or option) and the
 * field at fault. Inputs: .npy arrays, safetensors checkpoints, config.json, token streams
 * (.tok.zst and .npy), experiment files, configuration strings, format strings, and the
 * command-line arguments of quant, ssm-sim, logits, run, tokens, merge, summary and theory.
 *
 * In the table, "@" at the start of an argument or needle stands for the case's temporary
 * directory plus '/' ("@" alone: the directory itself, which also serves as a model directory
 * when a case copies a fixture checkpoint into it). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "src/io/status.h"
#include "src/tokens/tokstream.h"
#include "tests/cli/cli_test_util.h"

#define FIXTURE RSSM_SOURCE_DIR "/tests/fixtures/qwen3_5_text"

static const char *dir;

/* ---- valid inputs, and the damage done to them ----------------------------------------- */

static void put(const char *name, const char *text) {
  char p[TPATH_MAX];
  cr_assert_eq(write_bytes(tpath(p, dir, name), text, strlen(text)), 0);
}

static void good_npy(const char *name) {
  char p[TPATH_MAX];
  float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  cr_assert_eq(write_npy_raw(tpath(p, dir, name), 1,
                             "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 4), }", x,
                             sizeof x), 0);
}

/* The fixture checkpoint (config.json, model.safetensors) and its tokens, copied into dir. */
static void good_model(void) {
  const char *files[] = {"config.json", "model.safetensors", "tokens.npy"};
  for (int i = 0; i < 3; i++) {
    char src[TPATH_MAX], dst[TPATH_MAX];
    snprintf(src, sizeof src, "%s/%s", FIXTURE, files[i]);
    size_t n;
    char *b = slurp(src, &n);
    cr_assert(b, "cannot read %s", src);
    cr_assert_eq(write_bytes(tpath(dst, dir, files[i]), b, n), 0);
    free(b);
  }
}

/* Replace the first `from` in file `name` by `to` (the file is treated as bytes). */
static void patch(const char *name, const char *from, const char *to) {
  char p[TPATH_MAX];
  size_t n;
  char *b = slurp(tpath(p, dir, name), &n);
  cr_assert(b);
  char *at = NULL;
  for (size_t k = 0; k + strlen(from) <= n && !at; k++)
    if (memcmp(b + k, from, strlen(from)) == 0) at = b + k;
  cr_assert(at, "'%s' not found in %s", from, name);
  size_t pre = (size_t)(at - b), fl = strlen(from), tl = strlen(to);
  char *o = malloc(n - fl + tl);
  memcpy(o, b, pre);
  memcpy(o + pre, to, tl);
  memcpy(o + pre + tl, at + fl, n - pre - fl);
  cr_assert_eq(write_bytes(p, o, n - fl + tl), 0);
  free(o);
  free(b);
}

/* Rewrite the safetensors header: the JSON with `from` replaced by `to`, its length updated. */
static void patch_st_header(const char *from, const char *to) {
  char p[TPATH_MAX];
  size_t n;
  unsigned char *b = (unsigned char *)slurp(tpath(p, dir, "model.safetensors"), &n);
  cr_assert(b && n > 8);
  uint64_t hl = 0;
  for (int i = 0; i < 8; i++) hl |= (uint64_t)b[i] << (8 * i);
  char *hdr = malloc(hl + 1);
  memcpy(hdr, b + 8, hl);
  hdr[hl] = '\0';
  char *at = strstr(hdr, from);
  cr_assert(at, "'%s' not in the safetensors header", from);
  size_t pre = (size_t)(at - hdr), fl = strlen(from), tl = strlen(to);
  size_t nhl = hl - fl + tl, nn = 8 + nhl + (n - 8 - hl);
  unsigned char *o = malloc(nn);
  for (int i = 0; i < 8; i++) o[i] = (unsigned char)(nhl >> (8 * i));
  memcpy(o + 8, hdr, pre);
  memcpy(o + 8 + pre, to, tl);
  memcpy(o + 8 + pre + tl, at + fl, hl - pre - fl);
  memcpy(o + 8 + nhl, b + 8 + hl, n - 8 - hl);
  cr_assert_eq(write_bytes(p, o, nn), 0);
  free(o);
  free(hdr);
  free(b);
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* t.tok.zst: 400 byte tokens of text. */
static void good_tokens(void) {
  uint32_t ids[400];
  const char *s = "call me ishmael. some years ago - never mind how long precisely - ";
  for (int i = 0; i < 400; i++) ids[i] = (unsigned char)s[i % strlen(s)];
  char p[TPATH_MAX], err[512];
  cr_assert_eq(tokstream_write(tpath(p, dir, "t.tok.zst"), "byte", 256, ids, 400, err,
                               sizeof err), RSSM_OK, "%s", err);
}

/* Damage t.tok.zst: set byte `off` to `val` (off < 0: cut -off bytes from the end); with
 * reseal the header checksum is recomputed, so the damage is seen by the check behind it. */
static void damage_tokens(long off, unsigned char val, int reseal) {
  char p[TPATH_MAX];
  size_t n;
  unsigned char *b = (unsigned char *)slurp(tpath(p, dir, "t.tok.zst"), &n);
  cr_assert(b);
  if (off < 0) n -= (size_t)-off;
  else b[off] = val;
  if (reseal) {
    /* zlib's crc32 of bytes 0..59, computed bitwise here to keep the test self-contained */
    uint32_t c = 0xffffffffu;
    for (int i = 0; i < 60; i++) {
      c ^= b[i];
      for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
    }
    put32(b + 60, ~c);
  }
  cr_assert_eq(write_bytes(p, b, n), 0);
  free(b);
}

static const char *EXP_HEAD = "model = toy:gdn\ntokens = t.tok.zst\nsequences = 2\nsteps = 16\n";

static void exp_with(const char *rest) {
  char text[4096];
  snprintf(text, sizeof text, "%s%s", EXP_HEAD, rest);
  put("exp.ini", text);
}

/* ---- the cases' preparations -------------------------------------------------------------- */

static void p_none(void) {}
static void p_npy(void) { good_npy("x.npy"); }
static void p_npy_magic(void) { good_npy("x.npy"); patch("x.npy", "\x93NUMPY", "\x93NUMPZ"); }
static void p_npy_f8(void) { good_npy("x.npy"); patch("x.npy", "'<f4'", "'<f8'"); }
static void p_npy_fortran(void) { good_npy("x.npy"); patch("x.npy", "False", "True "); }
static void p_npy_shape(void) { good_npy("x.npy"); patch("x.npy", "(2, 4)", "(2, 5)"); }
static void p_npy_nokey(void) { good_npy("x.npy"); patch("x.npy", "'shape'", "'shope'"); }

static void p_model(void) { good_model(); }
static void p_model_tokens(void) { good_model(); remove(tpath((char[TPATH_MAX]){0}, dir, "config.json")); }
static void p_st_hlen(void) {
  good_model();
  char p[TPATH_MAX];
  size_t n;
  unsigned char *b = (unsigned char *)slurp(tpath(p, dir, "model.safetensors"), &n);
  b[5] = 0x10; /* header length ~ 2^40: far beyond the file */
  cr_assert_eq(write_bytes(p, b, n), 0);
  free(b);
}
static void p_st_dtype(void) { good_model(); patch_st_header("\"dtype\":\"BF16\"", "\"dtype\":\"BF17\""); }
static void p_st_offsets(void) { good_model(); patch_st_header("\"data_offsets\":[0,", "\"data_offsets\":[1,"); }
static void p_st_json(void) { good_model(); patch_st_header("{", "["); }
static void p_st_shape(void) { good_model(); patch_st_header("\"shape\":[", "\"shape\":[-1,"); }
static void p_st_truncated(void) {
  good_model();
  char p[TPATH_MAX];
  size_t n;
  char *b = slurp(tpath(p, dir, "model.safetensors"), &n);
  cr_assert_eq(write_bytes(p, b, n - 1000), 0);
  free(b);
}
static void p_cfg_json(void) { good_model(); patch("config.json", "{", "{,"); }
static void p_cfg_type(void) { good_model(); patch("config.json", "\"qwen3_5_text\"", "\"qwen9\""); }
static void p_cfg_hidden(void) { good_model(); patch("config.json", "\"hidden_size\"", "\"hidden_sizes\""); }
static void p_cfg_layers(void) { good_model(); patch("config.json", "\"num_hidden_layers\": ", "\"num_hidden_layers\": -"); }
static void p_cfg_rotary(void) { good_model(); patch("config.json", "],\n    \"partial_rotary_factor\": 0.25", "],\n    \"partial_rotary_factor\": Infinity"); }
static void p_cfg_string(void) { good_model(); patch("config.json", "\"vocab_size\": ", "\"vocab_size\": \"many\", \"x\": "); }

static void p_exp_ok(void) { good_tokens(); exp_with("config = replay L=16 ckpt=fp32\n"); }
static void p_tok_magic(void) { p_exp_ok(); damage_tokens(0, 'X', 0); }
static void p_tok_hcrc(void) { p_exp_ok(); damage_tokens(12, 7, 0); }
static void p_tok_vocab(void) { p_exp_ok(); damage_tokens(12, 100, 0); damage_tokens(13, 0, 1); } /* 100 < 'y' */
static void p_tok_version(void) { p_exp_ok(); damage_tokens(8, 2, 1); }
static void p_tok_trunc(void) { p_exp_ok(); damage_tokens(-5, 0, 0); }
static void p_tok_npy_f4(void) { good_npy("t.npy"); }

static void p_exp_key(void) { good_tokens(); exp_with("stepz = 5\nconfig = replay L=16 ckpt=fp32\n"); }
static void p_exp_cfg(void) { good_tokens(); exp_with("config = replay L=16 ckpt=nvfp9\n"); }
static void p_exp_seq(void) { good_tokens(); put("exp.ini", "model = toy:gdn\ntokens = t.tok.zst\nsequences = 0\nsteps = 16\n"); }
static void p_exp_nospec(void) { good_tokens(); exp_with("[config a]\n[config b]\nspec = replay L=4 ckpt=fp8\n"); }
static void p_exp_long(void) {
  good_tokens();
  char rest[400];
  memset(rest, 'x', sizeof rest);
  memcpy(rest, "# ", 2);
  rest[300] = '\n';
  rest[301] = '\0';
  exp_with(rest);
}
static void p_exp_model(void) { good_tokens(); put("exp.ini", "model = nosuchmodel\ntokens = t.tok.zst\nsequences = 1\nsteps = 8\nconfig = replay L=16 ckpt=fp32\n"); }
static void p_exp_tokens(void) { put("exp.ini", "model = toy:gdn\ntokens = missing.tok.zst\nsequences = 1\nsteps = 8\nconfig = replay L=16 ckpt=fp32\n"); }
static void p_exp_sweep(void) { good_tokens(); exp_with("template = replay L={L} ckpt=fp8\nsweep.L = 4,,8\n"); }

/* strict inputs (issue 20): what a lenient reader took silently */
static void p_cfg_dup(void) { good_model(); patch("config.json", "\"vocab_size\": ", "\"vocab_size\": 7, \"vocab_size\": "); }
static void p_cfg_nan(void) { good_model(); patch("config.json", "\"rms_norm_eps\": 1e-06", "\"rms_norm_eps\": NaN"); }
static void p_cfg_layer_type(void) { good_model(); patch("config.json", "\"linear_attention\"", "\"mamba\""); }
/* a layer list one short of the checkpoint: the model would silently lose its last layer */
static void p_cfg_short(void) {
  good_model();
  patch("config.json", "\"num_hidden_layers\": 4", "\"num_hidden_layers\": 3");
  patch("config.json", ",\n    \"linear_attention\"\n  ]", "\n  ]");
}
static void nested_json(const char *name) {
  char text[2400];
  size_t n = 0;
  n += (size_t)snprintf(text, sizeof text, "{\"a\": ");
  for (int i = 0; i < 1100; i++) text[n++] = '[';
  for (int i = 0; i < 1100; i++) text[n++] = ']';
  snprintf(text + n, sizeof text - n, "}\n");
  put(name, text);
}
static void p_cfg_nested(void) { good_model(); nested_json("config.json"); }
static void p_st_dup(void) { good_model(); patch_st_header("\"dtype\":\"BF16\"", "\"dtype\":\"BF16\",\"dtype\":\"BF16\""); }
static void p_exp_dup_key(void) { good_tokens(); exp_with("steps = 20\nconfig = replay L=16 ckpt=fp32\n"); }
static void p_exp_dup_section(void) { good_tokens(); exp_with("[config a]\nspec = replay L=4 ckpt=fp8\n[config a]\nspec = replay L=4 ckpt=fp16\n"); }
static void p_exp_open_section(void) { good_tokens(); exp_with("[config a\nspec = replay L=4 ckpt=fp8\n"); }
static void p_exp_label(void) { good_tokens(); exp_with("config = replay L=4 ckpt=fp8 name=x=y\n"); }
static void p_text_empty(void) { put("e.txt", ""); }
static void p_tokenizer_dup_id(void) {
  char src[TPATH_MAX], dst[TPATH_MAX];
  snprintf(src, sizeof src, "%s/tests/fixtures/tokenizers/behaviors/tokenizer.json", RSSM_SOURCE_DIR);
  size_t n;
  char *b = slurp(src, &n);
  cr_assert(b, "cannot read %s", src);
  cr_assert_eq(write_bytes(tpath(dst, dir, "tokenizer.json"), b, n), 0);
  free(b);
  patch("tokenizer.json", "\"1\": 19,", "\"1\": 18,");
  put("a.txt", "some text\n");
}
static void p_tokenizer_nested(void) { nested_json("tokenizer.json"); put("a.txt", "some text\n"); }

static void p_text(void) { put("a.txt", "some text\n"); }
static void p_pg19(void) { put("a.txt", "x\n"); } /* dir has no metadata.csv */

static void p_h5_empty(void) {
  char p[TPATH_MAX];
  hid_t f = H5Fcreate(tpath(p, dir, "empty.h5"), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  cr_assert_geq(f, 0);
  H5Fclose(f);
}
static void p_h5_text(void) { put("fake.h5", "this is not an HDF5 file\n"); }

/* ---- the matrix --------------------------------------------------------------------------- */

typedef struct {
  const char *name;
  void (*prep)(void);
  const char *argv[24];
  const char *needles[4]; /* all must appear on the one stderr line */
} bad_case;

#define OUT "--out", "@o.npy"
#define RUNX "run", "@exp.ini", "--out", "@o.h5", "--quiet"
#define LOGITS "logits", "--model", "@", "--tokens", "@tokens.npy", "--steps", "4", "--out", "@o.npy"
#define SIM "ssm-sim", "--kind", "gdn", "--steps", "8", "--heads", "2", "--dv", "8", "--dk", "8"

static const bad_case cases[] = {
    /* .npy files (quant) */
    {"npy_magic", p_npy_magic, {"quant", "--format", "fp8", "@x.npy", "@o.npy"}, {"@x.npy", "magic"}},
    {"npy_dtype", p_npy_f8, {"quant", "--format", "fp8", "@x.npy", "@o.npy"}, {"@x.npy", "<f8"}},
    {"npy_fortran", p_npy_fortran, {"quant", "--format", "fp8", "@x.npy", "@o.npy"}, {"@x.npy", "fortran_order"}},
    {"npy_size", p_npy_shape, {"quant", "--format", "fp8", "@x.npy", "@o.npy"}, {"@x.npy", "bytes"}},
    {"npy_key", p_npy_nokey, {"quant", "--format", "fp8", "@x.npy", "@o.npy"}, {"@x.npy", "shope"}},
    {"npy_missing", p_none, {"quant", "--format", "fp8", "@none.npy", "@o.npy"}, {"@none.npy"}},
    /* quant arguments and format strings */
    {"quant_format", p_npy, {"quant", "--format", "nvfp9", "@x.npy", "@o.npy"}, {"--format", "nvfp9"}},
    {"quant_block", p_npy, {"quant", "--format", "fp8@0", "@x.npy", "@o.npy"}, {"--format", "fp8@0"}},
    {"quant_rounding", p_npy, {"quant", "--format", "nvfp4/xx", "@x.npy", "@o.npy"}, {"--format", "nvfp4/xx"}},
    {"quant_seed", p_npy, {"quant", "--format", "fp8", "--seed", "abc", "@x.npy", "@o.npy"}, {"--seed", "abc"}},
    {"quant_option", p_npy, {"quant", "--bogus", "@x.npy", "@o.npy"}, {"--bogus"}},
    {"quant_operands", p_npy, {"quant", "--format", "fp8", "@x.npy"}, {"OUT.npy"}},
    /* safetensors (logits) */
    {"st_header_length", p_st_hlen, {LOGITS}, {"@model.safetensors", "header"}},
    {"st_dtype", p_st_dtype, {LOGITS}, {"@model.safetensors", "BF17"}},
    {"st_offsets", p_st_offsets, {LOGITS}, {"@model.safetensors", "data_offsets"}},
    {"st_json", p_st_json, {LOGITS}, {"@model.safetensors", "JSON"}},
    {"st_shape", p_st_shape, {LOGITS}, {"@model.safetensors", "shape"}},
    {"st_truncated", p_st_truncated, {LOGITS}, {"@model.safetensors"}},
    /* config.json (logits) */
    {"cfg_json", p_cfg_json, {LOGITS}, {"@config.json", "JSON"}},
    {"cfg_model_type", p_cfg_type, {LOGITS}, {"@config.json", "model_type", "qwen9"}},
    {"cfg_missing_key", p_cfg_hidden, {LOGITS}, {"@config.json", "hidden_size"}},
    {"cfg_negative", p_cfg_layers, {LOGITS}, {"@config.json", "num_hidden_layers"}},
    {"cfg_type", p_cfg_string, {LOGITS}, {"@config.json", "vocab_size"}},
    /* found by fuzz_model_config: inf reached a conversion to int64 (UBSan) */
    {"cfg_infinite", p_cfg_rotary, {LOGITS}, {"@config.json", "partial_rotary_factor", "inf"}},
    /* strict config.json and safetensors headers (issue 20) */
    {"cfg_duplicate_key", p_cfg_dup, {LOGITS}, {"@config.json", "vocab_size", "twice"}},
    {"cfg_nan", p_cfg_nan, {LOGITS}, {"@config.json", "rms_norm_eps", "finite"}},
    {"cfg_layer_type", p_cfg_layer_type, {LOGITS}, {"@config.json", "layer_types[0]", "mamba"}},
    {"cfg_layer_list_short", p_cfg_short, {LOGITS}, {"layers.3.", "layer 3", "3 layers"}},
    {"cfg_nested", p_cfg_nested, {LOGITS}, {"@config.json", "nested 1101 levels"}},
    {"st_duplicate_key", p_st_dup, {LOGITS}, {"@model.safetensors", "dtype", "twice"}},
    /* token streams */
    {"tok_magic", p_tok_magic, {RUNX}, {"@t.tok.zst", "magic"}},
    {"tok_header_crc", p_tok_hcrc, {RUNX}, {"@t.tok.zst", "header checksum"}},
    {"tok_vocab", p_tok_vocab, {RUNX}, {"@t.tok.zst", "vocab"}},
    {"tok_version", p_tok_version, {RUNX}, {"@t.tok.zst", "version"}},
    {"tok_truncated", p_tok_trunc, {RUNX}, {"@t.tok.zst", "zstd"}},
    {"tok_npy_dtype", p_tok_npy_f4, {"run", "--model", "toy:gdn", "--tokens", "@t.npy", "--config", "conventional state=fp16", "--steps", "2", "--sequences", "1", "--out", "@o.h5"}, {"@t.npy", "<f4"}},
    /* experiment files (run) */
    {"exp_key", p_exp_key, {RUNX}, {"@exp.ini:5", "stepz"}},
    {"exp_config", p_exp_cfg, {RUNX}, {"@exp.ini:5", "nvfp9"}},
    {"exp_sequences", p_exp_seq, {RUNX}, {"@exp.ini:3", "sequences"}},
    {"exp_no_spec", p_exp_nospec, {RUNX}, {"@exp.ini:5", "[config a]", "spec"}},
    {"exp_long_line", p_exp_long, {RUNX}, {"@exp.ini:5", "longer"}},
    {"exp_model", p_exp_model, {RUNX}, {"@exp.ini:1", "nosuchmodel"}},
    {"exp_tokens", p_exp_tokens, {RUNX}, {"@exp.ini:2", "missing.tok.zst"}},
    {"exp_sweep", p_exp_sweep, {RUNX}, {"@exp.ini:6", "sweep.L"}},
    {"exp_missing", p_none, {RUNX}, {"@exp.ini"}},
    {"exp_duplicate_key", p_exp_dup_key, {RUNX}, {"@exp.ini:5", "steps", "twice"}},
    {"exp_duplicate_section", p_exp_dup_section, {RUNX}, {"@exp.ini:7", "repeated", "line 5"}},
    {"exp_unterminated_section", p_exp_open_section, {RUNX}, {"@exp.ini:5", "closing ']'"}},
    {"exp_label_equals", p_exp_label, {RUNX}, {"@exp.ini:5", "name=x=y"}},
    /* run arguments and configuration strings */
    {"run_config", p_exp_ok, {RUNX, "--config", "replay L=0 ckpt=fp8"}, {"--config", "L=0"}},
    {"run_config_format", p_exp_ok, {RUNX, "--config", "conventional state=fp8@7x"}, {"--config", "fp8@7x"}},
    {"run_shard", p_exp_ok, {RUNX, "--shard", "3/2"}, {"--shard", "3/2"}},
    {"run_device", p_exp_ok, {RUNX, "--device", "tpu"}, {"--device", "tpu"}},
    {"run_threads", p_exp_ok, {RUNX, "--threads", "0"}, {"--threads"}},
    {"run_steps", p_exp_ok, {RUNX, "--steps", "-3"}, {"--steps", "-3"}},
    {"run_option", p_exp_ok, {RUNX, "--fast"}, {"--fast"}},
    {"run_label_equals", p_exp_ok, {RUNX, "--config", "replay L=4 ckpt=fp8 name=a=b"}, {"--config", "name=a=b"}},
    {"run_hp_coarser", p_exp_ok, {RUNX, "--config", "replay L=4 hp=nvfp4 lp=fp8"}, {"--config", "coarser"}},
    {"run_gdn_key_on_mamba2", p_exp_ok, {"run", "--model", "toy:mamba2", "--tokens", "@t.tok.zst", "--config", "replay L=4 hp=fp32 lp=nvfp4 gdn_u=cached", "--steps", "4", "--sequences", "1", "--out", "@o.h5"}, {"--config", "gdn_u", "toy:mamba2"}},
    {"run_out_directory", p_exp_ok, {"run", "@exp.ini", "--out", "@", "--quiet"}, {"is a directory"}},
    {"run_out_token_file", p_exp_ok, {"run", "@exp.ini", "--out", "@t.tok.zst", "--quiet", "--force"}, {"@t.tok.zst", "input"}},
    /* ssm-sim arguments and configuration strings */
    {"sim_kind", p_none, {"ssm-sim", "--kind", "lstm", "--config", "replay L=4 ckpt=fp8", "--out", "@s.h5"}, {"--kind", "lstm"}},
    {"sim_config", p_none, {SIM, "--config", "replay L=4 ckpt=fp8 hp=fp32", "--out", "@s.h5"}, {"--config"}},
    {"sim_spec_T", p_none, {SIM, "--config", "spec T=0 ckpt=fp8", "--out", "@s.h5"}, {"--config", "T"}},
    {"sim_decay", p_none, {SIM, "--config", "replay L=4 ckpt=fp8", "--decay", "4:3", "--out", "@s.h5"}, {"--decay", "4:3"}},
    {"sim_steps", p_none, {SIM, "--config", "replay L=4 ckpt=fp8", "--steps", "0", "--out", "@s.h5"}, {"--steps"}},
    {"sim_no_config", p_none, {"ssm-sim", "--kind", "gdn", "--out", "@s.h5"}, {"--config"}},
    /* logits arguments */
    {"logits_model", p_model_tokens, {"logits", "--model", "@nomodel", "--tokens", "@tokens.npy", "--out", "@o.npy"}, {"@nomodel"}},
    {"logits_no_config", p_model_tokens, {LOGITS}, {"@config.json"}},
    {"logits_threads", p_model, {LOGITS, "--threads", "0"}, {"--threads"}},
    {"logits_out", p_model, {"logits", "--model", "@", "--tokens", "@tokens.npy", "--out", "@o.txt"}, {"@o.txt", ".npy"}},
    {"logits_tokens", p_model, {"logits", "--model", "@", "--tokens", "@config.json", "--out", "@o.npy"}, {"@config.json"}},
    /* tokens arguments */
    {"tokens_text", p_none, {"tokens", "--out", "@t.tok.zst", "@nosuch.txt"}, {"@nosuch.txt"}},
    {"tokens_pg19", p_pg19, {"tokens", "--out", "@t.tok.zst", "--pg19", "@"}, {"metadata.csv"}},
    {"tokens_split", p_text, {"tokens", "--out", "@t.tok.zst", "--pg19", "@", "--split", "dev"}, {"--split", "dev"}},
    {"tokens_no_out", p_text, {"tokens", "@a.txt"}, {"--out"}},
    {"tokens_empty_text", p_text_empty, {"tokens", "--out", "@t.tok.zst", "@e.txt"}, {"@e.txt", "no text"}},
    {"tokenizer_duplicate_id", p_tokenizer_dup_id, {"tokens", "--tokenizer", "@tokenizer.json", "--out", "@t.tok.zst", "@a.txt"}, {"@tokenizer.json", "id 18"}},
    {"tokenizer_nested", p_tokenizer_nested, {"tokens", "--tokenizer", "@tokenizer.json", "--out", "@t.tok.zst", "@a.txt"}, {"@tokenizer.json", "nested"}},
    /* merge and summary */
    {"merge_not_h5", p_h5_text, {"merge", "@m.h5", "@fake.h5"}, {"@fake.h5"}},
    {"merge_not_run", p_h5_empty, {"merge", "@m.h5", "@empty.h5"}, {"@empty.h5"}},
    {"merge_operands", p_none, {"merge", "@m.h5"}, {"SHARD"}},
    {"summary_not_h5", p_h5_text, {"summary", "@fake.h5"}, {"@fake.h5"}},
    {"summary_not_run", p_h5_empty, {"summary", "@empty.h5"}, {"@empty.h5"}},
    {"summary_missing", p_none, {"summary", "@none.h5"}, {"@none.h5"}},
    /* theory arguments and format strings */
    {"theory_formats", p_none, {"theory", "--formats", "nvfp9"}, {"--formats", "nvfp9"}},
    {"theory_alphas", p_none, {"theory", "--alphas", "0"}, {"--alphas"}},
    {"theory_alpha_range", p_none, {"theory", "--alpha-min", "0.99", "--alpha-max", "0.9"}, {"--alpha"}},
    {"theory_regime", p_none, {"theory", "--regimes", "chaotic"}, {"--regimes", "chaotic"}},
    /* the command itself */
    {"unknown_command", p_none, {"quantise"}, {"quantise"}},
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static void expand(const char *s, char *out, size_t len) {
  if (s[0] == '@' && s[1] == '\0') snprintf(out, len, "%s", dir);
  else if (s[0] == '@') snprintf(out, len, "%s/%s", dir, s + 1);
  else snprintf(out, len, "%s", s);
}

static void run_case(int i) {
  const bad_case *c = &cases[i];
  dir = tdir_make();
  cr_assert(dir);
  c->prep();
  static char args[24][TPATH_MAX];
  char *argv[26];
  int n = 0;
  argv[n++] = (char *)RSSM_BIN;
  for (int k = 0; c->argv[k]; k++) {
    expand(c->argv[k], args[k], sizeof args[k]);
    argv[n++] = args[k];
  }
  argv[n] = NULL;
  char errf[TPATH_MAX];
  snprintf(errf, sizeof errf, "%s.stderr", dir); /* outside dir: the case may list dir */
  int st = run_prog(argv, NULL, errf);
  char *e = slurp(errf, NULL);
  remove(errf);
  cr_assert(e);
  cr_assert(st >= 0 && !WIFSIGNALED(st), "%s: killed by signal %d; stderr: %s", c->name,
            WIFSIGNALED(st) ? WTERMSIG(st) : -1, e);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: exit status %d (expected 2); stderr: %s",
            c->name, WIFEXITED(st) ? WEXITSTATUS(st) : -1, e);
  cr_assert(is_one_line(e), "%s: stderr is not one line: '%s'", c->name, e);
  if (getenv("RSSM_TEST_VERBOSE")) fprintf(stderr, "%-18s %s", c->name, e);
  for (int k = 0; k < 4 && c->needles[k]; k++) {
    char want[TPATH_MAX];
    expand(c->needles[k], want, sizeof want);
    cr_assert(strstr(e, want), "%s: '%s' does not mention '%s'", c->name, e, want);
  }
  free(e);
  tdir_remove(dir);
}

ParameterizedTestParameters(bad_inputs, matrix) {
  static int idx[256];
  for (int i = 0; i < NCASES; i++) idx[i] = i;
  return cr_make_param_array(int, idx, NCASES);
}

ParameterizedTest(int *i, bad_inputs, matrix) { run_case(*i); }

/* The matrix is as large as the issue asks. */
Test(bad_inputs, size) { cr_assert_geq(NCASES, 30); }

/* A tensor the model does not read outside its layers (real checkpoints carry vision towers and
 * MTP heads) is a warning, not an error: one line naming it, and the command runs (issue 20). */
Test(bad_inputs, unread_tensor_is_a_warning) {
  dir = tdir_make();
  cr_assert(dir);
  good_model();
  patch_st_header("{", "{\"mtp.extra.weight\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},");
  char *e = NULL;
  char out[TPATH_MAX], model[TPATH_MAX], toks[TPATH_MAX];
  snprintf(model, sizeof model, "%s", dir);
  tpath(toks, dir, "tokens.npy");
  tpath(out, dir, "o.npy");
  int st = run_captured(RSSM_BIN, dir, &e, NULL, "logits", "--model", model, "--tokens", toks,
                        "--steps", "4", "--out", out, NULL);
  cr_assert(e);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "exit %d: %s", WEXITSTATUS(st), e);
  cr_assert(is_one_line(e) && strstr(e, "warning") && strstr(e, "mtp.extra.weight") &&
            strstr(e, "1 checkpoint tensor is not read"), "'%s'", e);
  free(e);
  tdir_remove(dir);
}
