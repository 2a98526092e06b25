/* libFuzzer target: the .tok.zst reader (magic, header checksum, version, vocab, count, the zstd
 * frame, the payload checksum, ids < vocab) on arbitrary bytes. Each input is written to a file in
 * /dev/shm and read as is; when it is at least a header long it is read a second time with the
 * header checksum (bytes 60..63) recomputed, so that mutations of the header fields and the frame
 * reach the checks behind the checksum. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "src/io/status.h"
#include "src/tokens/tokstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_once(const char *path, const uint8_t *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) return;
  fwrite(data, 1, size, f);
  fclose(f);
  char err[512];
  tokstream_info info;
  uint32_t *ids = NULL;
  if (tokstream_read(path, &info, &ids, err, sizeof err) == RSSM_OK) {
    for (int64_t i = 0; i < info.count; i++)
      if (ids[i] >= info.vocab) abort();
    if (tokstream_crc(ids, info.count) != info.crc) abort();
  }
  free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/dev/shm/rssm-fuzz-tok-%ld.tok.zst", (long)getpid());
  read_once(path, data, size);
  if (size >= TOKSTREAM_HEADER_BYTES) {
    uint8_t *copy = malloc(size);
    if (copy) {
      memcpy(copy, data, size);
      uint32_t c = (uint32_t)crc32(crc32(0L, Z_NULL, 0), copy, 60);
      for (int i = 0; i < 4; i++) copy[60 + i] = (uint8_t)(c >> (8 * i));
      read_once(path, copy, size);
      free(copy);
    }
  }
  unlink(path);
  return 0;
}
