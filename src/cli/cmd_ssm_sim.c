/* `replayssm ssm-sim`: one SSM layer, synthetic inputs, several state configurations against the
 * fp32 conventional reference; per-step output error and per-store checkpoint error to HDF5, and
 * a summary table on stdout (docs/ssm-sim.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/cli_util.h"
#include "src/cli/commands.h"
#include "src/sim/sim_h5.h"
#include "src/sim/sim_summary.h"
#include "src/sim/ssm_sim.h"

#define USAGE                                                                                   \
  "replayssm ssm-sim --kind mamba2|gdn --config STR [--config STR ...] --out FILE.h5\n"         \
  "                  [--heads H] [--groups G] [--dv N] [--dk N] [--steps N] [--decay A:B]\n"    \
  "                  [--beta A:B] [--seed S] [--force]"

#define MAX_CONFIGS 64

static void print_help(void) {
  printf("usage: " USAGE "\n"
         "\n"
         "Drive one Mamba-2 or Gated DeltaNet layer with random inputs through each configuration\n"
         "and, in lockstep, through `conventional state=fp32`. Writes per-step relative output\n"
         "errors and per-store relative checkpoint errors to HDF5 and prints a summary.\n"
         "\n"
         "  --kind K      mamba2 or gdn (required)\n"
         "  --config STR  a configuration string (SPEC section 6), repeatable (at least one)\n"
         "  --out FILE    HDF5 output; an existing file is kept unless --force\n"
         "  --heads H     value heads (default 8)      --groups G  key groups (default 2)\n"
         "  --dv N        head rows (default 64)       --dk N      head columns (default 128)\n"
         "  --steps N     decode steps (default 4096)\n"
         "  --decay A:B   per-head decay alpha = 1 - 10^-U(A,B), fixed per head (default 1:4)\n"
         "  --beta A:B    GDN write strength beta ~ U(A,B) per step (default 0.1:0.9)\n"
         "  --seed S      seed of inputs and stochastic rounding (default 0)\n"
         "\n"
         "example:\n"
         "  replayssm ssm-sim --kind gdn --decay 3:4 --steps 8192 \\\n"
         "    --config 'replay L=16 ckpt=nvfp4/sr' --config 'replay L=16 hp=fp32 lp=nvfp4' \\\n"
         "    --out sim.h5\n");
}

static int parse_int(const char *opt, const char *v, long lo, long hi, long *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || x < lo || x > hi) {
    cli_error("ssm-sim", "%s '%s' is not an integer in [%ld, %ld]", opt, v, lo, hi);
    return -1;
  }
  *out = x;
  return 0;
}

static int parse_range(const char *opt, const char *v, double lo, double hi, double *a, double *b) {
  char *end;
  *a = strtod(v, &end);
  if (end == v || *end != ':') goto bad;
  const char *w = end + 1;
  *b = strtod(w, &end);
  if (end == w || *end != '\0' || !(*a >= lo) || !(*b <= hi) || !(*a <= *b)) goto bad;
  return 0;
bad:
  cli_error("ssm-sim", "%s '%s' is not a range A:B with %g <= A <= B <= %g", opt, v, lo, hi);
  return -1;
}

typedef struct {
  ssm_sim_params p;
  ssm_config configs[MAX_CONFIGS];
  int nconfig;
  const char *out;
  int force, help;
} sim_args;

static int parse_args(int argc, char **argv, sim_args *a) {
  memset(a, 0, sizeof *a);
  ssm_dims *d = &a->p.in.dims;
  d->kind = (ssm_kind)-1;
  d->H = 8;
  d->G = 2;
  d->dv = 64;
  d->dk = 128;
  a->p.steps = 4096;
  a->p.in.decay_lo = 1.0;
  a->p.in.decay_hi = 4.0;
  a->p.in.beta_lo = 0.1;
  a->p.in.beta_hi = 0.9;
  for (int i = 1; i < argc; i++) {
    const char *v;
    int r;
    long x;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      a->help = 1;
    } else if (strcmp(argv[i], "--force") == 0) {
      a->force = 1;
    } else if ((r = cli_option_value(argc, argv, &i, "--kind", &v)) != 0) {
      if (r < 0) goto missing;
      if (strcmp(v, "mamba2") == 0) d->kind = SSM_MAMBA2;
      else if (strcmp(v, "gdn") == 0) d->kind = SSM_GDN;
      else {
        cli_error("ssm-sim", "--kind '%s' is unknown (expected mamba2 or gdn)", v);
        return 2;
      }
    } else if ((r = cli_option_value(argc, argv, &i, "--config", &v)) != 0) {
      if (r < 0) goto missing;
      if (a->nconfig == MAX_CONFIGS) {
        cli_error("ssm-sim", "more than %d --config options", MAX_CONFIGS);
        return 2;
      }
      char err[256];
      if (ssm_config_parse(v, &a->configs[a->nconfig], err, sizeof err) != 0) {
        cli_error("ssm-sim", "--config '%s': %s", v, err);
        return 2;
      }
      a->nconfig++;
    } else if ((r = cli_option_value(argc, argv, &i, "--out", &v)) != 0) {
      if (r < 0) goto missing;
      a->out = v;
    } else if ((r = cli_option_value(argc, argv, &i, "--heads", &v)) != 0) {
      if (r < 0 || parse_int("--heads", v, 1, 4096, &x) != 0) goto bad;
      d->H = (int)x;
    } else if ((r = cli_option_value(argc, argv, &i, "--groups", &v)) != 0) {
      if (r < 0 || parse_int("--groups", v, 1, 4096, &x) != 0) goto bad;
      d->G = (int)x;
    } else if ((r = cli_option_value(argc, argv, &i, "--dv", &v)) != 0) {
      if (r < 0 || parse_int("--dv", v, 1, 65536, &x) != 0) goto bad;
      d->dv = (int)x;
    } else if ((r = cli_option_value(argc, argv, &i, "--dk", &v)) != 0) {
      if (r < 0 || parse_int("--dk", v, 1, 65536, &x) != 0) goto bad;
      d->dk = (int)x;
    } else if ((r = cli_option_value(argc, argv, &i, "--steps", &v)) != 0) {
      if (r < 0 || parse_int("--steps", v, 1, 1L << 30, &x) != 0) goto bad;
      a->p.steps = x;
    } else if ((r = cli_option_value(argc, argv, &i, "--decay", &v)) != 0) {
      if (r < 0 || parse_range("--decay", v, 0.0, 7.0, &a->p.in.decay_lo, &a->p.in.decay_hi) != 0) goto bad;
    } else if ((r = cli_option_value(argc, argv, &i, "--beta", &v)) != 0) {
      if (r < 0 || parse_range("--beta", v, 0.0, 1.0, &a->p.in.beta_lo, &a->p.in.beta_hi) != 0) goto bad;
    } else if ((r = cli_option_value(argc, argv, &i, "--seed", &v)) != 0) {
      if (r < 0) goto missing;
      if (cli_parse_u64(v, &a->p.in.seed) != 0) {
        cli_error("ssm-sim", "--seed '%s' is not a decimal or 0x-hex uint64", v);
        return 2;
      }
    } else {
      cli_error("ssm-sim", "unknown argument '%s' (usage: see replayssm ssm-sim --help)", argv[i]);
      return 2;
    }
    continue;
  missing:
    cli_error("ssm-sim", "option '%s' needs a value (see replayssm ssm-sim --help)", argv[i]);
    return 2;
  bad:
    if (r < 0) cli_error("ssm-sim", "option '%s' needs a value (see replayssm ssm-sim --help)", argv[i]);
    return 2;
  }
  if (a->help) return 0;
  if ((int)d->kind < 0) {
    cli_error("ssm-sim", "--kind is required (mamba2 or gdn)");
    return 2;
  }
  if (a->nconfig == 0) {
    cli_error("ssm-sim", "at least one --config is required");
    return 2;
  }
  if (!a->out) {
    cli_error("ssm-sim", "--out FILE.h5 is required");
    return 2;
  }
  if (d->H % d->G != 0) {
    cli_error("ssm-sim", "--heads %d is not a multiple of --groups %d", d->H, d->G);
    return 2;
  }
  for (int i = 0; i < a->nconfig; i++) {
    char gi[SSM_NAME_MAX], gj[SSM_NAME_MAX];
    sim_h5_group_name(a->configs[i].name, gi);
    for (int j = 0; j < i; j++) {
      sim_h5_group_name(a->configs[j].name, gj);
      if (strcmp(gi, gj) == 0) {
        cli_error("ssm-sim", "configurations %d and %d have the same name '%s' (give one a name=)", j + 1,
                  i + 1, gi);
        return 2;
      }
    }
  }
  return 0;
}

/* The slower half of the heads (largest alpha), the ones whose error can accumulate. */
static int slow_heads(const ssm_sim_params *p, int *heads /* [H] */) {
  sim_inputs in;
  if (sim_inputs_build(&in, &p->in, 1) != 0) return 0;
  int H = p->in.dims.H, n = 0;
  for (int h = 0; h < H; h++) {
    int rank = 0; /* heads strictly slower than h, ties broken by index */
    for (int o = 0; o < H; o++)
      if (in.decay[o] > in.decay[h] || (in.decay[o] == in.decay[h] && o < h)) rank++;
    if (rank < (H + 1) / 2) heads[n++] = h;
  }
  sim_inputs_free(&in);
  return n;
}

