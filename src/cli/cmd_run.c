/* `replayssm run`: options, the experiment, and run_experiment (docs/driver.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/io/cli_opts.h"
#include "src/cli/commands.h"
#include "src/driver/experiment.h"
#include "src/driver/run.h"
#include "src/io/parse_num.h"
#include "src/io/status.h"
#include "src/model_cuda/mc_device_check.h"

static const char *CMD = "run";

/* --shard I/N into int [2] {I, N}. */
static int parse_shard(const char *v, void *dest, char *expected, size_t len) {
  int *in = dest;
  snprintf(expected, len, "I/N with 0 <= I < N");
  const char *slash = strchr(v, '/');
  if (!slash) return -1;
  char a[32];
  size_t la = (size_t)(slash - v);
  if (la == 0 || la >= sizeof a) return -1;
  memcpy(a, v, la);
  a[la] = '\0';
  uint64_t x, y;
  if (rssm_parse_u64(a, &x) || rssm_parse_u64(slash + 1, &y) || y < 1 || y > 1000000 || x >= y)
    return -1;
  in[0] = (int)x;
  in[1] = (int)y;
  return 0;
}

/* The command line before the experiment is read: what the options name and set. */
typedef struct {
  const char *operands[1], *out, *device, *model, *tokens, *reference;
  const char *configs[EXP_MAX_CONFIGS];
  int noperands, nconfigs, shard[2];
  int64_t steps, sequences;
  uint64_t seed;
  const char *seed_text;
} run_args;

static int parse_run_args(int argc, char **argv, run_args *a, run_options *o, int *done) {
  const cli_opt opts[] = {
      {.name = "--out", .type = CLI_STR, .dest = &a->out, .meta = "FILE.h5",
       .def = "EXPERIMENT.h5", .help = "the run file (a shard's: EXPERIMENT.shard-I-of-N.h5)"},
      {.name = "--steps", .type = CLI_I64, .dest = &a->steps, .meta = "N", .lo = 1,
       .hi = INT64_C(1) << 30, .expect = "an integer in [1, 2^30]",
       .def = "the file's", .help = "decode steps per sequence"},
      {.name = "--sequences", .type = CLI_I64, .dest = &a->sequences, .meta = "K", .lo = 1,
       .hi = 1 << 20, .expect = "an integer in [1, 2^20]",
       .def = "the file's", .help = "windows of N+1 tokens"},
      {.name = "--device", .type = CLI_STR, .dest = &a->device, .meta = "cpu|cuda", .def = "cpu",
       .help = "cuda: the GPU block engine (docs/gpu-runtime.md)"},
      {.name = "--threads", .type = CLI_INT, .dest = &o->threads, .meta = "N", .lo = 1, .hi = 256,
       .def = "2", .help = "worker threads; results do not depend on it"},
      {.name = "--resume", .type = CLI_FLAG, .dest = &o->resume,
       .def = "off", .help = "continue from FILE.h5.ckpt after an interruption"},
      {.name = "--shard", .type = CLI_CALL, .dest = a->shard, .meta = "I/N", .parse = parse_shard,
       .def = "0/1",
       .help = "only sequences [I*K/N, (I+1)*K/N), I = 0..N-1;\njoin the shards with merge"},
      {.name = "--force", .type = CLI_FLAG, .dest = &o->force,
       .def = "off", .help = "overwrite an existing output, drop its checkpoint"},
      {.name = "--quiet", .type = CLI_FLAG, .dest = &o->quiet,
       .def = "off",
       .help = "print nothing but errors: no effective experiment,\n"
               "no progress lines or bar, no closing line"},
      {.name = "--model", .type = CLI_STR, .dest = &a->model, .meta = "DIR|toy:gdn|toy:mamba2",
       .def = "the file's", .help = "the model"},
      {.name = "--tokens", .type = CLI_STR, .dest = &a->tokens, .meta = "FILE",
       .def = "the file's", .help = "token stream (.tok.zst or .npy)"},
      {.name = "--config", .type = CLI_LIST, .dest = a->configs, .meta = "STR",
       .max = EXP_MAX_CONFIGS, .count = &a->nconfigs,
       .def = "the file's only",
       .help = "a configuration string (SPEC section 6), repeatable;\nadded to the file's"},
      {.name = "--seed", .type = CLI_STR, .dest = &a->seed_text, .meta = "S",
       .def = "the file's, else 0",
       .help = "seed of stochastic rounding and spec acceptance,\ndecimal or 0x-hex"},
      {.name = "--reference", .type = CLI_STR, .dest = &a->reference, .meta = "STR",
       .def = "'conventional state=fp32'", .help = "the reference configuration"},
  };
  const cli_spec spec = {
      .cmd = CMD,
      .usage = "run EXPERIMENT.ini [--out FILE.h5] [--steps N] [--sequences K]\n"
               "                     [--device cpu|cuda] [--threads N] [--resume] [--shard I/N] "
               "[--force]\n"
               "       replayssm run --model DIR|toy:gdn|toy:mamba2 --tokens FILE --config STR\n"
               "                     [--config STR ...] --steps N --sequences K --out FILE.h5\n"
               "                     [--seed S] [--reference STR] [options above]",
      .about = "Teacher-forced decoding of K windows of N+1 tokens with the reference and every\n"
               "configuration in lockstep; per-step kl, nll, dp, top1 (SPEC section 5) go to an HDF5\n"
               "file (SPEC section 7) as steps complete. Experiment files: docs/driver.md. Options\n"
               "override the experiment file's keys; its relative paths are relative to the file,\n"
               "and the run file stores them absolute.",
      .epilog = "Progress: a bar on a terminal, else a line every 5 s (RSSM_PROGRESS_SECONDS) and one\n"
                "per checkpoint.",
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
      .operands = a->operands,
      .max_operands = 1,
      .noperands = &a->noperands,
  };
  return cli_parse_or_help(&spec, argc, argv, done);
}

