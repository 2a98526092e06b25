/* `replayssm run`: options, the experiment, and run_experiment (docs/driver.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/cli_util.h"
#include "src/cli/commands.h"
#include "src/driver/experiment.h"
#include "src/driver/run.h"
#include "src/io/status.h"
#include "src/model_cuda/mc_device_check.h"

static const char *CMD = "run";

static void usage(FILE *out) {
  fprintf(out,
          "usage: replayssm run EXPERIMENT.ini [--out FILE.h5] [--steps N] [--sequences K]\n"
          "                     [--device cpu|cuda] [--threads N] [--resume] [--shard I/N] [--force]\n"
          "       replayssm run --model DIR|toy:gdn|toy:mamba2 --tokens FILE --config STR\n"
          "                     [--config STR ...] --steps N --sequences K --out FILE.h5\n"
          "                     [--seed S] [--reference STR] [options above]\n"
          "\n"
          "Teacher-forced decoding of K windows of N+1 tokens with the reference and every\n"
          "configuration in lockstep; per-step kl, nll, dp, top1 (SPEC section 5) go to an HDF5\n"
          "file (SPEC section 7) as steps complete. Experiment files: docs/driver.md.\n"
          "  --out FILE.h5     default: the experiment's base name + .h5 (+ .shard-I-of-N)\n"
          "  --threads N       worker threads (default 2); results do not depend on it\n"
          "  --resume          continue from FILE.h5.ckpt after an interruption\n"
          "  --shard I/N       only sequences [I*K/N, (I+1)*K/N), I = 0..N-1; join with merge\n"
          "  --force           overwrite an existing output (and drop its checkpoint)\n"
          "  --quiet           no effective-experiment printout\n");
}

static int parse_shard(const char *v, int *i, int *n) {
  const char *slash = strchr(v, '/');
  if (!slash) return -1;
  char a[32];
  size_t la = (size_t)(slash - v);
  if (la == 0 || la >= sizeof a) return -1;
  memcpy(a, v, la);
  a[la] = '\0';
  uint64_t x, y;
  if (cli_parse_u64(a, &x) || cli_parse_u64(slash + 1, &y) || y < 1 || y > 1000000 || x >= y)
    return -1;
  *i = (int)x;
  *n = (int)y;
  return 0;
}

int cmd_run(int argc, char **argv) {
  static experiment e; /* large (configuration table): not on the stack */
  experiment_init(&e);
  run_options o = {NULL, 2, 0, 0, 0, 1, 0, 0, 0};
  const char *file = NULL, *out = NULL, *device = "cpu";
  const char *model = NULL, *tokens = NULL, *reference = NULL, *seed = NULL;
  const char *configs[EXP_MAX_CONFIGS];
  int nconfigs = 0;
  int64_t steps = -1, sequences = -1;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int m;
    uint64_t u;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--resume") == 0) {
      o.resume = 1;
    } else if (strcmp(argv[i], "--force") == 0) {
      o.force = 1;
    } else if (strcmp(argv[i], "--quiet") == 0) {
      o.quiet = 1;
    } else if ((m = cli_option_value(argc, argv, &i, "--out", &v)) != 0) {
      if (m < 0) goto missing;
      out = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--device", &v)) != 0) {
      if (m < 0) goto missing;
      device = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--model", &v)) != 0) {
      if (m < 0) goto missing;
      model = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--tokens", &v)) != 0) {
      if (m < 0) goto missing;
      tokens = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--reference", &v)) != 0) {
      if (m < 0) goto missing;
      reference = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--seed", &v)) != 0) {
      if (m < 0) goto missing;
      seed = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--config", &v)) != 0) {
      if (m < 0) goto missing;
      if (nconfigs == EXP_MAX_CONFIGS) {
        cli_error(CMD, "more than %d --config options", EXP_MAX_CONFIGS);
        return 2;
      }
      configs[nconfigs++] = v;
    } else if ((m = cli_option_value(argc, argv, &i, "--steps", &v)) != 0) {
      if (m < 0) goto missing;
      if (cli_parse_u64(v, &u) || u < 1 || u > (UINT64_C(1) << 30)) {
        cli_error(CMD, "--steps '%s' (expected an integer in [1, 2^30])", v);
        return 2;
      }
      steps = (int64_t)u;
    } else if ((m = cli_option_value(argc, argv, &i, "--sequences", &v)) != 0) {
      if (m < 0) goto missing;
      if (cli_parse_u64(v, &u) || u < 1 || u > (1u << 20)) {
        cli_error(CMD, "--sequences '%s' (expected an integer in [1, 2^20])", v);
        return 2;
      }
      sequences = (int64_t)u;
    } else if ((m = cli_option_value(argc, argv, &i, "--threads", &v)) != 0) {
      if (m < 0) goto missing;
      if (cli_parse_u64(v, &u) || u < 1 || u > 256) {
        cli_error(CMD, "--threads '%s' (expected an integer in [1, 256])", v);
        return 2;
      }
      o.threads = (int)u;
    } else if ((m = cli_option_value(argc, argv, &i, "--shard", &v)) != 0) {
      if (m < 0) goto missing;
      if (parse_shard(v, &o.shard_i, &o.shard_n)) {
        cli_error(CMD, "--shard '%s' (expected I/N with 0 <= I < N)", v);
        return 2;
      }
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      cli_error(CMD, "unknown option '%s' (see replayssm run --help)", argv[i]);
      return 2;
    } else if (!file) {
      file = argv[i];
    } else {
      cli_error(CMD, "more than one experiment file ('%s' and '%s')", file, argv[i]);
      return 2;
    }
    continue;
  missing:
    cli_error(CMD, "option '%s' needs a value", argv[i]);
    return 2;
  }
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
  int rc;
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
    e.model_line = 0;
  }
  if (tokens) {
    snprintf(e.tokens, sizeof e.tokens, "%s", tokens);
    e.tokens_line = 0;
  }
  if (steps > 0) e.steps = steps;
  if (sequences > 0) e.sequences = sequences;
  if (seed && cli_parse_u64(seed, &e.seed)) {
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
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t n = strlen(base);
    if (n > 4 && strcmp(base + n - 4, ".ini") == 0) n -= 4;
    if (o.shard_n > 1)
      snprintf(outbuf, sizeof outbuf, "%.*s.shard-%d-of-%d.h5", (int)n, base, o.shard_i, o.shard_n);
    else
      snprintf(outbuf, sizeof outbuf, "%.*s.h5", (int)n, base);
    out = outbuf;
  }
  o.out = out;
  o.progress = isatty(2);
  rc = run_experiment(&e, &o, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc;
  }
  return 0;
}
