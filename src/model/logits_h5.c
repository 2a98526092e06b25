/* HDF5 writer of the logits command (see logits_h5.h). */
#include "src/model/logits_h5.h"

#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#include "src/io/h5_attr.h"
#include "src/io/status.h"
#include "src/io/h5_file.h"

int logits_h5_write(const char *path, const float *logits, int64_t N, int64_t V,
                    const char *model_dir, const char *tokens_path, const char *config,
                    char *err, size_t errlen) {
  char tmp[H5_FILE_TMP_MAX];
  hid_t f = h5_file_create_tmp(path, tmp, err, errlen);
  if (f < 0) return RSSM_ERR_IO;
  int rc = 0;
  hsize_t dims[2] = {(hsize_t)N, (hsize_t)V};
  hid_t space = H5Screate_simple(2, dims, NULL);
  hid_t ds = H5Dcreate2(f, "logits", H5T_IEEE_F32LE, space, H5P_DEFAULT, H5P_DEFAULT,
                        H5P_DEFAULT);
  if (ds < 0) rc = -1;
  if (ds >= 0 && N > 0 && H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, logits) < 0)
    rc = -1;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
  rc |= h5_attr_str(f, "model", model_dir);
  rc |= h5_attr_str(f, "tokens", tokens_path);
  rc |= h5_attr_str(f, "config", config);
  return h5_file_commit(f, rc, tmp, path, err, errlen) == 0 ? RSSM_OK : RSSM_ERR_IO;
}
