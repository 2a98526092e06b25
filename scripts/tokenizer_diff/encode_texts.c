/* The C encoder's ids for each text of TEXTS.bin, one line per text (run.sh builds this against
 * the build tree's libreplayssm_core.a): encode_texts TOKENIZER_JSON TEXTS.bin OUT.txt */
#include <stdio.h>
#include <stdlib.h>
#include "src/tokens/bpe.h"
#include "src/io/atomic_file.h"
int main(int argc, char **argv) {
  char err[1024]; bpe_tokenizer *t; unsigned char *buf; int64_t len;
  if (bpe_load(argv[1], &t, err, sizeof err)) { puts(err); return 2; }
  if (read_whole_file(argv[2], INT64_C(1) << 32, &buf, &len, err, sizeof err)) { puts(err); return 2; }
  FILE *f = fopen(argv[3], "w");
  for (int64_t o = 0; o < len;) {
    uint32_t n = buf[o] | buf[o+1] << 8 | buf[o+2] << 16 | (uint32_t)buf[o+3] << 24; o += 4;
    bpe_ids ids = {0};
    if (bpe_encode(t, (char *)buf + o, n, "x", &ids, err, sizeof err)) { puts(err); return 2; }
    for (int64_t i = 0; i < ids.n; i++) fprintf(f, i ? " %u" : "%u", ids.ids[i]);
    fputc('\n', f); bpe_ids_free(&ids); o += n;
  }
  fclose(f); return 0;
}
