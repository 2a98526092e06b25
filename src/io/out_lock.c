/* out_lock_take / out_lock_release (out_lock.h). */
#include "src/io/out_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/io/status.h"

static struct flock whole_file(short type) {
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = type;
  fl.l_whence = SEEK_SET; /* l_start = l_len = 0: the whole file */
  return fl;
}

int out_lock_take(const char *out, out_lock *l, char *err, size_t errlen) {
  l->fd = -1;
  snprintf(l->path, sizeof l->path, "%s.lock", out);
  for (int attempt = 0; attempt < 100; attempt++) {
    int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      snprintf(err, errlen, "%s: cannot create the output's lock file (%s)", l->path,
               strerror(errno));
      return RSSM_ERR_IO;
    }
    struct flock fl = whole_file(F_WRLCK);
    if (fcntl(fd, F_SETLK, &fl) != 0) {
      int e = errno;
      struct flock who = whole_file(F_WRLCK);
      long pid = fcntl(fd, F_GETLK, &who) == 0 && who.l_type != F_UNLCK ? (long)who.l_pid : -1;
      close(fd);
      if (e != EAGAIN && e != EACCES) {
        snprintf(err, errlen, "%s: cannot lock the output (%s)", l->path, strerror(e));
        return RSSM_ERR_IO;
      }
      if (pid < 0) continue; /* released between the two calls: try again */
      snprintf(err, errlen, "%s: another replayssm (pid %ld) is writing this output (lock %s); "
               "wait for it to end or stop it", out, pid, l->path);
      return RSSM_ERR_INPUT;
    }
    /* the holder we waited on may have unlinked the file we opened: lock the one at the path */
    struct stat a, b;
    if (fstat(fd, &a) != 0 || stat(l->path, &b) != 0 || a.st_ino != b.st_ino ||
        a.st_dev != b.st_dev) {
      close(fd);
      continue;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || write(fd, pid, (size_t)n) != n) {
      /* the pid is for people; the lock itself holds */
    }
    l->fd = fd;
    return RSSM_OK;
  }
  snprintf(err, errlen, "%s: the lock file keeps changing (another writer starting and ending)",
           l->path);
  return RSSM_ERR_IO;
}

void out_lock_release(out_lock *l) {
  if (l->fd < 0) return;
  unlink(l->path);
  close(l->fd);
  l->fd = -1;
}
