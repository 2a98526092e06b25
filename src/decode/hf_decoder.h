/* The model runtime as a backend of the driver's decoder interface (src/decode/decoder.h): a
 * Hugging Face model directory opened once (weights shared read-only by every decoder), one
 * decoder per (sequence, configuration), each a model_state.
 *
 *   step(x)        -> model_forward(1) + model_commit(1)      (conventional, replay)
 *   step_many (model op) -> model_forward_many over the decoders' states (n = 1), commit(1) each
 *   verify(x[0..T)) -> model_forward(T), then commit(a) -> model_commit(a)   (spec)
 *   state_bytes/save/load -> model_state_* plus src/ssm/ssm_snapshot for every SSM engine
 *
 * The checksum is "crc32:XXXXXXXX" over config.json followed by every safetensors file (in the
 * loader's order), so it identifies the exact bytes the weights came from. */
#ifndef RSSM_DECODE_HF_DECODER_H
#define RSSM_DECODE_HF_DECODER_H

#include <stddef.h>

#include "src/decode/decoder.h"
#include "src/model/model.h"

/* Returns RSSM_OK, RSSM_ERR_INPUT (not a loadable model directory) or RSSM_ERR_IO. */
int hf_model_open(const char *dir, rssm_model **out, char *err, size_t errlen);

/* The model runtime's model behind m when m was opened by hf_model_open, else NULL (a toy
 * model): what the GPU engine uploads (cuda_engine.c). */
const model *hf_model_of(const rssm_model *m);

#endif
