/* Text report of `replayssm theory`: one line per (format, rounding, regime, mode) summarising
 * the alphas, the full table with --verbose, and the verdict with the reasons where the model's
 * assumptions do not hold. */
#ifndef RSSM_THEORY_THEORY_REPORT_H
#define RSSM_THEORY_THEORY_REPORT_H

#include <stdio.h>

#include "src/theory/theory.h"

void th_report(FILE *out, const th_params *p, const th_result *res, int verbose);

#endif
