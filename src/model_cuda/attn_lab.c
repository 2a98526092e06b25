/* The host-side arithmetic of the attention lab (attn_lab.h): names, the split count, scratch
 * sizes. Pure C so that the CPU build (the option parser of `bench attention`, its tests) has it. */
#include "src/model_cuda/attn_lab.h"

#include <string.h>

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

/* The count in [n0, 4 n0] (and <= cap) whose B = pairs nsplit blocks of equal work spread most
 * evenly over the SMs: the one maximising B / (ceil(B / sms) sms), the smallest on ties (fewer
 * partial sums to write and combine). */
static int64_t even_splits(int64_t pairs, int64_t n0, int64_t cap, int sms) {
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
  return best;
}

/* Blocks of equal work (every row at the same position, as in the benchmark and the experiment's
 * teacher-forced batch) finish together when each SM gets the same number of them.
 * n0 = ceil(4 sms / (R nKV)) gives at least 4 blocks per SM, enough for the loads in flight of
 * variants 2-4 (docs/bench-attention.md, "The split count"). */
int attn_lab_splits(int R, int nKV, int64_t max_ctx, int sms) {
  if (R < 1 || nKV < 1 || sms < 1) return 1;
  const int64_t pairs = (int64_t)R * nKV;
  int64_t cap = (max_ctx + 15) / 16;
  if (cap < 1) cap = 1;
  return (int)even_splits(pairs, (4 * (int64_t)sms + pairs - 1) / pairs, cap, sms);
}

/* attn_lab_splits for one row with one block per SM instead of four, and no cap. R rows then put
 * about R blocks on each SM (exactly R at nKV nsplit = sms): one row (`logits`) still reaches
 * every SM, and a 36-row batch gets 3-6 times the blocks of the lab's measured point (36 rows at
 * 11 or 5 splits, 6-12 blocks per SM), each 3-6 times shorter (~4000 positions at 131072: the
 * per-block prologue and merge stay far below its ~8 MB of K/V at D = 256). The count must not
 * depend on R (row-count invariance) nor on max_ctx (a spec batch has max_ctx N + T, its
 * reference batch N); without the cap, splits past pos[r] cost an exit only (a split holds at
 * least MIN_SPLIT positions, and at pos + 1 <= MIN_SPLIT nsplit every count gives the same
 * partition). */
int attn_lab_splits_shipped(int nKV, int sms) {
  if (nKV < 1 || sms < 1) return 1;
  return (int)even_splits(nKV, ((int64_t)sms + nKV - 1) / nKV, INT32_MAX / 4, sms);
}

size_t attn_lab_ml_floats(int R, int nH, int nsplit) {
  const size_t ml = (size_t)R * (size_t)nH * (size_t)nsplit * 2;
  return (ml + 3) / 4 * 4;
}

size_t attn_lab_scratch_floats(int R, int nH, int D, int nsplit) {
  return attn_lab_ml_floats(R, nH, nsplit) + (size_t)R * (size_t)nH * (size_t)nsplit * (size_t)D;
}

int attn_lab_shape_ok(int nH, int nKV, int D) {
  if (nKV < 1 || nH % nKV != 0) return 0;
  const int rep = nH / nKV;
  return (D == 16 || D == 32 || D == 64 || D == 128 || D == 256) &&
         (rep == 1 || rep == 2 || rep == 4 || rep == 5 || rep == 8);
}
