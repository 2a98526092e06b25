/* Helpers for the driver tests: a deterministic pseudo-text token stream, experiment files,
 * running `replayssm`, and comparing every dataset of two HDF5 files with the HDF5 C API. */
#ifndef RSSM_TESTS_DRIVER_TEST_UTIL_H
#define RSSM_TESTS_DRIVER_TEST_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* dir/name.tok.zst: n bytes of English-like text from a word-level Markov chain (byte tokens). */
void make_text_stream(const char *path, int64_t n);

/* Write a text file (asserts on failure). */
void put_text(const char *path, const char *text);

/* Run `replayssm ARGS...` (NULL-terminated, without the program) with stderr to err_path;
 * returns the exit status (or -1 when killed/failed). */
int rssm(const char *err_path, const char *const *args);

/* Compare every dataset (shape, type size and bytes) of a and b, both ways. Returns 0 when they
 * are equal, else 1 with a description in why. */
int h5_datasets_equal(const char *a, const char *b, char *why, size_t whylen);

/* Compare every attribute (of the root, groups and datasets: type size and bytes, variable-length
 * strings by their text) of a and b, both ways, except the writing process's
 * provenance (created, host, wall_seconds). Returns 0 when equal, else 1 with why. */
int h5_attributes_equal(const char *a, const char *b, char *why, size_t whylen);

#endif
