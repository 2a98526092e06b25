/* conv_step_channel2 (src/model_cuda/mc_device.cuh; GDN's conv + prep runs a key head's q and k
 * channels through it) against two conv_step_channel calls, on the host: the same outputs and the
 * same shifted windows, bit for bit, for every conv width up to CONV2_K_MAX and one past it (the
 * fallback), with and without a bias, on random inputs (never zero). The device compiles the same
 * source with --fmad=false; gpu_check_mc_kernels checks the fused GDN kernel on the GPU. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include <vector>

#include "src/model_cuda/mc_device.cuh"

namespace {

/* splitmix64 -> +-[0.05, 1.05) times scale */
float rnd(uint64_t *s, float scale) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const float u = (float)((z >> 11) * (1.0 / 9007199254740992.0));
  return (z & 1 ? -1.0f : 1.0f) * (0.05f + u) * scale;
}

bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

Test(conv_step2, two_channels_at_once_are_two_calls) {
  const int64_t C = 9, c0 = 2, c1 = 7;
  int cases = 0;
  for (int K = 1; K <= mc::CONV2_K_MAX + 1; K++)
    for (int with_bias = 0; with_bias < 2; with_bias++) {
      uint64_t seed = 1000u * (uint64_t)K + (uint64_t)with_bias;
      std::vector<float> w((size_t)(C * K)), bias((size_t)C),
          win((size_t)((K > 1 ? K - 1 : 1) * C));
      for (float &v : w) v = rnd(&seed, 0.5f);
      for (float &v : bias) v = rnd(&seed, 0.2f);
      for (float &v : win) v = rnd(&seed, 2.0f);
      const float x0 = rnd(&seed, 3.0f), x1 = rnd(&seed, 3.0f);
      const float *b = with_bias ? bias.data() : nullptr;
      std::vector<float> wa = win, wb = win;
      const float y0 = mc::conv_step_channel(wa.data(), x0, w.data(), b, c0, C, K);
      const float y1 = mc::conv_step_channel(wa.data(), x1, w.data(), b, c1, C, K);
      float z0 = 0.0f, z1 = 0.0f;
      mc::conv_step_channel2(wb.data(), x0, x1, w.data(), b, c0, c1, C, K, &z0, &z1);
      cr_assert(same_bits(y0, z0) && same_bits(y1, z1),
                "K %d bias %d: outputs %.9g %.9g vs %.9g %.9g", K, with_bias, (double)y0,
                (double)y1, (double)z0, (double)z1);
      cr_assert(memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)) == 0,
                "K %d bias %d: the shifted windows differ", K, with_bias);
      if (K > 1) /* the window moved: the new inputs are in its last row */
        cr_assert(same_bits(wb[(size_t)((K - 2) * C + c0)], x0) &&
                      same_bits(wb[(size_t)((K - 2) * C + c1)], x1),
                  "K %d: inputs not appended", K);
      cases++;
    }
  cr_assert_eq(cases, 2 * (mc::CONV2_K_MAX + 1));
}
