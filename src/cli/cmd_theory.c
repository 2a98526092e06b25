/* `replayssm theory`: the paper's Appendix C.6 error-propagation model (D_t = a D_(t-1) + e_t)
 * checked against the errors of the real quantisers (src/theory/theory.h, docs/theory.md). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/cli_util.h"
#include "src/cli/commands.h"
#include "src/theory/theory.h"
#include "src/theory/theory_h5.h"
#include "src/theory/theory_report.h"

#define USAGE                                                                                    \
  "replayssm theory [--out FILE.h5] [--formats LIST] [--roundings rtn,sr] [--regimes LIST]\n"    \
  "                 [--alpha-min A] [--alpha-max A] [--alphas N] [--steps N] [--horizons K]\n"   \
  "                 [--matrices N] [--dv N] [--dk N] [--L N] [--rho R] [--tol T] [--seed S]\n"  \
  "                 [--verbose] [--force]"

#define DEFAULT_FORMATS "bf16,fp16,fp8,fp8_e5m2,int8,nvfp4,mxfp8,mxfp4"
#define MAX_FORMATS 32

static void print_help(void) {
  printf("usage: " USAGE "\n"
         "\n"
         "Checks the error-propagation model of the paper's Appendix C.6: a stored state's error\n"
         "D_t = a D_(t-1) + e_t has mean b/(1-a) and variance s2/(1-a^2) when the rounding errors\n"
         "e_t are independent with mean b and variance s2; a shared replay checkpoint rounds once\n"
         "per window (a = alpha^L), split precision once in all (D = e). e = Q(S) - S comes from\n"
         "the real quantisers on realistic state matrices, every element one trial, under three\n"
         "regimes: iid (a fresh state each step), fixed (the same state each step) and ar1 (a\n"
         "slowly moving state), and on request closed (the real quantised recurrence, where e\n"
         "feeds back). Prints one line per format/regime/mode and the verdict; the exit\n"
         "status is 0 when it ran, whatever the verdict (the test suite asserts the verdict).\n"
         "\n"
         "  --out FILE      HDF5 with every comparison (analysis/plot_theory.py plots it)\n"
         "  --formats LIST  comma-separated formats, FORMAT[@BLOCK][/rtn|/sr] (default\n"
         "                  " DEFAULT_FORMATS "); without /rtn or /sr each is run with every\n"
         "                  rounding of --roundings\n"
         "  --roundings R   rtn, sr or rtn,sr (default rtn,sr)\n"
         "  --regimes LIST  iid, fixed, ar1, closed (default iid,fixed,ar1; closed runs the\n"
         "                  real recurrence, one stream per alpha: alphas times the cost)\n"
         "  --alpha-min A, --alpha-max A, --alphas N\n"
         "                  N decays with 1 - alpha log-spaced (default 0.9 .. 0.99999, 9)\n"
         "  --steps N       most steps simulated (default 2048); each run wants\n"
         "                  horizons/(1 - alpha_max) steps, and alphas it cannot take to\n"
         "                  stationarity are compared with the exact finite sums (column 'stat')\n"
         "  --horizons K    e-folds that count as stationary (default 8)\n"
         "  --matrices N, --dv N, --dk N\n"
         "                  state matrices per step and their shape (default 64 x 8 x 128); the\n"
         "                  matrices are the independent batches of the standard errors\n"
         "  --L N           replay window (default 16)\n"
         "  --rho R         ar1: per-step correlation of the state (default 0.999)\n"
         "  --tol T         relative agreement required (default 0.05)\n"
         "  --seed S        state and stochastic-rounding seed (default 0)\n"
         "  --verbose       print every comparison, not one line per group\n"
         "  --force         replace an existing --out file\n"
         "\n"
         "example:\n"
         "  replayssm theory --formats nvfp4,fp8 --regimes iid,fixed --out theory.h5\n");
}

typedef struct {
  th_params p;
  qformat formats[MAX_FORMATS];
  int nformat;
  int regimes[TH_NREGIME];
  const char *out;
  int force, help, verbose;
} th_args;

static int bad(const char *opt, const char *v, const char *expected) {
  cli_error("theory", "%s '%s' is not valid (expected %s)", opt, v, expected);
  return 2;
}

static int parse_long(const char *v, long lo, long hi, long *out) {
  char *end;
  long x = strtol(v, &end, 10);
  if (*v == '\0' || *end != '\0' || x < lo || x > hi) return -1;
  *out = x;
  return 0;
}

/* An integer option in [lo, hi] into *out; returns 0, or the exit status 2 after the message. */
static int int_opt(const char *opt, const char *v, long lo, long hi, int *out) {
  long x;
  char expected[64];
  if (parse_long(v, lo, hi, &x) != 0) {
    snprintf(expected, sizeof expected, "an integer in [%ld, %ld]", lo, hi);
    return bad(opt, v, expected);
  }
  *out = (int)x;
  return 0;
}

