/* The device model (mc_model.h, docs/gpu-runtime.md): a CPU model's weights uploaded once, the
 * GEMM weights concatenated per block (GDN [qkv | z | b | a], attention [q (+gates) | k | v],
 * SwiGLU [gate | up]) in the model's GEMM precision, and the choices fixed at upload: the GEMM
 * kernel for bf16 models and the row tile. The rest of the runtime: mc_batch.cu (the batch),
 * mc_step.cu (the step), mc_step_gemm.cu (its GEMMs), mc_row_snapshot.cu (rows as bytes).
 *
 * GEMMs: cublasSgemm, fp32 in and out, CUBLAS_DEFAULT_MATH (no TF32) (or, for a model uploaded
 * with MC_GEMM_BF16, bf16 weights and inputs with fp32 accumulation), on fixed tiles of the model's
 * row_tile rows (row-count invariance; the tile is chosen once at upload from the GEMM weight
 * bytes, mc_tile.h, never from a batch; the scratch is padded to a multiple of the tile and its
 * padding rows stay zero, and rows never mix in a GEMM). */
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/errbuf.h"
#include "src/model_cuda/attn_lab.h"
#include "src/model_cuda/mc_device_check.h"
#include "src/model_cuda/mc_gemm_lt.h"
#include "src/model_cuda/mc_gemm_mma.h"
#include "src/model_cuda/mc_model.h"
#include "src/model_cuda/mc_model_internal.cuh"
#include "src/model_cuda/mc_tile.h"

using namespace mcm;

