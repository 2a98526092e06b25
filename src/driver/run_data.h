/* Everything one run file holds, in memory (SPEC section 7; docs/driver.md, "Output"). The
 * driver fills it as steps complete, checkpoints it, writes it; merge and summary read it. */
#ifndef RSSM_DRIVER_RUN_DATA_H
#define RSSM_DRIVER_RUN_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "src/ssm/ssm_config.h"

typedef struct {
  char name[SSM_NAME_MAX];  /* label */
  char spec[256];           /* canonical configuration string */
  float *kl, *nll, *dp;     /* [K][N] */
  uint8_t *top1;            /* [K][N] */
  int64_t *first_nonfinite; /* [K], -1: none */
} run_cfg_data;

typedef struct {
  /* root attributes */
  char version[32], commit[64];
  char model[4096], model_checksum[64];
  char tokens_path[4096], tokens_checksum[64], tokenizer[40];
  char reference[256];
  char *experiment;         /* effective experiment text (malloc'ed) */
  uint64_t seed;
  int64_t N;                /* steps */
  int64_t sequences;        /* in the whole run (all shards) */
  int64_t offset;           /* global index of row 0 */
  int64_t K;                /* rows here */
  char shard[32];           /* "I/N"; "0/1" for a whole run */
  /* datasets */
  int32_t *tokens;          /* [K][N+1] */
  int64_t *window_start;    /* [K] position of each window in the token source */
  float *ref_nll;           /* [K][N] */
  int nconfig;
  run_cfg_data *cfg;        /* [nconfig] */
} run_data;

/* Allocates the datasets for K rows of N steps and nconfig configurations, metrics zeroed and
 * first_nonfinite -1. Returns 0 or -1 (out of memory or sizes beyond 2^40 bytes). */
int run_data_alloc(run_data *d, int64_t K, int64_t N, int nconfig);
void run_data_free(run_data *d);

#endif
