/* The logits file of `replayssm logits`: HDF5 with dataset /logits float32 [N][V] and string
 * attributes model, tokens, config; written atomically (PATH.tmp.<pid>, then rename). */
#ifndef RSSM_MODEL_LOGITS_H5_H
#define RSSM_MODEL_LOGITS_H5_H

#include <stddef.h>
#include <stdint.h>

/* Returns RSSM_OK or RSSM_ERR_IO with one line in err. */
int logits_h5_write(const char *path, const float *logits /* [N][V] */, int64_t N, int64_t V,
                    const char *model_dir, const char *tokens_path, const char *config,
                    char *err, size_t errlen);

#endif
