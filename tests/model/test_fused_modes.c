/* mc_fused_norms (src/model_cuda/mc_fused.h): which of the norm modes a step uses, from
 * RSSM_FUSED_NORMS or mc_fused_norms_set. No device is needed: the choice is host code. Each test
 * runs in its own process (Criterion), so the variable and the cached mode start fresh. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "src/model_cuda/mc_fused.h"

/* the mode RSSM_FUSED_NORMS=value gives (NULL: unset), read afresh */
static int mode_of(const char *value) {
  if (value)
    setenv("RSSM_FUSED_NORMS", value, 1);
  else
    unsetenv("RSSM_FUSED_NORMS");
  mc_fused_norms_set(-1);
  return mc_fused_norms();
}

Test(fused_modes, the_variable_names_the_mode) {
  cr_assert_eq(mode_of(NULL), MC_NORMS_DEFAULT, "unset: the default");
  cr_assert_eq(mode_of("0"), MC_NORMS_PLAIN);
  cr_assert_eq(mode_of("staged"), MC_NORMS_STAGED);
  cr_assert_eq(mode_of("1"), MC_NORMS_PLAIN, "an unknown value is plain, never a guess (\"1\" named a removed mode)");
  cr_assert_eq(mode_of("2"), MC_NORMS_PLAIN);
  cr_assert_eq(mode_of("Staged"), MC_NORMS_PLAIN);
  cr_assert_eq(mode_of(""), MC_NORMS_PLAIN);
}

Test(fused_modes, read_once_then_kept) {
  cr_assert_eq(mode_of("staged"), MC_NORMS_STAGED);
  setenv("RSSM_FUSED_NORMS", "0", 1); /* a change after the first call is not seen */
  cr_assert_eq(mc_fused_norms(), MC_NORMS_STAGED);
}

Test(fused_modes, the_setter_overrides_the_variable) {
  cr_assert_eq(mode_of("0"), MC_NORMS_PLAIN);
  mc_fused_norms_set(MC_NORMS_STAGED);
  cr_assert_eq(mc_fused_norms(), MC_NORMS_STAGED);
  mc_fused_norms_set(MC_NORMS_PLAIN);
  cr_assert_eq(mc_fused_norms(), MC_NORMS_PLAIN);
  mc_fused_norms_set(7); /* no such mode */
  cr_assert_eq(mc_fused_norms(), MC_NORMS_PLAIN);
  mc_fused_norms_set(-1); /* forget: the variable again */
  setenv("RSSM_FUSED_NORMS", "staged", 1);
  cr_assert_eq(mc_fused_norms(), MC_NORMS_STAGED);
}
