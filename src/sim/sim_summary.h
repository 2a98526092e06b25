/* Summary statistics of an ssm-sim result: how the output error evolves with the step count. */
#ifndef RSSM_SIM_SIM_SUMMARY_H
#define RSSM_SIM_SIM_SUMMARY_H

#include <stdio.h>

#include "src/sim/ssm_sim.h"

typedef struct {
  double err_early;  /* mean output error over steps [N/10, N/5) (after the first windows) */
  double err_late;   /* mean output error over the last tenth of the steps */
  double growth;     /* err_late / err_early */
  double slope;      /* d log(err) / d log(step), fitted over power-of-two buckets from step 64 */
  double slope_se;   /* its standard error */
  double ckpt_last;  /* relative checkpoint error at the last store (NaN if none) */
  long long nstore;
  long long first_nonfinite;
} sim_summary;

/* Heads selects which heads to average (NULL: the all-head error). */
void sim_summarise(const ssm_sim_result *r, const int *heads /* [nheads] or NULL */, int nheads,
                   sim_summary *s);

void sim_print_table_header(FILE *out);
void sim_print_table_row(FILE *out, const char *name, const sim_summary *s);

#endif
