/* The three forms of `replayssm summary` (docs/driver.md, "Summary"): text tables that fit in
 * about 100 columns, CSV (one row per configuration, or per comparison) and JSON (everything). */
#ifndef RSSM_DRIVER_SUMMARY_WRITE_H
#define RSSM_DRIVER_SUMMARY_WRITE_H

#include <stdio.h>

#include "src/driver/run_data.h"
#include "src/driver/summary_report.h"

/* How the comparisons' interval is computed, as printed. */
extern const char *const SR_COMPARE_METHOD;

void sr_write_text(FILE *out, const char *path, const run_data *d, const sr_report *r,
                   const sr_compare *cmp, int ncmp);
/* One header line and one row per configuration; with only_compare, the comparisons instead. */
void sr_write_csv(FILE *out, const run_data *d, const sr_report *r, const sr_compare *cmp,
                  int ncmp, int only_compare);
/* Returns 0, or -1 when out of memory. */
int sr_write_json(FILE *out, const char *path, const run_data *d, const sr_report *r,
                  const sr_compare *cmp, int ncmp);

#endif