namespace {

/* The bf16 models' GEMM kernel: mc_gemm_mma_for_model's choice from the model's GEMM bytes (the
 * tensor-core kernel for latency-bound small models, cuBLAS for the rest), the default since
 * session 31's H100 call (docs/gpu-results.md, "Session 31": forward check 8 passes on it, the
 * fixture steps 0.320 / 0.202 ms against cuBLAS's 0.375 / 0.210). RSSM_GEMM_BF16 overrides it
 * for A/B measurements: "cublas" cuBLAS, "mma" the tensor-core kernel for every shape it takes,
 * "wide" the wide tensor-core kernel (mc_gemm_wide.h) for every GEMM it takes and cuBLAS for the
 * rest, "wide-split" the wide kernel only for the weights it splits along k (the 4B shapes'
 * 2560-row output projections, where cuBLAS read 43-55 % of copy in session 37's call 2) and
 * cuBLAS for the others (other bits for those GEMMs); "auto", unset or anything else the rule.
 * bf16 GEMMs are `bench e2e --gemm bf16`'s and gpu_check_mc_forward's, never a run of record's. */
enum gemm_kernel { GEMM_CUBLAS, GEMM_MMA, GEMM_WIDE, GEMM_WIDE_SPLIT };
gemm_kernel gemm_kernel_choice(int64_t gemm_bytes) {
  const char *v = getenv("RSSM_GEMM_BF16");
  if (v && strcmp(v, "mma") == 0) return GEMM_MMA;
  if (v && strcmp(v, "cublas") == 0) return GEMM_CUBLAS;
  if (v && strcmp(v, "wide") == 0) return GEMM_WIDE;
  if (v && strcmp(v, "wide-split") == 0) return GEMM_WIDE_SPLIT;
  return mc_gemm_mma_for_model(gemm_bytes) ? GEMM_MMA : GEMM_CUBLAS;
}

/* A device array filled from up to four host pieces laid end to end ([n0 | n1 | n2 | n3]). */
float *upload(mc_model *g, const float *p0, int64_t n0, const float *p1 = nullptr, int64_t n1 = 0,
              const float *p2 = nullptr, int64_t n2 = 0, const float *p3 = nullptr,
              int64_t n3 = 0) {
  const int64_t n = n0 + n1 + n2 + n3;
  float *d = nullptr;
  if (n <= 0 || cudaMalloc(&d, (size_t)n * sizeof(float)) != cudaSuccess) return nullptr;
  const float *ps[4] = {p0, p1, p2, p3};
  const int64_t ns[4] = {n0, n1, n2, n3};
  int64_t at = 0;
  for (int i = 0; i < 4; i++) {
    if (ns[i] > 0 &&
        cudaMemcpy(d + at, ps[i], (size_t)ns[i] * sizeof(float), cudaMemcpyHostToDevice) !=
            cudaSuccess) {
      cudaFree(d);
      return nullptr;
    }
    at += ns[i];
  }
  g->bytes += n * (int64_t)sizeof(float);
  return d;
}

/* A GEMM weight from up to four host pieces laid end to end, in the model's GEMM precision:
 * fp32 exactly as upload(); bf16 through an fp32 staging buffer on the device (chunks of at most
 * 2^26 floats) and f32_to_bf16. */
void *upload_w(mc_model *g, const float *p0, int64_t n0, const float *p1 = nullptr,
               int64_t n1 = 0, const float *p2 = nullptr, int64_t n2 = 0,
               const float *p3 = nullptr, int64_t n3 = 0) {
  const int64_t n = n0 + n1 + n2 + n3, chunk = (int64_t)1 << 26;
  if (g->prec == MC_GEMM_FP32) {
    void *f = upload(g, p0, n0, p1, n1, p2, n2, p3, n3);
    if (f) g->gemm_bytes += n * (int64_t)sizeof(float);
    return f;
  }
  __nv_bfloat16 *d = nullptr;
  float *stage = nullptr; /* [min(n, chunk)] */
  if (n <= 0 || cudaMalloc(&d, (size_t)n * sizeof(__nv_bfloat16)) != cudaSuccess) return nullptr;
  if (cudaMalloc(&stage, (size_t)(n < chunk ? n : chunk) * sizeof(float)) != cudaSuccess) {
    cudaFree(d);
    return nullptr;
  }
  const float *ps[4] = {p0, p1, p2, p3};
  const int64_t ns[4] = {n0, n1, n2, n3};
  int64_t at = 0;
  int ok = 1;
  for (int i = 0; ok && i < 4; i++)
    for (int64_t j = 0; ok && j < ns[i]; j += chunk) {
      const int64_t m = ns[i] - j < chunk ? ns[i] - j : chunk;
      ok = cudaMemcpy(stage, ps[i] + j, (size_t)m * sizeof(float), cudaMemcpyHostToDevice) ==
               cudaSuccess &&
           f32_to_bf16(stage, d + at, m, 0) == 0 && cudaDeviceSynchronize() == cudaSuccess;
      at += m;
    }
  cudaFree(stage);
  if (!ok) {
    cudaFree(d);
    return nullptr;
  }
  g->bytes += n * (int64_t)sizeof(__nv_bfloat16);
  g->gemm_bytes += n * (int64_t)sizeof(__nv_bfloat16);
  return d;
}

void block_free(mc_block *b) {
  void *ps[] = {b->norm,    b->w_in,      b->w_out,  b->conv_w, b->conv_b, b->A_log, b->dt_bias,
                b->D,       b->vnorm,     b->q_norm, b->k_norm, b->router, b->corr_bias,
                b->e_gate,  b->e_up,      b->e_down, b->fc1,    b->fc2,    b->sh_in,
                b->sh_down};
  for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) cudaFree(ps[i]);
  memset(b, 0, sizeof *b);
}

