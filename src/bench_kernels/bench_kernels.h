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

/* The copy bandwidth and the device fill are src/model_cuda/mc_bandwidth.h (shared with
 * `bench attention`). */

#ifdef __cplusplus
}
#endif
#endif
