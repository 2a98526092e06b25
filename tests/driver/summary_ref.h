/* An independent evaluation of the summary statistics (src/driver/summary_stats.c) from a run's
 * datasets: plain loops, qsort and the textbook quantile (linear interpolation at (n-1) p), no
 * GSL, so that a wrong statistic in the summary cannot be reproduced here by sharing its code. */
#ifndef RSSM_TESTS_DRIVER_SUMMARY_REF_H
#define RSSM_TESTS_DRIVER_SUMMARY_REF_H

#include "src/driver/run_data.h"
#include "src/driver/summary_stats.h"

/* Asserts (Criterion) that summary_compute(d, c) agrees with the independent evaluation: counts
 * and top-1 exactly, the others to 1e-12 relative (both sum the same doubles, in other orders). */
void summary_check_against_reference(const run_data *d, int c);

#endif
