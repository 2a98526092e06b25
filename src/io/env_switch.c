/* rssm_env_switch (env_switch.h). */
#include "src/io/env_switch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rssm_env_switch(const char *name, const char *const *values, int n, int unset) {
  const char *v = getenv(name);
  if (!v) return unset;
  for (int i = 0; i < n; i++)
    if (strcmp(v, values[i]) == 0) return i;
  /* the expected values as "a", "a or b", "a, b or c": one line, written at once */
  char expected[256] = "";
  size_t len = 0;
  for (int i = 0; i < n && len < sizeof expected; i++)
    len += (size_t)snprintf(expected + len, sizeof expected - len, "%s%s",
                            i == 0       ? ""
                            : i == n - 1 ? " or "
                                         : ", ",
                            values[i]);
  fprintf(stderr, "%s=%s: expected %s; ignored\n", name, v, expected);
  return unset;
}
