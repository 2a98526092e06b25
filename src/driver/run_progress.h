/* Progress by time for `replayssm run`: a thread that reports every few seconds how far the
 * decoders have got, between the block boundaries that the run loop reports (a block of 256
 * steps can take a minute on a CPU). Workers count decoder steps with run_progress_add; the
 * estimate is steps = counted / decoders. On a terminal it redraws a bar, otherwise it prints
 * one line per report. */
#ifndef RSSM_DRIVER_RUN_PROGRESS_H
#define RSSM_DRIVER_RUN_PROGRESS_H

#include <stdint.h>

typedef struct run_progress run_progress;

/* Starts the reporter: total steps N, decoders per step (K rows x (C + 1)), steps already done
 * (a resumed run), seconds between reports, bar (1: a terminal). NULL when it cannot start
 * (the run goes on without it). */
run_progress *run_progress_start(int64_t N, int64_t decoders, int64_t done, double interval,
                                 int bar);
/* Workers: n more decoder steps done. Thread-safe; p may be NULL. */
void run_progress_add(run_progress *p, int64_t n);
/* The run loop: every step < done is complete (block boundary). p may be NULL. */
void run_progress_steps(run_progress *p, int64_t done);
/* Stops the reporter (ends a bar's line) and frees it. p may be NULL. */
void run_progress_stop(run_progress *p);

#endif
