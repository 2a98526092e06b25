/* libFuzzer target: experiment files (libinih with the driver's line reader, keys, [config] and
 * [sweep] sections, sweep expansion, validation) on arbitrary bytes. The parser reads a file, so
 * each input is written to /dev/shm first. A file that parses and validates must print as an
 * experiment (experiment_to_text) that parses back to the same text. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/driver/experiment.h"
#include "src/io/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int write_file(const char *path, const void *data, size_t size) {
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  fwrite(data, 1, size, f);
  return fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[64];
  snprintf(path, sizeof path, "/dev/shm/rssm-fuzz-exp-%ld.ini", (long)getpid());
  if (write_file(path, data, size) != 0) return 0;
  experiment *e = malloc(sizeof *e), *e2 = malloc(sizeof *e2);
  if (!e || !e2) abort();
  experiment_init(e);
  char err[1024];
  if (experiment_parse_file(path, e, err, sizeof err) == RSSM_OK &&
      experiment_validate(e, err, sizeof err) == RSSM_OK) {
    char *text = experiment_to_text(e);
    if (!text) abort();
    /* a resolved path can make a line longer than inih reads (198 characters): such a text is
     * refused by the parser with "line longer than", as documented, so the property stops here */
    size_t longest = 0;
    for (const char *p = text, *q; *p; p = q + 1) {
      q = strchr(p, '\n');
      if (!q) q = p + strlen(p) - 1;
      if ((size_t)(q - p) > longest) longest = (size_t)(q - p);
    }
    if (longest > 198) {
      free(text);
      goto done;
    }
    if (write_file(path, text, strlen(text)) != 0) abort();
    experiment_init(e2);
    if (experiment_parse_file(path, e2, err, sizeof err) != RSSM_OK) {
      fprintf(stderr, "effective experiment does not parse: %s\n---\n%s---\n", err, text);
      abort();
    }
    char *text2 = experiment_to_text(e2);
    if (!text2 || strcmp(text, text2) != 0) {
      fprintf(stderr, "effective experiment changes when parsed:\n---\n%s---\n%s---\n", text,
              text2 ? text2 : "(null)");
      abort();
    }
    free(text2);
    free(text);
  }
done:
  free(e);
  free(e2);
  unlink(path);
  return 0;
}