int cmd_ssm_sim(int argc, char **argv) {
  static sim_args a; /* large: keep it off the stack */
  int rc = parse_args(argc, argv, &a);
  if (rc != 0) return rc;
  if (a.help) {
    print_help();
    return 0;
  }
  if (!a.force && access(a.out, F_OK) == 0) {
    cli_error("ssm-sim", "%s exists (use --force to replace it)", a.out);
    return 2;
  }
  ssm_sim_result *res = calloc((size_t)a.nconfig, sizeof *res);
  int *heads = malloc((size_t)a.p.in.dims.H * sizeof(int));
  if (!res || !heads) {
    free(res);
    free(heads);
    cli_error("ssm-sim", "out of memory");
    return 1;
  }
  int nslow = slow_heads(&a.p, heads);
  char err[512];
  int done = 0;
  for (; done < a.nconfig; done++) {
    fprintf(stderr, "ssm-sim: %s ...\n", a.configs[done].name);
    if (ssm_sim_run(&a.p, &a.configs[done], &res[done], err, sizeof err) != 0) {
      cli_error("ssm-sim", "%s", err);
      rc = 1;
      break;
    }
  }
  if (rc == 0 && sim_h5_write(a.out, &a.p, a.nconfig, a.configs, res, err, sizeof err) != 0) {
    cli_error("ssm-sim", "%s", err);
    rc = 1;
  }
  if (rc == 0) {
    const ssm_dims *d = &a.p.in.dims;
    printf("ssm-sim: %s, H=%d G=%d dv=%d dk=%d, %lld steps, alpha = 1 - 10^-U(%g,%g), seed %llu\n",
           d->kind == SSM_GDN ? "gdn" : "mamba2", d->H, d->G, d->dv, d->dk, (long long)a.p.steps,
           a.p.in.decay_lo, a.p.in.decay_hi, (unsigned long long)a.p.in.seed);
    printf("relative output error against conventional state=fp32, all heads:\n");
    sim_print_table_header(stdout);
    for (int i = 0; i < a.nconfig; i++) {
      sim_summary s;
      sim_summarise(&res[i], NULL, 0, &s);
      sim_print_table_row(stdout, a.configs[i].name, &s);
    }
    printf("the slower half of the heads (%d of %d):\n", nslow, d->H);
    sim_print_table_header(stdout);
    for (int i = 0; i < a.nconfig; i++) {
      sim_summary s;
      sim_summarise(&res[i], heads, nslow, &s);
      sim_print_table_row(stdout, a.configs[i].name, &s);
    }
    printf("wrote %s\n", a.out);
  }
  for (int i = 0; i < done; i++) ssm_sim_result_free(&res[i]);
  free(res);
  free(heads);
  return rc;
}
