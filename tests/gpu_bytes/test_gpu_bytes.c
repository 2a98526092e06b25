/* CPU/GPU agreement in CPU CI: the items of golden.h computed here on the CPU must equal, byte
 * for byte, the files that tests/gpu/gpu_golden_bytes wrote on the H200 and that are committed
 * in tests/fixtures/gpu-bytes/ (its MANIFEST lists every item and its size, in order). A changed
 * byte on either side fails, naming the item and the first differing offset. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli/cli_test_util.h"
#include "tests/gpu_bytes/golden.h"

#define GOLDEN_DIR RSSM_SOURCE_DIR "/tests/fixtures/gpu-bytes"

Test(gpu_bytes, cpu_reproduces_the_committed_gpu_bytes) {
  golden_set g = {0};
  char err[512];
  cr_assert_eq(golden_cpu(&g, err, sizeof err), 0, "%s", err);
  char *man = slurp(GOLDEN_DIR "/MANIFEST", NULL);
  cr_assert(man, "%s/MANIFEST is missing", GOLDEN_DIR);
  int i = 0;
  size_t total = 0;
  for (char *line = strtok(man, "\n"); line; line = strtok(NULL, "\n"), i++) {
    char name[64];
    size_t n = 0;
    cr_assert_eq(sscanf(line, "%63s %zu", name, &n), 2, "MANIFEST line '%s'", line);
    cr_assert_lt(i, g.n, "MANIFEST lists %s beyond the %d items computed here", name, g.n);
    cr_assert_str_eq(name, g.items[i].name, "MANIFEST item %d", i);
    char path[TPATH_MAX + 80];
    snprintf(path, sizeof path, "%s/%s.bin", GOLDEN_DIR, name);
    size_t len = 0;
    char *bytes = slurp(path, &len);
    cr_assert(bytes, "%s is missing", path);
    cr_assert_eq(len, n, "%s: %zu bytes, MANIFEST says %zu", path, len, n);
    cr_assert_eq(len, g.items[i].n, "%s: %zu bytes on the GPU, %zu on the CPU", name, len,
                 g.items[i].n);
    size_t off = 0;
    while (off < len && (unsigned char)bytes[off] == g.items[i].bytes[off]) off++;
    cr_expect_eq(off, len, "%s: byte %zu differs (GPU 0x%02x, CPU 0x%02x)", name, off,
                 off < len ? (unsigned char)bytes[off] : 0, off < len ? g.items[i].bytes[off] : 0);
    total += len;
    free(bytes);
  }
  cr_assert_eq(i, g.n, "MANIFEST lists %d items, %d computed here", i, g.n);
  cr_assert_lt(total, 1u << 20, "the committed set is %zu bytes (keep it under 1 MB)", total);
  free(man);
  golden_free(&g);
}
