/* The host-side arithmetic of the attention lab (attn_lab.h): names, the split count, scratch
 * sizes. Pure C so that the CPU build (the option parser of `bench attention`, its tests) has it. */
#include "src/model_cuda/attn_lab.h"

#include <string.h>

#include "src/model_cuda/mc_kernels.h" /* MC_ATTN_CHUNK: variant 1's scratch */

static const char *const names[ATTN_LAB_NVARIANTS] = {"shipped", "stream", "cpasync", "multipos"};

const char *attn_lab_name(int variant) {
  return variant >= 1 && variant <= ATTN_LAB_NVARIANTS ? names[variant - 1] : NULL;
}

int attn_lab_parse(const char *text) {
  for (int v = 1; v <= ATTN_LAB_NVARIANTS; v++) {
    char digit[3] = {'v', (char)('0' + v), '\0'};
    if (strcmp(text, names[v - 1]) == 0 || strcmp(text, digit) == 0 || strcmp(text, digit + 1) == 0)
      return v;
  }
  return 0;
}

/* Blocks of equal work (every row at the same position, as in the benchmark and the experiment's
 * teacher-forced batch) finish together when each SM gets the same number of them: the count in
 * [n0, 4 n0] that minimises ceil(B / sms) sms / B, B = R nKV nsplit, the smallest on ties (fewer
 * partial sums to write and combine). n0 = ceil(4 sms / (R nKV)) gives at least 4 blocks per SM,
 * enough for the loads in flight of variants 2-4 (docs/bench-attention.md, "The split count"). */
int attn_lab_splits(int R, int nKV, int64_t max_ctx, int sms) {
  if (R < 1 || nKV < 1 || sms < 1) return 1;
  const int64_t pairs = (int64_t)R * nKV;
  int64_t n0 = (4 * (int64_t)sms + pairs - 1) / pairs;
  int64_t cap = (max_ctx + 15) / 16;
  if (cap < 1) cap = 1;
  if (n0 > cap) n0 = cap;
  int64_t best = n0;
  double best_eff = 0.0;
  for (int64_t n = n0; n <= 4 * n0 && n <= cap; n++) {
    const int64_t B = pairs * n, waves = (B + sms - 1) / sms;
    const double eff = (double)B / (double)(waves * sms);
    if (eff > best_eff + 1e-12) {
      best_eff = eff;
      best = n;
    }
  }
  return (int)best;
}

size_t attn_lab_scratch_floats(int variant, int R, int nH, int D, int64_t max_ctx, int nsplit) {
  const int64_t chunks = variant == ATTN_LAB_SHIPPED ? (max_ctx + MC_ATTN_CHUNK - 1) / MC_ATTN_CHUNK : nsplit;
  return (size_t)R * (size_t)nH * (size_t)chunks * (size_t)(D + 2);
}

int attn_lab_shape_ok(int nH, int nKV, int D) {
  if (nKV < 1 || nH % nKV != 0) return 0;
  const int rep = nH / nKV;
  return (D == 64 || D == 128 || D == 256) && (rep == 1 || rep == 2 || rep == 4 || rep == 5 || rep == 8);
}
