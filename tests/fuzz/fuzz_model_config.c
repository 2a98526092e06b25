/* libFuzzer target: config.json of a Hugging Face checkpoint (model_config_load: the bare
 * Infinity/NaN fix-up, cJSON, every model_type's keys, layer patterns and size checks) on
 * arbitrary bytes. The loader reads DIR/config.json, so each input is written to a per-process
 * directory in /dev/shm first. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "src/model/model_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char dir[64], path[96];
  snprintf(dir, sizeof dir, "/dev/shm/rssm-fuzz-cfg-%ld", (long)getpid());
  snprintf(path, sizeof path, "%s/config.json", dir);
  mkdir(dir, 0700);
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  char err[512];
  model_config *c = calloc(1, sizeof *c);
  if (!c) return 0;
  if (model_config_load(dir, c, err, sizeof err) == RSSM_OK) {
    /* every block kind has a name and a layer inside the model */
    for (int i = 0; i < c->nblocks; i++) {
      if (!block_kind_name((block_kind)c->blocks[i].kind)) abort();
      if (c->blocks[i].layer < 0 || c->blocks[i].layer >= c->nlayers) abort();
    }
    model_config_free(c);
  }
  free(c);
  char *fixed = model_json_fix_nonfinite((const char *)data, size);
  free(fixed);
  unlink(path);
  rmdir(dir);
  return 0;
}
