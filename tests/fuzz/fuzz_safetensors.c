/* libFuzzer target: the safetensors reader (the 8-byte header length, the header JSON, dtypes,
 * shapes, data_offsets and the overlap checks) on arbitrary bytes. The reader maps a file, so each
 * input is written to a small file in /dev/shm first; every tensor that opens is converted to
 * fp32 when it is small, so that the offsets the reader accepted are really read. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "src/model/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/dev/shm/rssm-fuzz-st-%ld.safetensors", (long)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  char err[512];
  st_archive a;
  if (st_open_file(path, &a, err, sizeof err) == RSSM_OK) {
    for (int64_t i = 0; i < a.ntensors; i++) {
      const st_tensor *t = &a.tensors[i];
      if (st_find(&a, t->name) == NULL) abort(); /* sorted by name, names unique */
      if (t->numel > (1 << 16)) continue;
      float *out = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof *out);
      if (!out) continue;
      st_to_f32(&a, t, out, err, sizeof err);
      free(out);
    }
    st_close(&a);
  }
  unlink(path);
  return 0;
}
