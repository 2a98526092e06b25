/* `replayssm logits --model DIR --tokens FILE [--steps N] [--config STR] [--seed S]
 *  [--threads N] --out FILE.(h5|npy)` (SPEC section 7): decode the token file one token at a
 * time on the CPU in fp32 and write one row of logits [V] per step (row t: the logits after
 * token t, i.e. the prediction of token t+1).
 *
 * --config picks the SSM state strategy (SPEC section 6; default `conventional state=fp32`, the
 * reference). A spec configuration runs rounds of T teacher-forced drafts and records the logits
 * of the accepted positions, which in exact arithmetic equal standard decoding; drafts past the
 * last step are padded with the following tokens of the file (or the last one) and never
 * recorded. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/cli_opts.h"
#include "src/cli/commands.h"
#include "src/io/npy.h"
#include "src/model/logits_h5.h"
#include "src/model/model.h"
#include "src/model_cuda/mc_model.h"
#include "src/ssm/ssm_accept.h"
#include "src/ssm/ssm_config.h"
#include "src/tokens/token_source.h"

#define USAGE                                                                              \
  "logits --model DIR --tokens FILE(.npy|.tok.zst) [--steps N] [--config STR] [--seed S] " \
  "[--threads N] [--device cpu|cuda] --out FILE.(h5|npy)"

typedef struct {
  const char *model, *tokens, *config, *out, *device;
  uint64_t seed;
  int threads;
  int64_t steps; /* 0: all */
} logits_args;

/* Returns 0 to go on, or the exit status with *done set. */
static int parse_args(int argc, char **argv, logits_args *a, int *done) {
  memset(a, 0, sizeof *a);
  a->threads = 2;
  const cli_opt opts[] = {
      {.name = "--model", .type = CLI_STR, .dest = &a->model, .meta = "DIR", .flags = CLI_ONCE,
       .help = "config.json plus model.safetensors (or a sharded index)"},
      {.name = "--tokens", .type = CLI_STR, .dest = &a->tokens, .meta = "FILE", .flags = CLI_ONCE,
       .help = "token ids: a 1-D int32/int64 .npy or a .tok.zst stream"},
      {.name = "--steps", .type = CLI_I64, .dest = &a->steps, .meta = "N", .lo = 1,
       .hi = INT64_C(1) << 40, .flags = CLI_ONCE, .expect = "a positive integer",
       .def = "all", .help = "decode the first N tokens"},
      {.name = "--config", .type = CLI_STR, .dest = &a->config, .meta = "STR", .flags = CLI_ONCE,
       .def = "'conventional state=fp32'", .help = "SSM state strategy (SPEC 6)"},
      {.name = "--seed", .type = CLI_U64, .dest = &a->seed, .meta = "S", .flags = CLI_ONCE,
       .def = "0", .help = "seed of stochastic rounding and spec acceptance"},
      {.name = "--threads", .type = CLI_INT, .dest = &a->threads, .meta = "N", .lo = 1, .hi = 64,
       .flags = CLI_ONCE, .def = "2",
       .help = "threads for the matrix-vector products; results do not depend on it"},
      {.name = "--device", .type = CLI_STR, .dest = &a->device, .meta = "D", .flags = CLI_ONCE,
       .def = "cpu",
       .help = "cpu or cuda: the GPU runtime (docs/gpu-runtime.md; exit 2\n"
               "without a CUDA device)"},
      {.name = "--out", .type = CLI_STR, .dest = &a->out, .meta = "FILE", .flags = CLI_ONCE,
       .help = ".h5 or .npy, written atomically"},
  };
  const cli_spec spec = {
      .cmd = "logits",
      .usage = USAGE,
      .about = "Decode a token file with a Hugging Face hybrid model (Qwen3.5, Qwen3.5-MoE, Qwen3-Next,\n"
               "Nemotron-H) on the CPU in fp32, one token at a time, and write the logits of every step\n"
               "as float32 [N][V]: HDF5 (dataset /logits) or .npy, chosen by the extension.",
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
  };
  int rc = cli_parse_or_help(&spec, argc, argv, done);
  if (*done) return rc;
  const char *missing = !a->model ? "--model" : !a->tokens ? "--tokens" : !a->out ? "--out" : NULL;
  if (missing) {
    cli_error("logits", "missing %s (usage: replayssm " USAGE ")", missing);
    *done = 1;
    return 2;
  }
  return 0;
}

static int ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

/* The logits [N][V] to a.out: HDF5 or .npy by the extension. */
static int write_logits(const logits_args *a, const ssm_config *cfg, const float *out, int64_t N,
                        int64_t V, int is_h5, char *err, size_t errlen) {
  char cs[256];
  ssm_config_to_string(cfg, cs, sizeof cs);
  if (is_h5) return logits_h5_write(a->out, out, N, V, a->model, a->tokens, cs, err, errlen);
  int64_t dim[2] = {N, V};
  return npy_save_f32(a->out, 2, dim, out, err, errlen);
}

/* The CPU decode: rounds of T teacher-forced drafts (T = 1 unless spec), the accepted positions'
 * logits into out [N][V]. */
