/* The host arithmetic of the L2 prefetch (mc_prefetch.h): the budget from the environment and
 * the span of each row. Pure C, so that the CPU tests hold it to its definition. */
#include "src/model_cuda/mc_prefetch.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* the bulk prefetch moves multiples of 16 bytes; below this a row's span is not worth a thread */
#define PREFETCH_UNIT 16
#define PREFETCH_MIN_SPAN 256
#define PREFETCH_MAX_MIB 1024

int64_t mc_l2_prefetch_parse(const char *text, int *bad) {
  if (!text) return 0;
  if (!isdigit((unsigned char)text[0])) { /* strtol would take a sign or leading blanks */
    if (bad) *bad = 1;
    return 0;
  }
  char *end = NULL;
  errno = 0;
  const long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < 0 || v > PREFETCH_MAX_MIB) {
    if (bad) *bad = 1;
    return 0;
  }
  return (int64_t)v << 20;
}

/* *budget from the environment variable `name` at the first call (-1 before it) */
static int64_t budget_from(const char *name, int64_t *budget) {
  if (*budget < 0) {
    const char *v = getenv(name);
    int bad = 0;
    *budget = mc_l2_prefetch_parse(v, &bad);
    if (bad) /* a typo must not pass unseen */
      fprintf(stderr, "%s=%s: expected MiB from 0 to %d; no prefetch\n", name, v, PREFETCH_MAX_MIB);
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
