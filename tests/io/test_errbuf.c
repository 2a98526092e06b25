/* rssm_fail (src/io/errbuf.h), the error-message helper of every library function: the message
 * is formatted, truncated to the buffer, always one line, and the return value is -1. */
#include <criterion/criterion.h>
#include <string.h>

#include "src/io/errbuf.h"

Test(errbuf, formats_and_returns_minus_one) {
  char e[64];
  cr_assert_eq(rssm_fail(e, sizeof e, "%s: field %s = %d", "config.json", "H", 7), -1);
  cr_assert_str_eq(e, "config.json: field H = 7");
}

Test(errbuf, line_breaks_from_quoted_values_become_spaces) {
  char e[64];
  rssm_fail(e, sizeof e, "bad name '%s'", "a\nb\r\nc");
  cr_assert_str_eq(e, "bad name 'a b  c'");
}

Test(errbuf, truncates_to_the_buffer_and_accepts_no_buffer) {
  char e[8];
  memset(e, 'x', sizeof e);
  rssm_fail(e, sizeof e, "%s", "0123456789");
  cr_assert_str_eq(e, "0123456");
  cr_assert_eq(rssm_fail(NULL, 0, "%d", 1), -1);
  e[0] = 'q';
  cr_assert_eq(rssm_fail(e, 0, "%d", 1), -1);
  cr_assert_eq(e[0], 'q', "a zero-length buffer is not written");
}
