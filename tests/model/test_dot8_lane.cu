/* dot8_lane (src/model_cuda/mc_device.cuh; the norms' and the GDN L2 norms' sums of squares on
 * the GPU) against the CPU's dot_f32 (src/model/linalg.c), on the host: tree8 of the eight lanes
 * is dot_f32's result bit for bit, for every length around the batch boundaries (0 .. 8
 * DOT8_BATCH + 40) and the 4B shapes' widths, on random inputs (never zero) of both signs and
 * mixed magnitudes, so that a sum in another order would round differently. The device compiles
 * the same source with --fmad=false; gpu_check_mc_kernels holds the norm kernels to the CPU. */
#include <criterion/criterion.h>

#include <stdint.h>
#include <string.h>

#include <vector>

extern "C" {
#include "src/model/linalg.h" /* a C header without C++ guards */
}
#include "src/model_cuda/mc_device.cuh"

namespace {

/* splitmix64 -> +-[0.05, 1.05) times a scale of 1, 1e-3 or 1e3 (the magnitudes mixed so that
   the order of the additions matters to the rounding) */
float rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  const float u = (float)((z >> 11) * (1.0 / 9007199254740992.0));
  const float scale = (z >> 1) % 3 == 0 ? 1e-3f : (z >> 1) % 3 == 1 ? 1.0f : 1e3f;
  return (z & 1 ? -1.0f : 1.0f) * (0.05f + u) * scale;
}

bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

float lanes_tree(const float *a, const float *b, int64_t n) {
  float p[8];
  for (int l = 0; l < 8; l++) p[l] = mc::dot8_lane(a, b, n, l);
  return mc::tree8(p);
}

}  // namespace

Test(dot8_lane, eight_lanes_are_dot_f32) {
  std::vector<int64_t> lengths;
  for (int64_t n = 0; n <= 8 * mc::DOT8_BATCH + 40; n++) lengths.push_back(n);
  for (int64_t n : {128, 255, 256, 257, 2560, 3136, 4096, 4099}) lengths.push_back(n);
  int checked = 0, reordered_differs = 0;
  for (int64_t n : lengths) {
    uint64_t seed = 7919u * (uint64_t)n + 1u;
    std::vector<float> a((size_t)n + 1), b((size_t)n + 1);
    for (float &v : a) v = rnd(&seed);
    for (float &v : b) v = rnd(&seed);
    const float cpu = dot_f32(a.data(), b.data(), n), gpu = lanes_tree(a.data(), b.data(), n);
    cr_assert(same_bits(cpu, gpu), "n %lld: dot_f32 %.9g, dot8 lanes %.9g", (long long)n,
              (double)cpu, (double)gpu);
    const float sq_cpu = dot_f32(a.data(), a.data(), n),
                sq_gpu = lanes_tree(a.data(), a.data(), n); /* the norms' form */
    cr_assert(same_bits(sq_cpu, sq_gpu), "n %lld: squares %.9g vs %.9g", (long long)n,
              (double)sq_cpu, (double)sq_gpu);
    /* the inputs are such that order matters: a plain sequential sum differs somewhere */
    float seq = 0.0f;
    for (int64_t i = 0; i < n; i++) seq = seq + a[(size_t)i] * b[(size_t)i];
    reordered_differs += !same_bits(seq, cpu);
    checked++;
  }
  cr_assert_eq(checked, (int)lengths.size());
  cr_assert_gt(reordered_differs, 10, "the inputs never tell one order of the sum from another");
}
