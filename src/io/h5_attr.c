/* Scalar HDF5 attributes (h5_attr.h). */
#include "src/io/h5_attr.h"

#include <string.h>

int h5_attr_num(hid_t obj, const char *name, hid_t type, const void *value) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = a >= 0 ? H5Awrite(a, type, value) : -1;
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  return rc < 0 ? -1 : 0;
}

int h5_attr_str(hid_t obj, const char *name, const char *value) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, strlen(value) + 1);
  int rc = h5_attr_num(obj, name, type, value);
  H5Tclose(type);
  return rc;
}
