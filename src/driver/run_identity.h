/* The identity of an experiment (docs/reliability.md, "File state and identity"): what decides
 * a run file's numbers, as text with one "key = value" line per field (build, device, model,
 * tokens, reference, every configuration, seed, steps, sequences, shard), and its SHA-256.
 * Run files and checkpoints record it; --resume compares it field by field, so a refusal says
 * exactly what differs. */
#ifndef RSSM_DRIVER_RUN_IDENTITY_H
#define RSSM_DRIVER_RUN_IDENTITY_H

#include <stddef.h>

#include "src/driver/run_data.h"

/* The identity text of d (d's version, commit, checksums, reference, configurations, seed, N,
 * sequences, shard) on device ("cpu" or "cuda"); malloc'ed, NULL when out of memory. */
char *run_identity_text(const run_data *d, const char *device);
/* The value of field key in an identity text, into out ("" when absent). */
void run_identity_field(const char *text, const char *key, char *out, size_t outlen);
/* SHA-256 of text as 64 hex digits (GLib's GChecksum). */
void run_identity_digest(const char *text, char hex[65]);
/* Describes how identity `have` (from file what) differs from `want` (this run) into out, as
 * "FIELD: WHAT has X, this run Y; ...". Returns the number of differing fields (0: same). */
int run_identity_diff(const char *have, const char *want, const char *what, char *out,
                      size_t outlen);

#endif
