/* `replayssm theory`: the paper's Appendix C.6 error-propagation model (D_t = a D_(t-1) + e_t)
 * checked against the errors of the real quantisers (src/theory/theory.h, docs/theory.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/io/cli_opts.h"
#include "src/cli/commands.h"
#include "src/theory/theory.h"
#include "src/theory/theory_h5.h"
#include "src/theory/theory_report.h"

#define USAGE                                                                                    \
  "theory [--out FILE.h5] [--formats LIST] [--roundings rtn,sr] [--regimes LIST]\n"    \
  "                 [--alpha-min A] [--alpha-max A] [--alphas N] [--steps N] [--horizons K]\n"   \
  "                 [--matrices N] [--dv N] [--dk N] [--L N] [--rho R] [--tol T] [--seed S]\n"  \
  "                 [--verbose] [--force]"

#define DEFAULT_FORMATS "bf16,fp16,fp8,fp8_e5m2,int8,nvfp4,mxfp8,mxfp4"
#define MAX_FORMATS 32

typedef struct {
  th_params p;
  qformat formats[MAX_FORMATS];
  int nformat;
  int regimes[TH_NREGIME];
  const char *out;
  int force, verbose;
} th_args;

static int bad(const char *opt, const char *v, const char *expected) {
  cli_error("theory", "%s '%s' is not valid (expected %s)", opt, v, expected);
  return 2;
}

/* A comma-separated list; each item handed to fn. */
static int each_item(const char *list, int (*fn)(const char *item, void *ctx), void *ctx) {
  char buf[1024];
  if (snprintf(buf, sizeof buf, "%s", list) >= (int)sizeof buf || !*buf) return -1;
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
    if (fn(tok, ctx) != 0) return -1;
  return 0;
}

typedef struct {
  th_args *a;
  int rtn, sr;
  char err[256];
} fmt_ctx;

static int add_format(const char *item, void *vctx) {
  fmt_ctx *c = vctx;
  qformat f;
  if (qformat_parse(item, &f, c->err, sizeof c->err) != 0) return -1;
  if (qformat_is_identity(&f)) {
    snprintf(c->err, sizeof c->err, "fp32 does not round (nothing to check)");
    return -1;
  }
  int explicit_rounding = strchr(item, '/') != NULL;
  for (int r = 0; r < 2; r++) {
    if (explicit_rounding ? (int)f.rounding != r : !(r ? c->sr : c->rtn)) continue;
    if (c->a->nformat == MAX_FORMATS) {
      snprintf(c->err, sizeof c->err, "more than %d format/rounding pairs", MAX_FORMATS);
      return -1;
    }
    f.rounding = (qrounding)r;
    c->a->formats[c->a->nformat++] = f;
  }
  return 0;
}

static int add_rounding(const char *item, void *vctx) {
  fmt_ctx *c = vctx;
  if (strcmp(item, "rtn") == 0) c->rtn = 1;
  else if (strcmp(item, "sr") == 0) c->sr = 1;
  else return -1;
  return 0;
}

static int add_regime(const char *item, void *vctx) {
  th_args *a = vctx;
  th_regime r;
  if (th_regime_parse(item, &r) != 0) return -1;
  a->regimes[r] = 1;
  return 0;
}

/* The option table; values land in a and in the caller's locals (defaults set by the caller). */
typedef struct {
  double amin, amax;
  int nalpha;
  const char *formats, *roundings, *regimes;
} th_lists;

