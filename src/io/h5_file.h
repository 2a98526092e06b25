/* The start and the end that every whole-file HDF5 writer shares (ssm-sim, theory, logits): the
 * file is built at PATH.tmp.<pid> and only a complete, fsync'ed file is renamed over PATH
 * (atomic_file.h), so PATH is the old file or the whole new one. */
#ifndef RSSM_IO_H5_FILE_H
#define RSSM_IO_H5_FILE_H

#include <hdf5.h>
#include <stddef.h>

/* Room for PATH.tmp.<pid> of any path the writers accept. */
#define H5_FILE_TMP_MAX 4200

/* Turns HDF5's error stack printing off (our own one-line errors instead) and creates
 * tmp [H5_FILE_TMP_MAX] = PATH.tmp.<pid>. Returns the file, or -1 with one line in err. */
hid_t h5_file_create_tmp(const char *path, char *tmp, char *err, size_t errlen);

/* A contiguous dataset of rank 1 or 2 (d1 == 0 means rank 1) whose file and memory type are
 * `type`, written whole from data [d0][d1] (or [d0]); zero-length is allowed, data may then be
 * NULL. Returns 0 or -1. */
int h5_dataset_write(hid_t loc, const char *name, hid_t type, hsize_t d0, hsize_t d1,
                     const void *data);

/* Closes f and, when every write succeeded (rc == 0) and the close did too, fsyncs tmp and renames
 * it to path; otherwise removes tmp. Returns 0, or -1 with one line in err. */
int h5_file_commit(hid_t f, int rc, const char *tmp, const char *path, char *err, size_t errlen);

#endif
