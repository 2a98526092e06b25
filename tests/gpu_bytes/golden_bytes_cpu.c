/* golden_bytes_cpu DIR: writes the CPU half of the committed GPU bytes (golden.h) to DIR, in the
 * layout gpu_golden_bytes writes on the GPU (a provisional set, and what to diff against). */
#include <stdio.h>

#include "tests/gpu_bytes/golden.h"

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: golden_bytes_cpu DIR\n");
    return 2;
  }
  golden_set g = {0};
  char err[512];
  int rc = golden_cpu(&g, err, sizeof err) || golden_write(&g, argv[1], err, sizeof err);
  if (rc) fprintf(stderr, "golden_bytes_cpu: %s\n", err);
  else printf("%d items written to %s\n", g.n, argv[1]);
  golden_free(&g);
  return rc ? 1 : 0;
}
