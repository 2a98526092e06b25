/* `bench e2e --transformers`: the baseline of the same model decoded by transformers
 * (scripts/bench/transformers_decode.py) in a child process, its JSON read back. */
#ifndef RSSM_BENCH_E2E_E2E_TRANSFORMERS_H
#define RSSM_BENCH_E2E_E2E_TRANSFORMERS_H

#include <stdint.h>

/* Runs PY SCRIPT --model DIR --streams LIST --steps N --warmup W --out JSON (its stdout to
 * /dev/null, its stderr through) and reads ms_per_step per K from JSON into hf_ms [nK] (-1 where
 * absent). Returns 0, or -1 with one line on stderr. */
int e2e_run_transformers(const char *py, const char *script, const char *dir, const int *Ks, int nK,
                         int64_t steps, int64_t warmup, const char *json, double *hf_ms /* [nK] */);

#endif
