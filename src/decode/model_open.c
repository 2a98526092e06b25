/* rssm_model_open: picks the backend for a model name (decoder.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/decode/decoder.h"
#include "src/decode/toy_model.h"
#include "src/io/status.h"
#include "src/decode/hf_decoder.h"

int rssm_model_open(const char *name, rssm_model **out, char *err, size_t errlen) {
  *out = NULL;
  if (strncmp(name, "toy:", 4) == 0) return toy_model_open(name + 4, out, err, errlen);
  struct stat sb;
  if (stat(name, &sb) != 0) {
    snprintf(err, errlen, "model '%s': no such file or directory (expected a Hugging Face model "
             "directory, toy:gdn or toy:mamba2)", name);
    return RSSM_ERR_INPUT;
  }
  if (!S_ISDIR(sb.st_mode)) {
    snprintf(err, errlen, "model '%s': not a directory (expected a Hugging Face model directory "
             "with config.json, toy:gdn or toy:mamba2)", name);
    return RSSM_ERR_INPUT;
  }
  /* a Hugging Face directory: the CPU model runtime's backend (src/decode/hf_decoder.h) */
  return hf_model_open(name, out, err, errlen);
}

void rssm_model_close(rssm_model *m) {
  if (m) m->ops->close(m);
}
