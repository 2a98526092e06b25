/* HDF5 attributes (h5_attr.h). */
#include "src/io/h5_attr.h"

#include <stdlib.h>
#include <string.h>

int h5_attr_num(hid_t obj, const char *name, hid_t type, const void *value) {
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t a = H5Acreate2(obj, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
  herr_t rc = a >= 0 ? H5Awrite(a, type, value) : -1;
  if (a >= 0) H5Aclose(a);
  H5Sclose(space);
  return rc < 0 ? -1 : 0;
}

static hid_t utf8_vlen(void) {
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, H5T_CSET_UTF8);
  return type;
}

int h5_attr_str(hid_t obj, const char *name, const char *value) {
  if (H5Aexists(obj, name) > 0 && H5Adelete(obj, name) < 0) return -1;
  hid_t type = utf8_vlen();
  int rc = h5_attr_num(obj, name, type, &value);
  H5Tclose(type);
  return rc;
}

int h5_describe(hid_t ds, const char *units, int rank, const char *const *dims,
                const char *description) {
  int rc = h5_attr_str(ds, "units", units) | h5_attr_str(ds, "description", description);
  hsize_t n = (hsize_t)rank;
  hid_t space = H5Screate_simple(1, &n, NULL);
  hid_t type = utf8_vlen();
  hid_t a = H5Acreate2(ds, "dimensions", type, space, H5P_DEFAULT, H5P_DEFAULT);
  if (a < 0 || H5Awrite(a, type, dims) < 0) rc = -1;
  if (a >= 0) H5Aclose(a);
  H5Tclose(type);
  H5Sclose(space);
  return rc;
}

int h5_attr_read_str(hid_t obj, const char *name, char **out) {
  *out = NULL;
  if (H5Aexists(obj, name) <= 0) return -1;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  if (a < 0) return -1;
  hid_t type = H5Aget_type(a);
  hid_t space = H5Aget_space(a);
  int rc = -1;
  if (H5Tget_class(type) == H5T_STRING && H5Sget_simple_extent_npoints(space) == 1) {
    if (H5Tis_variable_str(type) > 0) {
      hid_t mem = utf8_vlen();
      H5Tset_cset(mem, H5Tget_cset(type));
      char *v = NULL;
      if (H5Aread(a, mem, &v) >= 0 && v) {
        *out = strdup(v);
        rc = *out ? 0 : -1;
        H5free_memory(v);
      }
      H5Tclose(mem);
    } else {
      size_t n = H5Tget_size(type);
      char *buf = malloc(n + 1);
      if (buf && H5Aread(a, type, buf) >= 0) {
        buf[n] = '\0';
        *out = buf;
        buf = NULL;
        rc = 0;
      }
      free(buf);
    }
  }
  H5Sclose(space);
  H5Tclose(type);
  H5Aclose(a);
  return rc;
}
