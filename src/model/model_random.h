/* A model with random weights built from a config.json alone (no safetensors), for benchmarks at
 * the shapes of real checkpoints (data/shapes/, docs/gpu-runtime.md "bench e2e").
 *
 * The result is an ordinary `model` (model.h): same arrays, same shapes and layouts as
 * model_load would produce for that config, each array malloc'ed on its own, so model_free
 * releases it. Values (deterministic in seed, independent of the thread count):
 *   - projection, embedding, router and expert matrices: uniform on [-a, a] with a = 0.02 sqrt(3)
 *     (standard deviation 0.02, the transformers initializer_range of both families);
 *   - RMSNorm weights: the identity (0 for Qwen's (1+w) norms, 1 for plain-w norms);
 *   - conv1d weights uniform on [-1/sqrt(K), 1/sqrt(K)] (PyTorch's default for a depthwise conv),
 *     conv bias 0; Mamba-2 D = 1;
 *   - A_log = log(A) with A uniform on [1, 16]; dt_bias = softplus^-1(dt) with dt log-uniform on
 *     [0.001, 0.1] (the transformers initialisation of both SSM mixers), so the decays stay in
 *     (0, 1) and the states bounded;
 *   - MoE correction bias 0.
 * With standard deviation 0.02 a projection of a unit-RMS input has output RMS 0.02 sqrt(cols)
 * (~1 at H = 2560), so activations stay O(1) through the depth of the 4B shapes.
 *
 * The generator is counter based (value i of array j is splitmix64(seed, j, i)), filled by
 * `threads` POSIX threads in chunks: about 1 ns per value per thread. */
#ifndef RSSM_MODEL_MODEL_RANDOM_H
#define RSSM_MODEL_MODEL_RANDOM_H

#include <stddef.h>
#include <stdint.h>

#include "src/model/model.h"

/* Builds m from config_dir/config.json (model_config_load) with random weights. threads <= 0:
 * one per online CPU (at most 64). Returns RSSM_OK, RSSM_ERR_INPUT (bad config) or RSSM_ERR_IO
 * (out of host memory, naming the bytes), with one line in err. m->dir is "random:<dir>". */
int model_random_build(const char *config_dir, uint64_t seed, int threads, model *m, char *err,
                       size_t errlen);

/* Floats model_random_build would allocate for this config (the fp32 weights: 4 bytes each),
 * so that callers can check host memory first. */
int64_t model_random_floats(const model_config *c);

#endif