/* Upload one block; returns 0, 1 for an unsupported kind, -1 when out of device memory. */
int block_upload(mc_model *g, const model *m, const model_block_w *w, mc_block *b) {
  const model_config *c = &m->cfg;
  const int64_t H = c->H;
  b->kind = w->kind;
  b->layer = w->layer;
  if (!(b->norm = upload(g, w->norm, H))) return -1;
  switch (w->kind) {
    case BK_GDN: {
      const int64_t conv_dim = conv_channels(c, BK_GDN), vd = c->gdn_hv * c->gdn_dv;
      b->in_rows = conv_dim + vd + 2 * c->gdn_hv;
      b->w_in = upload_w(g, w->gdn.w_qkv, conv_dim * H, w->gdn.w_z, vd * H, w->gdn.w_b,
                         c->gdn_hv * H, w->gdn.w_a, c->gdn_hv * H);
      b->out_cols = vd;
      b->w_out = upload_w(g, w->gdn.w_out, H * vd);
      b->conv_w = upload(g, w->gdn.conv_w, conv_dim * c->gdn_kernel);
      b->A_log = upload(g, w->gdn.A_log, c->gdn_hv);
      b->dt_bias = upload(g, w->gdn.dt_bias, c->gdn_hv);
      b->vnorm = upload(g, w->gdn.norm, c->gdn_dv);
      return b->w_in && b->w_out && b->conv_w && b->A_log && b->dt_bias && b->vnorm ? 0 : -1;
    }
    case BK_MAMBA2: {
      const int64_t conv_dim = conv_channels(c, BK_MAMBA2), di = c->m_heads * c->m_head_dim;
      b->in_rows = di + conv_dim + c->m_heads;
      b->w_in = upload_w(g, w->mamba.w_in, b->in_rows * H);
      b->out_cols = di;
      b->w_out = upload_w(g, w->mamba.w_out, H * di);
      b->conv_w = upload(g, w->mamba.conv_w, conv_dim * c->m_kernel);
      if (w->mamba.conv_b && !(b->conv_b = upload(g, w->mamba.conv_b, conv_dim))) return -1;
      b->A_log = upload(g, w->mamba.A_log, c->m_heads);
      b->dt_bias = upload(g, w->mamba.dt_bias, c->m_heads);
      b->D = upload(g, w->mamba.D, c->m_heads);
      b->vnorm = upload(g, w->mamba.norm, di);
      return b->w_in && b->w_out && b->conv_w && b->A_log && b->dt_bias && b->D && b->vnorm ? 0
                                                                                            : -1;
    }
    case BK_QATTN:
    case BK_NATTN: {
      /* the shipped decode has compiled instances for these shapes only (attn_lab.h) */
      if (!attn_lab_shape_ok((int)c->n_heads, (int)c->n_kv_heads, (int)c->head_dim)) return 1;
      const int gated = w->kind == BK_QATTN;
      const int64_t qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim;
      const int64_t qrows = gated ? 2 * qd : qd;
      b->in_rows = qrows + 2 * kvd;
      b->w_in = upload_w(g, w->attn.w_q, qrows * H, w->attn.w_k, kvd * H, w->attn.w_v, kvd * H);
      b->out_cols = qd;
      b->w_out = upload_w(g, w->attn.w_o, H * qd);
      if (gated) {
        b->q_norm = upload(g, w->attn.q_norm, c->head_dim);
        b->k_norm = upload(g, w->attn.k_norm, c->head_dim);
        if (!b->q_norm || !b->k_norm) return -1;
      }
      return b->w_in && b->w_out ? 0 : -1;
    }
    case BK_SWIGLU:
    case BK_RELU2: {
      const int64_t I = w->mlp.I;
      b->in_rows = w->kind == BK_SWIGLU ? 2 * I : I;
      b->w_in = w->kind == BK_SWIGLU ? upload_w(g, w->mlp.w_gate, I * H, w->mlp.w_up, I * H)
                                     : upload_w(g, w->mlp.w_up, I * H);
      b->out_cols = I;
      b->w_out = upload_w(g, w->mlp.w_down, H * I);
      return b->w_in && b->w_out ? 0 : -1;
    }
    case BK_QMOE:
    case BK_NMOE: {
      const moe_weights *mw = &w->moe;
      const int64_t E = c->n_experts, I = c->moe_inter, Din = mw->Din;
      if (c->topk < 1 || c->topk > E || c->topk_group > 64) return 1;
      b->Din = Din;
      b->router_rows = E + (mw->shared_gate ? 1 : 0);
      b->router = upload_w(g, mw->router, E * H, mw->shared_gate, mw->shared_gate ? H : 0);
      if (mw->corr_bias && !(b->corr_bias = upload(g, mw->corr_bias, E))) return -1;
      if (mw->w_gate && !(b->e_gate = upload(g, mw->w_gate, E * I * Din))) return -1;
      b->e_up = upload(g, mw->w_up, E * I * Din);
      b->e_down = upload(g, mw->w_down, E * Din * I);
      if (mw->fc1_latent) {
        b->fc1 = upload_w(g, mw->fc1_latent, Din * H);
        b->fc2 = upload_w(g, mw->fc2_latent, H * Din);
        if (!b->fc1 || !b->fc2) return -1;
      }
      b->Is = mw->shared.I;
      if (b->Is > 0) {
        b->sh_rows = mw->shared.w_gate ? 2 * b->Is : b->Is;
        b->sh_in = mw->shared.w_gate ? upload_w(g, mw->shared.w_gate, b->Is * H,
                                                mw->shared.w_up, b->Is * H)
                                     : upload_w(g, mw->shared.w_up, b->Is * H);
        b->sh_down = upload_w(g, mw->shared.w_down, H * b->Is);
        if (!b->sh_in || !b->sh_down) return -1;
      }
      if (w->kind == BK_NMOE && !b->corr_bias) return 1;
      return b->router && b->e_up && b->e_down ? 0 : -1;
    }
    default:
      return 1;
  }
}

}  // namespace

