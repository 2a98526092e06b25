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

#include "src/cli/cli_util.h"
#include "src/cli/commands.h"
#include "src/io/npy.h"
#include "src/model/logits_h5.h"
#include "src/model/model.h"
#include "src/model_cuda/mc_model.h"
#include "src/ssm/ssm_accept.h"
#include "src/ssm/ssm_config.h"
#include "src/tokens/token_source.h"

#define USAGE                                                                              \
  "replayssm logits --model DIR --tokens FILE(.npy|.tok.zst) [--steps N] [--config STR] [--seed S] " \
  "[--threads N] [--device cpu|cuda] --out FILE.(h5|npy)"

static void print_help(void) {
  printf("usage: " USAGE "\n"
         "\n"
         "Decode a token file with a Hugging Face hybrid model (Qwen3.5, Qwen3.5-MoE, Qwen3-Next,\n"
         "Nemotron-H) on the CPU in fp32, one token at a time, and write the logits of every step\n"
         "as float32 [N][V]: HDF5 (dataset /logits) or .npy, chosen by the extension.\n"
         "\n"
         "  --model DIR    config.json plus model.safetensors (or a sharded index)\n"
         "  --tokens FILE  token ids: a 1-D int32/int64 .npy or a .tok.zst stream\n"
         "  --steps N      decode the first N tokens (default: all)\n"
         "  --config STR   SSM state strategy (SPEC 6), default 'conventional state=fp32'\n"
         "  --seed S       seed of stochastic rounding and spec acceptance (default 0)\n"
         "  --threads N    threads for the matrix-vector products (default 2; results do not\n"
         "                 depend on it)\n"
         "  --device D     cpu (default) or cuda: the GPU runtime (docs/gpu-runtime.md; no spec\n"
         "                 configurations yet; exit 2 without a CUDA device)\n"
         "  --out FILE     .h5 or .npy, written atomically\n");
}

typedef struct {
  const char *model, *tokens, *steps, *config, *seed, *threads, *out, *device;
  int help;
} logits_args;

static int parse_args(int argc, char **argv, logits_args *a) {
  memset(a, 0, sizeof *a);
  struct {
    const char *name;
    const char **slot;
  } opts[] = {{"--model", &a->model},   {"--tokens", &a->tokens}, {"--steps", &a->steps},
              {"--config", &a->config}, {"--seed", &a->seed},     {"--threads", &a->threads},
              {"--out", &a->out},       {"--device", &a->device}};
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
      a->help = 1;
      continue;
    }
    int matched = 0;
    for (size_t o = 0; o < sizeof opts / sizeof opts[0] && !matched; o++) {
      const char *v;
      int r = cli_option_value(argc, argv, &i, opts[o].name, &v);
      if (r == 0) continue;
      if (r < 0) {
        cli_error("logits", "option %s needs a value (usage: " USAGE ")", arg);
        return 2;
      }
      if (*opts[o].slot) {
        cli_error("logits", "%s given twice (usage: " USAGE ")", opts[o].name);
        return 2;
      }
      *opts[o].slot = v;
      matched = 1;
    }
    if (!matched) {
      cli_error("logits", "unexpected argument '%s' (usage: " USAGE ")", arg);
      return 2;
    }
  }
  if (a->help) return 0;
  const char *missing = !a->model ? "--model" : !a->tokens ? "--tokens" : !a->out ? "--out" : NULL;
  if (missing) {
    cli_error("logits", "missing %s (usage: " USAGE ")", missing);
    return 2;
  }
  return 0;
}

static int ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

/* --device cuda: the GPU runtime decodes, the output is written as on the CPU path. */
static int logits_cuda(const logits_args *a, const model *m, const ssm_config *cfg, uint64_t seed,
                       const token_source *tok, int64_t N, int is_h5) {
  char err[1024];
  const int64_t V = m->cfg.V;
  float *out = malloc((size_t)(N * V) * sizeof(float)); /* [N][V] */
  if (!out) {
    cli_error("logits", "out of memory for %" PRId64 " x %" PRId64 " logits", N, V);
    return RSSM_ERR_IO;
  }
  int rc = mc_logits_decode(m, cfg, seed, tok->ids, N, out, err, sizeof err);
  if (rc == RSSM_OK) {
    char cs[256];
    ssm_config_to_string(cfg, cs, sizeof cs);
    if (is_h5) {
      rc = logits_h5_write(a->out, out, N, V, a->model, a->tokens, cs, err, sizeof err);
    } else {
      int64_t dim[2] = {N, V};
      rc = npy_save_f32(a->out, 2, dim, out, err, sizeof err);
    }
  }
  if (rc != RSSM_OK) cli_error("logits", "%s", err);
  free(out);
  return rc;
}

