/* mat4_rows_per_warp (src/ssm_cuda/ssm_cuda_mat.cu): the rows of a head each warp of the fused
 * fp32 SSM step folds, which sets the block's warps. A launch with more warps than the kernel's
 * launch bounds (32 mat4_max_warps(M, RB) threads) fails on the GPU, so every shape mat4 runs
 * (dv <= 256) must stay within them; below MAT4_WIDE_B rows the rule must take the fewest rows a
 * warp (the most warps) that does, a multiple of the batch so that a row keeps its place in it. */
#include <criterion/criterion.h>

#include "src/ssm_cuda/ssm_cuda_internal.cuh"

Test(mat4_rows, within_launch_bounds_and_fewest_rows) {
  const int Bs[] = {1, 2, 16, 36, 63, 64, 256};
  for (int M = 4; M <= 8; M += 4)
    for (int rows = 4; rows <= 8; rows += 4)
      for (int dv = 8; dv <= 256; dv += 8)
        for (int B : Bs) {
          const int wr = ssmc::mat4_rows_per_warp(dv, M, rows, B);
          const int warps = (dv + wr - 1) / wr, most = ssmc::mat4_max_warps(M, rows);
          cr_assert(wr >= rows && wr <= 32, "M %d rows %d dv %d B %d: wr %d", M, rows, dv, B, wr);
          cr_assert(wr % rows == 0, "M %d rows %d dv %d B %d: wr %d not a multiple", M, rows, dv, B,
                    wr);
          cr_assert(warps <= most, "M %d rows %d dv %d B %d: %d warps > %d", M, rows, dv, B, warps,
                    most);
          if (B >= MAT4_WIDE_B) {
            cr_assert_eq(wr, 32);
          } else if (wr > rows) { /* one batch fewer a warp would exceed the bounds */
            cr_assert((dv + wr - rows - 1) / (wr - rows) > most,
                      "M %d rows %d dv %d B %d: wr %d not the fewest", M, rows, dv, B, wr);
          }
        }
}

Test(mat4_rows, the_fixture_steps) {
  /* the GDN fixture's head (dv 64, dk 128: M 4, 4-row batches) at K = 16: 16 warps of 4 rows;
     the Mamba-2 fixture's (dv 32): 8 warps of 4 */
  cr_assert_eq(ssmc::mat4_rows_per_warp(64, 4, 4, 16), 4);
  cr_assert_eq(ssmc::mat4_rows_per_warp(32, 4, 4, 16), 4);
  /* a dk = 256 head keeps 8 warps (mat4_kernel<8, 4> has 168 registers) */
  cr_assert_eq(ssmc::mat4_rows_per_warp(64, 8, 4, 16), 8);
  cr_assert_eq(ssmc::mat4_max_warps(4, 4), 16);
  cr_assert_eq(ssmc::mat4_max_warps(4, 8), 8);
}
