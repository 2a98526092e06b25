/* Small helpers shared by the subcommands: strict argument parsing and one-line error messages. */
#ifndef RSSM_CLI_UTIL_H
#define RSSM_CLI_UTIL_H

#include <stdint.h>

/* The tool's version, "MAJOR.MINOR.PATCH" from the CMake project. */
const char *rssm_version(void);

/* Print "replayssm CMD: MESSAGE\n" to stderr: every failure is exactly one line. */
void cli_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parse a uint64 written in decimal or as 0x-hex, with nothing else around it (no sign, no
 * spaces, no suffix). Returns 0, or -1 when the text is not such a number or overflows. */
int cli_parse_u64(const char *text, uint64_t *out);

/* Option matching for "--name VALUE" and "--name=VALUE". When argv[*i] is the option `name`,
 * returns 1 and sets *value (advancing *i past a separate value), or returns -1 when the value is
 * missing; returns 0 when argv[*i] is another argument. */
int cli_option_value(int argc, char **argv, int *i, const char *name, const char **value);

#endif
