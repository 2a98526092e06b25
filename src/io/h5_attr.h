/* HDF5 attributes, the one piece every HDF5 writer of the project needs (run, ssm-sim, theory,
 * logits). Strings are UTF-8 variable-length (h5py reads them as str, not bytes). */
#ifndef RSSM_IO_H5_ATTR_H
#define RSSM_IO_H5_ATTR_H

#include <hdf5.h>

/* A scalar attribute of the given memory type (H5T_NATIVE_INT, _LLONG, _ULLONG, _DOUBLE, ...).
 * Returns 0 or -1. */
int h5_attr_num(hid_t obj, const char *name, hid_t type, const void *value);

/* A scalar UTF-8 variable-length string attribute; replaces one of the same name. Returns 0 or
 * -1. */
int h5_attr_str(hid_t obj, const char *name, const char *value);

/* Describes a dataset for its readers: attributes units (e.g. "nats/token"), dimensions (one
 * UTF-8 string per axis, e.g. {"sequence", "step"}) and description. Returns 0 or -1. */
int h5_describe(hid_t ds, const char *units, int rank, const char *const *dims,
                const char *description);

/* Reads a string attribute, fixed-length or variable-length, into a malloc'ed NUL-terminated
 * string (*out; free it). Returns 0, or -1 when it is missing or not a string. */
int h5_attr_read_str(hid_t obj, const char *name, char **out);

#endif
