/* The reference bandwidth of the benchmarks ("% of copy"): a 1 GiB device-to-device copy timed
 * with CUDA events, by a float4 grid-stride kernel and by cudaMemcpyAsync, reads + writes; and
 * a device fill for large random timing inputs. Shared by `bench kernels` and `bench attention`
 * (src/bench_kernels, src/bench_attn: one layer up, so the helpers live here). CUDA builds only. */
#ifndef RSSM_MODEL_CUDA_MC_BANDWIDTH_H
#define RSSM_MODEL_CUDA_MC_BANDWIDTH_H

#include <stddef.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dst = src (bytes, a multiple of 16, both 16-byte aligned) with a grid-stride float4 kernel. */
int mc_copy_kernel(void *dst, const void *src, size_t bytes, void *stream);

/* Reads src (bytes, a multiple of 16, 16-byte aligned) and stores nothing to *sink unless the data
 * sums to an impossible value: an L2 flush before a timed read that leaves no dirty lines (a
 * memset's would be written back during the timed interval). */
int mc_read_kernel(const void *src, size_t bytes, float *sink, void *stream);

/* x[i] = lo + (hi - lo) u_i with u_i uniform in (0, 1) (never 0 or 1) from a hash of (salt, i),
 * on the device. */
int mc_fill_uniform(float *x, size_t n, unsigned salt, float lo, float hi, void *stream);

/* Median over `iters` (after 3 warm-up) of each way of copying 1 GiB: *kernel_gbps and
 * *memcpy_gbps (2 x bytes / time); returns the larger, or -1 on a CUDA error (nothing printed). */
double mc_copy_bandwidth(int iters, double *kernel_gbps, double *memcpy_gbps);

/* The benchmarks' start: device 0's properties into *prop and the time now (UTC) into date.
 * Returns 0; 2 with one line (cli_error of cmd) when there is no CUDA device; 1 with one line
 * when its properties cannot be read. */
int mc_bench_device(const char *cmd, struct cudaDeviceProp *prop, char *date /* [datelen] */,
                    size_t datelen);

/* The copy bandwidth as both benchmarks print it (one line: kernel, cudaMemcpy and the larger, the
 * reference), or one line (cli_error of cmd) and -1 on a CUDA error. */
double mc_bench_copy_line(const char *cmd, int iters);

/* One launch that a benchmark times: 0, or non-zero for a launch failure (nothing printed). */
typedef int (*mc_bench_launch)(void *ctx);

/* Median microseconds of launch(ctx) over `reps` timed calls (reps >= 1) after `warmup` untimed
 * ones, each call preceded by an L2 flush when flush is not NULL (mc_read_kernel over
 * flush[flush_bytes], its sink just past them) and bracketed by events e0 and e1 on the default
 * stream. Returns -1 after one line (cli_error of cmd, naming `what`) on an allocation, flush,
 * launch or CUDA error. Shared by `bench gemm` and `bench attention`. */
double mc_bench_median_us(const char *cmd, const char *what, mc_bench_launch launch, void *ctx,
                          int warmup, int reps, void *flush, size_t flush_bytes, cudaEvent_t e0,
                          cudaEvent_t e1);

#ifdef __cplusplus
}
#endif
#endif
