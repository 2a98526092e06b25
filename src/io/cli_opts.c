/* The table-driven option parser and --help printer (cli_opts.h). */
#include "src/io/cli_opts.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include "src/io/parse_num.h"

void cli_error(const char *cmd, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  /* Messages may quote user input: keep the promise of one line whatever it contains. */
  for (char *p = msg; *p; p++)
    if (*p == '\n' || *p == '\r') *p = ' ';
  fprintf(stderr, "replayssm%s%s: %s\n", cmd ? " " : "", cmd ? cmd : "", msg);
}

/* The row whose name argv[i] is ("--name" or "--name=..."), or NULL. */
static const cli_opt *find_opt(const cli_spec *s, const char *arg, const char **inline_value) {
  for (int k = 0; k < s->nopts; k++) {
    size_t n = strlen(s->opts[k].name);
    if (strncmp(arg, s->opts[k].name, n) != 0) continue;
    if (arg[n] == '\0') {
      *inline_value = NULL;
      return &s->opts[k];
    }
    if (arg[n] == '=' && s->opts[k].type != CLI_FLAG) {
      *inline_value = arg + n + 1;
      return &s->opts[k];
    }
  }
  return NULL;
}

/* An integer of row o: the row's syntax, then its range. */
static int parse_integer(const cli_opt *o, const char *v, int64_t *out) {
  if (o->flags & CLI_STRTOL) {
    long x;
    if (rssm_parse_long(v, (long)o->lo, (long)o->hi, &x) != 0) return -1;
    *out = (int64_t)x;
    return 0;
  }
  uint64_t u;
  if (rssm_parse_u64(v, &u) != 0 || (o->lo > 0 && u < (uint64_t)o->lo) || u > (uint64_t)o->hi)
    return -1;
  *out = (int64_t)u;
  return 0;
}

/* Stores value v of row o; returns 0, or 2 after the message. */
static int store(const cli_spec *s, const cli_opt *o, const char *v) {
  char expected[256] = "";
  int bad = 0;
  int64_t x = 0;
  switch (o->type) {
    case CLI_FLAG: *(int *)o->dest = 1; break;
    case CLI_STR: *(const char **)o->dest = v; break;
    case CLI_INT:
    case CLI_I64:
      bad = parse_integer(o, v, &x) != 0;
      if (!bad && o->type == CLI_INT) *(int *)o->dest = (int)x;
      if (!bad && o->type == CLI_I64) *(int64_t *)o->dest = x;
      if (bad)
        snprintf(expected, sizeof expected, "an integer in [%" PRId64 ", %" PRId64 "]", o->lo, o->hi);
      break;
    case CLI_U64:
      bad = rssm_parse_u64(v, (uint64_t *)o->dest) != 0;
      snprintf(expected, sizeof expected, "a decimal or 0x-hex integer in [0, 2^64)");
      break;
    case CLI_DOUBLE:
      bad = rssm_parse_double(v, o->dlo, o->dhi, (double *)o->dest) != 0;
      snprintf(expected, sizeof expected, "a number in [%g, %g]", o->dlo, o->dhi);
      break;
    case CLI_LIST:
      if (*o->count == o->max) {
        cli_error(s->cmd, "more than %d %s options", o->max, o->name);
        return 2;
      }
      ((const char **)o->dest)[(*o->count)++] = v;
      break;
    case CLI_CALL: bad = o->parse(v, o->dest, expected, sizeof expected) != 0; break;
  }
  if (!bad) return 0;
  cli_error(s->cmd, "%s '%s' (expected %s)", o->name, v, o->expect ? o->expect : expected);
  return 2;
}

static int add_operand(const cli_spec *s, const char *arg) {
  if (!s->operands) {
    cli_error(s->cmd, "unexpected argument '%s' (see replayssm %s --help)", arg, s->cmd);
    return 2;
  }
  if (*s->noperands == s->max_operands) {
    cli_error(s->cmd, "unexpected extra argument '%s' (at most %d; see replayssm %s --help)", arg,
              s->max_operands, s->cmd);
    return 2;
  }
  s->operands[(*s->noperands)++] = arg;
  return 0;
}

int cli_parse(const cli_spec *s, int argc, char **argv) {
  unsigned char seen[128] = {0}; /* [nopts]: given once already (CLI_ONCE) */
  int only_operands = 0;
  if (s->noperands) *s->noperands = 0;
  for (int i = 1; i < argc; i++) {
    const char *arg = argv[i];
    if (only_operands || arg[0] != '-' || arg[1] == '\0') {
      if (add_operand(s, arg) != 0) return 2;
      continue;
    }
    if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) return 1;
    if (s->dashdash && strcmp(arg, "--") == 0) {
      only_operands = 1;
      continue;
    }
    const char *v;
    const cli_opt *o = find_opt(s, arg, &v);
    if (!o) {
      cli_error(s->cmd, "unknown option '%s' (see replayssm %s --help)", arg, s->cmd);
      return 2;
    }
    const int k = (int)(o - s->opts);
    if ((o->flags & CLI_ONCE) && k < (int)sizeof seen && seen[k]) {
      cli_error(s->cmd, "%s given twice (see replayssm %s --help)", o->name, s->cmd);
      return 2;
    }
    if (k < (int)sizeof seen) seen[k] = 1;
    if (o->type != CLI_FLAG && !v) {
      if (i + 1 >= argc) {
        cli_error(s->cmd, "option '%s' needs a value (see replayssm %s --help)", arg, s->cmd);
        return 2;
      }
      v = argv[++i];
    }
    if (store(s, o, v) != 0) return 2;
  }
  return 0;
}

/* Text with '\n' continuation lines, each indented to column `indent`. */
static void print_wrapped(FILE *out, const char *text, int indent) {
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    int n = nl ? (int)(nl - p) : (int)strlen(p);
    fprintf(out, "%.*s", n, p);
    if (!nl) break;
    fprintf(out, "\n%*s", indent, "");
    p = nl + 1;
  }
}

void cli_help(const cli_spec *s, FILE *out) {
  fprintf(out, "usage: replayssm %s\n", s->usage);
  if (s->about) fprintf(out, "\n%s\n", s->about);
  if (s->nopts) fprintf(out, "\n");
  const int col = 22; /* where the help text starts */
  for (int k = 0; k < s->nopts; k++) {
    const cli_opt *o = &s->opts[k];
    char head[96];
    int n = snprintf(head, sizeof head, "  %s%s%s", o->name, o->meta ? " " : "",
                     o->meta ? o->meta : "");
    if (n + 1 > col) fprintf(out, "%s\n%*s", head, col, "");
    else fprintf(out, "%-*s", col, head);
    print_wrapped(out, o->help ? o->help : "", col);
    if (o->def) fprintf(out, " (default %s)", o->def);
    else if (o->type == CLI_FLAG) fputs(" (default off)", out);
    fputc('\n', out);
  }
  if (s->epilog) fprintf(out, "\n%s\n", s->epilog);
}

int cli_parse_or_help(const cli_spec *s, int argc, char **argv, int *done) {
  int rc = cli_parse(s, argc, argv);
  *done = rc != 0;
  if (rc == 1) {
    cli_help(s, stdout);
    return 0;
  }
  return rc;
}
