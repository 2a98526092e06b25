/* Whole-file atomic writes: the bytes go to PATH.tmp.<pid> in the same directory, are fsync'ed,
 * and the file is renamed over PATH, so PATH is either the old file or the complete new one, even
 * after a SIGKILL or a power cut. Used by the token streams and the run checkpoints. */
#ifndef RSSM_IO_ATOMIC_FILE_H
#define RSSM_IO_ATOMIC_FILE_H

#include <stddef.h>
#include <stdint.h>

/* Writes n parts (part i: data[i], len[i] bytes) one after another. Returns RSSM_OK or
 * RSSM_ERR_IO with one line in err naming the path. */
int atomic_write_parts(const char *path, int n, const void *const *data /* [n] */,
                       const size_t *len /* [n] */, char *err, size_t errlen);

/* fsync a finished file (by path) and rename it to its final name: the tail of an atomic write
 * whose content was produced by another library (HDF5). Returns RSSM_OK or RSSM_ERR_IO. */
int atomic_commit(const char *tmp_path, const char *path, char *err, size_t errlen);

/* Reads a whole regular file of at most max_bytes. *out is malloc'ed (plus one NUL byte).
 * Returns RSSM_OK, RSSM_ERR_INPUT (missing, not a regular file, too large) or RSSM_ERR_IO. */
int read_whole_file(const char *path, int64_t max_bytes, unsigned char **out, int64_t *len,
                    char *err, size_t errlen);

#endif
