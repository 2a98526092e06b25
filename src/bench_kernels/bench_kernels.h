/* `replayssm bench kernels`: timings of the GPU SSM kernels on the paper's four shapes, each
 * configuration checked bit for bit against the CPU engine first (docs/bench-kernels.md). */
#ifndef RSSM_BENCH_KERNELS_BENCH_KERNELS_H
#define RSSM_BENCH_KERNELS_BENCH_KERNELS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* argv[0] is "kernels". Returns the exit status: 0 ran and every check passed, 1 a check failed
 * or a CUDA error, 2 bad usage or no CUDA device (one line on stderr). Only built with CUDA. */
int bench_kernels_main(int argc, char **argv);

/* Device helpers of the benchmark (bench_device.cu). */

/* dst = src (bytes, a multiple of 16, both 16-byte aligned) with a grid-stride float4 kernel. */
int bench_copy_kernel(void *dst, const void *src, size_t bytes, void *stream);

/* x[i] = lo + (hi - lo) u_i with u_i uniform in (0, 1) from a hash of (salt, i), on the device. */
int bench_fill_uniform(float *x, size_t n, unsigned salt, float lo, float hi, void *stream);

#ifdef __cplusplus
}
#endif
#endif
