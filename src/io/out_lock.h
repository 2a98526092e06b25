/* Advisory locks on outputs (docs/reliability.md, "Output locks"): one writer per output name.
 *
 * The lock is an fcntl write lock on OUT.lock, a small file beside the output holding the
 * holder's pid; it covers OUT, OUT.part and OUT.ckpt, so it is taken before any of them is
 * touched. The kernel drops it when the holder dies (also by SIGKILL), so a lock is never stale;
 * the release unlinks OUT.lock while still holding it, and a taker checks that the file it locked
 * is still the one at the path (else it retries), so an unlink never lets two writers in. */
#ifndef RSSM_IO_OUT_LOCK_H
#define RSSM_IO_OUT_LOCK_H

#include <stddef.h>

typedef struct {
  int fd;          /* -1: not held */
  char path[4200]; /* OUT.lock */
} out_lock;

/* Takes the lock of output path out. Returns RSSM_OK; RSSM_ERR_INPUT when another process holds
 * it (err: one line naming the output and the holder's pid); RSSM_ERR_IO when OUT.lock cannot be
 * created (err names it). */
int out_lock_take(const char *out, out_lock *l, char *err, size_t errlen);
/* Releases (and removes) the lock; a no-op for a lock not held. */
void out_lock_release(out_lock *l);

#endif
