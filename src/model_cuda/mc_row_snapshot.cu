/* A batch row's state as bytes (mc_model.h: mc_batch_row_bytes, _save, _load): an 8-byte tag, the
 * row's position, then its conv windows, SSM engine row and K/V cache rows below the position in
 * layer order: the rows of the GPU engine's resume state (src/decode/cuda_engine_state.c). */
#include <cuda_runtime.h>

#include <string.h>

#include "src/io/errbuf.h"
#include "src/model_cuda/mc_model.h"
#include "src/model_cuda/mc_model_internal.cuh"
#include "src/model_cuda/mc_ssm_rows.h"
#include "src/ssm_cuda/ssm_cuda.h"

using namespace mcm;

namespace {

const char ROW_TAG[8] = {'M', 'C', 'R', 'O', 'W', '0', '0', '1'};

/* The (device slice, bytes) pieces of row r after the 16-byte header, in file order; calls
 * f(dev_ptr, bytes, ssm_state or NULL, row in that state) for each. */
template <typename F> void row_pieces(const mc_batch *b, int r, F f) {
  const mc_model *g = b->g;
  const model_config *c = &g->cpu->cfg;
  const int64_t F32 = (int64_t)sizeof(float), kvd = c->n_kv_heads * c->head_dim;
  for (int i = 0; i < g->nblocks; i++) {
    const int kind = g->blocks[i].kind;
    if (kind == BK_GDN || kind == BK_MAMBA2) {
      const int64_t cd = conv_channels(c, kind), Kc = kind == BK_GDN ? c->gdn_kernel : c->m_kernel;
      const int64_t n = (Kc - 1) * cd * F32;
      f((unsigned char *)b->conv_win[i] + (int64_t)r * n, n, (ssm_cuda_state *)nullptr, 0);
      f((unsigned char *)nullptr, (int64_t)0, &b->eng[i][r / b->K], r % b->K);
    } else if (kind == BK_QATTN || kind == BK_NATTN) {
      /* K/V rows below the row's own position (a spec row's drafts above it are scratch) */
      const int64_t rp = b->spec ? b->rpos[r] : b->pos;
      const int64_t n = rp * kvd * F32, row = b->max_ctx * kvd * F32;
      f((unsigned char *)b->kc[i] + (int64_t)r * row, n, (ssm_cuda_state *)nullptr, 0);
      f((unsigned char *)b->vc[i] + (int64_t)r * row, n, (ssm_cuda_state *)nullptr, 0);
    }
  }
}

}  // namespace

extern "C" int64_t mc_batch_row_bytes(const mc_batch *b, int r) {
  /* per row: configurations differ in ring length and checkpoint formats */
  if (r < 0 || r >= b->R) return -1;
  int64_t total = 16;
  row_pieces(b, r, [&](unsigned char *, int64_t n, ssm_cuda_state *st, int) {
    total += st ? mc_ssm_row_bytes(st) : n;
  });
  return total;
}

extern "C" int mc_batch_row_save(const mc_batch *b, int r, void *buf, char *err, size_t errlen) {
  if (r < 0 || r >= b->R) return rssm_fail(err, errlen, "row %d of %d", r, b->R), RSSM_ERR_INPUT;
  unsigned char *p = (unsigned char *)buf;
  memcpy(p, ROW_TAG, 8);
  memcpy(p + 8, b->spec ? &b->rpos[r] : &b->pos, 8);
  p += 16;
  int ok = cudaStreamSynchronize(b->stream) == cudaSuccess;
  row_pieces(b, r, [&](unsigned char *dev, int64_t n, ssm_cuda_state *st, int row) {
    if (!ok) return;
    if (st) {
      ok = mc_ssm_row_save(st, row, p) == 0;
      p += mc_ssm_row_bytes(st);
    } else {
      ok = n == 0 || cudaMemcpy(p, dev, (size_t)n, cudaMemcpyDeviceToHost) == cudaSuccess;
      p += n;
    }
  });
  if (!ok)
    return rssm_fail(err, errlen, "GPU row %d: download failed (%s)", r,
                     cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  return RSSM_OK;
}

extern "C" int mc_batch_row_load(mc_batch *b, int r, const void *buf, int64_t len, char *err,
                                 size_t errlen) {
  const unsigned char *p = (const unsigned char *)buf;
  int64_t pos = -1;
  if (r < 0 || r >= b->R || len < 16 || memcmp(p, ROW_TAG, 8) != 0)
    return rssm_fail(err, errlen, "GPU row %d: not a GPU row state (wrong tag or size)", r),
           RSSM_ERR_INPUT;
  memcpy(&pos, p + 8, 8);
  if (pos < 0 || pos >= b->max_ctx)
    return rssm_fail(err, errlen, "GPU row %d: position %lld outside [0, %lld)", r, (long long)pos,
                     (long long)b->max_ctx),
           RSSM_ERR_INPUT;
  if (b->spec) {
    /* spec rows carry their own positions */
    const int64_t saved = b->rpos[r];
    b->rpos[r] = pos;
    if (len != mc_batch_row_bytes(b, r)) {
      b->rpos[r] = saved;
      return rssm_fail(err, errlen, "GPU row %d: %lld bytes (expected %lld at position %lld)",
                       r, (long long)len, (long long)mc_batch_row_bytes(b, r), (long long)pos),
             RSSM_ERR_INPUT;
    }
  }
  const int64_t saved = b->pos;
  if (!b->spec) b->pos = pos; /* the K/V sizes below depend on it */
  if (len != mc_batch_row_bytes(b, r)) {
    b->pos = saved;
    return rssm_fail(err, errlen, "GPU row %d: %lld bytes (expected %lld at position %lld)", r,
                     (long long)len, (long long)mc_batch_row_bytes(b, r), (long long)pos),
           RSSM_ERR_INPUT;
  }
  if (!b->spec && b->loaded_rows > 0 && pos != saved) {
    b->pos = saved;
    return rssm_fail(err, errlen,
                     "GPU row %d: position %lld, other rows are at %lld (rows advance "
                     "together)",
                     r, (long long)pos, (long long)saved),
           RSSM_ERR_INPUT;
  }
  b->loaded_rows++;
  p += 16;
  int ok = cudaStreamSynchronize(b->stream) == cudaSuccess;
  row_pieces(b, r, [&](unsigned char *dev, int64_t n, ssm_cuda_state *st, int row) {
    if (!ok) return;
    if (st) {
      ok = mc_ssm_row_load(st, row, p) == 0;
      p += mc_ssm_row_bytes(st);
    } else {
      ok = n == 0 || cudaMemcpy(dev, p, (size_t)n, cudaMemcpyHostToDevice) == cudaSuccess;
      p += n;
    }
  });
  /* a pageable H2D cudaMemcpy may return before its DMA lands, and the steps run on
   * non-blocking streams, which the legacy stream does not order: wait for the row */
  ok = ok && cudaDeviceSynchronize() == cudaSuccess;
  if (!ok)
    return rssm_fail(err, errlen, "GPU row %d: upload failed (%s)", r,
                     cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  return RSSM_OK;
}
