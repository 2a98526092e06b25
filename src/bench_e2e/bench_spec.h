/* `bench e2e --spec T1,T2,..` (bench_spec.c): spec rounds of each T and acceptance model
 * (fixed:T, uniform, geom:0.7) against standard steps on one device model, committed tokens per
 * second. CUDA builds only (the caller has a device model). */
#ifndef RSSM_BENCH_E2E_BENCH_SPEC_H
#define RSSM_BENCH_E2E_BENCH_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "src/model_cuda/mc_model.h"

typedef struct {
  int64_t warmup, blocks, block; /* untimed rounds, timed blocks, rounds per block */
  uint64_t seed;
  const char *label;             /* model name in the output */
  const char *csv;               /* append one row per case, or NULL */
} bench_spec_opts;

/* Standard steps, then every (T of Ts [nT], acceptance model) case at K streams: one line each on
 * stdout. Returns RSSM_OK, or a status with one line in err. */
int bench_spec_measure(mc_model *g, int64_t V, int K, const int *Ts /* [nT] */, int nT,
                       const bench_spec_opts *o, char *err, size_t errlen);

#endif
