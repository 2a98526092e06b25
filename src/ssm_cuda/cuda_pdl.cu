/* The switch of cuda_pdl.h: Programmatic Dependent Launch unless RSSM_PDL=0 (on since the H100
 * runs of 2026-12-06 showed whole runs bit-identical with and without it and fixture steps 4.4-6 %
 * faster: docs/gpu-results.md, "Session 29"). Read once (a function-local static: initialised
 * once even with several host threads), so that every launch of a run, and of the graphs it
 * captures, is launched alike. */
#include "src/ssm_cuda/cuda_pdl.h"

#include "src/io/env_switch.h"

extern "C" int rssm_pdl_enabled(void) {
  static const char *const off_on[] = {"0", "1"};
  static const int enabled = rssm_env_switch("RSSM_PDL", off_on, 2, 1) != 0;
  return enabled;
}