extern "C" int mc_model_upload(const model *m, mc_model **out, char *err, size_t errlen) {
  return mc_model_upload_prec(m, MC_GEMM_FP32, out, err, errlen);
}

extern "C" int mc_model_upload_prec(const model *m, mc_gemm_prec prec, mc_model **out, char *err,
                                    size_t errlen) {
  *out = nullptr;
  if (mc_device_check(err, errlen) != 0) return RSSM_ERR_INPUT;
  if (prec != MC_GEMM_FP32 && prec != MC_GEMM_BF16)
    return rssm_fail(err, errlen, "GEMM precision %d (expected fp32 or bf16)", (int)prec),
           RSSM_ERR_INPUT;
  mc_model *g = (mc_model *)calloc(1, sizeof *g);
  if (!g) return rssm_fail(err, errlen, "out of host memory"), RSSM_ERR_IO;
  g->cpu = m;
  g->prec = prec;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&g->sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      g->sms < 1)
    g->sms = 1; /* no device: the first allocation below fails and says so */
  const model_config *c = &m->cfg;
  const int64_t H = c->H, V = c->V;
  g->nblocks = m->nblocks;
  g->blocks = (mc_block *)calloc((size_t)(m->nblocks > 0 ? m->nblocks : 1), sizeof(mc_block));
  int rc = RSSM_OK;
  if (!g->blocks) {
    rc = RSSM_ERR_IO;
    rssm_fail(err, errlen, "out of host memory");
  }
  if (rc == RSSM_OK) {
    /* V is the real vocabulary (tokenizer.json; model_config.h): the first V rows of the host
     * [V_rows][H] arrays are a prefix, the padding rows are left on the host, and the lm_head
     * GEMM, the logits and every metric kernel see only V columns (SPEC section 5) */
    g->embed = upload(g, m->embed, V * H);
    g->final_norm = upload(g, m->final_norm, H);
    /* tied: the embedding itself in fp32; a bf16 copy of it for bf16 GEMMs */
    g->lm_head = m->lm_head == m->embed && prec == MC_GEMM_FP32 ? (void *)g->embed
                                                                : upload_w(g, m->lm_head, V * H);
    if (g->lm_head == g->embed) g->gemm_bytes += V * H * (int64_t)sizeof(float); /* read by it */
    if (!g->embed || !g->final_norm || !g->lm_head) {
      rc = RSSM_ERR_IO;
      rssm_fail(err, errlen, "out of device memory for the embedding and lm_head (%lld floats)",
                (long long)(2 * V * H));
    }
  }
  for (int i = 0; rc == RSSM_OK && i < m->nblocks; i++) {
    int r = block_upload(g, m, &m->blocks[i], &g->blocks[i]);
    if (r > 0) {
      rc = RSSM_ERR_INPUT;
      rssm_fail(err, errlen,
                "layer %d: %s blocks of this shape are not supported on the GPU yet (use "
                "--device cpu)",
                m->blocks[i].layer, block_kind_name((block_kind)m->blocks[i].kind));
    } else if (r < 0) {
      rc = RSSM_ERR_IO;
      rssm_fail(err, errlen,
                "layer %d: out of device memory uploading the weights (%lld bytes so far)",
                m->blocks[i].layer, (long long)g->bytes);
    } else {
      const mc_block *nb = &g->blocks[i];
      if (nb->in_rows > g->max_in_rows) g->max_in_rows = nb->in_rows;
      if (nb->out_cols > g->max_out_cols) g->max_out_cols = nb->out_cols;
      if (nb->router_rows > g->moe_router_rows) g->moe_router_rows = nb->router_rows;
      if (nb->Din > g->moe_din) g->moe_din = nb->Din;
      if (nb->sh_rows > g->moe_sh_rows) g->moe_sh_rows = nb->sh_rows;
      if (nb->Is > g->moe_is) g->moe_is = nb->Is;
    }
  }
  if (rc != RSSM_OK) {
    mc_model_free(g);
    return rc;
  }
  /* once per model: every batch's GEMM n */
  g->row_tile = mc_row_tile_for(g->gemm_bytes, g->prec == MC_GEMM_BF16);
  const gemm_kernel kernel =
      g->prec == MC_GEMM_BF16 ? gemm_kernel_choice(g->gemm_bytes) : GEMM_CUBLAS;
  g->gemm_mma = kernel == GEMM_MMA;
  g->gemm_wide = kernel == GEMM_WIDE ? 1 : kernel == GEMM_WIDE_SPLIT ? 2 : 0;
  /* RSSM_TEST_ROW_TILE=16 or 64 (checks only): that tile whatever the weights, so that the
   * 16-row tile's row-count invariance can be checked on the small fixtures (MoE, spec batches)
   * in seconds (scripts/device_tile_check.sh); the memory line names the tile used */
  const char *tile_env = getenv("RSSM_TEST_ROW_TILE");
  if (tile_env && (strcmp(tile_env, "16") == 0 || strcmp(tile_env, "64") == 0))
    g->row_tile = atoi(tile_env);
  *out = g;
  return RSSM_OK;
}

