/* libFuzzer target: the .npy reader (header preamble, header dict, shape, data size) on arbitrary
 * bytes. The reader is file-based, so each input is written to a file in /dev/shm first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "src/io/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/dev/shm/rssm-fuzz-npy-%ld.npy", (long)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  char err[512];
  npy_f32 a;
  if (npy_load_f32(path, &a, err, sizeof err) == RSSM_OK) npy_f32_free(&a);
  npy_index ix;
  if (npy_load_index(path, &ix, err, sizeof err) == RSSM_OK) npy_index_free(&ix);
  unlink(path);
  return 0;
}
