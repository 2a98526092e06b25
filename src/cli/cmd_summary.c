/* `replayssm summary FILE.h5`: the SPEC section 5 statistics of every configuration as text
 * tables, CSV or JSON (docs/driver.md, "Summary"; summary_report.h says how errors are computed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/cli_opts.h"
#include "src/cli/commands.h"
#include "src/driver/run_data.h"
#include "src/driver/run_h5.h"
#include "src/driver/summary_report.h"
#include "src/driver/summary_write.h"
#include "src/io/status.h"

static const char *CMD = "summary";

#define MAX_COMPARE 64

static int find_config(const run_data *d, const char *name) {
  for (int c = 0; c < d->nconfig; c++)
    if (strcmp(d->cfg[c].name, name) == 0) return c;
  return -1;
}

/* "--compare A B" takes two values, which the option table does not: its pairs are taken out of
 * argv first (into names), the rest goes to cli_parse. Returns the new argc, or -1 after an
 * error line. */
static int take_compare(int argc, char **argv, char **rest, const char *(*names)[2], int *n) {
  int m = 0;
  *n = 0;
  for (int i = 0; i < argc; i++) {
    if (i > 0 && strcmp(argv[i], "--compare") == 0) {
      if (i + 2 >= argc || argv[i + 1][0] == '-' || argv[i + 2][0] == '-') {
        cli_error(CMD, "--compare needs two configuration names (--compare A B)");
        return -1;
      }
      if (*n == MAX_COMPARE) {
        cli_error(CMD, "more than %d --compare pairs", MAX_COMPARE);
        return -1;
      }
      names[*n][0] = argv[i + 1];
      names[*n][1] = argv[i + 2];
      (*n)++;
      i += 2;
    } else {
      rest[m++] = argv[i];
    }
  }
  rest[m] = NULL;
  return m;
}

static int parse_format(const char *v, void *dest, char *expected, size_t len) {
  snprintf(expected, len, "text, csv or json");
  if (strcmp(v, "text") && strcmp(v, "csv") && strcmp(v, "json")) return -1;
  *(const char **)dest = v;
  return 0;
}

/* Parses the command line; returns 0 to go on or the exit status with *done set. */
static int parse_args(int argc, char **argv, const char **path, const char **format,
                      const char *(*names)[2], int *nnames, int *partial, int *done) {
  char **rest = malloc(sizeof(char *) * ((size_t)argc + 1));
  if (!rest) {
    cli_error(CMD, "out of memory");
    *done = 1;
    return 1;
  }
  int rc = 0;
  int n = take_compare(argc, argv, rest, names, nnames);
  const char *operands[1];
  int nop = 0;
  const char *unused = NULL;
  const cli_opt opts[] = {
      {.name = "--partial", .type = CLI_FLAG, .dest = partial,
       .help = "report an incomplete file (an interrupted run's .part) over the steps\n"
               "every sequence has written, saying so; without it such a file is refused"},
      {.name = "--format", .type = CLI_CALL, .dest = format, .meta = "text|csv|json",
       .def = "text", .parse = parse_format,
       .help = "text: tables of about 100 columns; csv: one row per\n"
               "configuration (with --compare: per comparison); json: all, NaN as null"},
      {.name = "--compare", .type = CLI_STR, .dest = &unused, .meta = "A B",
       .def = "shared vs split",
       .help = "mean KL of configuration A over B's, 95% interval (delta method\n"
               "on ln(ratio) over the units, t quantile); repeatable. Default: each\n"
               "shared replay configuration against the split ones of its L and format"},
  };
  char about[900];
  snprintf(about, sizeof about,
           "For every configuration of a run file: mean KL(ref || cfg) in nats per token, KL\n"
           "percentiles from the minimum to the maximum, its own perplexity, PPL/PPL_ref,\n"
           "PPL - PPL_ref and ln(PPL/PPL_ref), mean and RMS of dp = p_cfg(target) - p_ref(target),\n"
           "top-1 agreement, and the mean KL per full power-of-two position bucket. Every mean has\n"
           "a standard error over independent units: the sequences when there are %d or more,\n"
           "else blocks of steps (%d units in all, at least %d steps each); the output says which.\n"
           "Configurations that went non-finite are listed with their first non-finite step;\n"
           "their non-finite steps are left out.",
           SR_MIN_SEQUENCE_UNITS, SR_MIN_UNITS, SR_MIN_BLOCK_STEPS);
  const cli_spec spec = {
      .cmd = CMD,
      .usage = "summary [--format text|csv|json] [--compare A B]... [--partial] FILE.h5",
      .about = about,
      .opts = opts,
      .nopts = (int)(sizeof opts / sizeof opts[0]),
      .operands = operands,
      .max_operands = 1,
      .noperands = &nop,
  };
  if (n < 0) {
    *done = 1;
    rc = 2;
  } else {
    rc = cli_parse_or_help(&spec, n, rest, done);
  }
  free(rest);
  if (*done) return rc;
  *path = nop ? operands[0] : NULL;
  if (!*path) {
    cli_error(CMD, "missing FILE.h5 (see replayssm summary --help)");
    *done = 1;
    return 2;
  }
  return 0;
}

