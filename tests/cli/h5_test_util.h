/* Reading back what the commands write to HDF5, for tests that check the content of a file
 * (datasets whole, attributes as strings or integers). Each asserts (Criterion) on a missing
 * object or a size that differs from the one expected. */
#ifndef RSSM_TESTS_CLI_H5_TEST_UTIL_H
#define RSSM_TESTS_CLI_H5_TEST_UTIL_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

/* Reads dataset loc/name, which must hold n elements, converted to type, into buf [n]. */
void h5t_read(hid_t loc, const char *name, hid_t type, void *buf, int64_t n);
/* A string attribute (fixed or variable length) into out [cap], NUL-terminated. */
void h5t_attr_str(hid_t loc, const char *name, char *out, size_t cap);
/* An integer attribute as int64. */
int64_t h5t_attr_i64(hid_t loc, const char *name);

#endif
