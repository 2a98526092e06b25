/* HDF5 writer for ssm-sim results (layout in sim_h5.h). */
#include "src/sim/sim_h5.h"

#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#include "src/io/h5_attr.h"
#include "src/io/h5_file.h"
#include "src/io/version.h"

void sim_h5_group_name(const char *label, char *out) {
  size_t i = 0;
  for (; label[i]; i++) out[i] = label[i] == '/' ? '_' : label[i];
  out[i] = '\0';
}

static int write_config(hid_t configs, const ssm_config *c, const ssm_sim_result *r) {
  char gname[SSM_NAME_MAX], spec[256];
  sim_h5_group_name(c->name, gname);
  ssm_config_to_string(c, spec, sizeof spec);
  hid_t g = H5Gcreate2(configs, gname, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) return -1;
  int rc = 0;
  rc |= h5_attr_str(g, "spec", spec);
  rc |= h5_attr_str(g, "name", c->name);
  rc |= h5_dataset_write(g, "out_err", H5T_NATIVE_FLOAT, (hsize_t)r->steps, 0, r->out_err);
  rc |= h5_dataset_write(g, "out_err_head", H5T_NATIVE_FLOAT, (hsize_t)r->steps, (hsize_t)r->H, r->out_err_head);
  rc |= h5_dataset_write(g, "store_step", H5T_NATIVE_INT64, (hsize_t)r->nstore, 0, r->store_step);
  rc |= h5_dataset_write(g, "ckpt_err", H5T_NATIVE_FLOAT, (hsize_t)r->nstore, 0, r->ckpt_err);
  rc |= h5_dataset_write(g, "ckpt_err_head", H5T_NATIVE_FLOAT, (hsize_t)r->nstore, (hsize_t)r->H, r->ckpt_err_head);
  if (c->split) rc |= h5_dataset_write(g, "ckpt_err_lp", H5T_NATIVE_FLOAT, (hsize_t)r->nstore, 0, r->ckpt_err_lp);
  int64_t fn = r->first_nonfinite;
  hid_t space = H5Screate(H5S_SCALAR);
  hid_t ds = H5Dcreate2(g, "first_nonfinite", H5T_NATIVE_INT64, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (ds < 0 || H5Dwrite(ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &fn) < 0) rc = -1;
  if (ds >= 0) H5Dclose(ds);
  H5Sclose(space);
  H5Gclose(g);
  return rc;
}

int sim_h5_write(const char *path, const ssm_sim_params *p, int nconfig, const ssm_config *configs,
                 const ssm_sim_result *results, char *err, size_t errlen) {
  char tmp[H5_FILE_TMP_MAX];
  hid_t f = h5_file_create_tmp(path, tmp, err, errlen);
  if (f < 0) return -1;
  const ssm_dims *d = &p->in.dims;
  int rc = 0;
  long long steps = (long long)p->steps;
  unsigned long long seed = (unsigned long long)p->in.seed;
  rc |= h5_attr_str(f, "tool", "replayssm ssm-sim");
  rc |= h5_attr_str(f, "version", rssm_version());
  rc |= h5_attr_str(f, "kind", d->kind == SSM_GDN ? "gdn" : "mamba2");
  rc |= h5_attr_str(f, "reference", "conventional state=fp32");
  rc |= h5_attr_num(f, "H", H5T_NATIVE_INT, &d->H);
  rc |= h5_attr_num(f, "G", H5T_NATIVE_INT, &d->G);
  rc |= h5_attr_num(f, "dv", H5T_NATIVE_INT, &d->dv);
  rc |= h5_attr_num(f, "dk", H5T_NATIVE_INT, &d->dk);
  rc |= h5_attr_num(f, "steps", H5T_NATIVE_LLONG, &steps);
  rc |= h5_attr_num(f, "seed", H5T_NATIVE_ULLONG, &seed);
  rc |= h5_attr_num(f, "decay_lo", H5T_NATIVE_DOUBLE, &p->in.decay_lo);
  rc |= h5_attr_num(f, "decay_hi", H5T_NATIVE_DOUBLE, &p->in.decay_hi);
  rc |= h5_attr_num(f, "beta_lo", H5T_NATIVE_DOUBLE, &p->in.beta_lo);
  rc |= h5_attr_num(f, "beta_hi", H5T_NATIVE_DOUBLE, &p->in.beta_hi);
  sim_inputs in;
  if (sim_inputs_build(&in, &p->in, 1) == 0) {
    rc |= h5_dataset_write(f, "decay", H5T_NATIVE_FLOAT, (hsize_t)d->H, 0, in.decay);
    sim_inputs_free(&in);
  } else {
    rc = -1;
  }
  hid_t configs_g = H5Gcreate2(f, "configs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (configs_g < 0) rc = -1;
  for (int i = 0; rc == 0 && i < nconfig; i++) rc |= write_config(configs_g, &configs[i], &results[i]);
  if (configs_g >= 0) H5Gclose(configs_g);
  return h5_file_commit(f, rc, tmp, path, err, errlen);
}
