/* Acceptance lengths of spec rounds, drawn with Philox4x32-10 (counter layout in ssm_accept.h). */
#include "src/ssm/ssm_accept.h"

#include "quant/numerics.h"

static uint32_t accept_bits(uint64_t seed, uint32_t sequence, uint32_t round, uint32_t d) {
  uint32_t ctr[4] = {d >> 2, round, sequence, SSM_ACCEPT_STREAM};
  uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
  uint32_t out[4];
  rssm_philox4x32_10(ctr, key, out);
  return out[d & 3u];
}

int ssm_accept_draw(const ssm_config *c, uint64_t seed, uint32_t sequence, uint32_t round) {
  if (c->strategy != SSM_SPEC || c->T < 1) return 0;
  const int T = c->T;
  switch (c->accept) {
    case SSM_ACCEPT_FIXED: return c->accept_fixed;
    case SSM_ACCEPT_UNIFORM: {
      uint64_t b = accept_bits(seed, sequence, round, 0);
      return 1 + (int)((b * (uint64_t)T) >> 32);
    }
    case SSM_ACCEPT_GEOM: {
      int a = 1;
      while (a < T) {
        /* 24-bit uniform in [0, 1), exact in a double */
        double u = (double)(accept_bits(seed, sequence, round, (uint32_t)(a - 1)) >> 8) *
                   (1.0 / 16777216.0);
        if (u < c->accept_p) a++;
        else break;
      }
      return a;
    }
  }
  return 0;
}
