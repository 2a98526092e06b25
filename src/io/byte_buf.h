/* Byte buffers of binary state files (run checkpoints, engine states): a writer that grows as
 * values are appended and remembers running out of memory, and a reader that remembers reading
 * past the end, so that a caller appends or reads a whole layout and checks once at the end. */
#ifndef RSSM_IO_BYTE_BUF_H
#define RSSM_IO_BYTE_BUF_H

#include <stddef.h>

typedef struct {
  unsigned char *p; /* [cap], the first n bytes written; free() it */
  size_t n, cap;
  int oom;          /* an append failed: p holds what came before it */
} byte_buf;

/* len more bytes at the end: where they start, or NULL (out of memory, also for every later
 * call). */
void *byte_buf_grow(byte_buf *b, size_t len);
/* Appends src [len]. */
void byte_buf_put(byte_buf *b, const void *src, size_t len);

typedef struct {
  const unsigned char *p; /* [n] */
  size_t n, off;
  int bad;                /* a read went past the end (or the caller found a bad value) */
} byte_reader;

/* The next len bytes, or NULL past the end (also for every later call). */
const void *byte_take(byte_reader *b, size_t len);
/* Copies the next len bytes to dst [len]; leaves dst as it was past the end. */
void byte_get(byte_reader *b, void *dst, size_t len);

#endif