extern "C" void mc_model_free(mc_model *g) {
  if (!g) return;
  if (g->blocks)
    for (int i = 0; i < g->nblocks; i++) block_free(&g->blocks[i]);
  free(g->blocks);
  if (g->lm_head != g->embed) cudaFree(g->lm_head);
  cudaFree(g->embed);
  cudaFree(g->final_norm);
  free(g);
}

extern "C" int64_t mc_model_bytes(const mc_model *g) { return g ? g->bytes : 0; }
extern "C" int64_t mc_model_gemm_bytes(const mc_model *g) { return g ? g->gemm_bytes : 0; }
extern "C" int mc_model_row_tile(const mc_model *g) { return g ? g->row_tile : 0; }
extern "C" mc_gemm_prec mc_model_prec(const mc_model *g) { return g->prec; }
extern "C" const char *mc_model_gemm_kernel(const mc_model *g) {
  const mc_gemm_lt_rule lt = gemm_lt_rule();
  if (g && g->prec == MC_GEMM_BF16 && !g->gemm_mma && !g->gemm_wide && lt.rank >= 0) {
    static char label[112]; /* the rule is read once: one label for the run */
    if (lt.out_only)
      snprintf(label, sizeof label,
               "cuBLAS, and cuBLASLt's rank-%d algorithm for the output projections (RSSM_GEMM_LT)",
               lt.rank);
    else
      snprintf(label, sizeof label, "cuBLASLt's rank-%d algorithm (RSSM_GEMM_LT)", lt.rank);
    return label;
  }
  return !g                  ? "cuBLAS"
         : g->gemm_mma       ? "tensor-core kernel"
         : g->gemm_wide == 2 ? "cuBLAS and the wide kernel (split weights)"
         : g->gemm_wide      ? "wide tensor-core kernel"
                             : "cuBLAS";
}
extern "C" const char *mc_gemm_prec_name(mc_gemm_prec p) {
  return p == MC_GEMM_BF16 ? "bf16" : "fp32";
}