int cmd_summary(int argc, char **argv) {
  const char *path = NULL, *format = "text";
  const char *names[MAX_COMPARE][2];
  int nnames = 0, partial = 0, done = 0;
  int rc = parse_args(argc, argv, &path, &format, names, &nnames, &partial, &done);
  if (done) return rc;
  run_data d;
  char err[1024];
  rc = run_h5_read(path, &d, err, sizeof err);
  if (rc != RSSM_OK) {
    cli_error(CMD, "%s", err);
    return rc;
  }
  if (!run_data_complete(&d)) {
    char w[128];
    run_data_written_text(&d, w, sizeof w);
    int64_t n = run_data_min_written(&d);
    if (!partial || n < 1) {
      cli_error(CMD, "%s: incomplete (%s)%s", path, w,
                partial ? "; no step is written for every sequence"
                        : "; finish the run with --resume, or report the written steps with --partial");
      run_data_free(&d);
      return 2;
    }
    /* on stderr for csv and json, whose stdout is for their readers */
    fprintf(strcmp(format, "text") ? stderr : stdout,
            "partial: %s (%s); the statistics below cover steps 0..%lld of every sequence only\n",
            path, w, (long long)(n - 1));
    run_data_truncate(&d, n);
  }
  int pairs[MAX_COMPARE][2];
  int npairs = nnames;
  for (int i = 0; i < nnames; i++)
    for (int j = 0; j < 2; j++) {
      pairs[i][j] = find_config(&d, names[i][j]);
      if (pairs[i][j] < 0) {
        cli_error(CMD, "--compare: %s has no configuration '%s'", path, names[i][j]);
        run_data_free(&d);
        return 2;
      }
    }
  if (nnames == 0) npairs = sr_default_pairs(&d, pairs, MAX_COMPARE);
  sr_report r;
  if (sr_build(&d, &r) != 0) {
    cli_error(CMD, "%s: out of memory", path);
    run_data_free(&d);
    return 1;
  }
  sr_compare cmp[MAX_COMPARE];
  for (int i = 0; i < npairs; i++) cmp[i] = sr_compare_configs(&r, pairs[i][0], pairs[i][1]);
  rc = 0;
  if (strcmp(format, "json") == 0)
    rc = sr_write_json(stdout, path, &d, &r, cmp, npairs) == 0 ? 0 : 1;
  else if (strcmp(format, "csv") == 0)
    sr_write_csv(stdout, &d, &r, cmp, npairs, nnames > 0);
  else
    sr_write_text(stdout, path, &d, &r, cmp, npairs);
  if (rc) cli_error(CMD, "%s: out of memory", path);
  sr_free(&r);
  run_data_free(&d);
  return rc;
}
