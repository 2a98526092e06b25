/* The run file (SPEC section 7), readable with h5py alone:
 *   root attributes: tool, version, commit, model, model_checksum, tokens, tokens_checksum,
 *     tokenizer, seed (uint64), steps, sequences (the whole run), sequence_offset (row 0's global
 *     index), shard ("I/N"), reference (canonical string), experiment (effective INI text),
 *     vocab and vocab_rows (int64: the real vocabulary the metrics are over, and the output
 *     layer's rows with padding; absent in files written before them)
 *   /tokens int32 [K, N+1]; /window_start int64 [K]; /reference/nll float32 [K, N]
 *     (/reference has attributes spec and name)
 *   /configs/NAME/ (attributes spec, name; NAME = label with '/' -> '_'; created in order):
 *     kl, nll, dp float32 [K, N]; top1 uint8 [K, N]; first_nonfinite int64 [K]
 *   every string attribute is UTF-8 variable-length; every dataset has attributes units,
 *   dimensions (axis names) and description; the root also has created (ISO 8601 UTC), host and,
 *   once the run is complete, wall_seconds (the writing process's run time)
 * [K, N] datasets are chunked [1, min(N, 1024)] along N: a run writes column ranges as steps
 * complete. */
#ifndef RSSM_DRIVER_RUN_H5_H
#define RSSM_DRIVER_RUN_H5_H

#include <stddef.h>
#include <stdint.h>

#include <hdf5.h>

#include "src/driver/run_data.h"

typedef struct run_h5 run_h5;

/* Creates path with every attribute, /tokens and /window_start of d, and empty metric datasets
 * (every chunk allocated now). The file is built as path.new and renamed to path by the first
 * successful run_h5_write_columns, so path only ever names a complete, flushed file; closing a
 * file that was never published removes path.new. Returns NULL with a message on failure. */
run_h5 *run_h5_create(const char *path, const run_data *d, char *err, size_t errlen);
/* Writes columns [c0, c1) of every [K, N] dataset and the whole first_nonfinite, then flushes. */
int run_h5_write_columns(run_h5 *h, const run_data *d, int64_t c0, int64_t c1, char *err,
                         size_t errlen);
/* Records the run's wall time (root attribute wall_seconds, float64). Returns 0 or -1. */
int run_h5_set_wall_seconds(run_h5 *h, double seconds);
/* Closes the file; returns 0 or -1 when closing failed. */
int run_h5_close(run_h5 *h);

/* Reads a whole run file into d (run_data_free releases it). Returns RSSM_OK, RSSM_ERR_INPUT
 * (not a run file: one line naming the missing or malformed object) or RSSM_ERR_IO. */
int run_h5_read(const char *path, run_data *d, char *err, size_t errlen);

/* Writes a whole run_data to path atomically (temporary file, fsync, rename): merge. */
int run_h5_write_all(const char *path, const run_data *d, char *err, size_t errlen);

/* Units, dimension names and descriptions of every dataset of an open run file, and the root
 * attributes created and host (run_h5_describe.c). Returns 0 or -1. */
int run_h5_describe(hid_t file, const run_data *d);

#endif