static int parse_table(int argc, char **argv, th_args *a, th_lists *l, int *done) {
  th_params *p = &a->p;
  const cli_opt opts[] = {
      {.name = "--out", .type = CLI_STR, .dest = &a->out, .meta = "FILE",
       .help = "HDF5 with every comparison (analysis/plot_theory.py plots it)"},
      {.name = "--formats", .type = CLI_STR, .dest = &l->formats, .meta = "LIST",
       .def = DEFAULT_FORMATS,
       .help = "comma-separated formats, FORMAT[@BLOCK][/rtn|/sr]; without /rtn or /sr\n"
               "each is run with every rounding of --roundings"},
      {.name = "--roundings", .type = CLI_STR, .dest = &l->roundings, .meta = "R", .def = "rtn,sr",
       .help = "rtn, sr or rtn,sr"},
      {.name = "--regimes", .type = CLI_STR, .dest = &l->regimes, .meta = "LIST",
       .def = "iid,fixed,ar1",
       .help = "iid, fixed, ar1, closed (closed runs the real recurrence, one stream\n"
               "per alpha: alphas times the cost)"},
      {.name = "--alpha-min", .type = CLI_DOUBLE, .dest = &l->amin, .meta = "A", .dhi = 0.99999999,
       .def = "0.9", .help = "smallest decay; 1 - alpha is log-spaced over --alphas values"},
      {.name = "--alpha-max", .type = CLI_DOUBLE, .dest = &l->amax, .meta = "A", .dhi = 0.99999999,
       .def = "0.99999", .help = "largest decay"},
      {.name = "--alphas", .type = CLI_INT, .dest = &l->nalpha, .meta = "N", .lo = 1,
       .hi = TH_MAX_ALPHA, .flags = CLI_STRTOL, .def = "9", .help = "number of decays"},
      {.name = "--steps", .type = CLI_I64, .dest = &p->max_steps, .meta = "N", .lo = 1,
       .hi = 1L << 30, .flags = CLI_STRTOL, .expect = "an integer in [1, 2^30]", .def = "2048",
       .help = "most steps simulated; each run wants horizons/(1 - alpha_max) steps,\n"
               "and alphas it cannot take to stationarity are compared with the exact\n"
               "finite sums (column 'stat')"},
      {.name = "--horizons", .type = CLI_DOUBLE, .dest = &p->horizons, .meta = "K", .dlo = 0.1,
       .dhi = 100.0, .def = "8", .help = "e-folds that count as stationary"},
      {.name = "--matrices", .type = CLI_INT, .dest = &p->nmat, .meta = "N", .lo = 1, .hi = 1 << 16,
       .flags = CLI_STRTOL, .def = "64",
       .help = "state matrices per step (the independent batches of the standard errors)"},
      {.name = "--dv", .type = CLI_INT, .dest = &p->dv, .meta = "N", .lo = 1, .hi = 4096,
       .flags = CLI_STRTOL, .def = "8", .help = "rows of a state matrix"},
      {.name = "--dk", .type = CLI_INT, .dest = &p->dk, .meta = "N", .lo = 1, .hi = 4096,
       .flags = CLI_STRTOL, .def = "128", .help = "columns of a state matrix"},
      {.name = "--L", .type = CLI_INT, .dest = &p->L, .meta = "N", .lo = 1, .hi = 4096,
       .flags = CLI_STRTOL, .def = "16", .help = "replay window"},
      {.name = "--rho", .type = CLI_DOUBLE, .dest = &p->rho, .meta = "R", .dhi = 0.999999,
       .def = "0.999", .help = "ar1: per-step correlation of the state"},
      {.name = "--tol", .type = CLI_DOUBLE, .dest = &p->tol, .meta = "T", .dlo = 1e-6, .dhi = 1.0,
       .expect = "a number in (0, 1]", .def = "0.05", .help = "relative agreement required"},
      {.name = "--seed", .type = CLI_U64, .dest = &p->seed, .meta = "S", .def = "0",
       .help = "state and stochastic-rounding seed"},
      {.name = "--verbose", .type = CLI_FLAG, .dest = &a->verbose,
       .help = "print every comparison, not one line per group"},
      {.name = "--force", .type = CLI_FLAG, .dest = &a->force, .help = "replace an existing --out file"},
  };
  const cli_spec spec = {
      .cmd = "theory",
      .usage = USAGE,
      .about = "Checks the error-propagation model of the paper's Appendix C.6: a stored state's error\n"
               "D_t = a D_(t-1) + e_t has mean b/(1-a) and variance s2/(1-a^2) when the rounding errors\n"
               "e_t are independent with mean b and variance s2; a shared replay checkpoint rounds once\n"
               "per window (a = alpha^L), split precision once in all (D = e). e = Q(S) - S comes from\n"
               "the real quantisers on realistic state matrices, every element one trial, under three\n"
               "regimes: iid (a fresh state each step), fixed (the same state each step) and ar1 (a\n"
               "slowly moving state), and on request closed (the real quantised recurrence, where e\n"
               "feeds back). Prints one line per format/regime/mode and the verdict; the exit\n"
               "status is 0 when it ran, whatever the verdict (the test suite asserts the verdict).",
      .epilog = "example:\n"
                "  replayssm theory --formats nvfp4,fp8 --regimes iid,fixed --out theory.h5",
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
  };
  return cli_parse_or_help(&spec, argc, argv, done);
}

