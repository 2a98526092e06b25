/* Helpers for the command-line tests: temporary directories, files, random data, and running the
 * real `replayssm` executable with its stderr captured. */
#ifndef RSSM_TESTS_CLI_TEST_UTIL_H
#define RSSM_TESTS_CLI_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define TPATH_MAX 4096

/* mkdtemp under $TMPDIR (or /tmp); returns a static path, or NULL. */
const char *tdir_make(void);
/* Removes every file in the (flat) directory, then the directory. */
void tdir_remove(const char *dir);
/* buf = dir/name; returns buf. */
char *tpath(char *buf, const char *dir, const char *name);

/* Whole-file helpers; slurp returns malloc'ed bytes (NUL-terminated) or NULL. */
char *slurp(const char *path, size_t *len);
int write_bytes(const char *path, const void *buf, size_t len);
int file_exists(const char *path);
/* Number of directory entries whose name contains `needle`. */
int count_entries_containing(const char *dir, const char *needle);

/* A self-contained .npy v1.0 file: preamble, the given dict text padded to 64 bytes, then data. */
int write_npy_raw(const char *path, int major, const char *dict, const void *data,
                  size_t data_len);

/* splitmix64 stream */
uint64_t rng_next(uint64_t *state);
/* Nonzero float sign * [1, 2) * 2^e with e uniform in [emin, emax]. */
float rng_spread(uint64_t *state, int emin, int emax);

/* Runs argv (argv[0] is the program path; NULL-terminated) with stdout to out_path and stderr to
 * err_path (either may be NULL: /dev/null). Returns the raw wait status, or -1 if the spawn
 * failed. */
int run_prog(char *const argv[], const char *out_path, const char *err_path);

/* Runs `bin ARGS...` (the arguments NULL-terminated) with stdout and stderr captured in
 * dir/stdout.txt and dir/stderr.txt; *err_text, and *out_text when out_text is non-NULL, receive
 * their malloc'ed contents (NULL if unreadable). Returns the raw wait status, or -1 if the spawn
 * failed. */
int run_captured(const char *bin, const char *dir, char **err_text, char **out_text,
                 const char *arg0, ...);
/* The same for a NULL-terminated argv (argv[0] the program), returning the exit status (-1 when
 * the program did not exit normally or could not be spawned). */
int run_argv_captured(char *const argv[], const char *dir, char **err_text, char **out_text);

/* Whether s is exactly one non-empty line ending in '\n'. */
int is_one_line(const char *s);

#endif
