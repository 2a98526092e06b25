/* The register decoders of quant/decode_fast.h against the reference decoders of
 * quant/numerics.h, every code: the bits must be identical (NaN payloads and signs included),
 * because the GPU readout that uses them must reproduce the CPU engine bit for bit. */
#include <criterion/criterion.h>

#include "quant/decode_fast.h"

static void same_bits(float fast, float ref, const char *what, uint32_t code) {
  cr_assert_eq(rssm_f32_bits(fast), rssm_f32_bits(ref), "%s code 0x%x: fast 0x%08x ref 0x%08x", what,
               code, rssm_f32_bits(fast), rssm_f32_bits(ref));
}

Test(decode_fast, e2m1_every_code) {
  for (uint32_t c = 0; c < 16; c++) same_bits(rssm_e2m1_fast(c), rssm_decode_elem(RSSM_EL_E2M1, c), "e2m1", c);
}

Test(decode_fast, e4m3_every_code) {
  for (uint32_t c = 0; c < 256; c++) same_bits(rssm_e4m3_fast(c), rssm_decode_elem(RSSM_EL_E4M3, c), "e4m3", c);
}

Test(decode_fast, e8m0_every_code) {
  for (uint32_t c = 0; c < 256; c++) same_bits(rssm_e8m0_fast(c), rssm_e8m0_decode(c), "e8m0", c);
}

Test(decode_fast, bf16_and_fp16_every_code) {
  for (uint32_t c = 0; c < 65536; c++) {
    same_bits(rssm_decode16_fast(1, c), rssm_decode_elem(RSSM_EL_BF16, c), "bf16", c);
    same_bits(rssm_decode16_fast(0, c), rssm_decode_elem(RSSM_EL_FP16, c), "fp16", c);
  }
}

/* The composite NVFP4 decode of the v3 readout, (e2m1 * e4m3) * S_dec, against rssm_decode_at for
 * every (element code, scale code) pair and a spread of S_dec values (normal, tiny, huge). */
Test(decode_fast, nvfp4_composite) {
  const float sdec[] = {1.0f, 0.3f, 1.7e-38f, 3.1e-3f, 9.5e30f, 0.0f};
  for (size_t k = 0; k < sizeof sdec / sizeof sdec[0]; k++)
    for (uint32_t s = 0; s < 256; s++)
      for (uint32_t e = 0; e < 16; e++) {
        uint8_t codes[1] = {(uint8_t)(e | (e << 4))}, scale[1] = {(uint8_t)s};
        float ref = rssm_decode_at(QF_NVFP4, codes, scale, sdec[k], 1);
        float fast = (rssm_e2m1_fast(e) * rssm_e4m3_fast(s)) * sdec[k];
        same_bits(fast, ref, "nvfp4", (s << 4) | e);
      }
}
