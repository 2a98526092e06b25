/* One row of a batched GPU SSM state (src/ssm_cuda/ssm_cuda.h) to and from host bytes, for
 * checkpoints of GPU runs (docs/gpu-runtime.md, "The seam with the driver"). Uses only the
 * public struct: every per-row array is [B][...] with row b's slice contiguous, so a row is a
 * fixed list of slices. The fp32 scratch S is not state (a flush writes it before anything reads
 * it) and matrix_id is derived from the ids, so neither is saved.
 * Layout (host byte order; resumed by the same build on the same machine kind):
 *   i32 base, h, pending, flushed, flag, misuse | u64 nflush | u32 event[H] |
 *   f32 rec_alpha[cap][H] | rec_beta[cap][H] (GDN) | rec_x[cap][H][dv] | rec_v[cap][H][dv] (GDN)
 *   | rec_k[cap][G][dk] | main blob [H][bpm] | lp blob [H][bpm_lp] (split) */
#include <cuda_runtime.h>

#include <string.h>

#include "src/model_cuda/mc_ssm_rows.h"

namespace {

struct slice {
  unsigned char *dev; /* the row's slice on the device */
  size_t bytes;
};

/* The row's slices in file order; returns their count (at most 16). */
int row_slices(const ssm_cuda_state *st, int b, slice *out /* [16] */) {
  const size_t H = (size_t)st->dims.H, dv = (size_t)st->dims.dv, dk = (size_t)st->dims.dk,
               G = (size_t)st->dims.G, cap = (size_t)st->cap, r = (size_t)b;
  int n = 0;
  auto add = [&](void *base, size_t per_row) {
    if (base) out[n++] = slice{(unsigned char *)base + r * per_row, per_row};
  };
  add(st->base, sizeof(int));
  add(st->h, sizeof(int));
  add(st->pending, sizeof(int));
  add(st->flushed, sizeof(int));
  add(st->flag, sizeof(int));
  add(st->misuse, sizeof(int));
  add(st->nflush, sizeof(uint64_t));
  add(st->event, H * sizeof(uint32_t));
  add(st->rec_alpha, cap * H * sizeof(float));
  add(st->rec_beta, cap * H * sizeof(float));
  add(st->rec_x, cap * H * dv * sizeof(float));
  add(st->rec_v, cap * H * dv * sizeof(float));
  add(st->rec_k, cap * G * dk * sizeof(float));
  add(st->main.blob, H * (size_t)st->main.lay.bytes_per_matrix);
  add(st->lp.blob, H * (size_t)st->lp.lay.bytes_per_matrix);
  return n;
}

}  // namespace

extern "C" int64_t mc_ssm_row_bytes(const ssm_cuda_state *st) {
  slice s[16];
  const int n = row_slices(st, 0, s);
  int64_t total = 0;
  for (int i = 0; i < n; i++) total += (int64_t)s[i].bytes;
  return total;
}

extern "C" int mc_ssm_row_save(const ssm_cuda_state *st, int b, unsigned char *buf) {
  if (b < 0 || b >= st->B) return -1;
  slice s[16];
  const int n = row_slices(st, b, s);
  for (int i = 0; i < n; i++) {
    if (cudaMemcpy(buf, s[i].dev, s[i].bytes, cudaMemcpyDeviceToHost) != cudaSuccess) return -1;
    buf += s[i].bytes;
  }
  return 0;
}

extern "C" int mc_ssm_row_load(ssm_cuda_state *st, int b, const unsigned char *buf) {
  if (b < 0 || b >= st->B) return -1;
  slice s[16];
  const int n = row_slices(st, b, s);
  for (int i = 0; i < n; i++) {
    if (cudaMemcpy(s[i].dev, buf, s[i].bytes, cudaMemcpyHostToDevice) != cudaSuccess) return -1;
    buf += s[i].bytes;
  }
  return 0;
}
