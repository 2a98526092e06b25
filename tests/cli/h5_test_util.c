/* HDF5 read-back for tests (h5_test_util.h). */
#include "tests/cli/h5_test_util.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

void h5t_read(hid_t loc, const char *name, hid_t type, void *buf, int64_t n) {
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  cr_assert_geq(ds, 0, "dataset %s missing", name);
  hid_t sp = H5Dget_space(ds);
  cr_assert_eq((int64_t)H5Sget_simple_extent_npoints(sp), n, "dataset %s: size", name);
  if (n > 0) cr_assert_geq(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf), 0, "%s", name);
  H5Sclose(sp);
  H5Dclose(ds);
}

void h5t_attr_str(hid_t loc, const char *name, char *out, size_t cap) {
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  cr_assert_geq(a, 0, "attribute %s missing", name);
  hid_t t = H5Aget_type(a);
  memset(out, 0, cap);
  if (H5Tis_variable_str(t) > 0) {
    char *s = NULL;
    cr_assert_geq(H5Aread(a, t, &s), 0);
    snprintf(out, cap, "%s", s);
    H5free_memory(s);
  } else {
    cr_assert_lt(H5Tget_size(t), cap, "attribute %s too long", name);
    cr_assert_geq(H5Aread(a, t, out), 0);
  }
  H5Tclose(t);
  H5Aclose(a);
}

int64_t h5t_attr_i64(hid_t loc, const char *name) {
  int64_t v = 0;
  hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
  cr_assert_geq(a, 0, "attribute %s missing", name);
  cr_assert_geq(H5Aread(a, H5T_NATIVE_INT64, &v), 0);
  H5Aclose(a);
  return v;
}
