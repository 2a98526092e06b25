/* Helpers shared by the subcommands (see cli_util.h). */
#include "src/cli/cli_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#ifndef RSSM_VERSION
#error "RSSM_VERSION is defined by src/cli/CMakeLists.txt"
#endif

const char *rssm_version(void) { return RSSM_VERSION; }

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

int cli_parse_u64(const char *text, uint64_t *out) {
  if (!text || !*text) return -1;
  unsigned base = 10;
  const char *p = text;
  if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
    base = 16;
    p += 2;
    if (!*p) return -1;
  }
  uint64_t v = 0;
  for (; *p; p++) {
    unsigned d;
    if (*p >= '0' && *p <= '9') d = (unsigned)(*p - '0');
    else if (base == 16 && *p >= 'a' && *p <= 'f') d = (unsigned)(*p - 'a' + 10);
    else if (base == 16 && *p >= 'A' && *p <= 'F') d = (unsigned)(*p - 'A' + 10);
    else return -1;
    if (v > (UINT64_MAX - d) / base) return -1;
    v = v * base + d;
  }
  *out = v;
  return 0;
}

int cli_option_value(int argc, char **argv, int *i, const char *name, const char **value) {
  const char *a = argv[*i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return 0;
  if (a[n] == '=') {
    *value = a + n + 1;
    return 1;
  }
  if (a[n] != '\0') return 0;
  if (*i + 1 >= argc) return -1;
  *i += 1;
  *value = argv[*i];
  return 1;
}