/* The default output name: the experiment's base name without .ini, + .h5 (+ the shard). */
static void default_out(const char *file, const run_options *o, char *buf, size_t len) {
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  size_t n = strlen(base);
  if (n > 4 && strcmp(base + n - 4, ".ini") == 0) n -= 4;
  if (o->shard_n > 1)
    snprintf(buf, len, "%.*s.shard-%d-of-%d.h5", (int)n, base, o->shard_i, o->shard_n);
  else
    snprintf(buf, len, "%.*s.h5", (int)n, base);
}

int cmd_run(int argc, char **argv) {
  static experiment e; /* large (configuration table): not on the stack */
  experiment_init(&e);
  run_options o = {NULL, 2, 0, 0, 0, 1, 0, 0, 0};
  static run_args a;
  memset(&a, 0, sizeof a);
  a.device = "cpu";
  a.steps = a.sequences = -1;
  a.shard[0] = 0;
  a.shard[1] = 1;
  int done;
  int rc = parse_run_args(argc, argv, &a, &o, &done);
  if (done) return rc;
  o.shard_i = a.shard[0];
  o.shard_n = a.shard[1];
  const char *file = a.noperands ? a.operands[0] : NULL, *out = a.out, *device = a.device;
  const char *model = a.model, *tokens = a.tokens, *reference = a.reference, *seed = a.seed_text;
  const int nconfigs = a.nconfigs;
  const char *const *configs = a.configs;
  const int64_t steps = a.steps, sequences = a.sequences;
  if (strcmp(device, "cpu") != 0) {
    char derr[512];
    if (strcmp(device, "cuda") != 0) {
      cli_error(CMD, "--device '%s' (expected cpu or cuda)", device);
      return 2;
    }
    if (mc_device_check(derr, sizeof derr) != 0) {
      cli_error(CMD, "--device cuda: %s", derr);
      return 2;
    }
    o.cuda = 1; /* the GPU block engine (docs/gpu-runtime.md) */
  }
  char err[2048];
  if (file) {
    rc = experiment_parse_file(file, &e, err, sizeof err);
    if (rc != RSSM_OK) {
      cli_error(CMD, "%s", err);
      return rc;
    }
  } else if (!model && !tokens && nconfigs == 0) {
    cli_error(CMD, "no experiment (expected EXPERIMENT.ini or --model/--tokens/--config; see "
              "replayssm run --help)");
    return 2;
  }
  /* options override the file */
  if (model) {
    snprintf(e.model, sizeof e.model, "%s", model);
    experiment_absolute_path(e.model);
    e.model_line = 0;
  }
  if (tokens) {
    snprintf(e.tokens, sizeof e.tokens, "%s", tokens);
    experiment_absolute_path(e.tokens);
    e.tokens_line = 0;
  }
  if (steps > 0) e.steps = steps;
  if (sequences > 0) e.sequences = sequences;
  if (seed && rssm_parse_u64(seed, &e.seed)) {
    cli_error(CMD, "--seed '%s' (expected a uint64, decimal or 0x hex)", seed);
    return 2;
  }
  if (reference && ssm_config_parse(reference, &e.reference, err, sizeof err) != 0) {
    cli_error(CMD, "--reference '%s': %s", reference, err);
    return 2;
  }
  for (int i = 0; i < nconfigs; i++)
    if (experiment_add_config(&e, configs[i], NULL, 0, err, sizeof err) != RSSM_OK) {
      cli_error(CMD, "--config: %s", err);
      return 2;
    }
  rc = experiment_validate(&e, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc;
  }
  char outbuf[4200];
  if (!out) {
    if (!file) {
      cli_error(CMD, "missing --out FILE.h5");
      return 2;
    }
    default_out(file, &o, outbuf, sizeof outbuf);
    out = outbuf;
  }
  o.out = out;
  o.progress = isatty(2);
  rc = run_experiment(&e, &o, err, sizeof err);
  if (rc >= 128) return rc; /* stopped by a signal: run_experiment said how to resume */
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc;
  }
  return 0;
}
