/* libFuzzer target: number-format strings FORMAT[@BLOCK][/rtn|/sr]; a parsed format must round-trip
 * through its canonical string and have a storage layout for a small matrix. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quant/format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  qformat f, g;
  char err[256], canon[64];
  if (qformat_parse(text, &f, err, sizeof err) == 0) {
    qformat_to_string(&f, canon, sizeof canon);
    if (qformat_parse(canon, &g, err, sizeof err) != 0) abort();
    if (f.kind != g.kind || f.block != g.block || f.rounding != g.rounding) abort();
    qlayout L;
    if (qlayout_of(&f, 3, 200, &L) != 0) abort();
  }
  free(text);
  return 0;
}
