/* Create-at-a-temporary-name and close-and-commit of the HDF5 writers (h5_file.h). */
#include "src/io/h5_file.h"

#include <stdio.h>
#include <unistd.h>

#include "src/io/atomic_file.h"
#include "src/io/status.h"

hid_t h5_file_create_tmp(const char *path, char *tmp, char *err, size_t errlen) {
  int n = snprintf(tmp, H5_FILE_TMP_MAX, "%s.tmp.%ld", path, (long)getpid());
  if (n < 0 || n >= H5_FILE_TMP_MAX) {
    snprintf(err, errlen, "%s: path too long", path);
    return -1;
  }
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* our own one-line errors instead of HDF5's stack */
  hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (f < 0)
    snprintf(err, errlen, "%s: cannot create the output file (is the directory writable?)", tmp);
  return f;
}

int h5_dataset_write(hid_t loc, const char *name, hid_t type, hsize_t d0, hsize_t d1,
                     const void *data) {
  hsize_t dims[2] = {d0, d1};
  hid_t space = H5Screate_simple(d1 ? 2 : 1, dims, NULL);
  hid_t ds = H5Dcreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = ds >= 0 ? 0 : -1;
  if (ds >= 0 && d0 > 0 && data) rc = H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
  return rc < 0 ? -1 : 0;
}

int h5_file_commit(hid_t f, int rc, const char *tmp, const char *path, char *err, size_t errlen) {
  if (H5Fclose(f) < 0) rc = -1;
  if (rc != 0) {
    unlink(tmp);
    snprintf(err, errlen, "%s: writing the HDF5 file failed (disk full?)", path);
    return -1;
  }
  if (atomic_commit(tmp, path, err, errlen) != RSSM_OK) { /* fsync, then rename into place */
    unlink(tmp);
    return -1;
  }
  return 0;
}
