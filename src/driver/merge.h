/* Joining the shard files of one run (run --shard I/N) into the file an unsharded run would
 * have written: rows concatenated in sequence order, shard "0/1", sequence_offset 0. Shards
 * belong together when their model and token checksums, seed, steps, sequences, reference and
 * configurations agree (paths may differ between machines); the merged file's other attributes
 * (paths, experiment text, version, commit) are shard 0's. */
#ifndef RSSM_DRIVER_MERGE_H
#define RSSM_DRIVER_MERGE_H

#include <stddef.h>

#include "src/driver/run_data.h"

/* shards: [n] read run files, any order. On success *out holds the merged run (run_data_free).
 * Returns RSSM_OK, RSSM_ERR_INPUT (different runs, a missing or repeated shard, naming the file
 * and attribute) or RSSM_ERR_IO. */
int merge_shards(const run_data *shards, const char *const *paths, int n, run_data *out,
                 char *err, size_t errlen);

#endif
