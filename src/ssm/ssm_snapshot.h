/* Saving and restoring the mutable part of an SSM engine state (src/ssm/ssm_engine.h) for the
 * driver's checkpoints: ring counters, records, checkpoint blobs and their decoded copies,
 * quantisation event counters. The state must have been built with the same configuration, dims
 * and ids; scratch buffers are not saved (every operation recomputes them). */
#ifndef RSSM_SSM_SSM_SNAPSHOT_H
#define RSSM_SSM_SSM_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "src/ssm/ssm_engine.h"

int64_t ssm_snapshot_bytes(const ssm_state *st);
/* Writes exactly ssm_snapshot_bytes(st) bytes. */
void ssm_snapshot_save(const ssm_state *st, unsigned char *buf);
/* Reads them back; returns 0, or -1 when the stored shape does not match this state. */
int ssm_snapshot_load(ssm_state *st, const unsigned char *buf, int64_t len);

#endif
