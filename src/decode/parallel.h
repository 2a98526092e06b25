/* A minimal parallel for: n independent items on `threads` pthreads, each item exactly once.
 * Items are handed out in index order from a shared counter; which thread runs which item does
 * not matter to callers (each item writes only its own outputs). */
#ifndef RSSM_DECODE_PARALLEL_H
#define RSSM_DECODE_PARALLEL_H

#include <stdint.h>

/* fn(ctx, item, thread) returns 0, or nonzero to stop handing out further items; the first
 * nonzero value is returned. */
typedef int (*parallel_fn)(void *ctx, int64_t item, int thread);
int parallel_for(int64_t n, int threads, parallel_fn fn, void *ctx);

#endif