static int parse_double(const char *v, double lo, double hi, double *out) {
  char *end;
  double x = strtod(v, &end);
  if (*v == '\0' || *end != '\0' || !(x >= lo && x <= hi)) return -1;
  *out = x;
  return 0;
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

static int parse_args(int argc, char **argv, th_args *a) {
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
  double amin = 0.9, amax = 0.99999;
  long nalpha = 9, x;
  const char *formats = DEFAULT_FORMATS, *roundings = "rtn,sr", *regimes = "iid,fixed,ar1";
  for (int i = 1; i < argc; i++) {
    const char *v = NULL;
    int r = 0;
#define OPT(name) ((r = cli_option_value(argc, argv, &i, name, &v)) != 0)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) a->help = 1;
    else if (strcmp(argv[i], "--force") == 0) a->force = 1;
    else if (strcmp(argv[i], "--verbose") == 0) a->verbose = 1;
    else if (OPT("--out")) a->out = v;
    else if (OPT("--formats")) formats = v;
    else if (OPT("--roundings")) roundings = v;
    else if (OPT("--regimes")) regimes = v;
    else if (OPT("--alpha-min")) {
      if (r > 0 && parse_double(v, 0.0, 0.99999999, &amin) != 0)
        return bad("--alpha-min", v, "a number in [0, 0.99999999]");
    } else if (OPT("--alpha-max")) {
      if (r > 0 && parse_double(v, 0.0, 0.99999999, &amax) != 0)
        return bad("--alpha-max", v, "a number in [0, 0.99999999]");
    } else if (OPT("--alphas")) {
      if (r > 0 && parse_long(v, 1, TH_MAX_ALPHA, &nalpha) != 0)
        return bad("--alphas", v, "an integer in [1, 32]");
    } else if (OPT("--steps")) {
      if (r > 0 && parse_long(v, 1, 1L << 30, &x) != 0)
        return bad("--steps", v, "an integer in [1, 2^30]");
      if (r > 0) p->max_steps = x;
    } else if (OPT("--horizons")) {
      if (r > 0 && parse_double(v, 0.1, 100.0, &p->horizons) != 0)
        return bad("--horizons", v, "a number in [0.1, 100]");
    } else if (OPT("--matrices")) {
      if (r > 0 && int_opt("--matrices", v, 1, 1 << 16, &p->nmat) != 0) return 2;
    } else if (OPT("--dv")) {
      if (r > 0 && int_opt("--dv", v, 1, 4096, &p->dv) != 0) return 2;
    } else if (OPT("--dk")) {
      if (r > 0 && int_opt("--dk", v, 1, 4096, &p->dk) != 0) return 2;
    } else if (OPT("--L")) {
      if (r > 0 && int_opt("--L", v, 1, 4096, &p->L) != 0) return 2;
    } else if (OPT("--rho")) {
      if (r > 0 && parse_double(v, 0.0, 0.999999, &p->rho) != 0)
        return bad("--rho", v, "a number in [0, 0.999999]");
    } else if (OPT("--tol")) {
      if (r > 0 && parse_double(v, 1e-6, 1.0, &p->tol) != 0)
        return bad("--tol", v, "a number in (0, 1]");
    } else if (OPT("--seed")) {
      if (r > 0 && cli_parse_u64(v, &p->seed) != 0)
        return bad("--seed", v, "a decimal or 0x-hex uint64");
    } else {
      cli_error("theory", "unknown argument '%s' (usage: see replayssm theory --help)", argv[i]);
      return 2;
    }
#undef OPT
    if (r < 0) {
      cli_error("theory", "option '%s' needs a value (see replayssm theory --help)", argv[i]);
      return 2;
    }
  }
  if (a->help) return 0;
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
  return 0;
}

int cmd_theory(int argc, char **argv) {
  static th_args a;
  int rc = parse_args(argc, argv, &a);
  if (rc != 0) return rc;
  if (a.help) {
    print_help();
    return 0;
  }
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