int cmd_logits(int argc, char **argv) {
  logits_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc != 0) return rc;
  if (a.help) {
    print_help();
    return 0;
  }
  char err[1024];
  int is_h5 = ends_with(a.out, ".h5") || ends_with(a.out, ".hdf5");
  if (!is_h5 && !ends_with(a.out, ".npy")) {
    cli_error("logits", "--out '%s': expected a .h5 or .npy file name", a.out);
    return 2;
  }
  ssm_config cfg;
  const char *cfg_text = a.config ? a.config : "conventional state=fp32";
  if (ssm_config_parse(cfg_text, &cfg, err, sizeof err) != 0) {
    cli_error("logits", "--config '%s': %s", cfg_text, err);
    return 2;
  }
  uint64_t seed = 0, threads = 2, steps = 0;
  if (a.seed && cli_parse_u64(a.seed, &seed) != 0) {
    cli_error("logits", "--seed '%s': expected a decimal or 0x-hex integer in [0, 2^64)", a.seed);
    return 2;
  }
  if (a.threads && (cli_parse_u64(a.threads, &threads) != 0 || threads < 1 || threads > 64)) {
    cli_error("logits", "--threads '%s': expected an integer in [1, 64]", a.threads);
    return 2;
  }
  if (a.steps && (cli_parse_u64(a.steps, &steps) != 0 || steps < 1 || steps > ((uint64_t)1 << 40))) {
    cli_error("logits", "--steps '%s': expected a positive integer", a.steps);
    return 2;
  }
  model_set_threads((int)threads);
  const int use_cuda = a.device && strcmp(a.device, "cpu") != 0;
  if (use_cuda && strcmp(a.device, "cuda") != 0) {
    cli_error("logits", "--device '%s': expected cpu or cuda", a.device);
    return 2;
  }
  if (use_cuda && mc_device_check(err, sizeof err) != 0) {
    cli_error("logits", "--device cuda: %s", err);
    return 2;
  }

  token_source tok; /* .npy or .tok.zst */
  rc = token_source_load(a.tokens, &tok, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error("logits", "%s", err);
    return rc;
  }
  if (tok.n < 1) {
    cli_error("logits", "%s: no tokens (expected a non-empty 1-D array)", a.tokens);
    token_source_free(&tok);
    return 2;
  }
  int64_t N = a.steps ? (int64_t)steps : tok.n;
  if (N > tok.n) {
    cli_error("logits", "--steps %" PRId64 " exceeds the %" PRId64 " tokens of %s", N, tok.n,
              a.tokens);
    token_source_free(&tok);
    return 2;
  }

  model m;
  rc = model_load(a.model, &m, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error("logits", "%s", err);
    token_source_free(&tok);
    return rc;
  }
  const int64_t V = m.cfg.V;
  for (int64_t i = 0; i < tok.n; i++)
    if (tok.ids[i] < 0 || tok.ids[i] >= V) {
      cli_error("logits", "%s: token[%" PRId64 "] = %" PRId64 " out of range (expected 0 <= id < "
                "vocab_size %" PRId64 ")", a.tokens, i, tok.ids[i], V);
      model_free(&m);
      token_source_free(&tok);
      return 2;
    }

  if (use_cuda) {
    rc = logits_cuda(&a, &m, &cfg, seed, &tok, N, is_h5);
    model_free(&m);
    token_source_free(&tok);
    return rc;
  }
  const int T = cfg.strategy == SSM_SPEC ? cfg.T : 1;
  if (T > 1024) {
    cli_error("logits", "--config '%s': T = %d (expected at most 1024 drafts)", cfg_text, T);
    model_free(&m);
    token_source_free(&tok);
    return 2;
  }
  model_state st;
  rc = model_state_build(&st, &m, &cfg, seed, 0, N + T, err, sizeof err);
  float *out = rc == RSSM_OK ? malloc((size_t)(N * V) * sizeof(float)) : NULL; /* [N][V] */
  float *buf = rc == RSSM_OK ? malloc((size_t)(T * V) * sizeof(float)) : NULL;  /* [T][V] */
  if (rc != RSSM_OK || !out || !buf) {
    if (rc == RSSM_OK) {
      snprintf(err, sizeof err, "out of memory for %" PRId64 " x %" PRId64 " logits", N, V);
      rc = RSSM_ERR_IO;
      model_state_free(&st);
    }
    cli_error("logits", "%s", err);
    free(out);
    free(buf);
    model_free(&m);
    token_source_free(&tok);
    return rc;
  }
  int64_t done = 0;
  uint32_t round = 0;
  int64_t drafts[1024];
  while (done < N && rc == RSSM_OK) {
    for (int t = 0; t < T; t++) {
      int64_t i = done + t;
      drafts[t] = tok.ids[i < tok.n ? i : tok.n - 1];
    }
    rc = model_forward(&st, drafts, T, buf, err, sizeof err);
    if (rc != RSSM_OK) break;
    int acc = T == 1 ? 1 : ssm_accept_draw(&cfg, seed, 0, round++);
    if (acc < 1 || acc > T) acc = T;
    int64_t keep = N - done < acc ? N - done : acc;
    memcpy(out + done * V, buf, (size_t)(keep * V) * sizeof(float));
    if (model_commit(&st, acc) != 0) {
      snprintf(err, sizeof err, "commit of %d tokens refused", acc);
      rc = RSSM_ERR_IO;
      break;
    }
    done += keep;
  }
  if (rc == RSSM_OK) {
    char cs[256];
    ssm_config_to_string(&cfg, cs, sizeof cs);
    if (is_h5) {
      rc = logits_h5_write(a.out, out, N, V, a.model, a.tokens, cs, err, sizeof err);
    } else {
      int64_t dim[2] = {N, V};
      rc = npy_save_f32(a.out, 2, dim, out, err, sizeof err);
    }
  }
  if (rc != RSSM_OK) cli_error("logits", "%s", err);
  free(out);
  free(buf);
  model_state_free(&st);
  model_free(&m);
  token_source_free(&tok);
  return rc;
}
