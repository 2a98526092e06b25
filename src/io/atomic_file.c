/* Atomic whole-file writes and whole-file reads (atomic_file.h). */
#include "src/io/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/io/status.h"

static int write_all(int fd, const unsigned char *p, size_t n) {
  while (n > 0) {
    ssize_t k = write(fd, p, n);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

int atomic_write_parts(const char *path, int n, const void *const *data, const size_t *len,
                       char *err, size_t errlen) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
    snprintf(err, errlen, "%s: path too long", path);
    return RSSM_ERR_IO;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) {
    snprintf(err, errlen, "%s: cannot create (%s; is the directory writable?)", tmp,
             strerror(errno));
    return RSSM_ERR_IO;
  }
  for (int i = 0; i < n; i++) {
    if (write_all(fd, data[i], len[i]) != 0) {
      snprintf(err, errlen, "%s: write failed (%s)", tmp, strerror(errno));
      close(fd);
      unlink(tmp);
      return RSSM_ERR_IO;
    }
  }
  /* the data must be on disk before the name points at it */
  if (fsync(fd) != 0) {
    snprintf(err, errlen, "%s: fsync failed (%s)", tmp, strerror(errno));
    close(fd);
    unlink(tmp);
    return RSSM_ERR_IO;
  }
  close(fd);
  if (rename(tmp, path) != 0) {
    snprintf(err, errlen, "%s: cannot rename into place (%s)", path, strerror(errno));
    unlink(tmp);
    return RSSM_ERR_IO;
  }
  return RSSM_OK;
}

int atomic_commit(const char *tmp_path, const char *path, char *err, size_t errlen) {
  int fd = open(tmp_path, O_RDONLY);
  if (fd < 0 || fsync(fd) != 0) {
    if (fd >= 0) close(fd);
    snprintf(err, errlen, "%s: cannot sync the finished file to disk", tmp_path);
    return RSSM_ERR_IO;
  }
  close(fd);
  if (rename(tmp_path, path) != 0) {
    snprintf(err, errlen, "%s: cannot rename the finished file into place (%s)", path,
             strerror(errno));
    return RSSM_ERR_IO;
  }
  return RSSM_OK;
}

int read_whole_file(const char *path, int64_t max_bytes, unsigned char **out, int64_t *len,
                    char *err, size_t errlen) {
  *out = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: cannot open (%s)", path, strerror(errno));
    return RSSM_ERR_INPUT;
  }
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
    fclose(f);
    snprintf(err, errlen, "%s: not a regular file", path);
    return RSSM_ERR_INPUT;
  }
  int64_t size = (int64_t)sb.st_size;
  if (size < 0 || size > max_bytes || (uint64_t)size >= (uint64_t)SIZE_MAX) {
    fclose(f);
    snprintf(err, errlen, "%s: %lld bytes is too large (at most %lld)", path, (long long)size,
             (long long)max_bytes);
    return RSSM_ERR_INPUT;
  }
  unsigned char *buf = malloc((size_t)size + 1);
  if (!buf) {
    fclose(f);
    snprintf(err, errlen, "%s: out of memory for %lld bytes", path, (long long)size);
    return RSSM_ERR_IO;
  }
  if (size > 0 && fread(buf, 1, (size_t)size, f) != (size_t)size) {
    free(buf);
    fclose(f);
    snprintf(err, errlen, "%s: read failed", path);
    return RSSM_ERR_IO;
  }
  fclose(f);
  buf[size] = 0;
  *out = buf;
  *len = size;
  return RSSM_OK;
}