static int decode_cpu(const model *m, const ssm_config *cfg, uint64_t seed, const token_source *tok,
                      int64_t N, float *out, char *err, size_t errlen) {
  const int64_t V = m->cfg.V;
  const int T = cfg->strategy == SSM_SPEC ? cfg->T : 1;
  model_state st;
  int rc = model_state_build(&st, m, cfg, seed, 0, N + T, err, errlen);
  if (rc != RSSM_OK) return rc;
  float *buf = malloc((size_t)(T * V) * sizeof(float)); /* [T][V] */
  if (!buf) {
    snprintf(err, errlen, "out of memory for %d x %" PRId64 " logits", T, V);
    model_state_free(&st);
    return RSSM_ERR_IO;
  }
  int64_t done = 0;
  uint32_t round = 0;
  int64_t drafts[1024];
  while (done < N && rc == RSSM_OK) {
    for (int t = 0; t < T; t++) {
      int64_t i = done + t;
      drafts[t] = tok->ids[i < tok->n ? i : tok->n - 1];
    }
    rc = model_forward(&st, drafts, T, buf, err, errlen);
    if (rc != RSSM_OK) break;
    int acc = T == 1 ? 1 : ssm_accept_draw(cfg, seed, 0, round++);
    if (acc < 1 || acc > T) acc = T;
    int64_t keep = N - done < acc ? N - done : acc;
    memcpy(out + done * V, buf, (size_t)(keep * V) * sizeof(float));
    if (model_commit(&st, acc) != 0) {
      snprintf(err, errlen, "commit of %d tokens refused", acc);
      rc = RSSM_ERR_IO;
      break;
    }
    done += keep;
  }
  free(buf);
  model_state_free(&st);
  return rc;
}

/* The options' values that need no file: output kind, configuration, device. Returns 0 or 2. */
static int check_args(const logits_args *a, ssm_config *cfg, int *is_h5, int *use_cuda) {
  char err[1024];
  *is_h5 = ends_with(a->out, ".h5") || ends_with(a->out, ".hdf5");
  if (!*is_h5 && !ends_with(a->out, ".npy")) {
    cli_error("logits", "--out '%s': expected a .h5 or .npy file name", a->out);
    return 2;
  }
  const char *cfg_text = a->config ? a->config : "conventional state=fp32";
  if (ssm_config_parse(cfg_text, cfg, err, sizeof err) != 0) {
    cli_error("logits", "--config '%s': %s", cfg_text, err);
    return 2;
  }
  *use_cuda = a->device && strcmp(a->device, "cpu") != 0;
  if (*use_cuda && strcmp(a->device, "cuda") != 0) {
    cli_error("logits", "--device '%s': expected cpu or cuda", a->device);
    return 2;
  }
  if (*use_cuda && mc_device_check(err, sizeof err) != 0) {
    cli_error("logits", "--device cuda: %s", err);
    return 2;
  }
  if (!*use_cuda && cfg->strategy == SSM_SPEC && cfg->T > 1024) {
    cli_error("logits", "--config '%s': T = %d (expected at most 1024 drafts)", cfg_text, cfg->T);
    return 2;
  }
  return 0;
}

/* The tokens, their count N and the model, every id checked against its vocabulary. Returns
 * RSSM_OK (both loaded) or the status after the message (nothing left loaded). */
static int load_inputs(const logits_args *a, token_source *tok, int64_t *N, model *m) {
  char err[1024];
  int rc = token_source_load(a->tokens, tok, err, sizeof err); /* .npy or .tok.zst */
  if (rc != RSSM_OK) {
    cli_error("logits", "%s", err);
    return rc;
  }
  *N = a->steps ? a->steps : tok->n;
  if (tok->n < 1 || *N > tok->n) {
    if (tok->n < 1)
      cli_error("logits", "%s: no tokens (expected a non-empty 1-D array)", a->tokens);
    else
      cli_error("logits", "--steps %" PRId64 " exceeds the %" PRId64 " tokens of %s", *N, tok->n,
                a->tokens);
    token_source_free(tok);
    return RSSM_ERR_INPUT;
  }
  rc = model_load(a->model, m, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error("logits", "%s", err);
    token_source_free(tok);
    return rc;
  }
  model_warn_unused(m, stderr);
  const int64_t V = m->cfg.V; /* the real vocabulary (tokenizer.json), padding rows left out */
  for (int64_t i = 0; i < tok->n; i++)
    if (tok->ids[i] < 0 || tok->ids[i] >= V) {
      cli_error("logits", "%s: token[%" PRId64 "] = %" PRId64 " out of range (expected 0 <= id < "
                "vocab %" PRId64 ")", a->tokens, i, tok->ids[i], V);
      model_free(m);
      token_source_free(tok);
      return RSSM_ERR_INPUT;
    }
  return RSSM_OK;
}

int cmd_logits(int argc, char **argv) {
  logits_args a;
  int stop;
  int rc = parse_args(argc, argv, &a, &stop);
  if (stop) return rc;
  ssm_config cfg;
  int is_h5, use_cuda;
  if (check_args(&a, &cfg, &is_h5, &use_cuda) != 0) return 2;
  model_set_threads(a.threads);
  token_source tok;
  int64_t N;
  model m;
  rc = load_inputs(&a, &tok, &N, &m);
  if (rc != RSSM_OK) return rc;
  char err[1024];
  const int64_t V = m.cfg.V;
  float *out = malloc((size_t)(N * V) * sizeof(float)); /* [N][V] */
  if (!out) {
    snprintf(err, sizeof err, "out of memory for %" PRId64 " x %" PRId64 " logits", N, V);
    rc = RSSM_ERR_IO;
  } else if (use_cuda) { /* the GPU runtime decodes; the output is written as on the CPU path */
    rc = mc_logits_decode(&m, &cfg, a.seed, tok.ids, N, out, err, sizeof err);
  } else {
    rc = decode_cpu(&m, &cfg, a.seed, &tok, N, out, err, sizeof err);
  }
  if (rc == RSSM_OK) rc = write_logits(&a, &cfg, out, N, V, is_h5, err, sizeof err);
  if (rc != RSSM_OK) cli_error("logits", "%s", err);
  free(out);
  model_free(&m);
  token_source_free(&tok);
  return rc;
}
