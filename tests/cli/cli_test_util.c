/* Helpers for the command-line tests (see cli_test_util.h). */
#include "tests/cli/cli_test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

const char *tdir_make(void) {
  static char dir[TPATH_MAX];
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  snprintf(dir, sizeof dir, "%s/rssm-cli-test-XXXXXX", base);
  return mkdtemp(dir);
}

void tdir_remove(const char *dir) {
  if (!dir) return;
  DIR *d = opendir(dir);
  if (d) {
    struct dirent *e;
    char p[TPATH_MAX];
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      unlink(tpath(p, dir, e->d_name));
    }
    closedir(d);
  }
  rmdir(dir);
}

char *tpath(char *buf, const char *dir, const char *name) {
  snprintf(buf, TPATH_MAX, "%s/%s", dir, name);
  return buf;
}

char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap + 1);
  size_t got;
  while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
    n += got;
    if (n == cap) {
      char *nb = realloc(buf, 2 * cap + 1);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
  }
  fclose(f);
  if (!buf) return NULL;
  buf[n] = '\0';
  if (len) *len = n;
  return buf;
}

int write_bytes(const char *path, const void *buf, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  size_t w = len ? fwrite(buf, 1, len, f) : 0;
  int rc = fclose(f);
  return (w == len && rc == 0) ? 0 : -1;
}

int file_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int count_entries_containing(const char *dir, const char *needle) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, needle)) n++;
  closedir(d);
  return n;
}

int write_npy_raw(const char *path, int major, const char *dict, const void *data,
                  size_t data_len) {
  size_t dlen = strlen(dict);
  size_t pre = major == 1 ? 10 : 12;
  size_t total = (pre + dlen + 1 + 63) / 64 * 64;
  size_t hlen = total - pre;
  char *buf = malloc(total + data_len);
  if (!buf) return -1;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (char)major;
  buf[7] = 0;
  if (major == 1) {
    buf[8] = (char)(hlen & 0xff);
    buf[9] = (char)(hlen >> 8);
  } else {
    for (int i = 0; i < 4; i++) buf[8 + i] = (char)((hlen >> (8 * i)) & 0xff);
  }
  memcpy(buf + pre, dict, dlen);
  memset(buf + pre + dlen, ' ', total - pre - dlen - 1);
  buf[total - 1] = '\n';
  if (data_len) memcpy(buf + total, data, data_len);
  int rc = write_bytes(path, buf, total + data_len);
  free(buf);
  return rc;
}

uint64_t rng_next(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float rng_spread(uint64_t *state, int emin, int emax) {
  uint64_t r = rng_next(state);
  float mant = 1.0f + (float)(r >> 40) / (float)(1u << 24); /* [1, 2), 24 random bits */
  int e = emin + (int)((r >> 8) % (uint64_t)(emax - emin + 1));
  float v = ldexpf(mant, e);
  return (r & 1) ? -v : v;
}

int run_prog(char *const argv[], const char *out_path, const char *err_path) {
  posix_spawn_file_actions_t fa;
  if (posix_spawn_file_actions_init(&fa) != 0) return -1;
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path ? out_path : "/dev/null",
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path ? err_path : "/dev/null",
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return status;
}

int is_one_line(const char *s) {
  size_t n = strlen(s);
  if (n < 2 || s[n - 1] != '\n') return 0;
  return strchr(s, '\n') == s + n - 1;
}

/* run_prog with stdout and stderr in dir/stdout.txt and dir/stderr.txt, read back; the raw wait
 * status */
static int run_spawn_captured(char *const argv[], const char *dir, char **err_text,
                              char **out_text) {
  char e[TPATH_MAX], o[TPATH_MAX];
  int st = run_prog(argv, tpath(o, dir, "stdout.txt"), tpath(e, dir, "stderr.txt"));
  *err_text = slurp(e, NULL);
  if (out_text) *out_text = slurp(o, NULL);
  return st;
}

int run_captured(const char *bin, const char *dir, char **err_text, char **out_text,
                 const char *arg0, ...) {
  char *argv[32];
  int n = 0;
  argv[n++] = (char *)bin;
  va_list ap;
  va_start(ap, arg0);
  for (const char *a = arg0; a && n < 31; a = va_arg(ap, const char *)) argv[n++] = (char *)a;
  va_end(ap);
  argv[n] = NULL;
  return run_spawn_captured(argv, dir, err_text, out_text);
}

int run_argv_captured(char *const argv[], const char *dir, char **err_text, char **out_text) {
  const int st = run_spawn_captured(argv, dir, err_text, out_text);
  return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
