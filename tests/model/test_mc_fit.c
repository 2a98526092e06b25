/* src/model_cuda/mc_fit.c: the search for what fits in device memory and the one-line refusal
 * that names it (docs/gpu-runtime.md, "Memory budget"). The GPU path calls these with its own
 * estimate; here the need is a model of the same form: fixed bytes per 64-row tile plus bytes
 * per row and per row and position (the KV caches). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "src/model_cuda/mc_fit.h"

typedef struct {
  int64_t per_tile, per_row, per_row_pos, fixed_ctx; /* need(R, ctx) */
  int64_t R, ctx;                                   /* the one that is held */
  int by_rows;
  int calls;
} need_model;

static int64_t need_of(const need_model *m, int64_t R, int64_t ctx) {
  const int64_t tiles = (R + 63) / 64;
  return tiles * m->per_tile + R * m->per_row + R * ctx * m->per_row_pos + m->fixed_ctx * ctx;
}

static int64_t need_fn(void *p, int64_t n) {
  need_model *m = p;
  m->calls++;
  return m->by_rows ? need_of(m, n, m->ctx) : need_of(m, m->R, n);
}

/* Qwen3.5-4B-like: 64 KiB of K/V per row and position, 100 MiB of SSM state per row */
static need_model qwen_like(void) {
  need_model m = {.per_tile = 64 << 20, .per_row = 100 << 20, .per_row_pos = 65536,
                  .fixed_ctx = 128};
  return m;
}

Test(mc_fit, largest_is_exact_against_a_linear_scan) {
  need_model m = qwen_like();
  const int64_t budget = (int64_t)110 << 30;
  for (int64_t ctx = 1024; ctx <= 262144; ctx *= 4) {
    m.by_rows = 1;
    m.ctx = ctx;
    int64_t want = 0;
    for (int64_t R = 1; R <= 65535 && need_of(&m, R, ctx) <= budget; R++) want = R;
    m.calls = 0;
    int64_t got = mc_fit_largest(need_fn, &m, 1, 65535, budget);
    cr_expect_eq(got, want, "ctx %lld: %lld rows (expected %lld)", (long long)ctx,
                 (long long)got, (long long)want);
    cr_expect(m.calls <= 20, "%d calls", m.calls);
    /* the answer fits and one more does not */
    cr_expect(need_of(&m, got, ctx) <= budget);
    if (got < 65535) cr_expect(need_of(&m, got + 1, ctx) > budget);
  }
}

Test(mc_fit, nothing_fits_and_everything_fits) {
  need_model m = qwen_like();
  m.by_rows = 1;
  m.ctx = 131072;
  cr_expect_eq(mc_fit_largest(need_fn, &m, 1, 65535, 1000), 0, "nothing fits: lo - 1");
  cr_expect_eq(mc_fit_largest(need_fn, &m, 1, 65535, INT64_MAX / 4), 65535, "all fit: hi");
  cr_expect_eq(mc_fit_largest(need_fn, &m, 5, 4, INT64_MAX / 4), 4, "empty range: lo - 1");
  /* positions up to 2^31 - 1 for a few rows: 64-bit products throughout */
  m.by_rows = 0;
  m.R = 36;
  const int64_t budget = (int64_t)139 << 30;
  int64_t ctx = mc_fit_largest(need_fn, &m, 1, INT32_MAX, budget);
  cr_expect(ctx > 0 && need_of(&m, 36, ctx) <= budget && need_of(&m, 36, ctx + 1) > budget,
            "ctx %lld", (long long)ctx);
}

Test(mc_fit, message_names_rows_windows_and_length) {
  char buf[600];
  /* the paper's run: 9 configurations x 4 windows = 36 rows at 131072 positions */
  mc_fit_message(buf, sizeof buf, (int64_t)290 << 30, 36, 9, 131072, (int64_t)120 << 30, 14,
                 53000);
  cr_expect(strstr(buf, "needs 290.0 GiB of device memory for 36 rows at 131072 positions"), "%s",
            buf);
  cr_expect(strstr(buf, "120.0 GiB free"), "%s", buf);
  cr_expect(strstr(buf, "at most 14 rows fit at 131072 positions (1 window of the 9 "
                        "configurations"), "%s", buf);
  cr_expect(strstr(buf, "the 36 rows fit at most 53000 positions"), "%s", buf);
  cr_expect(strchr(buf, '\n') == NULL, "one line: %s", buf);
  mc_fit_message(buf, sizeof buf, 100, 36, 9, 131072, 50, 27, 0);
  cr_expect(strstr(buf, "(3 windows of the 9"), "%s", buf);
  cr_expect(strstr(buf, "do not fit at any length"), "%s", buf);
  /* fewer rows than one window's configurations */
  mc_fit_message(buf, sizeof buf, 100, 36, 9, 131072, 50, 5, 10);
  cr_expect(strstr(buf, "at most 5 rows fit") && strstr(buf, "less than one window"), "%s", buf);
  mc_fit_message(buf, sizeof buf, 100, 36, 9, 131072, 50, 0, 0);
  cr_expect(strstr(buf, "not even one row fits"), "%s", buf);
  /* a short buffer is cut, never overrun */
  char small[24];
  memset(small, 'x', sizeof small);
  mc_fit_message(small, 16, 100, 36, 9, 131072, 50, 14, 10);
  cr_expect(strlen(small) == 15 && small[16] == 'x', "%s", small);
}
