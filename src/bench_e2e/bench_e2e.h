/* `replayssm bench e2e` (docs/gpu-runtime.md, "bench e2e"): end-to-end teacher-forced decoding
 * throughput of the GPU runtime, and the fraction of the memory-bandwidth limit it reaches.
 *
 * The command dispatcher (src/cli/cmd_bench.c) calls bench_e2e_main with the arguments after
 * `bench` (argv[0] = "e2e"). It is compiled into replayssm_core with or without CUDA (without,
 * it answers one line and exit status 2); targets linking replayssm_core see the compile
 * definition RSSM_HAVE_BENCH_E2E. Returns the process exit status: 0 ok, 2 bad input or no
 * usable device, 1 a CUDA or I/O failure. */
#ifndef RSSM_BENCH_E2E_H
#define RSSM_BENCH_E2E_H

int bench_e2e_main(int argc, char **argv);

#endif
