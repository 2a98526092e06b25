/* rssm_fail (errbuf.h). */
#include "src/io/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

int rssm_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen > 0) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    /* one line, always: names and values quoted from files may hold line breaks */
    for (char *p = err; *p; p++)
      if (*p == '\n' || *p == '\r') *p = ' ';
  }
  return -1;
}
