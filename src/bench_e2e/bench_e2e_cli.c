/* replayssm_bench_e2e: `replayssm bench e2e` as a program of its own (the same bench_e2e_main),
 * for machines where the replayssm binary at hand predates the `bench` dispatcher. */
#include <hdf5.h>

#include "src/bench_e2e/bench_e2e.h"

int main(int argc, char **argv) {
  H5dont_atexit(); /* as replayssm's main: no HDF5 exit-time cleanup (docs/reliability.md) */
  return bench_e2e_main(argc, argv);
}
