/* A library function's one-line error message, written into its caller's buffer (the project's
 * convention, docs/cli.md: library code returns a status and a message, never prints or exits;
 * the command line prints the message and exits with the status). */
#ifndef RSSM_IO_ERRBUF_H
#define RSSM_IO_ERRBUF_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* vsnprintf the message into err [errlen] when err is non-NULL and errlen > 0 (truncated to fit,
 * line breaks turned into spaces: a message is one line); returns -1, so that a failing function
 * can `return rssm_fail(err, errlen, "...", ...);`. */
int rssm_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
