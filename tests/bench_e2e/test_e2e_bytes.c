/* The byte model of `bench e2e` (src/bench_e2e/e2e_bytes.h), the denominator of issue 18's "fraction
 * of the byte limit": its GEMM weights against the independent enumeration of `bench gemm`
 * (bg_step_of) on every model and MoE fixture, and within the model's tensor count, and one step's state and K/V bytes for a
 * conventional and a split-precision replay configuration, by hand from docs/gpu-runtime.md's
 * formulas. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "quant/format.h"
#include "src/bench_e2e/e2e_bytes.h"
#include "src/bench_gemm/bench_gemm.h"
#include "src/model/model_config.h"
#include "src/model/model_random.h"
#include "src/ssm/ssm_config.h"

static model_config load(const char *rel) {
  char path[4096], err[512];
  snprintf(path, sizeof path, "%s/%s", RSSM_SOURCE_DIR, rel);
  model_config c;
  cr_assert_eq(model_config_load(path, &c, err, sizeof err), 0, "%s: %s", path, err);
  return c;
}

/* Two enumerations of one step's GEMMs, written apart (bench e2e's byte model, bench gemm's
 * shapes): the same weight elements and the same number of calls for every layout the runtime
 * takes (GDN, Mamba-2, both attentions, SwiGLU, ReLU^2, both MoE blocks). */
Test(e2e_bytes, gemm_weights_agree_with_bench_gemm) {
  const char *dirs[] = {"data/models/qwen35-gdn-tiny",   "data/models/nemotronh-m2-tiny",
                        "data/shapes/qwen3.5-4b",        "data/shapes/nemotron-3-nano-4b",
                        "tests/fixtures/nemotron_h_moe", "tests/fixtures/qwen3_5_moe"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
    model_config c = load(dirs[i]);
    /* the model's floats counted tensor by tensor (the random-weight builder's count) */
    const int64_t n_params = model_random_floats(&c);
    e2e_weights w;
    e2e_weights_of(&c, n_params, &w);
    bg_step s;
    cr_assert_eq(bg_step_of(&c, &s), 0, "%s", dirs[i]);
    int64_t calls = 0;
    for (int k = 0; k < w.nshape; k++) calls += w.count[k];
    cr_assert_eq(w.gemm_floats, bg_step_weight_elems(&s), "%s: %lld against %lld", dirs[i],
                 (long long)w.gemm_floats, (long long)bg_step_weight_elems(&s));
    cr_assert_eq(calls, s.nseq, "%s: %lld GEMM calls against %d", dirs[i], (long long)calls,
                 s.nseq);
    /* the GEMMs and experts claim no float the model lacks: what is left after them and the
     * untied embedding (gathered, not streamed) holds at least every block's norm and the final
     * one */
    const int64_t embed = c.tie_embeddings ? 0 : c.V * c.H;
    const int64_t rest = n_params - w.gemm_floats - w.expert_floats - embed;
    cr_assert_geq(rest, (int64_t)(c.nblocks + 1) * c.H, "%s: %lld floats left for the norms",
                  dirs[i], (long long)rest);
    cr_assert_eq(w.other_floats, rest);
    model_config_free(&c);
  }
}

static int64_t matrix_bytes(const char *format, int64_t dv, int64_t dk) {
  qformat f;
  qlayout l;
  char err[256];
  cr_assert_eq(qformat_parse(format, &f, err, sizeof err), 0, "%s", err);
  cr_assert_eq(qlayout_of(&f, dv, dk, &l), 0);
  return l.bytes_per_matrix;
}

/* qwen35-gdn-tiny, K = 3 streams, configurations {conventional fp32, replay L=16 hp=fp32
 * lp=fp8}, mean position 100, bf16 GEMM weights. Per SSM layer and stream: conventional reads and
 * writes every head's state (2 H m32); split replay reads the low-precision checkpoint every step
 * and, every L steps, rewrites both checkpoints and reads them again (H (m8 + (2 m32 + 2 m8) /
 * L)); every row reads and writes its conv window (2 x 4 (Kc - 1) conv_dim). Per attention layer
 * and row: K and V rows 0..pos read and one written, 2 x 4 kvd (pos + 2). Weights: bf16 GEMM
 * weights, fp32 rest, and the R residual rows in fp32. */
Test(e2e_bytes, one_step_by_hand) {
  model_config c = load("data/models/qwen35-gdn-tiny");
  ssm_config cfg[2];
  char err[512];
  cr_assert_eq(ssm_config_parse("conventional state=fp32", &cfg[0], err, sizeof err), 0, "%s", err);
  cr_assert_eq(ssm_config_parse("replay L=16 hp=fp32 lp=fp8", &cfg[1], err, sizeof err), 0, "%s",
               err);
  const int K = 3, C = 2, R = C * K;
  const double pos = 100.0;
  const int64_t n_params = 7000000;
  e2e_weights w;
  e2e_weights_of(&c, n_params, &w);
  const e2e_bytes b = e2e_bytes_per_step(&c, &w, 2, cfg, C, K, pos);

  int n_gdn = 0, n_attn = 0;
  for (int i = 0; i < c.nblocks; i++) {
    n_gdn += c.blocks[i].kind == BK_GDN;
    n_attn += c.blocks[i].kind == BK_QATTN || c.blocks[i].kind == BK_NATTN;
  }
  cr_assert(n_gdn > 0 && n_attn > 0);
  const double H = (double)c.gdn_hv;
  const double m32 = (double)matrix_bytes("fp32", c.gdn_dv, c.gdn_dk);
  const double m8 = (double)matrix_bytes("fp8", c.gdn_dv, c.gdn_dk);
  const double conv_dim = (double)(2 * c.gdn_hk * c.gdn_dk + c.gdn_hv * c.gdn_dv);
  const double per_layer = K * 2.0 * H * m32 + K * H * (m8 + (2.0 * m32 + 2.0 * m8) / 16.0) +
                           R * 2.0 * 4.0 * (double)(c.gdn_kernel - 1) * conv_dim;
  const double state = n_gdn * per_layer;
  const double kv = n_attn * R * 2.0 * 4.0 * (double)(c.n_kv_heads * c.head_dim) * (pos + 2.0);
  const double weight = 2.0 * (double)w.gemm_floats +
                        4.0 * (double)(w.expert_floats + w.other_floats) + 4.0 * R * (double)c.H;
  cr_assert(fabs(b.state - state) <= 1e-12 * state, "state %.17g, by hand %.17g", b.state, state);
  cr_assert(fabs(b.kv - kv) <= 1e-12 * kv, "kv %.17g, by hand %.17g", b.kv, kv);
  cr_assert(fabs(b.weight - weight) <= 1e-12 * weight, "weight %.17g, by hand %.17g", b.weight,
            weight);
  cr_assert(fabs(b.total - (state + kv + weight)) <= 1e-12 * b.total);
  /* the split configuration moves fewer state bytes a step than the conventional one */
  const e2e_bytes conv_only = e2e_bytes_per_step(&c, &w, 2, cfg, 1, K, pos);
  const e2e_bytes split_only = e2e_bytes_per_step(&c, &w, 2, cfg + 1, 1, K, pos);
  cr_assert(split_only.state < conv_only.state);
  model_config_free(&c);
}
