/* libFuzzer target: tokenizer.json (bpe_load: cJSON with the duplicate-key and nesting checks,
 * the vocabulary with its duplicate-id check, merges, added tokens, normalizer and
 * pre-tokenizer) on arbitrary bytes; a file that loads then encodes a short fixed text. Each
 * input goes through a per-process file in /dev/shm (bpe_load reads a path). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "src/tokens/bpe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[96];
  snprintf(path, sizeof path, "/dev/shm/rssm-fuzz-tok-%ld.json", (long)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  char err[512];
  bpe_tokenizer *t = NULL;
  if (bpe_load(path, &t, err, sizeof err) == 0) {
    static const char text[] = "Call me Ishmael. Some years ago 123 \xc3\xa9t\xc3\xa9!";
    bpe_ids ids = {0};
    if (bpe_encode(t, text, (int64_t)sizeof text - 1, "fuzz", &ids, err, sizeof err) == 0)
      bpe_ids_free(&ids);
    bpe_free(t);
  }
  unlink(path);
  return 0;
}
