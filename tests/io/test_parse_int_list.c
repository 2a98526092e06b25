/* rssm_parse_int_list (src/io/parse_num.h), the benchmarks' --rows, --positions and --batches
 * lists: every accepted form and every refusal, with the bounds and the item limit at their edges. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "src/io/parse_num.h"

Test(parse_int_list, accepts_lists_within_the_bounds) {
  int64_t v[4] = {0};
  cr_assert_eq(rssm_parse_int_list("16", 1, 64, v, 4), 1);
  cr_assert_eq(v[0], 16);
  cr_assert_eq(rssm_parse_int_list("1,7,64", 1, 64, v, 4), 3);
  cr_assert(v[0] == 1 && v[1] == 7 && v[2] == 64);
  /* 64-bit values and exactly max items */
  cr_assert_eq(rssm_parse_int_list("131072,4294967296,1,2", 1, INT64_C(1) << 40, v, 4), 4);
  cr_assert_eq(v[1], INT64_C(4294967296));
}

Test(parse_int_list, refuses_what_is_not_a_list_within_the_bounds) {
  int64_t v[4];
  const char *bad[] = {"", ",", "16,", ",16", "16,,32", "16;32", "16x", "abc", "0", "65", "-1",
                       "1,2,3,4,5", "99999999999999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_assert_eq(rssm_parse_int_list(bad[i], 1, 64, v, 4), -1, "'%s' accepted", bad[i]);
  cr_assert_eq(rssm_parse_int_list(NULL, 1, 64, v, 4), -1);
  cr_assert_eq(rssm_parse_int_list("1", 1, 64, v, 0), -1);
}
