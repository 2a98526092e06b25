/* NumPy .npy files: strict reading (format versions 1.0, 2.0, 3.0) and atomic writing (1.0).
 *
 * Only what the harness exchanges is accepted: little-endian float32 ('<f4') arrays of any shape
 * in C order, and 1-D little-endian int32/int64 ('<i4', '<i8') index arrays (token files). Every
 * size read from a file is checked in 64-bit arithmetic before use, and the data must fill the
 * file exactly. Zero-size arrays (a 0 anywhere in the shape) are valid and round-trip.
 *
 * Every function returns RSSM_OK, RSSM_ERR_INPUT (the file is missing or malformed) or
 * RSSM_ERR_IO (a read/write failure or out of memory), and on failure writes one line (no
 * newline) into err that names the file, the field and what was expected. Nothing here exits. */
#ifndef RSSM_IO_NPY_H
#define RSSM_IO_NPY_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "src/io/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NPY_MAX_NDIM 64          /* NumPy 2's limit */
#define NPY_MAX_HEADER (1 << 20) /* a header longer than this is refused, not allocated */

typedef struct {
  int ndim;                     /* 0 for a scalar (0-d) array */
  int64_t dim[NPY_MAX_NDIM];    /* [ndim] */
  int64_t count;                /* product of dim (1 for 0-d); fits in int64 */
} npy_shape;

/* What the header of a .npy file says. */
typedef struct {
  int major, minor;             /* format version */
  char descr[32];               /* e.g. "<f4" */
  int fortran_order;            /* 0 or 1 */
  npy_shape shape;
  int64_t data_offset;          /* bytes before the data: preamble plus header */
} npy_header;

/* A float32 array read from a .npy file; release with npy_f32_free. */
typedef struct {
  npy_shape shape;
  float *data;                  /* [count], C order (last axis contiguous) */
} npy_f32;

/* A 1-D integer array read from a .npy file, widened to int64; release with npy_index_free. */
typedef struct {
  int64_t n;
  int64_t *data;                /* [n] */
  int source_bytes;             /* 4 ('<i4') or 8 ('<i8'): what the file held */
} npy_index;

/* Parse the header dictionary text (the bytes after the length field, `len` of them, not
 * NUL-terminated) into h->descr, h->fortran_order and h->shape. `path` is only used in messages. */
int npy_parse_header_dict(const char *path, const char *text, size_t len, npy_header *h,
                          char *err, size_t errlen);

/* Read and check the preamble and header of an open file whose size is file_size bytes.
 * Leaves the stream at the start of the data. Does not look at descr. */
int npy_read_header(const char *path, FILE *f, int64_t file_size, npy_header *h,
                    char *err, size_t errlen);

/* Load a '<f4' array of any shape. On failure *out is left empty (data NULL). */
int npy_load_f32(const char *path, npy_f32 *out, char *err, size_t errlen);
void npy_f32_free(npy_f32 *a);

/* Load a 1-D '<i4' or '<i8' array as int64. On failure *out is left empty (data NULL). */
int npy_load_index(const char *path, npy_index *out, char *err, size_t errlen);
void npy_index_free(npy_index *a);

/* Write a '<f4' array (format 1.0) atomically: the bytes go to PATH.tmp.<pid> in the same
 * directory, are fsync'ed, and the file is renamed over PATH, so PATH is never half-written.
 * data: [product of dim] in C order. ndim may be 0 (a scalar). */
int npy_save_f32(const char *path, int ndim, const int64_t *dim, const float *data, char *err,
                 size_t errlen);

/* Formats a shape the way NumPy prints it: "()", "(5,)", "(3, 4)". */
void npy_shape_to_string(const npy_shape *s, char *buf, size_t buflen);

/* Fill s from ndim/dim, computing count with overflow checks. Returns 0, or -1 when ndim is out
 * of range, a dimension is negative, or the element count overflows int64. */
int npy_shape_set(npy_shape *s, int ndim, const int64_t *dim);

#ifdef __cplusplus
}
#endif
#endif
