/* libFuzzer target: SPEC section 6 configuration strings; a parsed configuration must print
 * canonically and parse back to the same canonical string. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/ssm/ssm_config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  ssm_config c, c2;
  char err[256], canon[256], canon2[256];
  if (ssm_config_parse(text, &c, err, sizeof err) == 0) {
    ssm_config_to_string(&c, canon, sizeof canon);
    if (ssm_config_parse(canon, &c2, err, sizeof err) != 0) abort();
    ssm_config_to_string(&c2, canon2, sizeof canon2);
    if (strcmp(canon, canon2) != 0) abort();
  }
  free(text);
  return 0;
}
