/* Byte buffers of binary state files (byte_buf.h). */
#include "src/io/byte_buf.h"

#include <stdlib.h>
#include <string.h>

void *byte_buf_grow(byte_buf *b, size_t len) {
  if (b->oom) return NULL;
  if (b->n + len > b->cap) {
    size_t nc = b->cap ? b->cap : 1 << 20;
    while (nc < b->n + len) nc *= 2;
    unsigned char *q = realloc(b->p, nc);
    if (!q) {
      b->oom = 1;
      return NULL;
    }
    b->p = q;
    b->cap = nc;
  }
  void *at = b->p + b->n;
  b->n += len;
  return at;
}

void byte_buf_put(byte_buf *b, const void *src, size_t len) {
  void *at = byte_buf_grow(b, len);
  if (at && len) memcpy(at, src, len);
}

const void *byte_take(byte_reader *b, size_t len) {
  if (b->bad || len > b->n - b->off) {
    b->bad = 1;
    return NULL;
  }
  const void *at = b->p + b->off;
  b->off += len;
  return at;
}

void byte_get(byte_reader *b, void *dst, size_t len) {
  const void *at = byte_take(b, len);
  if (at && len) memcpy(dst, at, len);
}
