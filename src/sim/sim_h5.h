/* HDF5 output of `replayssm ssm-sim` (readable with h5py alone; docs/ssm-sim.md):
 *   root attributes: tool, version, kind, H, G, dv, dk, steps, seed, decay_lo, decay_hi, beta_lo,
 *                    beta_hi, reference ("conventional state=fp32")
 *   /decay                       float32 [H]   alpha_h of each head
 *   /configs/NAME/               attributes spec (canonical string), name (label)
 *       out_err                  float32 [N]
 *       out_err_head             float32 [N][H]
 *       store_step               int64   [F]   step index of each checkpoint store
 *       ckpt_err                 float32 [F]
 *       ckpt_err_head            float32 [F][H]
 *       ckpt_err_lp              float32 [F]   split configurations only
 *       first_nonfinite          int64 scalar  -1 when none
 * NAME is the label with every '/' replaced by '_' (HDF5 separates groups with '/'). The file is
 * written under a temporary name and renamed into place, so an existing file is never left
 * half-written. */
#ifndef RSSM_SIM_SIM_H5_H
#define RSSM_SIM_SIM_H5_H

#include <stddef.h>

#include "src/sim/ssm_sim.h"

/* Group name for a label: '/' -> '_'. out must hold strlen(label) + 1 bytes. */
void sim_h5_group_name(const char *label, char *out);

/* Writes the whole file atomically. Returns 0, or -1 with a one-line reason in err. */
int sim_h5_write(const char *path, const ssm_sim_params *p, int nconfig,
                 const ssm_config *configs /* [nconfig] */,
                 const ssm_sim_result *results /* [nconfig] */, char *err, size_t errlen);

#endif
