/* GPU check (device machine, not CI): every attention-lab variant (src/model_cuda/attn_lab.h)
 * against the CPU reference mc_ref_attn_decode and an fp64 evaluation on random inputs, with the
 * tolerance argued in src/bench_attn/bench_attn_check.c (worst-case fp32 bound of the variant's
 * summation chains and score dot products; cache_row NULL and a permutation of the cache rows).
 * Shapes: the fixture models' (4/2/64 gated), Qwen3.5-4B's (16/4/256 gated), Nemotron-3-Nano-4B's
 * (40/8/128), plus rep = 1 and rep = 8 at D = 64 and 256 to cover every instance; split counts 1
 * (one split holds the whole context), 7 (ragged), 132 and 512 (the cap at 8192 positions, where
 * splits hold 16 positions and the later ones are empty at the short rows).
 * Exit status 0 only when every case passes. Usage: gpu_check_attn_lab */
#include <cstdio>

#include "src/bench_attn/bench_attn_check.h"
#include "src/model_cuda/attn_lab.h"

int main() {
  struct { int nH, nKV, D, gated; } shapes[] = {
      {4, 2, 64, 1}, {16, 4, 256, 1}, {40, 8, 128, 0}, {4, 4, 64, 0}, {8, 1, 256, 1}, {8, 8, 128, 1},
  };
  const int splits[] = {1, 7, 132, 512};
  int fails = 0, cases = 0;
  for (const auto &s : shapes)
    for (int v = 1; v <= ATTN_LAB_NVARIANTS; v++)
      for (int ns : splits) {
        if (v == ATTN_LAB_SHIPPED && ns != 1) continue; /* the shipped kernel has no split count */
        attn_check_result r;
        char err[256] = "";
        cases++;
        if (attn_check_variant(v, s.nH, s.nKV, s.D, s.gated, ns, &r, err, sizeof err) != 0) {
          printf("nH=%-2d nKV=%d D=%-3d %-9s splits %3d: FAIL (CUDA: %s)\n", s.nH, s.nKV, s.D, attn_lab_name(v), ns, err);
          fails++;
          continue;
        }
        const bool ok = r.ran && r.ok;
        printf("nH=%-2d nKV=%d D=%-3d%s %-9s splits %3d: %s  max rel %.2e (%.3f of bound), vs cpu %.2e (cpu %.2e)\n",
               s.nH, s.nKV, s.D, s.gated ? " gated" : "      ", attn_lab_name(v), ns,
               !r.ran ? "FAIL (refused)" : ok ? "ok  " : "FAIL", r.worst_rel, r.worst_ratio, r.worst_cpu,
               r.worst_cpu_rel);
        if (!ok) fails++;
      }
  printf("%s: %d of %d cases failed\n", fails ? "FAIL" : "PASS", fails, cases);
  return fails ? 1 : 0;
}
