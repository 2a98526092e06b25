/* HDF5 output of `replayssm theory` (readable with h5py alone; docs/theory.md):
 *   root attributes: tool, version, seed, steps, nmat, dv, dk, L, rho, horizons, tol
 *   /alpha               float64 [A]
 *   /rows/  one entry per comparison, parallel 1-D datasets of length R:
 *     format, rounding, regime, mode, assumption, why     fixed-length strings
 *     alpha (NaN for split), a_eff, b, s2, pred_mean, pred_var, lim_mean, lim_var, meas_mean,
 *     meas_var, se_mean, se_var, rel_mean, rel_var, elem_s2_cv, corr, corr_se, kappa,
 *     kappa_se    float64
 *     events int64; stationary, agrees, resolved uint8
 * Written under a temporary name, synced and renamed into place. */
#ifndef RSSM_THEORY_THEORY_H5_H
#define RSSM_THEORY_THEORY_H5_H

#include <stddef.h>

#include "src/theory/theory.h"

/* Returns 0, or -1 with a one-line reason in err. */
int th_h5_write(const char *path, const th_params *p, const th_result *res, char *err,
                size_t errlen);

#endif
