/* HDF5 writer of `replayssm theory` (layout in theory_h5.h). */
#include "src/theory/theory_h5.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/h5_attr.h"
#include "src/io/h5_file.h"
#include "src/io/version.h"

/* A rank-1 dataset [n] of `type`. */
static int dataset(hid_t loc, const char *name, hid_t type, size_t n, const void *data) {
  return h5_dataset_write(loc, name, type, (hsize_t)n, 0, data);
}

/* The text of column `col` of row r (the string columns). */
static const char *text_of(const th_row *r, int col, char *buf, size_t len) {
  switch (col) {
    case 0: {
      qformat f = r->fmt;
      f.rounding = QR_RTN; /* the format without its rounding, which has its own column */
      qformat_to_string(&f, buf, len);
      return buf;
    }
    case 1: return r->fmt.rounding == QR_SR ? "sr" : "rtn";
    case 2: return th_regime_name(r->regime);
    case 3: return th_mode_name(r->mode);
    case 4: return th_assumption_name(r->assumption);
    default: return r->why;
  }
}

static int string_column(hid_t g, const char *name, const th_result *res, int col) {
  char buf[64];
  size_t w = 1;
  for (size_t i = 0; i < res->n; i++) {
    size_t l = strlen(text_of(&res->rows[i], col, buf, sizeof buf)) + 1;
    if (l > w) w = l;
  }
  char *data = calloc(res->n ? res->n : 1, w);
  if (!data) return -1;
  for (size_t i = 0; i < res->n; i++)
    memcpy(data + i * w, text_of(&res->rows[i], col, buf, sizeof buf),
           strlen(text_of(&res->rows[i], col, buf, sizeof buf)));
  hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, w);
  H5Tset_strpad(type, H5T_STR_NULLPAD);
  int rc = dataset(g, name, type, res->n, data);
  H5Tclose(type);
  free(data);
  return rc;
}

/* The float64 columns, in the order of num_names. */
static double num_of(const th_row *r, int col) {
  const double v[] = {r->alpha,     r->a_eff,    r->b,        r->s2,       r->pred_mean,
                      r->pred_var,  r->lim_mean, r->lim_var,  r->meas_mean, r->meas_var,
                      r->se_mean,   r->se_var,   r->rel_mean, r->rel_var,  r->elem_s2_cv,
                      r->corr,      r->corr_se,  r->kappa,    r->kappa_se};
  return v[col];
}
static const char *const num_names[] = {"alpha", "a_eff", "b", "s2", "pred_mean", "pred_var",
                                        "lim_mean", "lim_var", "meas_mean", "meas_var", "se_mean",
                                        "se_var", "rel_mean", "rel_var", "elem_s2_cv",
                                        "corr", "corr_se", "kappa", "kappa_se"};

static int write_rows(hid_t f, const th_result *res) {
  hid_t g = H5Gcreate2(f, "rows", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) return -1;
  static const char *const str_names[] = {"format", "rounding", "regime", "mode", "assumption",
                                          "why"};
  int rc = 0;
  for (int c = 0; c < 6; c++) rc |= string_column(g, str_names[c], res, c);
  size_t n = res->n ? res->n : 1;
  double *col = malloc(n * sizeof *col);
  int64_t *ev = malloc(n * sizeof *ev);
  uint8_t *flag = malloc(n * sizeof *flag);
  if (!col || !ev || !flag) rc = -1;
  for (int c = 0; rc == 0 && c < (int)(sizeof num_names / sizeof *num_names); c++) {
    for (size_t i = 0; i < res->n; i++) col[i] = num_of(&res->rows[i], c);
    rc |= dataset(g, num_names[c], H5T_NATIVE_DOUBLE, res->n, col);
  }
  if (rc == 0) {
    for (size_t i = 0; i < res->n; i++) ev[i] = res->rows[i].events;
    rc |= dataset(g, "events", H5T_NATIVE_INT64, res->n, ev);
    for (size_t i = 0; i < res->n; i++) flag[i] = (uint8_t)res->rows[i].stationary;
    rc |= dataset(g, "stationary", H5T_NATIVE_UINT8, res->n, flag);
    for (size_t i = 0; i < res->n; i++) flag[i] = (uint8_t)res->rows[i].agrees;
    rc |= dataset(g, "agrees", H5T_NATIVE_UINT8, res->n, flag);
    for (size_t i = 0; i < res->n; i++) flag[i] = (uint8_t)res->rows[i].resolved;
    rc |= dataset(g, "resolved", H5T_NATIVE_UINT8, res->n, flag);
  }
  free(col);
  free(ev);
  free(flag);
  H5Gclose(g);
  return rc;
}

int th_h5_write(const char *path, const th_params *p, const th_result *res, char *err,
                size_t errlen) {
  char tmp[H5_FILE_TMP_MAX];
  hid_t f = h5_file_create_tmp(path, tmp, err, errlen);
  if (f < 0) return -1;
  unsigned long long seed = (unsigned long long)p->seed;
  long long steps = (long long)res->steps;
  int rc = 0;
  rc |= h5_attr_str(f, "tool", "replayssm theory");
  rc |= h5_attr_str(f, "version", rssm_version());
  rc |= h5_attr_num(f, "seed", H5T_NATIVE_ULLONG, &seed);
  rc |= h5_attr_num(f, "steps", H5T_NATIVE_LLONG, &steps);
  rc |= h5_attr_num(f, "nmat", H5T_NATIVE_INT, &p->nmat);
  rc |= h5_attr_num(f, "dv", H5T_NATIVE_INT, &p->dv);
  rc |= h5_attr_num(f, "dk", H5T_NATIVE_INT, &p->dk);
  rc |= h5_attr_num(f, "L", H5T_NATIVE_INT, &p->L);
  rc |= h5_attr_num(f, "rho", H5T_NATIVE_DOUBLE, &p->rho);
  rc |= h5_attr_num(f, "horizons", H5T_NATIVE_DOUBLE, &p->horizons);
  rc |= h5_attr_num(f, "tol", H5T_NATIVE_DOUBLE, &p->tol);
  rc |= dataset(f, "alpha", H5T_NATIVE_DOUBLE, (size_t)p->nalpha, p->alpha);
  if (rc == 0) rc |= write_rows(f, res);
  return h5_file_commit(f, rc, tmp, path, err, errlen);
}
