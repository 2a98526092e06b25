/* `replayssm ssm-sim` on its success path: the real executable writes the HDF5 file of
 * src/sim/sim_h5.h, and every dataset of it equals, bit for bit, what ssm_sim_run computes
 * in-process with the same parameters; the root and group attributes carry the parameters and
 * the configurations; the table on stdout names each configuration. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "src/sim/sim_h5.h"
#include "src/sim/ssm_sim.h"
#include "tests/cli/cli_test_util.h"
#include "tests/cli/h5_test_util.h"

static void same_floats(const float *a, const float *b, int64_t n, const char *what) {
  cr_assert(n == 0 || memcmp(a, b, (size_t)n * sizeof(float)) == 0, "%s differs from ssm_sim_run",
            what);
}

static void check_kind(const char *kind_name, ssm_kind kind) {
  const char *dir = tdir_make();
  cr_assert(dir);
  char out[TPATH_MAX];
  tpath(out, dir, "sim.h5");
  const char *cfgs[] = {"replay L=16 ckpt=nvfp4/sr", "replay L=8 hp=fp32 lp=fp8",
                        "spec L=8 T=3 ckpt=fp8/sr accept=uniform"};
  char *err = NULL, *text = NULL;
  int st = run_captured(RSSM_BIN, dir, &err, &text, "ssm-sim", "--kind", kind_name, "--heads", "4",
                        "--groups", "2", "--dv", "8", "--dk", "16", "--steps", "300", "--decay",
                        "2:3", "--seed", "5", "--config", cfgs[0], "--config", cfgs[1], "--config",
                        cfgs[2], "--out", out, (char *)NULL);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ssm-sim failed: %s", err ? err : "?");
  ssm_sim_params p;
  memset(&p, 0, sizeof p);
  p.in.dims = (ssm_dims){kind, 4, 8, 16, 2};
  p.in.decay_lo = 2.0, p.in.decay_hi = 3.0, p.in.beta_lo = 0.1, p.in.beta_hi = 0.9;
  p.in.seed = 5;
  p.steps = 300;
  hid_t f = H5Fopen(out, H5F_ACC_RDONLY, H5P_DEFAULT);
  cr_assert_geq(f, 0);
  char s[256];
  h5t_attr_str(f, "kind", s, sizeof s);
  cr_assert_str_eq(s, kind_name);
  h5t_attr_str(f, "reference", s, sizeof s);
  cr_assert_str_eq(s, "conventional state=fp32");
  cr_assert_eq(h5t_attr_i64(f, "steps"), 300);
  cr_assert_eq(h5t_attr_i64(f, "seed"), 5);
  cr_assert_eq(h5t_attr_i64(f, "H"), 4);
  for (int c = 0; c < 3; c++) {
    ssm_config cfg;
    char e[256];
    cr_assert_eq(ssm_config_parse(cfgs[c], &cfg, e, sizeof e), 0, "%s", e);
    ssm_sim_result r;
    cr_assert_eq(ssm_sim_run(&p, &cfg, &r, e, sizeof e), 0, "%s", e);
    cr_assert(text && strstr(text, cfg.name), "the table lacks %s: %s", cfg.name, text ? text : "");
    char gname[SSM_NAME_MAX + 16], gpath[SSM_NAME_MAX + 32];
    sim_h5_group_name(cfg.name, gname);
    snprintf(gpath, sizeof gpath, "/configs/%s", gname);
    hid_t g = H5Gopen2(f, gpath, H5P_DEFAULT);
    cr_assert_geq(g, 0, "group %s missing", gpath);
    h5t_attr_str(g, "name", s, sizeof s);
    cr_assert_str_eq(s, cfg.name);
    float *buf = malloc((size_t)(r.steps * r.H + 1) * sizeof(float));
    int64_t *steps = malloc((size_t)(r.nstore + 1) * sizeof(int64_t));
    cr_assert(buf && steps);
    cr_assert_gt(r.nstore, 10);
    h5t_read(g, "out_err", H5T_NATIVE_FLOAT, buf, r.steps);
    same_floats(buf, r.out_err, r.steps, "out_err");
    h5t_read(g, "out_err_head", H5T_NATIVE_FLOAT, buf, r.steps * r.H);
    same_floats(buf, r.out_err_head, r.steps * r.H, "out_err_head");
    h5t_read(g, "store_step", H5T_NATIVE_INT64, steps, r.nstore);
    cr_assert_eq(memcmp(steps, r.store_step, (size_t)r.nstore * sizeof(int64_t)), 0, "store_step");
    h5t_read(g, "ckpt_err", H5T_NATIVE_FLOAT, buf, r.nstore);
    same_floats(buf, r.ckpt_err, r.nstore, "ckpt_err");
    h5t_read(g, "ckpt_err_head", H5T_NATIVE_FLOAT, buf, r.nstore * r.H);
    same_floats(buf, r.ckpt_err_head, r.nstore * r.H, "ckpt_err_head");
    cr_assert_eq(H5Lexists(g, "ckpt_err_lp", H5P_DEFAULT) > 0, cfg.split != 0);
    if (cfg.split) {
      h5t_read(g, "ckpt_err_lp", H5T_NATIVE_FLOAT, buf, r.nstore);
      same_floats(buf, r.ckpt_err_lp, r.nstore, "ckpt_err_lp");
    }
    int64_t fn = 0;
    h5t_read(g, "first_nonfinite", H5T_NATIVE_INT64, &fn, 1);
    cr_assert_eq(fn, r.first_nonfinite);
    /* the quantised configurations do show an error */
    double mean = 0;
    for (int64_t t = 0; t < r.steps; t++) mean += r.out_err[t];
    cr_assert_gt(mean / (double)r.steps, 1e-4, "%s: mean output error %.3e", cfg.name,
                 mean / (double)r.steps);
    free(buf);
    free(steps);
    H5Gclose(g);
    ssm_sim_result_free(&r);
  }
  float decay[4];
  h5t_read(f, "decay", H5T_NATIVE_FLOAT, decay, 4);
  for (int h = 0; h < 4; h++) cr_assert(decay[h] >= 0.989f && decay[h] <= 0.9991f, "decay %g", decay[h]);
  H5Fclose(f);
  free(err);
  free(text);
  tdir_remove(dir);
}

Test(ssm_sim_cli, mamba2_file_matches_in_process_run) { check_kind("mamba2", SSM_MAMBA2); }
Test(ssm_sim_cli, gdn_file_matches_in_process_run) { check_kind("gdn", SSM_GDN); }
