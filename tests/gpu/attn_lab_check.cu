/* GPU check (device machine, not CI): every attention-lab variant (src/model_cuda/attn_lab.h)
 * against the CPU reference mc_ref_attn_decode and an fp64 evaluation on random inputs, with the
 * tolerance argued in src/bench_attn/bench_attn_check.c (worst-case fp32 bound of the variant's
 * summation chains and score dot products; cache_row NULL and a permutation of the cache rows).
 * Shapes: the fixture models' (4/2/64 gated), Qwen3.5-4B's (16/4/256 gated), Nemotron-3-Nano-4B's
 * (40/8/128), the transformers fixtures' (4/2/32 gated, 4/2/16), plus rep = 1 and rep = 8 at
 * D = 64 and 256 and rep = 5 at D = 16 to cover every D and rep; split counts 1 (one split holds
 * the whole context), 7 (ragged), 132 and 512 (the cap at 8192 positions, where splits hold 16
 * positions and the later ones are empty at the short rows). Variant 1, the shipped decode
 * (mc_attn_decode), once per shape at the runtime's split count attn_lab_splits_shipped for this
 * device (the lab's variant 4 at the other counts covers its arithmetic).
 * Exit status 0 only when every case passes. Usage: gpu_check_attn_lab */
#include <cuda_runtime.h>

#include <cstdio>

#include "src/bench_attn/bench_attn_check.h"
#include "src/model_cuda/attn_lab.h"

int main() {
  struct { int nH, nKV, D, gated; } shapes[] = {
      {4, 2, 64, 1}, {16, 4, 256, 1}, {40, 8, 128, 0}, {4, 4, 64, 0}, {8, 1, 256, 1}, {8, 8, 128, 1},
      {4, 2, 32, 1}, {4, 2, 16, 0}, {10, 2, 16, 1},
  };
  const int splits[] = {1, 7, 132, 512};
  int dev = 0, sms = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
    printf("FAIL: no CUDA device\n");
    return 1;
  }
  int fails = 0, cases = 0;
  for (const auto &s : shapes)
    for (int v = 1; v <= ATTN_LAB_NVARIANTS; v++)
      for (int k = 0; k < 4; k++) {
        int ns = splits[k];
        if (v == ATTN_LAB_SHIPPED) { /* one case: the split count the runtime uses */
          if (k > 0) continue;
          ns = attn_lab_splits_shipped(s.nKV, sms);
        }
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
