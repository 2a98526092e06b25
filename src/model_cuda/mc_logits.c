/* `replayssm logits --device cuda` (docs/gpu-runtime.md): the CPU-loaded model decoded on the
 * GPU as a batch of one row (one configuration, one window; a spec configuration in rounds). Built with or without CUDA, so that
 * the command's hook is the same either way; without CUDA it refuses (exit status 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/status.h"
#include "src/model_cuda/mc_model.h"
#include "src/ssm/ssm_accept.h"

#ifdef RSSM_HAVE_CUDA
/* A spec configuration as the CPU command decodes it (cmd_logits.c, decode_cpu): rounds of T
 * teacher-forced drafts (past the end the last token repeated), a = ssm_accept_draw(cfg, seed,
 * 0, round) accepted, the accepted positions' logits kept. One spec batch of one row. */
static int decode_spec(const model *m, const ssm_config *cfg, uint64_t seed,
                       const int64_t *tok /* [N] */, int64_t N, float *out /* [N][V] */,
                       char *err, size_t errlen) {
  const int T = cfg->T;
  const int64_t V = m->cfg.V;
  mc_model *g = NULL;
  mc_batch *b = NULL;
  const uint32_t seq = 0;
  int64_t *drafts = malloc((size_t)T * sizeof(int64_t)); /* [T] */
  float *buf = malloc((size_t)T * (size_t)V * sizeof(float)); /* [T][V] */
  int rc = drafts && buf ? RSSM_OK : RSSM_ERR_IO;
  if (rc != RSSM_OK) snprintf(err, errlen, "out of host memory");
  if (rc == RSSM_OK) rc = mc_model_upload(m, &g, err, errlen);
  if (rc == RSSM_OK) rc = mc_batch_build_spec(&b, g, cfg, 1, 1, seed, &seq, N + T, err, errlen);
  int64_t done = 0;
  uint32_t round = 0;
  while (rc == RSSM_OK && done < N) {
    for (int t = 0; t < T; t++) drafts[t] = tok[done + t < N ? done + t : N - 1];
    int a = ssm_accept_draw(cfg, seed, 0, round++);
    if (a < 1 || a > T) a = T;
    rc = mc_batch_spec_round(b, NULL, drafts, drafts, &a, NULL, err, errlen);
    if (rc == RSSM_OK) rc = mc_batch_spec_logits(b, buf, err, errlen);
    const int64_t keep = N - done < a ? N - done : a;
    if (rc == RSSM_OK) memcpy(out + done * V, buf, (size_t)(keep * V) * sizeof(float));
    done += keep;
  }
  mc_batch_free(b);
  mc_model_free(g);
  free(drafts);
  free(buf);
  return rc;
}
#endif

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
  if (cfg->strategy == SSM_SPEC) return decode_spec(m, cfg, seed, tok, N, out, err, errlen);
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
