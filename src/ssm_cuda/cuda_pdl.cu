/* The switch of cuda_pdl.h: Programmatic Dependent Launch unless RSSM_PDL=0 (on since the H100
 * runs of 2026-12-06 showed whole runs bit-identical with and without it and fixture steps 4.4-6 %
 * faster: docs/gpu-results.md, "Session 29"). Read once (a function-local static: initialised
 * once even with several host threads), so that every launch of a run, and of the graphs it
 * captures, is launched alike. */
#include <stdlib.h>
#include <string.h>

#include "src/ssm_cuda/cuda_pdl.h"

namespace {
int read_switch() {
  const char *v = getenv("RSSM_PDL");
  return !(v && strcmp(v, "0") == 0);
}
}  // namespace

extern "C" int rssm_pdl_enabled(void) {
  static const int enabled = read_switch();
  return enabled;
}