/* Returns 0 to go on, or the exit status with *done set. */
static int parse_args(int argc, char **argv, th_args *a, int *done) {
  memset(a, 0, sizeof *a);
  th_params *p = &a->p;
  p->nmat = 64;
  p->dv = 8;
  p->dk = 128;
  p->max_steps = 2048;
  p->horizons = 8.0;
  p->L = 16;
  p->rho = 0.999;
  p->tol = 0.05;
  th_lists l = {0.9, 0.99999, 9, DEFAULT_FORMATS, "rtn,sr", "iid,fixed,ar1"};
  int rc = parse_table(argc, argv, a, &l, done);
  if (*done) return rc;
  *done = 1;
  const double amin = l.amin, amax = l.amax;
  const char *formats = l.formats, *roundings = l.roundings, *regimes = l.regimes;
  const long nalpha = l.nalpha;
  if (!(amin <= amax)) {
    cli_error("theory", "--alpha-min %g is above --alpha-max %g", amin, amax);
    return 2;
  }
  /* 1 - alpha log-spaced from 1 - amin down to 1 - amax */
  p->nalpha = (int)nalpha;
  for (int i = 0; i < p->nalpha; i++) {
    double f = p->nalpha > 1 ? (double)i / (p->nalpha - 1) : 0.0;
    p->alpha[i] = 1.0 - exp(log(1.0 - amin) + f * (log(1.0 - amax) - log(1.0 - amin)));
  }
  if (p->nalpha == 1) p->alpha[0] = amax;
  fmt_ctx fc = {a, 0, 0, ""};
  if (each_item(roundings, add_rounding, &fc) != 0)
    return bad("--roundings", roundings, "rtn, sr or rtn,sr");
  if (each_item(formats, add_format, &fc) != 0) {
    cli_error("theory", "--formats '%s': %s", formats, fc.err[0] ? fc.err : "empty item");
    return 2;
  }
  if (each_item(regimes, add_regime, a) != 0)
    return bad("--regimes", regimes, "a list of iid, fixed, ar1, closed");
  if ((int64_t)p->dv * p->dk < 2) {
    cli_error("theory", "--dv x --dk must be at least 2 elements");
    return 2;
  }
  *done = 0;
  return 0;
}

int cmd_theory(int argc, char **argv) {
  static th_args a;
  int stop;
  int rc = parse_args(argc, argv, &a, &stop);
  if (stop) return rc;
  if (a.out && !a.force && access(a.out, F_OK) == 0) {
    cli_error("theory", "%s exists (use --force to replace it)", a.out);
    return 2;
  }
  if (a.out) {
    /* fail before minutes of simulation, not after: the file goes next to its final name */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", a.out);
    char *slash = strrchr(dir, '/');
    if (slash) *(slash == dir ? slash + 1 : slash) = '\0';
    else snprintf(dir, sizeof dir, ".");
    if (access(dir, W_OK) != 0) {
      cli_error("theory", "%s: the directory '%s' does not exist or is not writable", a.out, dir);
      return 1;
    }
  }
  th_result res = {0};
  char err[512];
  for (int f = 0; f < a.nformat && rc == 0; f++)
    for (int r = 0; r < TH_NREGIME && rc == 0; r++) {
      if (!a.regimes[r]) continue;
      if (th_run(&a.p, &a.formats[f], (th_regime)r, &res, err, sizeof err) != 0) {
        cli_error("theory", "%s", err);
        rc = 1;
      }
    }
  if (rc == 0 && a.out && th_h5_write(a.out, &a.p, &res, err, sizeof err) != 0) {
    cli_error("theory", "%s", err);
    rc = 1;
  }
  if (rc == 0) {
    th_report(stdout, &a.p, &res, a.verbose);
    if (a.out) printf("wrote %s\n", a.out);
  }
  th_result_free(&res);
  return rc;
}
