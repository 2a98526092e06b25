/* Scalar HDF5 attributes, the one piece every HDF5 writer of the project needs (run, ssm-sim,
 * theory, logits). */
#ifndef RSSM_IO_H5_ATTR_H
#define RSSM_IO_H5_ATTR_H

#include <hdf5.h>

/* A scalar attribute of the given memory type (H5T_NATIVE_INT, _LLONG, _ULLONG, _DOUBLE, ...).
 * Returns 0 or -1. */
int h5_attr_num(hid_t obj, const char *name, hid_t type, const void *value);

/* A scalar fixed-length string attribute holding value (NUL included). Returns 0 or -1. */
int h5_attr_str(hid_t obj, const char *name, const char *value);

#endif
