/* `replayssm ssm-sim`: one SSM layer, synthetic inputs, several state configurations against the
 * fp32 conventional reference; per-step output error and per-store checkpoint error to HDF5, and
 * a summary table on stdout (docs/ssm-sim.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/io/cli_opts.h"
#include "src/cli/commands.h"
#include "src/sim/sim_h5.h"
#include "src/sim/sim_summary.h"
#include "src/sim/ssm_sim.h"

#define USAGE                                                                                   \
  "ssm-sim --kind mamba2|gdn --config STR [--config STR ...] --out FILE.h5\n"         \
  "                  [--heads H] [--groups G] [--dv N] [--dk N] [--steps N] [--decay A:B]\n"    \
  "                  [--beta A:B] [--seed S] [--force]"

#define MAX_CONFIGS 64

/* A range A:B with lo <= A <= B <= hi into double [2] (lo and hi in the text `expected` is
 * filled with, by the option that uses it). */
static int parse_range(const char *v, double lo, double hi, double *ab, char *expected, size_t len) {
  snprintf(expected, len, "a range A:B with %g <= A <= B <= %g", lo, hi);
  char *end;
  ab[0] = strtod(v, &end);
  if (end == v || *end != ':') return -1;
  const char *w = end + 1;
  ab[1] = strtod(w, &end);
  if (end == w || *end != '\0' || !(ab[0] >= lo) || !(ab[1] <= hi) || !(ab[0] <= ab[1])) return -1;
  return 0;
}
static int parse_decay(const char *v, void *dest, char *expected, size_t len) {
  return parse_range(v, 0.0, 7.0, dest, expected, len);
}
static int parse_beta(const char *v, void *dest, char *expected, size_t len) {
  return parse_range(v, 0.0, 1.0, dest, expected, len);
}
static int parse_kind(const char *v, void *dest, char *expected, size_t len) {
  snprintf(expected, len, "mamba2 or gdn");
  if (strcmp(v, "mamba2") == 0) *(ssm_kind *)dest = SSM_MAMBA2;
  else if (strcmp(v, "gdn") == 0) *(ssm_kind *)dest = SSM_GDN;
  else return -1;
  return 0;
}

typedef struct {
  ssm_sim_params p;
  ssm_config configs[MAX_CONFIGS];
  const char *config_text[MAX_CONFIGS];
  int nconfig;
  const char *out;
  int force;
} sim_args;

/* The option table; values land in a (defaults set by the caller). */
static int parse_table(int argc, char **argv, sim_args *a, double *decay, double *beta, int *done) {
  ssm_dims *d = &a->p.in.dims;
  const cli_opt opts[] = {
      {.name = "--kind", .type = CLI_CALL, .dest = &d->kind, .meta = "K", .parse = parse_kind,
       .help = "mamba2 or gdn (required)"},
      {.name = "--config", .type = CLI_LIST, .dest = a->config_text, .meta = "STR",
       .max = MAX_CONFIGS, .count = &a->nconfig,
       .help = "a configuration string (SPEC section 6), repeatable (at least one)"},
      {.name = "--out", .type = CLI_STR, .dest = &a->out, .meta = "FILE",
       .help = "HDF5 output; an existing file is kept unless --force"},
      {.name = "--heads", .type = CLI_INT, .dest = &d->H, .meta = "H", .lo = 1, .hi = 4096,
       .flags = CLI_STRTOL, .def = "8", .help = "value heads"},
      {.name = "--groups", .type = CLI_INT, .dest = &d->G, .meta = "G", .lo = 1, .hi = 4096,
       .flags = CLI_STRTOL, .def = "2", .help = "key groups"},
      {.name = "--dv", .type = CLI_INT, .dest = &d->dv, .meta = "N", .lo = 1, .hi = 65536,
       .flags = CLI_STRTOL, .def = "64", .help = "head rows"},
      {.name = "--dk", .type = CLI_INT, .dest = &d->dk, .meta = "N", .lo = 1, .hi = 65536,
       .flags = CLI_STRTOL, .def = "128", .help = "head columns"},
      {.name = "--steps", .type = CLI_I64, .dest = &a->p.steps, .meta = "N", .lo = 1,
       .hi = 1L << 30, .flags = CLI_STRTOL, .def = "4096", .help = "decode steps"},
      {.name = "--decay", .type = CLI_CALL, .dest = decay, .meta = "A:B", .parse = parse_decay,
       .def = "1:4", .help = "per-head decay alpha = 1 - 10^-U(A,B), fixed per head"},
      {.name = "--beta", .type = CLI_CALL, .dest = beta, .meta = "A:B", .parse = parse_beta,
       .def = "0.1:0.9", .help = "GDN write strength beta ~ U(A,B) per step"},
      {.name = "--seed", .type = CLI_U64, .dest = &a->p.in.seed, .meta = "S", .def = "0",
       .help = "seed of inputs and stochastic rounding"},
      {.name = "--force", .type = CLI_FLAG, .dest = &a->force, .help = "replace an existing --out"},
  };
  const cli_spec spec = {
      .cmd = "ssm-sim",
      .usage = USAGE,
      .about = "Drive one Mamba-2 or Gated DeltaNet layer with random inputs through each configuration\n"
               "and, in lockstep, through `conventional state=fp32`. Writes per-step relative output\n"
               "errors and per-store relative checkpoint errors to HDF5 and prints a summary.",
      .epilog = "example:\n"
                "  replayssm ssm-sim --kind gdn --decay 3:4 --steps 8192 \\\n"
                "    --config 'replay L=16 ckpt=nvfp4/sr' --config 'replay L=16 hp=fp32 lp=nvfp4' \\\n"
                "    --out sim.h5",
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
  };
  return cli_parse_or_help(&spec, argc, argv, done);
}

/* The checks across options, and the configurations parsed. Returns 0 or 2 after a message. */
static int check_args(sim_args *a) {
  const ssm_dims *d = &a->p.in.dims;
  if ((int)d->kind < 0) {
    cli_error("ssm-sim", "--kind is required (mamba2 or gdn)");
    return 2;
  }
  if (a->nconfig == 0) {
    cli_error("ssm-sim", "at least one --config is required");
    return 2;
  }
  for (int i = 0; i < a->nconfig; i++) {
    char err[256];
    if (ssm_config_parse(a->config_text[i], &a->configs[i], err, sizeof err) != 0) {
      cli_error("ssm-sim", "--config '%s': %s", a->config_text[i], err);
      return 2;
    }
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

/* Returns 0 to go on, or the exit status with *done set. */
static int parse_args(int argc, char **argv, sim_args *a, int *done) {
  memset(a, 0, sizeof *a);
  ssm_dims *d = &a->p.in.dims;
  d->kind = (ssm_kind)-1;
  d->H = 8;
  d->G = 2;
  d->dv = 64;
  d->dk = 128;
  a->p.steps = 4096;
  double decay[2] = {1.0, 4.0}, beta[2] = {0.1, 0.9};
  int rc = parse_table(argc, argv, a, decay, beta, done);
  if (*done) return rc;
  a->p.in.decay_lo = decay[0];
  a->p.in.decay_hi = decay[1];
  a->p.in.beta_lo = beta[0];
  a->p.in.beta_hi = beta[1];
  rc = check_args(a);
  *done = rc != 0;
  return rc;
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
  int stop;
  int rc = parse_args(argc, argv, &a, &stop);
  if (stop) return rc;
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
