/* `replayssm logits --device cuda` (docs/gpu-runtime.md): the CPU-loaded model decoded on the
 * GPU as a batch of one row (one configuration, one window). Built with or without CUDA, so that
 * the command's hook is the same either way; without CUDA it refuses (exit status 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/status.h"
#include "src/model_cuda/mc_model.h"

int mc_logits_decode(const model *m, const ssm_config *cfg, uint64_t seed,
                     const int64_t *tok /* [N] */, int64_t N, float *out /* [N][V] */, char *err,
                     size_t errlen) {
  if (mc_device_check(err, errlen) != 0) return RSSM_ERR_INPUT;
#ifndef RSSM_HAVE_CUDA
  (void)m, (void)cfg, (void)seed, (void)tok, (void)N, (void)out;
  return RSSM_ERR_INPUT;
#else
  mc_model *g = NULL;
  mc_batch *b = NULL;
  const uint32_t seq = 0; /* as the CPU command: sequence 0 */
  int rc = mc_model_upload(m, &g, err, errlen);
  if (rc == RSSM_OK) rc = mc_batch_build(&b, g, cfg, 1, 1, seed, &seq, N, err, errlen);
  /* one CUDA Graph per step (bit-identical to launching, checked on the H200); RSSM_CUDA_GRAPH=0
   * launches kernel by kernel, for debugging and RSSM_CUDA_PROFILE */
  const char *graph = getenv("RSSM_CUDA_GRAPH");
  if (rc == RSSM_OK && !(graph && strcmp(graph, "0") == 0)) mc_batch_use_graph(b, 1);
  for (int64_t t = 0; rc == RSSM_OK && t < N; t++)
    rc = mc_batch_step(b, &tok[t], NULL, out + t * m->cfg.V, NULL, err, errlen);
  mc_batch_free(b);
  mc_model_free(g);
  return rc;
#endif
}
