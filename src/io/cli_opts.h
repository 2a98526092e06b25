/* One option table per command: the same rows parse argv and print --help (docs/cli.md). In the
 * bottom layer (like the other text formats of src/io) so that the commands of src/cli and the
 * benchmarks' entry points (src/bench_*) describe their options the same way.
 *
 * Every command describes its options as an array of cli_opt rows (name, type, where the value
 * goes, range, default, help text) and calls cli_parse once; --help/-h is answered from the same
 * rows by cli_help. Accepted syntax, for every command alike: "--name VALUE" and "--name=VALUE";
 * a flag takes no value; arguments not starting with '-' (and "-" itself) are operands; after
 * "--" everything is an operand when the command allows it. A bad argument is one line on stderr
 * ("replayssm CMD: ...") and the exit status 2. */
#ifndef RSSM_IO_CLI_OPTS_H
#define RSSM_IO_CLI_OPTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
  CLI_FLAG,   /* no value; *(int *)dest = 1 */
  CLI_STR,    /* *(const char **)dest = the value (argv's own text) */
  CLI_INT,    /* an integer in [lo, hi] into *(int *)dest */
  CLI_I64,    /* an integer in [lo, hi] into *(int64_t *)dest */
  CLI_U64,    /* any uint64, decimal or 0x-hex, into *(uint64_t *)dest (seeds) */
  CLI_DOUBLE, /* a number in [dlo, dhi] into *(double *)dest */
  CLI_LIST,   /* repeatable: appended to (const char **)dest [max], the count in *count */
  CLI_CALL    /* parse(value, dest, expected, len): 0, or -1 with what was expected */
} cli_opt_type;

enum {
  CLI_ONCE = 1,   /* giving the option twice is an error (otherwise the last one counts) */
  CLI_STRTOL = 2  /* CLI_INT/CLI_I64: decimal as strtol reads it (a sign, leading blanks), not
                   * the default unsigned decimal-or-0x-hex */
};

typedef struct {
  const char *name;   /* "--steps" */
  cli_opt_type type;
  void *dest;         /* see cli_opt_type */
  const char *meta;   /* the value's name in --help ("N"); NULL for a flag */
  const char *help;   /* --help text; '\n' starts a continuation line */
  const char *def;    /* the default, as --help shows it; NULL: none shown */
  int64_t lo, hi;     /* CLI_INT / CLI_I64 range */
  double dlo, dhi;    /* CLI_DOUBLE range */
  const char *expect; /* what a bad value is told it should be; NULL: derived from the range */
  int flags;          /* CLI_ONCE | CLI_STRTOL */
  int max;            /* CLI_LIST capacity */
  int *count;         /* CLI_LIST: values so far */
  int (*parse)(const char *value, void *dest, char *expected, size_t len); /* CLI_CALL */
} cli_opt;

/* What a command is and what it accepts besides its options. */
typedef struct {
  const char *cmd;      /* "run", "bench e2e": the name in messages */
  const char *usage;    /* the synopsis after "usage: " (may hold '\n' and indentation) */
  const char *about;    /* paragraph(s) after the synopsis, or NULL */
  const char *epilog;   /* text after the option list, or NULL */
  const cli_opt *opts;  /* [nopts] */
  int nopts;
  const char **operands; /* [max_operands] receives the operands in order; NULL: none allowed */
  int max_operands;
  int *noperands;
  int dashdash;          /* "--" ends the options */
  const char *too_many;  /* message for one operand too many, "%s" the operand; NULL: generic */
} cli_spec;

/* Parses argv[1..argc-1] (argv[0] is the command's name) into the table's destinations.
 * Returns 0 (parsed), 1 (--help or -h seen: the caller prints cli_help and exits 0), or 2 after
 * printing one line (unknown option, missing or bad value, a CLI_ONCE option twice, too many
 * operands). Destinations of options not given are left as the caller set them (its defaults). */
int cli_parse(const cli_spec *s, int argc, char **argv);

/* --help from the table: "usage: ...", the about text, one entry per option (meta, help and
 * "(default D)"), the epilog. */
void cli_help(const cli_spec *s, FILE *out);

/* cli_parse then, for 1, cli_help on stdout: returns 0 to go on, or the exit status (0 after
 * --help, 2 after a bad argument) with *done set. */
int cli_parse_or_help(const cli_spec *s, int argc, char **argv, int *done);

/* Print "replayssm CMD: MESSAGE\n" to stderr: every failure is exactly one line. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
