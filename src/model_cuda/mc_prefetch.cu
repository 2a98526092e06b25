/* The L2 prefetch kernel (mc_prefetch.h): thread r asks L2 for the first `span` bytes of weight
 * row r with one bulk prefetch (sm_90's cp.async.bulk.prefetch.L2: the copy engine fetches the
 * range, the thread does not wait). Launched plainly on a side stream forked from the step's
 * stream: it reads only weights, which no kernel writes during a decode, and writes nothing. */
#include <cuda_runtime.h>

#include "src/model_cuda/mc_device.cuh"
#include "src/model_cuda/mc_prefetch.h"

namespace {

constexpr int PREFETCH_THREADS = 256;

__global__ void l2_prefetch_kernel(const char *W /* [rows][row_bytes] */, int64_t rows,
                                   int64_t row_bytes, uint32_t span) {
  const int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (r >= rows) return;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(W + r * row_bytes), "r"(span)
               : "memory");
#endif
}

}  // namespace

extern "C" int mc_l2_prefetch(const void *W, int64_t rows, int64_t row_bytes, int64_t span,
                              void *stream) {
  if (!W || rows <= 0 || span <= 0 || span > row_bytes || span % 16 != 0 || row_bytes % 16 != 0 ||
      (uintptr_t)W % 16 != 0 || span > UINT32_MAX)
    return -1;
  const unsigned blocks = mc::blocks_for(rows, PREFETCH_THREADS);
  l2_prefetch_kernel<<<blocks, PREFETCH_THREADS, 0, mc::as_stream(stream)>>>(
      static_cast<const char *>(W), rows, row_bytes, (uint32_t)span);
  return mc::launch_ok();
}
