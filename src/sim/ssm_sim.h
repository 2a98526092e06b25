/* `replayssm ssm-sim`: a layer-level study without a model (issue 3). One Mamba-2 or GDN layer is
 * driven with synthetic inputs (sim_inputs.h) through each configuration and, in lockstep, through
 * the fp32 conventional reference; per step the relative output error and, at every checkpoint
 * store, the relative checkpoint error against the reference state are recorded.
 *
 * Spec configurations verify T steps ahead and commit the seeded acceptance length a; the
 * reference advances only over committed steps, so each step's error compares the committed
 * prediction with the reference output for the same inputs. */
#ifndef RSSM_SIM_SSM_SIM_H
#define RSSM_SIM_SSM_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "src/sim/sim_inputs.h"
#include "src/ssm/ssm_config.h"

typedef struct {
  sim_input_params in;
  int64_t steps;
} ssm_sim_params;

typedef struct {
  int64_t steps;
  int H;
  float *out_err;         /* [steps] ||o - o_ref|| / ||o_ref|| over all heads */
  float *out_err_head;    /* [steps][H] the same per head */
  int64_t nstore, cap;
  int64_t *store_step;    /* [nstore] 0-based step count folded into the stored checkpoint - 1 */
  float *ckpt_err;        /* [nstore] ||deq(C) - S_ref|| / ||S_ref||; C = state, shared or C_hp */
  float *ckpt_err_head;   /* [nstore][H] */
  float *ckpt_err_lp;     /* [nstore] split only (C_lp), else NULL */
  int64_t first_nonfinite; /* first step with a non-finite output, -1 if none */
} ssm_sim_result;

/* Runs one configuration. Returns 0, or -1 with a one-line reason in err. */
int ssm_sim_run(const ssm_sim_params *p, const ssm_config *cfg, ssm_sim_result *r, char *err,
                size_t errlen);
void ssm_sim_result_free(ssm_sim_result *r);

#endif
