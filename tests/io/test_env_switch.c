/* rssm_env_switch (src/io/env_switch.h), the reader of the GPU runtime's A/B switches: a listed
 * value gives its index, an unset variable the caller's default, and any other value the default
 * plus one line on stderr naming the variable, the value and the values expected. */
#define _POSIX_C_SOURCE 200809L
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>

#include "src/io/env_switch.h"

static const char *const four_eight[] = {"4", "8"};

Test(env_switch, a_listed_value_gives_its_index) {
  setenv("RSSM_TEST_SWITCH", "8", 1);
  cr_assert_eq(rssm_env_switch("RSSM_TEST_SWITCH", four_eight, 2, -1), 1);
  setenv("RSSM_TEST_SWITCH", "4", 1);
  cr_assert_eq(rssm_env_switch("RSSM_TEST_SWITCH", four_eight, 2, -1), 0);
}

Test(env_switch, unset_gives_the_default) {
  unsetenv("RSSM_TEST_SWITCH");
  cr_assert_eq(rssm_env_switch("RSSM_TEST_SWITCH", four_eight, 2, 7), 7);
}

Test(env_switch, a_typo_gives_the_default_and_one_line, .init = cr_redirect_stderr) {
  setenv("RSSM_TEST_SWITCH", "16", 1);
  cr_assert_eq(rssm_env_switch("RSSM_TEST_SWITCH", four_eight, 2, -1), -1);
  fflush(stderr);
  cr_assert_stderr_eq_str("RSSM_TEST_SWITCH=16: expected 4 or 8; ignored\n");
}

Test(env_switch, three_values_are_listed_in_one_line, .init = cr_redirect_stderr) {
  static const char *const modes[] = {"0", "1", "staged"};
  setenv("RSSM_TEST_SWITCH", "on", 1);
  cr_assert_eq(rssm_env_switch("RSSM_TEST_SWITCH", modes, 3, 1), 1);
  fflush(stderr);
  cr_assert_stderr_eq_str("RSSM_TEST_SWITCH=on: expected 0, 1 or staged; ignored\n");
}
