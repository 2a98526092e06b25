/* LD_PRELOAD shim for the crash-safety tests: counts the process's writes (pwrite/pwrite64/
 * write) to files whose name contains ".part" (the run's HDF5 file and its ".part.new" while it
 * is created), and SIGKILLs the process at the Nth one.
 *   RSSM_KILL_AT_WRITE=N   die just before the Nth such write
 *   RSSM_KILL_HALF=1       ... after writing the first half of it (a torn write)
 *   RSSM_KILL_COUNT=FILE   at a normal exit, write the number of such writes to FILE
 *   RSSM_KILL_SIGNAL=S     at the Nth write raise signal S instead (SIGTERM, SIGINT: the run's
 *                          handler notes it and the write goes ahead), so a signal arrives at a
 *                          chosen point of a block without any timing
 * Built without the sanitizers (it only forwards calls). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

static long count, at = -1;
static int half, sig = SIGKILL;

__attribute__((constructor)) static void init(void) {
  const char *e = getenv("RSSM_KILL_AT_WRITE");
  if (e) at = atol(e);
  half = getenv("RSSM_KILL_HALF") != NULL;
  const char *s = getenv("RSSM_KILL_SIGNAL");
  if (s) sig = atoi(s);
}

__attribute__((destructor)) static void fini(void) {
  const char *f = getenv("RSSM_KILL_COUNT");
  if (!f) return;
  FILE *o = fopen(f, "w");
  if (o) {
    fprintf(o, "%ld\n", count);
    fclose(o);
  }
}

static int is_part(int fd) {
  char link[64], p[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, p, sizeof p - 1);
  if (n <= 0) return 0;
  p[n] = '\0';
  return strstr(p, ".part") != NULL;
}

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef ssize_t (*write_fn)(int, const void *, size_t);

static void maybe_die(int fd, const void *buf, size_t n, off_t off, int positioned) {
  if (!is_part(fd) || ++count != at) return;
  if (sig != SIGKILL) {
    raise(sig);
    return;
  }
  if (half && n > 1) {
    if (positioned) {
      pwrite_fn real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
      real(fd, buf, n / 2, off);
    } else {
      write_fn real = (write_fn)dlsym(RTLD_NEXT, "write");
      real(fd, buf, n / 2);
    }
  }
  raise(SIGKILL);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off) {
  static pwrite_fn real;
  if (!real) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite64");
  maybe_die(fd, buf, n, off, 1);
  return real(fd, buf, n, off);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off) {
  static pwrite_fn real;
  if (!real) real = (pwrite_fn)dlsym(RTLD_NEXT, "pwrite");
  maybe_die(fd, buf, n, off, 1);
  return real(fd, buf, n, off);
}

ssize_t write(int fd, const void *buf, size_t n) {
  static write_fn real;
  if (!real) real = (write_fn)dlsym(RTLD_NEXT, "write");
  maybe_die(fd, buf, n, 0, 0);
  return real(fd, buf, n);
}
