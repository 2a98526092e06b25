/* Safetensors checkpoints: one `model.safetensors` or shards listed by
 * `model.safetensors.index.json`, memory-mapped read-only.
 *
 * File layout: 8 bytes little-endian u64 N, N bytes of JSON header, then the data block. The
 * header maps each tensor name to {dtype, shape, data_offsets [begin, end)} relative to the data
 * block; `__metadata__` is skipped. Every size is checked in 64-bit arithmetic before any byte is
 * touched: N within the file, each shape entry a non-negative integer whose product (times the
 * element size) does not overflow and equals end - begin, offsets within the data block, and no
 * two tensors overlapping. Unknown dtype names are errors at open; known dtypes other than F32,
 * BF16 and F16 are accepted in the header (a checkpoint may carry tensors we never read) and
 * refused by name when a tensor is converted.
 *
 * Functions return RSSM_OK, RSSM_ERR_INPUT (missing or malformed checkpoint) or RSSM_ERR_IO (read
 * failure, out of memory) and write one line (no newline) into err naming the file, the tensor or
 * field, what was expected and what was found. Nothing here exits. */
#ifndef RSSM_MODEL_SAFETENSORS_H
#define RSSM_MODEL_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "src/io/status.h"

#define ST_MAX_NDIM 8
#define ST_MAX_HEADER ((int64_t)1 << 30) /* a header longer than this is refused, not mapped */

typedef enum {
  ST_F32 = 0, ST_BF16, ST_F16, /* convertible to fp32 */
  ST_F64, ST_I64, ST_I32, ST_I16, ST_I8, ST_U64, ST_U32, ST_U16, ST_U8, ST_BOOL,
  ST_F8_E4M3, ST_F8_E5M2, ST_F8_E8M0, ST_DTYPE_COUNT
} st_dtype;

typedef struct {
  char *name;
  st_dtype dtype;
  int ndim;
  int64_t shape[ST_MAX_NDIM];  /* [ndim] */
  int64_t numel;               /* product of shape (1 for a 0-d tensor) */
  int file;                    /* index into st_archive.files */
  const unsigned char *data;   /* [numel * element size] inside the mapping; any alignment */
} st_tensor;

typedef struct {
  char *path;
  void *map;           /* mmap of the whole file */
  int64_t size;        /* bytes */
} st_file;

typedef struct {
  int nfiles;
  st_file *files;      /* [nfiles] */
  int64_t ntensors;
  st_tensor *tensors;  /* [ntensors], sorted by name */
} st_archive;

/* Open DIR/model.safetensors.index.json if it exists, else DIR/model.safetensors. */
int st_open_dir(const char *dir, st_archive *a, char *err, size_t errlen);
/* Open one .safetensors file. */
int st_open_file(const char *path, st_archive *a, char *err, size_t errlen);
void st_close(st_archive *a);

const st_tensor *st_find(const st_archive *a, const char *name);
const char *st_dtype_name(st_dtype d);
/* Bytes per element. */
int st_dtype_size(st_dtype d);

/* Convert a tensor to fp32 (out: [numel]); refuses dtypes other than F32/BF16/F16 by name. */
int st_to_f32(const st_archive *a, const st_tensor *t, float *out, char *err, size_t errlen);

/* "[3, 4]" */
void st_shape_string(int ndim, const int64_t *shape, char *buf, size_t buflen);

#endif
