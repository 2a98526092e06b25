/* `replayssm bench SUBCOMMAND`: benchmarks. `bench kernels` times the GPU SSM kernels
 * (src/bench_kernels, docs/bench-kernels.md); `bench e2e` is the end-to-end decode benchmark
 * (src/bench_e2e, built when that directory defines RSSM_HAVE_BENCH_E2E); `bench attention` and
 * `bench gemm` the attention and small-GEMM labs (docs/bench-attention.md, docs/bench-gemm.md).
 * All need a CUDA device: without one, or in a build without CUDA, they print one line and exit
 * with status 2. */
#include <stdio.h>
#include <string.h>

#include "src/io/cli_opts.h"
#include "src/cli/commands.h"

#include "src/bench_attn/bench_attn.h"
#include "src/bench_gemm/bench_gemm.h"
#ifdef RSSM_HAVE_CUDA
#include "src/bench_kernels/bench_kernels.h"
#endif

static void print_help(FILE *f) {
  fprintf(f,
          "usage: replayssm bench kernels [options]   GPU SSM kernels on the paper's shapes\n"
          "       replayssm bench e2e [options]       end-to-end decoding\n"
          "       replayssm bench attention [options] attention decode against the position\n"
          "       replayssm bench gemm [options]      the GEMMs of a decode step, small-GEMM lab\n"
          "       replayssm bench SUBCOMMAND --help\n"
          "\n"
          "All need a CUDA device; see docs/bench-kernels.md, docs/bench-attention.md and\n"
          "docs/bench-gemm.md.\n");
}

int cmd_bench(int argc, char **argv) {
  if (argc < 2) {
    cli_error("bench", "missing subcommand (expected kernels, e2e, attention or gemm; see replayssm bench --help)");
    return 2;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
    print_help(stdout);
    return 0;
  }
  if (strcmp(sub, "kernels") == 0) {
#ifdef RSSM_HAVE_CUDA
    return bench_kernels_main(argc - 1, argv + 1);
#else
    for (int i = 2; i < argc; i++)
      if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
        printf("replayssm bench kernels: needs a build with CUDA (docs/bench-kernels.md)\n");
        return 0;
      }
    cli_error("bench kernels", "this replayssm was built without CUDA (rebuild with nvcc available "
              "and -DRSSM_CUDA=ON)");
    return 2;
#endif
  }
  if (strcmp(sub, "e2e") == 0) {
#ifdef RSSM_HAVE_BENCH_E2E
    return bench_e2e_main(argc - 1, argv + 1);
#else
    cli_error("bench e2e", "not built");
    return 2;
#endif
  }
  if (strcmp(sub, "attention") == 0) return bench_attn_main(argc - 1, argv + 1); /* docs/bench-attention.md */
  if (strcmp(sub, "gemm") == 0) return bench_gemm_main(argc - 1, argv + 1);      /* docs/bench-gemm.md */
  cli_error("bench", "unknown subcommand '%s' (expected kernels, e2e, attention or gemm)", sub);
  return 2;
}
