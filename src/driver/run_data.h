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
  int64_t vocab;            /* the real vocabulary: logits the metrics are over (0: older file) */
  int64_t vocab_rows;       /* the output layer's rows, padding included (0: older file) */
  char shard[32];           /* "I/N"; "0/1" for a whole run */
  char *identity;           /* identity text (run_identity.h; malloc'ed), NULL: a file older
                             * than file states */
  /* datasets */
  int64_t *steps_written;   /* [K] steps of each sequence written (N: complete) */
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
/* 1 when every sequence has all N steps written. */
int run_data_complete(const run_data *d);
/* "steps written: 100 of 1100 (every sequence)" or "... 100 to 400 of 1100 (per sequence)". */
void run_data_written_text(const run_data *d, char *out, size_t outlen);
/* The fewest steps written of any sequence. */
int64_t run_data_min_written(const run_data *d);
/* Keeps only steps [0, n) of every sequence (n <= N; summary --partial): the [K][N] arrays are
 * compacted to [K][n], first non-finite steps at or past n are dropped. */
void run_data_truncate(run_data *d, int64_t n);

#endif
