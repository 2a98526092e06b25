/* The abstract decoder the experiment driver runs (docs/driver.md, "Decoder interface").
 *
 * A model is opened once (weights shared, read-only, by every decoder and thread); a decoder is
 * one sequence decoded under one SSM configuration. The driver never looks inside either: it
 * feeds ground-truth tokens and reads logits, so any backend (the toy model of toy_model.c, the
 * CPU model runtime of src/model, a CUDA runtime) plugs in through these two vtables.
 *
 * Decoding (teacher forcing, SPEC section 2):
 *   conventional / replay: step(x_t) -> logits of step t, once per token;
 *   spec:                  verify(x_t .. x_{t+T-1}) -> logits [T][V], then commit(a), 1 <= a <= T:
 *                          the first a positions are kept, the rest are overwritten by the next
 *                          round (the driver records only the first a rows).
 * State (resume): state_bytes() is the exact size of save()'s output, which must hold everything
 * a later load() needs to continue bit-identically (SSM checkpoints and records, KV caches, conv
 * windows, counters); load() accepts only what save() of a decoder opened with the same model and
 * parameters produced. A decoder is used by one thread at a time.
 *
 * Errors: functions return RSSM_OK, RSSM_ERR_INPUT (bad token, wrong use) or RSSM_ERR_IO (out of
 * memory, internal), with one line in err. Non-finite logits are not an error: the driver
 * detects them. */
#ifndef RSSM_DECODE_DECODER_H
#define RSSM_DECODE_DECODER_H

#include <stddef.h>
#include <stdint.h>

#include "src/ssm/ssm_config.h"

typedef struct rssm_model rssm_model;
typedef struct rssm_decoder rssm_decoder;

/* What one decoder is for. */
typedef struct {
  const ssm_config *cfg; /* the SSM strategy of every SSM layer (copied by open) */
  uint64_t seed;         /* the run's seed: stochastic rounding (SPEC section 4) */
  uint32_t sequence;     /* global sequence index (the same in every shard) */
  int64_t max_ctx;       /* the most positions it will be fed (KV capacity): steps + T */
} rssm_decoder_params;

typedef struct {
  int (*open)(const rssm_model *m, const rssm_decoder_params *p, rssm_decoder **out, char *err,
              size_t errlen);
  void (*close)(rssm_model *m);
  /* Optional (NULL: the driver steps decoders one at a time). Steps n distinct non-spec decoders
   * opened from m together: the same as d[i]->ops->step(d[i], tokens[i], logits[i], ...) for
   * every i < n, bit for bit, but a backend can share work between them (the CPU model runtime
   * reads each weight row once for all of them). On an error, *failed is the index of the
   * decoder concerned, and the decoders must not be used further (the run stops). */
  int (*step_many)(const rssm_model *m, rssm_decoder *const *d /* [n] */, int n,
                   const int64_t *tokens /* [n] */, float *const *logits /* [n] -> [V] */,
                   int *failed, char *err, size_t errlen);
  /* Optional (NULL: the backend has no threads of its own). The threads the backend may use
   * inside one call (the CPU model runtime's matrix-vector products); results do not depend on
   * it. */
  void (*set_threads)(rssm_model *m, int threads);
} rssm_model_ops;

struct rssm_model {
  const rssm_model_ops *ops;
  int64_t vocab;          /* V: logits per position, the real vocabulary (SPEC section 5) */
  int64_t vocab_rows;     /* rows of the output layer, padding included (>= vocab) */
  char checksum[64];      /* identifies the weights in output files, e.g. "crc32:1a2b3c4d" */
  char description[256];  /* one line for the effective-experiment printout */
  int gdn_layers;         /* layers with a GDN state (keys such as gdn_u apply to them only) */
  void *impl;
};

typedef struct {
  int (*step)(rssm_decoder *d, int64_t token, float *logits /* [V] */, char *err, size_t errlen);
  int (*verify)(rssm_decoder *d, const int64_t *tokens /* [n] */, int n,
                float *logits /* [n][V] */, char *err, size_t errlen);
  int (*commit)(rssm_decoder *d, int a, char *err, size_t errlen);
  int64_t (*state_bytes)(const rssm_decoder *d);
  int (*save)(const rssm_decoder *d, void *buf /* [state_bytes] */, char *err, size_t errlen);
  int (*load)(rssm_decoder *d, const void *buf /* [len] */, int64_t len, char *err,
              size_t errlen);
  void (*free)(rssm_decoder *d);
} rssm_decoder_ops;

struct rssm_decoder {
  const rssm_decoder_ops *ops;
  int64_t vocab;
  int T;          /* spec: drafts per verify; 0 otherwise */
  void *impl;
};

/* Opens a model by name: "toy:gdn", "toy:mamba2" (optionally ":SEED", e.g. "toy:gdn:7"), or a
 * Hugging Face directory (the CPU model runtime, src/decode/hf_decoder.h). Returns RSSM_OK,
 * RSSM_ERR_INPUT (unknown toy, missing path, not loadable) or RSSM_ERR_IO. */
int rssm_model_open(const char *name, rssm_model **out, char *err, size_t errlen);
void rssm_model_close(rssm_model *m);

static inline int rssm_decoder_open(const rssm_model *m, const rssm_decoder_params *p,
                                    rssm_decoder **out, char *err, size_t errlen) {
  return m->ops->open(m, p, out, err, errlen);
}
static inline void rssm_model_set_threads(rssm_model *m, int threads) {
  if (m->ops->set_threads) m->ops->set_threads(m, threads);
}
static inline void rssm_decoder_free(rssm_decoder *d) {
  if (d) d->ops->free(d);
}

#endif
