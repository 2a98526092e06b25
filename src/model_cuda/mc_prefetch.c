/* The host arithmetic of the L2 prefetch (mc_prefetch.h): the budgets from the environment (the
 * runtime's one reader of A/B switches, rssm_env_switch) and the span of each row. Pure C, so
 * that the CPU tests hold it to its definition. */
#include "src/model_cuda/mc_prefetch.h"

#include <stdlib.h>

#include "src/io/env_switch.h"

/* the bulk prefetch moves multiples of 16 bytes; below this a row's span is not worth a thread */
#define PREFETCH_UNIT 16
#define PREFETCH_MIN_SPAN 256

/* The MiB a switch may name (mc_prefetch.h); the index 0 is off. */
static const char *const budgets_mib[] = {"0", "4", "8", "16", "32", "64"};

/* The budget named by the environment variable `name`, read once into *budget (-1 before). */
static int64_t budget_from(const char *name, int64_t *budget) {
  if (*budget < 0) {
    const int n = (int)(sizeof budgets_mib / sizeof budgets_mib[0]);
    *budget = (int64_t)atoi(budgets_mib[rssm_env_switch(name, budgets_mib, n, 0)]) << 20;
  }
  return *budget;
}

/* one host thread builds and launches a step */
static int64_t weights_budget = -1, state_budget = -1;

int64_t mc_l2_prefetch_budget(void) { return budget_from("RSSM_L2_PREFETCH", &weights_budget); }

int64_t mc_l2_prefetch_state_budget(void) {
  return budget_from("RSSM_L2_PREFETCH_STATE", &state_budget);
}

int64_t mc_l2_prefetch_span(int64_t rows, int64_t row_bytes, int64_t budget) {
  if (rows <= 0 || row_bytes <= 0 || budget <= 0) return 0;
  int64_t span = budget / rows;
  if (span > row_bytes) span = row_bytes;
  span -= span % PREFETCH_UNIT;
  return span >= PREFETCH_MIN_SPAN ? span : 0;
}
