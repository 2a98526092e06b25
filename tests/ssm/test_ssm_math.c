/* The reduction order of ssm_math.h (which the CUDA kernels mirror) and the acceptance model. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "src/ssm/ssm_accept.h"
#include "src/ssm/ssm_math.h"

/* A sequential sum would give 1 here (1e8 - 1e8 + 1); the warp-32 order puts 1e8 and 1 in lane 0
 * (1e8 + 1 rounds to 1e8 in fp32) and -1e8 in lane 1, so the butterfly gives exactly 0. */
Test(ssm_math, dot_uses_the_warp32_order) {
  float a[40] = {0}, b[40];
  for (int i = 0; i < 40; i++) b[i] = 1.0f;
  a[0] = 1e8f;
  a[1] = -1e8f;
  a[32] = 1.0f;
  cr_assert_eq(rssm_dot_w32(a, b, 40), 0.0f);
  float seq = 0.0f;
  for (int i = 0; i < 40; i++) seq = seq + a[i] * b[i];
  cr_assert_eq(seq, 1.0f, "the check above needs a case where the orders differ");
}

/* The butterfly pairs lane l with l^16 first: lanes 0 and 16 cancel before lane 1 joins. */
Test(ssm_math, dot_butterfly_pairs) {
  float a[32] = {0}, b[32];
  for (int i = 0; i < 32; i++) b[i] = 1.0f;
  a[0] = 1e8f;
  a[16] = -1e8f;
  a[1] = 1.0f;
  cr_assert_eq(rssm_dot_w32(a, b, 32), 1.0f);
  /* pairwise over ascending neighbours (0+1, then +16) would lose the 1 */
  cr_assert_eq((a[0] + a[1]) + a[16], 0.0f);
}

Test(ssm_math, dot_is_accurate_and_handles_short_rows) {
  float a[100], b[100];
  for (int n = 1; n <= 100; n++) {
    double ref = 0.0;
    for (int i = 0; i < n; i++) {
      a[i] = (float)sin(0.37 * i + 1.0);
      b[i] = (float)cos(0.11 * i * i);
      ref += (double)a[i] * b[i];
    }
    float got = rssm_dot_w32(a, b, n);
    cr_assert_leq(fabs(got - ref), 1e-5 * (1.0 + fabs(ref)), "n=%d: %g vs %g", n, got, ref);
  }
}

Test(ssm_math, decay_weights_are_suffix_products) {
  float alpha[4] = {0.5f, 0.25f, 0.75f, 0.125f}, w[5];
  rssm_decay_weights(alpha, 4, w);
  cr_assert_eq(w[4], 1.0f);
  cr_assert_eq(w[3], 0.125f);          /* gamma_{4:4} */
  cr_assert_eq(w[2], 0.125f * 0.75f);  /* gamma_{3:4} */
  cr_assert_eq(w[0], 0.125f * 0.75f * 0.25f * 0.5f);
}

static ssm_config spec_cfg(const char *text) {
  ssm_config c;
  char err[200];
  cr_assert_eq(ssm_config_parse(text, &c, err, sizeof err), 0, "%s", err);
  return c;
}

Test(ssm_accept, fixed_is_fixed_and_draws_are_reproducible) {
  ssm_config f = spec_cfg("spec T=4 accept=fixed:3"), u = spec_cfg("spec T=4 accept=uniform");
  for (uint32_t r = 0; r < 100; r++) {
    cr_assert_eq(ssm_accept_draw(&f, 1, 0, r), 3);
    cr_assert_eq(ssm_accept_draw(&u, 99, 5, r), ssm_accept_draw(&u, 99, 5, r));
  }
  /* another seed or sequence gives another stream */
  int differ_seed = 0, differ_seq = 0;
  for (uint32_t r = 0; r < 100; r++) {
    differ_seed += ssm_accept_draw(&u, 99, 5, r) != ssm_accept_draw(&u, 100, 5, r);
    differ_seq += ssm_accept_draw(&u, 99, 5, r) != ssm_accept_draw(&u, 99, 6, r);
  }
  cr_assert_gt(differ_seed, 30);
  cr_assert_gt(differ_seq, 30);
}

/* Frequencies within 5 standard errors of the model's probabilities over 40000 rounds. */
static void check_distribution(const char *text, const double *p /* [T] */) {
  ssm_config c = spec_cfg(text);
  enum { R = 40000 };
  int count[9] = {0};
  for (uint32_t r = 0; r < R; r++) {
    int a = ssm_accept_draw(&c, 2024, 1, r);
    cr_assert(a >= 1 && a <= c.T, "%s: a=%d", text, a);
    count[a]++;
  }
  for (int a = 1; a <= c.T; a++) {
    double f = (double)count[a] / R, se = sqrt(p[a - 1] * (1 - p[a - 1]) / R) + 1e-12;
    cr_assert_leq(fabs(f - p[a - 1]), 5 * se, "%s: P(a=%d) = %.4f, expected %.4f", text, a, f,
                  p[a - 1]);
  }
}

Test(ssm_accept, uniform_and_geometric_distributions) {
  double pu[4] = {0.25, 0.25, 0.25, 0.25};
  check_distribution("spec T=4 accept=uniform", pu);
  /* geom:P with T = 4: P(a) = P^(a-1) (1 - P) for a < T, P^(T-1) for a = T */
  double P = 0.6, pg[4] = {1 - P, P * (1 - P), P * P * (1 - P), P * P * P};
  check_distribution("spec T=4 accept=geom:0.6", pg);
  double p1[4] = {0, 0, 0, 1};
  check_distribution("spec T=4 accept=geom:1", p1);
}
