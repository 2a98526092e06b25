/* Device model and batched forward (mc_model.h, docs/gpu-runtime.md).
 *
 * One step for R = C x K rows: embedding; per block RMSNorm, one GEMM for the block's input
 * projection (weights concatenated at upload: GDN [qkv | z | b | a], attention
 * [q (+gates) | k | v], SwiGLU [gate | up]), the glue kernels, the SSM engine per configuration
 * (rows c K .. c K + K - 1 are the engine's [B] rows, contiguous because the batch is
 * configuration-major), the output GEMM and the residual add; the final norm, lm_head and the
 * metrics. GEMMs: cublasSgemm, fp32 in and out, CUBLAS_DEFAULT_MATH (no TF32) (or, for a model
 * uploaded with MC_GEMM_BF16, bf16 weights and inputs with fp32 accumulation), on fixed tiles of
 * the model's row_tile rows (row-count invariance; the tile is chosen once at upload from the
 * GEMM weight bytes, mc_tile.h, never from a batch; the scratch is padded to a multiple of the
 * tile and its padding rows stay zero, and rows never mix in a GEMM). */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/io/env_switch.h"
#include "src/io/errbuf.h"
#include "src/model_cuda/attn_lab.h"
#include "src/model_cuda/mc_fit.h"
#include "src/model_cuda/mc_fused.h"
#include "src/model_cuda/mc_gemm_mma.h"
#include "src/model_cuda/mc_gemm_wide.h"
#include "src/model_cuda/mc_model.h"
#include "src/model_cuda/mc_gemm_lt.h"
#include "src/model_cuda/mc_prefetch.h"
#include "src/model_cuda/mc_model_internal.cuh"
#include "src/model_cuda/mc_ref.h"
#include "src/model_cuda/mc_ssm_rows.h"
#include "src/model_cuda/mc_step_io.h"
#include "src/ssm_cuda/cuda_pdl.h"
#include "src/ssm_cuda/ssm_cuda.h"

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

/* RSSM_GEMM_LT (mc_gemm_lt.h): which bf16 GEMMs go to cuBLASLt's ranked algorithms instead of
 * cublasGemmEx; read once, so that every batch and graph of a run launch alike. */
mc_gemm_lt_rule gemm_lt_rule() {
  static const mc_gemm_lt_rule rule = mc_gemm_lt_rule_from_env();
  return rule;
}

/* The tensor-core kernel's warps a block for a weight (mc_gemm_mma_warps); RSSM_GEMM_MMA16=0
 * keeps 8 where the rule picks 16, as before session 34 (an A/B switch; other bits for those
 * GEMMs; read once, so every launch of a run and of its graphs is alike). */
int gemm_mma_warps(int64_t rows, int64_t cols, int sms) {
  static const char *const off_on[] = {"0", "1"};
  static const bool no16 = rssm_env_switch("RSSM_GEMM_MMA16", off_on, 2, 1) == 0;
  const int kw = mc_gemm_mma_warps(rows, cols, sms);
  return kw == 16 && no16 ? 8 : kw;
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

/* dst[i] = bf16(src[i]), round to nearest even (NaN stays NaN, overflow goes to infinity) */
__global__ void f32_to_bf16_kernel(const float *__restrict__ src /* [n] */,
                                   __nv_bfloat16 *__restrict__ dst /* [n] */, int64_t n) {
  pdl_enter();
  for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dst[i] = __float2bfloat16_rn(src[i]);
}

int f32_to_bf16(const float *src /* [n] */, __nv_bfloat16 *dst /* [n] */, int64_t n,
                cudaStream_t s) {
  if (n <= 0) return 0;
  int64_t blocks = (n + 255) / 256;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  pdl_launch(f32_to_bf16_kernel, (unsigned)blocks, 256, 0, s, src, dst, n);
  return cudaGetLastError() == cudaSuccess ? 0 : -1;
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

/* ------------------------------------------------------------------ batch ------------------ */


namespace {

int dalloc(mc_batch *b, void **p, int64_t bytes) {
  if (bytes <= 0) bytes = 4;
  if (cudaMalloc(p, (size_t)bytes) != cudaSuccess) return -1;
  if (cudaMemset(*p, 0, (size_t)bytes) != cudaSuccess) return -1;
  b->dev_bytes += bytes;
  return 0;
}
#define DALLOC(b, ptr, bytes) dalloc((b), (void **)&(ptr), (bytes))

/* Pinned host memory, zeroed, and with dev not NULL mapped into the device's address space: *host
 * for the host, *dev for kernels (mc_step_io.h). 0, or -1 with *host NULL. */
int pinned_mapped(void **host, void **dev, size_t bytes) {
  *host = nullptr;
  if (cudaHostAlloc(host, bytes, dev ? cudaHostAllocMapped : cudaHostAllocDefault) != cudaSuccess) {
    *host = nullptr;
    return -1;
  }
  memset(*host, 0, bytes);
  if (dev && cudaHostGetDevicePointer(dev, *host, 0) != cudaSuccess) {
    cudaFreeHost(*host);
    *host = nullptr;
    return -1;
  }
  return 0;
}

int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* Fork the side streams off the step's stream (before a layer's SSM calls) and join them back
 * (after); ssm_stream picks configuration ci's stream. */
int ssm_fork(mc_batch *b) {
  if (!b->nside) return 0;
  int rc = cudaEventRecord(b->fork_ev, b->stream) != cudaSuccess;
  for (int j = 0; !rc && j < b->nside; j++)
    rc = cudaStreamWaitEvent(b->side[j], b->fork_ev, 0) != cudaSuccess;
  return rc;
}
void *ssm_stream(mc_batch *b, int ci) {
  return b->nside ? (void *)b->side[ci % b->nside] : (void *)b->stream;
}
int ssm_join(mc_batch *b) {
  int rc = 0;
  for (int j = 0; !rc && j < b->nside; j++)
    rc = cudaEventRecord(b->join_ev[j], b->side[j]) != cudaSuccess ||
         cudaStreamWaitEvent(b->stream, b->join_ev[j], 0) != cudaSuccess;
  return rc;
}

/* The L2 prefetch (mc_prefetch.h) of `rows` rows of row_bytes at P, `span` bytes of each: the
 * side stream waits for what the step's stream has launched so far, then prefetches; pf_join
 * (called by every GEMM and before every SSM step) makes the step's stream wait for it. */
int pf_launch(mc_batch *b, const void *P, int64_t rows, int64_t row_bytes, int64_t span) {
  if (cudaEventRecord(b->pf_fork_ev, b->stream) != cudaSuccess ||
      cudaStreamWaitEvent(b->pf_stream, b->pf_fork_ev, 0) != cudaSuccess ||
      mc_l2_prefetch(P, rows, row_bytes, span, b->pf_stream) != 0)
    return -1;
  b->pf_pending = 1;
  return 0;
}
/* The bf16 weights W [rows][cols] of the GEMM after the next kernel(s): the first
 * mc_l2_prefetch_span bytes of each row. Nothing when the batch has no budget, one is pending,
 * or the span is too small. */
int pf_fork(mc_batch *b, const void *W, int64_t rows, int64_t cols) {
  if (b->pf_budget <= 0 || !W || b->pf_pending) return 0;
  const int64_t row_bytes = cols * (int64_t)sizeof(uint16_t);
  const int64_t span = mc_l2_prefetch_span(rows, row_bytes, b->pf_budget);
  return span == 0 ? 0 : pf_launch(b, W, rows, row_bytes, span);
}
/* The first bytes of an SSM layer's stored state (ssm_cuda_state's main checkpoint,
 * [B][H][matrix bytes]: the rows its step's first blocks read), whole chunks of PF_STATE_CHUNK. */
constexpr int64_t PF_STATE_CHUNK = 64 << 10;
int pf_fork_state(mc_batch *b, const ssm_cuda_state *st) {
  if (b->pf_state_budget <= 0 || b->pf_pending || !st->main.blob) return 0;
  const int64_t total = (int64_t)st->B * st->dims.H * (int64_t)st->main.lay.bytes_per_matrix;
  const int64_t chunks = (total < b->pf_state_budget ? total : b->pf_state_budget) / PF_STATE_CHUNK;
  return chunks < 1 ? 0 : pf_launch(b, st->main.blob, chunks, PF_STATE_CHUNK, PF_STATE_CHUNK);
}
int pf_join(mc_batch *b) {
  if (!b->pf_pending) return 0;
  b->pf_pending = 0;
  return cudaEventRecord(b->pf_join_ev, b->pf_stream) != cudaSuccess ||
                 cudaStreamWaitEvent(b->stream, b->pf_join_ev, 0) != cudaSuccess
             ? -1
             : 0;
}

/* bf16 models with the tensor-core kernel (mc_gemm_mma.h): Y = W . X for the batch's RT token
 * rows, on pieces of up to 64 rows (the kernel's bits do not depend on the rows in a call). The
 * padding rows RT..Rpad-1 are not computed: no kernel reads them from a GEMM's output (the
 * residual add, the glue and the metrics take the R or RT rows), and they keep the zeros of
 * their allocation, which is what cuBLAS writes there from the zero padding rows of X. (cuBLAS
 * computes them because its bits depend on its n, fixed at the row tile; this kernel's do not,
 * and at 16 token rows 64-row calls cost the fixture models' step GEMMs 174 / 147 us against 95
 * / 75 on the 16 rows: `bench gemm`, docs/gpu-results.md, "Session 30".) X: bf16 [Rpad][cols]
 * (x_f32 = 0) or fp32, rounded to bf16 as the kernel loads it (x_f32 = 1). Returns 0, -1 on a
 * launch error, -2 when the kernel does not take the shape (nothing launched: cuBLAS then). */
int gemm_mma(mc_batch *b, const void *W, int64_t rows, int64_t cols, const void *X, int x_f32,
             float *Y /* [Rpad][ldy] */, int64_t ldy) {
  const int kw = gemm_mma_warps(rows, cols, b->g->sms), R = b->RT;
  const size_t xsize = x_f32 ? sizeof(float) : sizeof(uint16_t);
  if (!mc_gemm_mma_supported(W, X, R < MC_GEMM_MMA_MAX_R ? R : MC_GEMM_MMA_MAX_R, rows, cols, ldy))
    return -2;
  for (int r0 = 0; r0 < R; r0 += MC_GEMM_MMA_MAX_R) {
    const int n = R - r0 < MC_GEMM_MMA_MAX_R ? R - r0 : MC_GEMM_MMA_MAX_R;
    const char *x = static_cast<const char *>(X) + (size_t)r0 * (size_t)cols * xsize;
    if (mc_gemm_mma(static_cast<const uint16_t *>(W), x, x_f32, Y + (int64_t)r0 * ldy, ldy, n, rows,
                    cols, kw, b->stream) != 0)
      return -1;
  }
  return 0;
}

/* A SwiGLU or ReLU^2 MLP block of a model on the tensor-core kernel: its input projection and
 * activation in one launch (mc_gemm_mma_act), from xb into xb_act, the bf16 input of its output
 * projection: the bits of gemm_xb and mc_swiglu_bf16 / mc_relu2_bf16 (one launch less a block).
 * Returns 0, -1 on a launch error, -2 when not taken (nothing launched: the two-launch path then):
 * another model, a shape the kernel refuses, or an output projection the kernel would not take
 * (cuBLAS would read xb_act's padding rows, which this does not write). */
int gemm_mlp_act(mc_batch *b, const mc_block *w, int64_t H) {
  const int act = w->kind == BK_SWIGLU  ? MC_GEMM_MMA_ACT_SWIGLU
                  : w->kind == BK_RELU2 ? MC_GEMM_MMA_ACT_RELU2
                                        : 0;
  const int R = b->RT;
  if (!act || !b->g->gemm_mma || !b->xb_act || !w->w_in || !w->w_out ||
      w->out_cols > b->gemm_cols ||
      !mc_gemm_mma_act_supported(w->w_in, b->xb, R, w->in_rows, H, w->out_cols, act) ||
      !mc_gemm_mma_supported(w->w_out, b->xb_act, R, H, w->out_cols, H))
    return -2;
  return mc_gemm_mma_act(static_cast<const uint16_t *>(w->w_in), b->xb, 0,
                         reinterpret_cast<uint16_t *>(b->xb_act), w->out_cols, R, w->in_rows, H,
                         act, gemm_mma_warps(w->in_rows, H, b->g->sms), b->stream) != 0
             ? -1
             : 0;
}

/* bf16 models on the wide kernel (mc_gemm_wide.h): Y = W . xb for the batch's RT token rows, on
 * pieces of up to 64 rows (its bits do not depend on the rows in a call; the padding rows are
 * left as gemm_mma leaves them). Returns 0, -1 on a launch error, -2 when the kernel does not
 * take the shape (nothing launched: cuBLAS then). */
int gemm_wide(mc_batch *b, const void *W, int64_t rows, int64_t cols, const __nv_bfloat16 *xb,
              float *Y /* [Rpad][ldy] */, int64_t ldy) {
  const int R = b->RT, nsplit = mc_gemm_wide_splits(rows, cols, b->g->sms);
  if (b->g->gemm_wide == 2 && nsplit < 2) return -2; /* wide-split: cuBLAS for this one */
  if (!mc_gemm_wide_supported(W, xb, R < MC_GEMM_WIDE_MAX_R ? R : MC_GEMM_WIDE_MAX_R, rows, cols,
                              ldy))
    return -2;
  for (int r0 = 0; r0 < R; r0 += MC_GEMM_WIDE_MAX_R) {
    const int n = R - r0 < MC_GEMM_WIDE_MAX_R ? R - r0 : MC_GEMM_WIDE_MAX_R;
    if (mc_gemm_wide(static_cast<const uint16_t *>(W),
                     reinterpret_cast<const uint16_t *>(xb + (int64_t)r0 * cols),
                     Y + (int64_t)r0 * ldy, ldy, n, rows, cols, nsplit, b->wide_scratch,
                     b->stream) != 0)
      return -1;
  }
  return 0;
}

/* bf16 models: Y = W . xb on the row tiles, xb [Rpad][cols] already holding the bf16 input (made
 * by gemm below, or by the fused kernel that produced X: mc_fused.h). */
int gemm_xb(mc_batch *b, const void *W, int64_t rows, int64_t cols, float *Y /* [Rpad][ldy] */,
            int64_t ldy, const __nv_bfloat16 *xb = nullptr /* [Rpad][cols]; NULL: b->xb */) {
  const float one = 1.0f, zero = 0.0f;
  const int tile = b->g->row_tile;
  if (!xb) xb = b->xb;
  if (b->g->prec != MC_GEMM_BF16 || cols > b->gemm_cols || pf_join(b) != 0) return -1;
  if (b->g->gemm_mma) {
    const int rc = gemm_mma(b, W, rows, cols, xb, 0, Y, ldy);
    if (rc != -2) return rc;
  }
  if (b->g->gemm_wide) {
    const int rc = gemm_wide(b, W, rows, cols, xb, Y, ldy);
    if (rc != -2) return rc;
  }
  if (b->lt && mc_gemm_lt_takes(b->lt_rule, rows, cols)) { /* RSSM_GEMM_LT */
    const int rc =
        mc_gemm_lt_run(b->lt, b->lt_rule.rank, W, reinterpret_cast<const uint16_t *>(xb), Y, ldy,
                       b->Rpad, rows, cols, tile, b->blas_ws, MC_GEMM_LT_WORKSPACE, b->stream);
    if (rc != -2) return rc; /* -2: a shape or rank it does not take, cuBLAS then */
  }
  for (int r0 = 0; r0 < b->Rpad; r0 += tile)
    if (cublasGemmEx(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, tile, (int)cols, &one, W,
                     CUDA_R_16BF, (int)cols, xb + (int64_t)r0 * cols, CUDA_R_16BF, (int)cols, &zero,
                     Y + (int64_t)r0 * ldy, CUDA_R_32F, (int)ldy, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS)
      return -1;
  return 0;
}

/* Y[r][0..rows) = W[rows][cols] . X[r] for every row of the padded batch, tile by tile (n = the
 * model's row_tile in every call, whatever the batch: Rpad is a multiple of it).
 * fp32 models: cublasSgemm (fp32 in, fp32 math without TF32, fp32 out). bf16 models: X rounded
 * to bf16 (round to nearest even) into xb, then cublasGemmEx with bf16 W and X, fp32 accumulation
 * (CUBLAS_COMPUTE_32F) and fp32 Y, on the same tiles. */
int gemm(mc_batch *b, const void *W, int64_t rows, int64_t cols, const float *X /* [Rpad][cols] */,
         float *Y /* [Rpad][ldy] */, int64_t ldy) {
  const float one = 1.0f, zero = 0.0f;
  const int tile = b->g->row_tile;
  if (pf_join(b) != 0) return -1;
  if (b->g->prec == MC_GEMM_BF16) {
    if (b->g->gemm_mma) { /* X read as fp32 and rounded in the kernel: no f32_to_bf16 launch */
      const int rc = gemm_mma(b, W, rows, cols, X, 1, Y, ldy);
      if (rc != -2) return rc;
    }
    if (cols > b->gemm_cols || f32_to_bf16(X, b->xb, (int64_t)b->Rpad * cols, b->stream) != 0)
      return -1;
    return gemm_xb(b, W, rows, cols, Y, ldy);
  }
  const float *Wf = (const float *)W; /* [rows][cols] */
  for (int r0 = 0; r0 < b->Rpad; r0 += tile)
    if (cublasSgemm(b->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)rows, tile, (int)cols, &one, Wf,
                    (int)cols, X + (int64_t)r0 * cols, (int)cols, &zero, Y + (int64_t)r0 * ldy,
                    (int)ldy) != CUBLAS_STATUS_SUCCESS)
      return -1;
  return 0;
}

}  // namespace

namespace {
void prof_report(mc_batch *b) {
  const int nb = b->g->nblocks;
  const double n = (double)(b->prof_steps > 0 ? b->prof_steps : 1);
  double tot = 0.0, ssm = 0.0;
  fprintf(stderr, "profile: %lld launched steps, R = %d rows; GPU microseconds per step:\n",
          (long long)b->prof_steps, b->R);
  for (int i = 0; i < nb; i++) {
    fprintf(stderr, "  block %2d %-8s %9.1f  (SSM engine %9.1f)\n", i,
            block_kind_name((block_kind)b->g->blocks[i].kind), 1e3 * b->prof_ms[2 * i] / n,
            1e3 * b->prof_ms[2 * i + 1] / n);
    tot += b->prof_ms[2 * i];
    ssm += b->prof_ms[2 * i + 1];
  }
  tot += b->prof_ms[2 * nb];
  fprintf(stderr, "  head (norm, lm_head, metrics) %9.1f\n  GPU total %9.1f (SSM engine %9.1f); "
          "host wall per step %9.1f\n", 1e3 * b->prof_ms[2 * nb] / n, 1e3 * tot / n,
          1e3 * ssm / n, 1e3 * b->prof_ms[2 * nb + 1] / n);
}
}  // namespace

extern "C" void mc_batch_free(mc_batch *b) {
  if (!b) return;
  const int nb = b->g ? b->g->nblocks : 0;
  if (b->prof_ev) {
    if (b->prof_steps > 0) prof_report(b);
    for (int i = 0; i < 3 * nb + 2; i++) cudaEventDestroy(b->prof_ev[i]);
    free(b->prof_ev);
    free(b->prof_ms);
  }
  for (int i = 0; i < nb; i++) {
    if (b->conv_win) cudaFree(b->conv_win[i]);
    if (b->kc) cudaFree(b->kc[i]);
    if (b->vc) cudaFree(b->vc[i]);
    if (b->eng && b->eng[i]) {
      for (int c = 0; c < b->C; c++) ssm_cuda_free(&b->eng[i][c]);
      free(b->eng[i]);
    }
  }
  free(b->conv_win);
  free(b->kc);
  free(b->vc);
  free(b->eng);
  void *ds[] = {b->h,        b->u,        b->y,        b->proj,         b->act,         b->cv,
                b->e_alpha,  b->e_beta,   b->e_v,      b->e_o,          b->e_k,         b->e_q,
                b->aq,       b->part_ml,  b->part_acc, b->logits,       b->rope_cos,    b->rope_sin,
                b->stats,    b->met,      b->tok,      b->tgt,          b->pos_d,       b->blas_ws,
                b->xb,       b->xb_act,   b->mo_lg,    b->mo_scr,       b->mo_idx,      b->mo_wt,
                b->mo_h,     b->mo_y,     b->mo_acc,   b->mo_xl,        b->mo_sp,       b->mo_sa,
                b->mo_so,    b->n_d,      b->a_d,      b->ref_row_d,    b->cache_row_d, b->slot_d,
                b->slot_tok, b->slot_pos, b->slot_tgt, b->wide_scratch};
  for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) cudaFree(ds[i]);
  if (b->gexec) cudaGraphExecDestroy(b->gexec);
  if (b->blas) cublasDestroy(b->blas);
  mc_gemm_lt_destroy(b->lt);
  if (b->stream) cudaStreamDestroy(b->stream);
  for (int j = 0; j < b->nside; j++) {
    cudaStreamDestroy(b->side[j]);
    cudaEventDestroy(b->join_ev[j]);
  }
  if (b->nside) cudaEventDestroy(b->fork_ev);
  if (b->pf_on) {
    cudaStreamDestroy(b->pf_stream);
    cudaEventDestroy(b->pf_fork_ev);
    cudaEventDestroy(b->pf_join_ev);
  }
  free(b->cfgs);
  void *hs[] = {b->h_tok, b->h_tgt, b->h_pos, b->h_met};
  for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++)
    if (hs[i]) cudaFreeHost(hs[i]);
  free(b->rpos);
  free(b->h_n);
  free(b->h_a);
  free(b->h_ref);
  free(b);
}

/* The sizes mc_batch_build allocates by: the largest per-row widths of the SSM and attention
 * layers, and the device bytes the whole batch needs (an estimate that ignores the SSM ring). */
typedef struct {
  int64_t need, max_conv, max_heads, max_vd, max_gk, kvd, qd, nsplit, gemm_cols;
} batch_sizes;

/* R state rows with T token rows each (scratch per token row, states per state row). */
static batch_sizes batch_sizes_of(const mc_model *g, int R, int T, int64_t max_ctx) {
  const int64_t RT = (int64_t)R * T, Rp = mc_rows_pad(RT, g->row_tile);
  const model *m = g->cpu;
  const model_config *c = &m->cfg;
  const int nb = g->nblocks;
  const int64_t H = c->H, V = c->V, F = (int64_t)sizeof(float);
  int64_t need = 3 * Rp * H * F + Rp * (g->max_in_rows + g->max_out_cols + V) * F;
  int64_t max_conv = 0, max_heads = 1, max_vd = 1, max_gk = 1;
  const int64_t kvd = c->n_kv_heads * c->head_dim, qd = c->n_heads * c->head_dim;
  const int64_t nsplit = attn_lab_splits_shipped((int)c->n_kv_heads, g->sms);
  for (int i = 0; i < nb; i++) {
    const int kind = m->blocks[i].kind;
    if (kind == BK_GDN || kind == BK_MAMBA2) {
      const int64_t cd = conv_channels(c, kind), Kc = kind == BK_GDN ? c->gdn_kernel : c->m_kernel;
      max_conv = max64(max_conv, cd);
      need += R * (Kc - 1) * cd * F;
      /* engine: checkpoint (<= fp32) + scratch S per row, an estimate that ignores the ring */
      const int64_t hs = kind == BK_GDN ? c->gdn_hv * c->gdn_dv * c->gdn_dk
                                        : c->m_heads * c->m_head_dim * c->m_state;
      need += 2 * R * hs * F;
      max_heads = max64(max_heads, kind == BK_GDN ? c->gdn_hv : c->m_heads);
      max_vd = max64(max_vd, kind == BK_GDN ? c->gdn_hv * c->gdn_dv : c->m_heads * c->m_head_dim);
      max_gk = max64(max_gk, kind == BK_GDN ? c->gdn_hk * c->gdn_dk : c->m_groups * c->m_state);
    } else if (kind == BK_QATTN || kind == BK_NATTN) {
      need += 2 * R * max_ctx * kvd * F;
    }
  }
  /* attention: split-K scratch, queries, and a spec batch's cache-row map */
  if (m->n_attn > 0)
    need += RT * c->n_heads * nsplit * (2 + c->head_dim) * F + RT * qd * F + (T > 1 ? RT * 4 : 0);
  /* per token row: conv output, engine inputs and outputs, metrics (MoE scratch not counted) */
  need += RT * (max_conv + 2 * max_heads + 2 * max_vd + 2 * max_gk) * F + RT * 64;
  /* bf16 GEMMs: their rounded input, as wide as the widest GEMM input */
  const int64_t gemm_cols = max64(max64(H, g->max_out_cols), max64(g->moe_din, g->moe_is));
  if (g->prec == MC_GEMM_BF16)
    need += Rp * gemm_cols * 2 + (g->gemm_mma ? Rp * gemm_cols * 2 : 0) + /* xb, xb_act */
            (g->gemm_wide ? (int64_t)mc_gemm_wide_scratch_max(g->sms) * F
                          : 0); /* the wide kernel's scratch */
  batch_sizes z = {need, max_conv, max_heads, max_vd, max_gk, kvd, qd, nsplit, gemm_cols};
  return z;
}

/* need(R) and need(max_ctx) for mc_fit_largest */
typedef struct {
  const mc_model *g;
  int R, T;
  int64_t max_ctx;
} fit_ctx;

static int64_t need_of_rows(void *p, int64_t R) {
  const fit_ctx *f = (const fit_ctx *)p;
  return batch_sizes_of(f->g, (int)R, f->T, f->max_ctx).need;
}

static int64_t need_of_ctx(void *p, int64_t ctx) {
  const fit_ctx *f = (const fit_ctx *)p;
  return batch_sizes_of(f->g, f->R, f->T, ctx).need;
}

extern "C" int64_t mc_batch_estimate(const mc_model *g, int R, int64_t max_ctx) {
  return batch_sizes_of(g, R, 1, max_ctx).need;
}

extern "C" int64_t mc_batch_estimate_t(const mc_model *g, int R, int T, int64_t max_ctx) {
  return batch_sizes_of(g, R, T < 1 ? 1 : T, max_ctx).need;
}

extern "C" int64_t mc_batch_rows_fit(const mc_model *g, int64_t max_ctx, int64_t budget) {
  return mc_batch_rows_fit_t(g, 1, max_ctx, budget);
}

extern "C" int64_t mc_batch_rows_fit_t(const mc_model *g, int T, int64_t max_ctx,
                                       int64_t budget) {
  fit_ctx f = {g, 0, T < 1 ? 1 : T, max_ctx};
  /* mc_batch_build_t takes at most 65535 token rows, R T: never suggest more state rows */
  const int64_t n = mc_fit_largest(need_of_rows, &f, 1, 65535 / f.T, budget);
  return n < 0 ? 0 : n;
}

extern "C" int64_t mc_batch_ctx_fit(const mc_model *g, int R, int64_t budget) {
  fit_ctx f = {g, R, 1, 0};
  const int64_t n = mc_fit_largest(need_of_ctx, &f, 1, INT32_MAX, budget);
  return n < 0 ? 0 : n;
}

extern "C" int mc_device_mem(int64_t *free_b, int64_t *total_b) {
  size_t fr = 0, to = 0;
  if (cudaMemGetInfo(&fr, &to) != cudaSuccess) return -1;
  *free_b = (int64_t)fr;
  *total_b = (int64_t)to;
  return 0;
}

/* b's streams, cuBLAS handle, host arrays, side streams and (RSSM_CUDA_PROFILE=1) profile
 * events. Returns 1, or 0 when one could not be created. */
static int batch_streams(mc_batch *b, int C, int R, int nb) {
  int ok = cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking) == cudaSuccess;
  ok = ok && cublasCreate(&b->blas) == CUBLAS_STATUS_SUCCESS;
  ok = ok && cublasSetStream(b->blas, b->stream) == CUBLAS_STATUS_SUCCESS;
  /* fp32 math, no TF32: the precision of every configuration, the reference included */
  ok = ok && cublasSetMathMode(b->blas, CUBLAS_DEFAULT_MATH) == CUBLAS_STATUS_SUCCESS;
  const int64_t ws = (int64_t)MC_GEMM_LT_WORKSPACE; /* cuBLAS's 32 MiB, shared with cuBLASLt */
  ok = ok && DALLOC(b, b->blas_ws, ws) == 0;
  ok = ok && cublasSetWorkspace(b->blas, b->blas_ws, (size_t)ws) == CUBLAS_STATUS_SUCCESS;
  const mc_gemm_lt_rule lt_rule = gemm_lt_rule();
  if (ok && b->g->prec == MC_GEMM_BF16 && lt_rule.rank >= 0) {
    b->lt_rule = lt_rule;
    ok = (b->lt = mc_gemm_lt_create()) != nullptr;
  }
  b->cfgs = (ssm_config *)malloc((size_t)C * sizeof(ssm_config));
  b->conv_win = (float **)calloc((size_t)nb + 1, sizeof(float *));
  b->kc = (float **)calloc((size_t)nb + 1, sizeof(float *));
  b->vc = (float **)calloc((size_t)nb + 1, sizeof(float *));
  b->eng = (ssm_cuda_state **)calloc((size_t)nb + 1, sizeof(ssm_cuda_state *));
  const int RT = R * b->T;
  /* lockstep: MC_STEPS_MAX slots of R rows (targets: of K); a spec round: RT rows */
  const size_t slots_rows = (size_t)MC_STEPS_MAX * (size_t)R,
               tok_rows = slots_rows > (size_t)RT ? slots_rows : (size_t)RT,
               tgt_slots = (size_t)MC_STEPS_MAX * (size_t)b->K,
               tgt_rows = tgt_slots > (size_t)RT ? tgt_slots : (size_t)RT;
  /* the inputs pinned (copied in by cudaMemcpyAsync), the metrics also mapped (step_egress) */
  ok = ok && pinned_mapped((void **)&b->h_tok, nullptr, tok_rows * 8) == 0 &&
       pinned_mapped((void **)&b->h_tgt, nullptr, tgt_rows * 8) == 0 &&
       pinned_mapped((void **)&b->h_pos, nullptr, tok_rows * 4) == 0 &&
       pinned_mapped((void **)&b->h_met, (void **)&b->d_h_met,
                     slots_rows * sizeof(mc_row_metrics)) == 0;
  ok = ok && DALLOC(b, b->slot_tok, (int64_t)slots_rows * 8) == 0 &&
       DALLOC(b, b->slot_pos, (int64_t)slots_rows * 4) == 0 &&
       DALLOC(b, b->slot_tgt, (int64_t)tgt_slots * 8) == 0;
  b->rpos = (int64_t *)calloc((size_t)R, sizeof(int64_t));
  b->h_n = (int *)calloc((size_t)R, sizeof(int));
  b->h_a = (int *)calloc((size_t)R, sizeof(int));
  b->h_ref = (int *)calloc((size_t)RT, sizeof(int));
  ok = ok && b->cfgs && b->conv_win && b->kc && b->vc && b->eng && b->h_tok && b->h_pos &&
       b->h_tgt && b->rpos && b->h_n && b->h_a && b->h_ref;
  if (ok && C > 1) {
    const int want_side = C < MC_SIDE_STREAMS ? C : MC_SIDE_STREAMS;
    ok = cudaEventCreateWithFlags(&b->fork_ev, cudaEventDisableTiming) == cudaSuccess;
    for (int j = 0; ok && j < want_side; j++) {
      ok = cudaStreamCreateWithFlags(&b->side[j], cudaStreamNonBlocking) == cudaSuccess;
      if (ok && cudaEventCreateWithFlags(&b->join_ev[j], cudaEventDisableTiming) != cudaSuccess) {
        cudaStreamDestroy(b->side[j]);
        ok = 0;
      }
      if (ok) b->nside = j + 1;
    }
    if (!ok && b->nside == 0) cudaEventDestroy(b->fork_ev);
  }
  /* the L2 prefetch's stream and events: cuBLAS GEMMs only (the tensor-core kernels load their
     first weights before their PDL wait already) */
  const int64_t pf = b->g->prec == MC_GEMM_BF16 && !b->g->gemm_mma && !b->g->gemm_wide
                         ? mc_l2_prefetch_budget()
                         : 0;
  const int64_t pf_state = mc_l2_prefetch_state_budget();
  if (ok && (pf > 0 || pf_state > 0)) {
    ok = cudaStreamCreateWithFlags(&b->pf_stream, cudaStreamNonBlocking) == cudaSuccess;
    if (ok && cudaEventCreateWithFlags(&b->pf_fork_ev, cudaEventDisableTiming) != cudaSuccess) {
      cudaStreamDestroy(b->pf_stream);
      ok = 0;
    }
    if (ok && cudaEventCreateWithFlags(&b->pf_join_ev, cudaEventDisableTiming) != cudaSuccess) {
      cudaStreamDestroy(b->pf_stream);
      cudaEventDestroy(b->pf_fork_ev);
      ok = 0;
    }
    if (ok) {
      b->pf_on = 1;
      b->pf_budget = pf;
      b->pf_state_budget = pf_state;
    }
  }
  const char *prof = getenv("RSSM_CUDA_PROFILE");
  if (ok && prof && strcmp(prof, "1") == 0) {
    b->prof_ev = (cudaEvent_t *)calloc((size_t)(3 * nb + 2), sizeof(cudaEvent_t));
    b->prof_ms = (double *)calloc((size_t)(2 * nb + 2), sizeof(double));
    ok = b->prof_ev && b->prof_ms;
    for (int i = 0; ok && i < 3 * nb + 2; i++) ok = cudaEventCreate(&b->prof_ev[i]) == cudaSuccess;
    b->prof = ok;
  }
  return ok;
}

/* b's per-step device buffers (rows, projections, logits, metrics, attention, RoPE tables, MoE)
 * for R token rows (b->R state rows times b->T). Returns 1, or 0 when device memory ran out. */
static int batch_buffers(mc_batch *b, const batch_sizes *z, int R, int Rp, int K, int64_t max_ctx) {
  const mc_model *g = b->g;
  const model *m = g->cpu;
  const model_config *c = &m->cfg;
  const int64_t H = c->H, V = c->V, F = (int64_t)sizeof(float);
  const int64_t max_conv = z->max_conv, max_heads = z->max_heads, max_vd = z->max_vd,
                max_gk = z->max_gk, qd = z->qd, nsplit = z->nsplit, gemm_cols = z->gemm_cols;
  int ok;
  ok = DALLOC(b, b->h, Rp * H * F) == 0 && DALLOC(b, b->u, Rp * H * F) == 0 &&
       DALLOC(b, b->y, Rp * H * F) == 0 && DALLOC(b, b->proj, Rp * g->max_in_rows * F) == 0 &&
       DALLOC(b, b->act, Rp * max64(g->max_out_cols, 1) * F) == 0 &&
       DALLOC(b, b->cv, R * max64(max_conv, 1) * F) == 0 &&
       DALLOC(b, b->e_alpha, R * max_heads * F) == 0 &&
       DALLOC(b, b->e_beta, R * max_heads * F) == 0 && DALLOC(b, b->e_v, R * max_vd * F) == 0 &&
       DALLOC(b, b->e_o, R * max_vd * F) == 0 && DALLOC(b, b->e_k, R * max_gk * F) == 0 &&
       DALLOC(b, b->e_q, R * max_gk * F) == 0 && DALLOC(b, b->logits, Rp * V * F) == 0 &&
       DALLOC(b, b->stats, R * (int64_t)sizeof(mc_row_stats)) == 0 &&
       DALLOC(b, b->met, R * (int64_t)sizeof(mc_row_metrics)) == 0 &&
       DALLOC(b, b->tok, R * 8) == 0 && DALLOC(b, b->tgt, (K > R ? K : R) * 8) == 0 &&
       DALLOC(b, b->slot_d, 4) == 0 && DALLOC(b, b->pos_d, R * 4) == 0 &&
       DALLOC(b, b->n_d, b->R * 4) == 0 && DALLOC(b, b->a_d, b->R * 4) == 0 &&
       DALLOC(b, b->ref_row_d, R * 4) == 0;
  if (ok && g->prec == MC_GEMM_BF16) {
    b->gemm_cols = gemm_cols;
    ok = DALLOC(b, b->xb, Rp * gemm_cols * 2) == 0;
    /* the tensor-core kernel's MLP activation, its bf16 copy (gemm_mlp_act) */
    if (ok && g->gemm_mma) ok = DALLOC(b, b->xb_act, Rp * gemm_cols * 2) == 0;
    /* the wide kernel's split partials */
    if (ok && g->gemm_wide)
      ok = DALLOC(b, b->wide_scratch, (int64_t)mc_gemm_wide_scratch_max(g->sms) * F) == 0 &&
           mc_gemm_wide_prepare() == 0;
  }
  if (ok && m->n_attn > 0) {
    /* separate allocations: part_acc is 256-byte aligned whatever nsplit is */
    b->nsplit = (int)nsplit;
    ok = DALLOC(b, b->aq, R * qd * F) == 0 &&
         DALLOC(b, b->part_ml, R * c->n_heads * nsplit * 2 * F) == 0 &&
         DALLOC(b, b->part_acc, R * c->n_heads * nsplit * c->head_dim * F) == 0;
    if (ok && b->T > 1) {
      /* token row r of a spec batch attends over state row r / T's cache (mc_attn_decode's
       * cache_row); fixed for the batch, so uploaded once here */
      int *map = (int *)malloc((size_t)R * sizeof(int));
      ok = map && DALLOC(b, b->cache_row_d, R * 4) == 0;
      for (int r = 0; ok && r < R; r++) map[r] = r / b->T;
      /* a pageable copy may still be in flight when cudaMemcpy returns: synchronise before the
       * non-blocking streams read it */
      ok = ok && cudaMemcpy(b->cache_row_d, map, (size_t)R * sizeof(int), cudaMemcpyHostToDevice) ==
                     cudaSuccess &&
           cudaDeviceSynchronize() == cudaSuccess;
      free(map);
    }
    const int half = (int)(c->rotary_dim / 2);
    if (ok && half > 0) {
      float *hc = (float *)malloc((size_t)(max_ctx * half) * sizeof(float));
      float *hs = (float *)malloc((size_t)(max_ctx * half) * sizeof(float));
      ok = hc && hs && DALLOC(b, b->rope_cos, max_ctx * half * F) == 0 &&
           DALLOC(b, b->rope_sin, max_ctx * half * F) == 0;
      if (ok) {
        mc_ref_rope_tables(c->rope_theta, (int)c->rotary_dim, max_ctx, hc, hs);
        ok = cudaMemcpy(b->rope_cos, hc, (size_t)(max_ctx * half) * sizeof(float),
                        cudaMemcpyHostToDevice) == cudaSuccess &&
             cudaMemcpy(b->rope_sin, hs, (size_t)(max_ctx * half) * sizeof(float),
                        cudaMemcpyHostToDevice) == cudaSuccess;
      }
      free(hc);
      free(hs);
    }
  }
  if (ok && g->moe_router_rows > 0) {
    const int64_t E = c->n_experts, k = c->topk, I = c->moe_inter, Din = g->moe_din;
    ok = DALLOC(b, b->mo_lg, Rp * g->moe_router_rows * F) == 0 &&
         DALLOC(b, b->mo_scr, R * 4 * E * F) == 0 && DALLOC(b, b->mo_idx, R * k * 4) == 0 &&
         DALLOC(b, b->mo_wt, R * k * F) == 0 && DALLOC(b, b->mo_h, R * k * I * F) == 0 &&
         DALLOC(b, b->mo_y, R * k * Din * F) == 0 && DALLOC(b, b->mo_acc, Rp * Din * F) == 0 &&
         DALLOC(b, b->mo_xl, Rp * Din * F) == 0 &&
         DALLOC(b, b->mo_sp, Rp * max64(g->moe_sh_rows, 1) * F) == 0 &&
         DALLOC(b, b->mo_sa, Rp * max64(g->moe_is, 1) * F) == 0 &&
         DALLOC(b, b->mo_so, Rp * H * F) == 0;
  }
  return ok;
}

/* Every layer's state: conv windows and one GPU SSM engine per configuration for SSM layers,
 * K/V caches for attention. Returns RSSM_OK, RSSM_ERR_IO (*ok = 0: device memory ran out) or
 * RSSM_ERR_INPUT with the message (an engine refused its configuration; b is then freed). */
static int batch_layers(mc_batch *b, const ssm_config *cfgs, int C, int K, uint64_t seed,
                        const uint32_t *sequences, const batch_sizes *z, int64_t max_ctx, int *okp,
                        char *err, size_t errlen) {
  const mc_model *g = b->g;
  const model *m = g->cpu;
  const model_config *c = &m->cfg;
  const int nb = g->nblocks, R = b->R;
  const int64_t F = (int64_t)sizeof(float), kvd = z->kvd;
  int ok = 1;
  for (int i = 0; ok && i < nb; i++) {
    const model_block_w *w = &m->blocks[i];
    if (w->kind == BK_GDN || w->kind == BK_MAMBA2) {
      const int64_t cd = conv_channels(c, w->kind);
      const int64_t Kc = w->kind == BK_GDN ? c->gdn_kernel : c->m_kernel;
      ok = DALLOC(b, b->conv_win[i], R * (Kc - 1) * cd * F) == 0;
      b->eng[i] = (ssm_cuda_state *)calloc((size_t)C, sizeof(ssm_cuda_state));
      ok = ok && b->eng[i];
      ssm_dims d;
      if (w->kind == BK_GDN)
        d = ssm_dims{SSM_GDN, (int)c->gdn_hv, (int)c->gdn_dv, (int)c->gdn_dk, (int)c->gdn_hk};
      else
        d = ssm_dims{SSM_MAMBA2, (int)c->m_heads, (int)c->m_head_dim, (int)c->m_state,
                     (int)c->m_groups};
      for (int ci = 0; ok && ci < C; ci++) {
        char e2[512];
        if (ssm_cuda_build(&b->eng[i][ci], &cfgs[ci], &d, K, seed, (uint32_t)w->layer, sequences,
                           e2, sizeof e2) != 0) {
          /* states built so far are freed by mc_batch_free; this one freed itself */
          memset(&b->eng[i][ci], 0, sizeof b->eng[i][ci]);
          for (int cj = 0; cj < ci; cj++) ssm_cuda_free(&b->eng[i][cj]);
          free(b->eng[i]);
          b->eng[i] = nullptr;
          rssm_fail(err, errlen, "layer %d, configuration '%s': GPU SSM state: %s", w->layer,
                    cfgs[ci].name, e2);
          mc_batch_free(b);
          return RSSM_ERR_INPUT;
        }
      }
    } else if (w->kind == BK_QATTN || w->kind == BK_NATTN) {
      ok = DALLOC(b, b->kc[i], R * max_ctx * kvd * F) == 0 &&
           DALLOC(b, b->vc[i], R * max_ctx * kvd * F) == 0;
    }
  }
  *okp = ok;
  return RSSM_OK;
}

extern "C" int mc_batch_build(mc_batch **out, const mc_model *g, const ssm_config *cfgs, int C,
                              int K, uint64_t seed, const uint32_t *sequences, int64_t max_ctx,
                              char *err, size_t errlen) {
  *out = nullptr;
  for (int i = 0; i < C; i++)
    if (cfgs[i].strategy == SSM_SPEC) {
      /* spec configurations play rounds of T tokens: mc_batch_build_spec */
      rssm_fail(err, errlen, "configuration '%s': a spec configuration needs a spec batch "
                "(mc_batch_build_spec)", cfgs[i].name);
      return RSSM_ERR_INPUT;
    }
  return mc_batch_build_t(out, g, cfgs, C, K, 1, seed, sequences, max_ctx, err, errlen);
}

int mc_batch_build_t(mc_batch **out, const mc_model *g, const ssm_config *cfgs, int C, int K,
                     int T, uint64_t seed, const uint32_t *sequences, int64_t max_ctx, char *err,
                     size_t errlen) {
  *out = nullptr;
  if (C < 1 || K < 1 || T < 1 || (int64_t)C * K * T > 65535 || max_ctx < 1 ||
      max_ctx > INT32_MAX) {
    rssm_fail(err, errlen,
              "batch of %d configurations x %d windows x %d tokens per row, context %lld "
              "(expected at least one of each, at most 65535 token rows and 2^31 positions)",
              C, K, T, (long long)max_ctx);
    return RSSM_ERR_INPUT;
  }
  mc_batch *b = (mc_batch *)calloc(1, sizeof *b);
  if (!b) return rssm_fail(err, errlen, "out of host memory"), RSSM_ERR_IO;
  b->g = g;
  b->C = C;
  b->K = K;
  b->R = C * K;
  b->T = T;
  b->RT = b->R * T;
  b->Rpad = (int)mc_rows_pad(b->RT, g->row_tile);
  b->max_ctx = max_ctx;
  const int R = b->R, Rp = b->Rpad, nb = g->nblocks;
  const batch_sizes z = batch_sizes_of(g, R, T, max_ctx);
  const int64_t need = z.need;
  size_t free_b = 0, total_b = 0;
  if (cudaMemGetInfo(&free_b, &total_b) != cudaSuccess) {
    mc_batch_free(b);
    return rssm_fail(err, errlen, "no CUDA device (cudaMemGetInfo failed)"), RSSM_ERR_IO;
  }
  if (need > (int64_t)free_b) {
    /* name what would fit: rows at this length, and the length for these rows */
    const int64_t rows_fit = mc_batch_rows_fit_t(g, T, max_ctx, (int64_t)free_b);
    const int64_t ctx_fit = mc_batch_ctx_fit(g, R, (int64_t)free_b);
    char msg[600];
    mc_fit_message(msg, sizeof msg, need, R, C, max_ctx, (int64_t)free_b, rows_fit, ctx_fit);
    rssm_fail(err, errlen, "%s", msg);
    mc_batch_free(b);
    return RSSM_ERR_INPUT;
  }

  int ok = batch_streams(b, C, R, nb);
  if (!ok) {
    mc_batch_free(b);
    return rssm_fail(err, errlen, "CUDA stream, cuBLAS handle or host memory could not be created"),
           RSSM_ERR_IO;
  }
  memcpy(b->cfgs, cfgs, (size_t)C * sizeof(ssm_config));
  ok = batch_buffers(b, &z, b->RT, Rp, K, max_ctx);
  if (ok) {
    int rc = batch_layers(b, cfgs, C, K, seed, sequences, &z, max_ctx, &ok, err, errlen);
    if (rc != RSSM_OK) return rc;
  }
  if (!ok) {
    rssm_fail(err, errlen,
              "out of device memory building the batch (%lld bytes so far, estimate %lld)",
              (long long)b->dev_bytes, (long long)need);
    mc_batch_free(b);
    return RSSM_ERR_IO;
  }
  *out = b;
  return RSSM_OK;
}

extern "C" int mc_batch_rows(const mc_batch *b) { return b->R; }
extern "C" void mc_batch_use_graph(mc_batch *b, int on) {
  if (!on && b->gexec) {
    cudaGraphExecDestroy(b->gexec);
    b->gexec = nullptr;
  }
  b->graph_on = on != 0 && !b->prof; /* profiling times launched steps only */
}
extern "C" int64_t mc_batch_pos(const mc_batch *b) { return b->pos; }

namespace {

/* Configuration ci's SSM engine of block i on the layer's inputs: a standard step, or (spec
 * batch) the verification of each row's n_d drafts (T, or 0: the row is left as it was) and the
 * commit of its a_d, in one launch sequence (a is drawn on the host before the round). */
int ssm_run(mc_batch *b, int i, int ci, const ssm_cuda_inputs *in, float *o) {
  ssm_cuda_state *st = &b->eng[i][ci];
  void *ss = ssm_stream(b, ci);
  if (!b->spec) return ssm_cuda_step(st, in, nullptr, o, ss) != 0;
  const int r0 = ci * b->K; /* first state row of configuration ci */
  return ssm_cuda_verify_n(st, in, b->n_d + r0, nullptr, o, ss) != 0 ||
         ssm_cuda_commit(st, b->a_d + r0, nullptr, ss) != 0;
}

/* The step's launches (mc_batch_step) or a spec round's (mc_batch_spec_round), no host
 * synchronisation inside. Returns 0 or -1 with a message naming the stage. */
int step_launches(mc_batch *b, int want_metrics, char *err, size_t errlen) {
  const mc_model *g = b->g;
  const model *m = g->cpu;
  const model_config *c = &m->cfg;
  /* R token rows (R = b->R T); a spec batch's state row r owns token rows r T .. r T + T - 1 */
  const int R = b->RT, K = b->K, T = b->T;
  const int spec = b->spec;
  const int64_t H = c->H, V = c->V;
  const float eps = (float)c->eps;
  void *s = (void *)b->stream;
  cudaEvent_t *ev = b->prof && !b->graph_on ? b->prof_ev : nullptr; /* [3 nblocks + 2] */
  const int bf16 = g->prec == MC_GEMM_BF16;
  /* Each block's residual add h += y is done by the next block's norm (or the final norm) in
   * the same launch (mc_add_rmsnorm), and a bf16 model's GEMM inputs are written by the kernel
   * that makes them: the same bits as mc_add, mc_rmsnorm and gemm's conversion, fewer launches;
   * likewise an SSM block's conv and prep, and Mamba-2's gate and group norm, are one launch each
   * on a decode step (docs/gpu-runtime.md, "Fused glue"). */
  const float *pending_y = nullptr; /* [R][H]: the previous block's output, not yet added to h */
  float *h = b->h;                  /* [Rpad][H] the residual */
  /* staged norms (MC_NORMS_STAGED): the first norm also copies the tokens' embedding
     rows into h (mc_embed_rmsnorm); plain: mc_embed, then the norm */
  const int embed_in_norm = mc_fused_norms() == MC_NORMS_STAGED;
  if (!embed_in_norm && mc_embed(g->embed, b->tok, h, R, H, s) != 0)
    return rssm_fail(err, errlen, "embedding launch");
  auto add_norm = [&](const float *wn, void *ubn) {
    return pending_y || !embed_in_norm ? mc_add_rmsnorm(h, pending_y, b->u, ubn, R, b->Rpad, H, wn,
                                                        c->norm_plus_one, eps, s)
                                       : mc_embed_rmsnorm(g->embed, b->tok, h, b->u, ubn, R,
                                                          b->Rpad, H, wn, c->norm_plus_one, eps, s);
  };
  for (int i = 0; i < g->nblocks; i++) {
    const mc_block *w = &g->blocks[i];
    const char *what = block_kind_name((block_kind)w->kind);
    if (ev) cudaEventRecord(ev[3 * i], b->stream);
    /* MoE blocks have no dense input projection (in_rows 0, which cuBLAS rejects as ldc 0) */
    void *ub = bf16 && w->w_in ? (void *)b->xb : nullptr; /* [Rpad][H] bf16 input of w_in */
    int rc = ub ? pf_fork(b, w->w_in, w->in_rows, H) : 0; /* while the norm runs */
    rc = rc || add_norm(w->norm, ub);
    /* an MLP on the tensor-core kernel: the input projection writes the activation (xb_act) */
    const int mlp_act = !rc && ub ? gemm_mlp_act(b, w, H) : -2;
    rc = rc || mlp_act == -1;
    if (w->w_in && mlp_act == -2)
      rc = rc || (ub ? gemm_xb(b, w->w_in, w->in_rows, H, b->proj, w->in_rows)
                     : gemm(b, w->w_in, w->in_rows, H, b->u, b->proj, w->in_rows));
    int out_ready = 0; /* 1: xb (xb_act after mlp_act) holds the bf16 input of w_out */
    switch (w->kind) {
      case BK_GDN: {
        const int Hk = (int)c->gdn_hk, Hv = (int)c->gdn_hv, dk = (int)c->gdn_dk,
                  dv = (int)c->gdn_dv;
        const int64_t conv_dim = conv_channels(c, BK_GDN), vd = (int64_t)Hv * dv;
        const int64_t kd = (int64_t)Hk * dk;
        /* a decode step: the conv and the prep in one launch (mc_fused.h); a spec round: the
           drafts' conv (mc_conv_spec), then the prep */
        if (spec)
          rc = rc ||
               mc_conv_spec(b->conv_win[i], b->proj, w->in_rows, w->conv_w, nullptr, b->a_d,
                            b->cv, b->R, T, conv_dim, (int)c->gdn_kernel, s) ||
               mc_gdn_prep(b->cv, b->proj, w->in_rows, conv_dim + vd, conv_dim + vd + Hv,
                           w->A_log, w->dt_bias, b->e_q, b->e_k, b->e_v, b->e_alpha, b->e_beta,
                           R, Hk, Hv, dk, dv, s);
        else
          rc = rc || pf_fork_state(b, &b->eng[i][0]) ||
               mc_gdn_conv_prep(b->conv_win[i], b->proj, w->in_rows, conv_dim + vd,
                                conv_dim + vd + Hv, w->conv_w, b->cv, (int)c->gdn_kernel, w->A_log,
                                w->dt_bias, b->e_q, b->e_k, b->e_v, b->e_alpha, b->e_beta, R, Hk,
                                Hv, dk, dv, s);
        if (ev) cudaEventRecord(ev[3 * i + 1], b->stream);
        rc = rc || pf_join(b) || ssm_fork(b);
        for (int ci = 0; !rc && ci < b->C; ci++) {
          const int64_t r0 = (int64_t)ci * K * T; /* first token row of configuration ci */
          ssm_cuda_inputs in = {b->e_alpha + r0 * Hv, b->e_beta + r0 * Hv, b->e_v + r0 * vd,
                                b->e_k + r0 * kd, b->e_q + r0 * kd};
          rc = ssm_run(b, i, ci, &in, b->e_o + r0 * vd);
        }
        rc = rc || ssm_join(b);
        if (ev) cudaEventRecord(ev[3 * i + 2], b->stream);
        out_ready = bf16 && w->w_out;
        rc = rc || (out_ready && pf_fork(b, w->w_out, H, w->out_cols));
        rc = rc || mc_rmsnorm_gate(b->e_o, b->act, out_ready ? (void *)b->xb : nullptr,
                                   b->proj + conv_dim, w->in_rows, R, b->Rpad, Hv, dv, vd,
                                   w->vnorm, 0, eps, s);
        break;
      }
      case BK_MAMBA2: {
        const int Hm = (int)c->m_heads, P = (int)c->m_head_dim, G = (int)c->m_groups,
                  N = (int)c->m_state;
        const int64_t di = (int64_t)Hm * P, conv_dim = conv_channels(c, BK_MAMBA2),
                      gn = (int64_t)G * N;
        const float dt_lo = (float)c->dt_limit_lo, dt_hi = (float)c->dt_limit_hi;
        if (spec) /* as GDN's: the drafts' conv, then the prep; a decode step: one launch */
          rc = rc ||
               mc_conv_spec(b->conv_win[i], b->proj + di, w->in_rows, w->conv_w, w->conv_b,
                            b->a_d, b->cv, b->R, T, conv_dim, (int)c->m_kernel, s) ||
               mc_mamba2_prep(b->proj, w->in_rows, di + conv_dim, b->cv, conv_dim, w->A_log,
                              w->dt_bias, dt_lo, dt_hi, b->pos_d, b->e_alpha, b->e_v, b->e_k,
                              b->e_q, R, Hm, P, G, N, s);
        else
          rc = rc || pf_fork_state(b, &b->eng[i][0]) ||
               mc_mamba2_conv_prep(b->conv_win[i], b->proj, w->in_rows, w->conv_w, w->conv_b, b->cv,
                                   conv_dim, (int)c->m_kernel, w->A_log, w->dt_bias, dt_lo, dt_hi,
                                   b->pos_d, b->e_alpha, b->e_v, b->e_k, b->e_q, R, Hm, P, G, N, s);
        if (ev) cudaEventRecord(ev[3 * i + 1], b->stream);
        rc = rc || pf_join(b) || ssm_fork(b);
        for (int ci = 0; !rc && ci < b->C; ci++) {
          const int64_t r0 = (int64_t)ci * K * T;
          ssm_cuda_inputs in = {b->e_alpha + r0 * Hm, nullptr, b->e_v + r0 * di,
                                b->e_k + r0 * gn, b->e_q + r0 * gn};
          rc = ssm_run(b, i, ci, &in, b->e_o + r0 * di);
        }
        rc = rc || ssm_join(b);
        if (ev) cudaEventRecord(ev[3 * i + 2], b->stream);
        out_ready = bf16 && w->w_out;
        rc = rc || (out_ready && pf_fork(b, w->w_out, H, w->out_cols));
        rc = rc || mc_mamba2_gate_norm(b->e_o, b->cv, conv_dim, b->proj, w->in_rows, w->D, b->act,
                                       out_ready ? (void *)b->xb : nullptr, R, b->Rpad, Hm, P, G,
                                       w->vnorm, eps, s);
        break;
      }
      case BK_QATTN:
      case BK_NATTN: {
        const int gated = w->kind == BK_QATTN;
        rc = rc || (bf16 && w->w_out && pf_fork(b, w->w_out, H, w->out_cols));
        /* spec: draft j of row r writes K/V at slot pos[r] + j of row r's cache (a rejected
         * draft's slots are overwritten by the next round) and attends over 0..pos[r] + j */
        rc = rc || mc_qk_prepare_t(b->proj, w->in_rows, gated, w->q_norm, w->k_norm, b->rope_cos,
                                   b->rope_sin, gated ? (int)c->rotary_dim : 0, eps, b->pos_d,
                                   b->aq, b->kc[i], b->vc[i], b->max_ctx, R, T, (int)c->n_heads,
                                   (int)c->n_kv_heads, (int)c->head_dim, s);
        rc = rc || mc_attn_decode(b->aq, b->kc[i], b->vc[i], b->pos_d, b->cache_row_d,
                                  b->max_ctx, gated ? b->proj : nullptr, w->in_rows, b->part_ml,
                                  b->part_acc, b->act, R, (int)c->n_heads, (int)c->n_kv_heads,
                                  (int)c->head_dim, b->nsplit, s);
        break;
      }
      case BK_SWIGLU:
        out_ready = bf16 && w->w_out;
        if (mlp_act == 0) break; /* done by the input projection */
        rc = rc || (out_ready && pf_fork(b, w->w_out, H, w->out_cols));
        rc = rc || (out_ready ? mc_swiglu_bf16(b->proj, b->act, b->xb, R, b->Rpad, w->out_cols, s)
                              : mc_swiglu(b->proj, b->act, R, w->out_cols, s));
        break;
      case BK_RELU2:
        out_ready = bf16 && w->w_out;
        if (mlp_act == 0) break;
        rc = rc || (out_ready && pf_fork(b, w->w_out, H, w->out_cols));
        rc = rc || (out_ready ? mc_relu2_bf16(b->proj, b->act, b->xb, R, b->Rpad, w->out_cols, s)
                              : mc_relu2(b->proj, b->act, R, w->out_cols, s));
        break;
      case BK_QMOE:
      case BK_NMOE: {
        const int64_t E = c->n_experts, k = c->topk, I = c->moe_inter, Din = w->Din;
        rc = rc || gemm(b, w->router, w->router_rows, H, b->u, b->mo_lg, w->router_rows);
        rc = rc || mc_moe_route(b->mo_lg, w->router_rows, w->corr_bias, w->kind == BK_QMOE, E, k,
                                c->norm_topk, (float)c->routed_scaling,
                                c->n_group > 0 ? c->n_group : 1, c->topk_group, b->mo_scr,
                                b->mo_idx, b->mo_wt, R, s);
        const float *x = b->u; /* [Rpad][Din]: the latent input, or u itself */
        if (w->fc1) {
          rc = rc || gemm(b, w->fc1, Din, H, b->u, b->mo_xl, Din);
          x = b->mo_xl;
        }
        rc = rc || mc_moe_experts(x, Din, b->mo_idx, b->mo_wt, w->e_gate, w->e_up, w->e_down,
                                  b->mo_h, b->mo_y, b->mo_acc, R, k, I, Din, s);
        if (w->fc2) rc = rc || gemm(b, w->fc2, H, Din, b->mo_acc, b->y, H);
        else rc = rc || mc_copy_rows(b->mo_acc, Din, b->y, H, R, H, s);
        if (w->sh_rows > 0) {
          rc = rc || gemm(b, w->sh_in, w->sh_rows, H, b->u, b->mo_sp, w->sh_rows);
          rc = rc || (w->sh_rows == 2 * w->Is ? mc_swiglu(b->mo_sp, b->mo_sa, R, w->Is, s)
                                              : mc_relu2(b->mo_sp, b->mo_sa, R, w->Is, s));
          rc = rc || gemm(b, w->sh_down, H, w->Is, b->mo_sa, b->mo_so, H);
          rc = rc || mc_moe_shared_add(b->y, b->mo_so, w->router_rows > E ? b->mo_lg + E : nullptr,
                                       w->router_rows, R, H, s);
        }
        break;
      }
      default:
        rc = 1;
    }
    if (w->w_out)
      rc = rc || (out_ready ? gemm_xb(b, w->w_out, H, w->out_cols, b->y, H,
                                      mlp_act == 0 ? b->xb_act : nullptr)
                            : gemm(b, w->w_out, H, w->out_cols, b->act, b->y, H));
    pending_y = b->y; /* added to h by the next norm */
    if (rc)
      return rssm_fail(err, errlen, "layer %d (%s): a kernel or cuBLAS launch failed (%s)",
                       w->layer, what, cudaGetErrorString(cudaGetLastError()));
  }
  if (ev) cudaEventRecord(ev[3 * g->nblocks], b->stream);
  int rc = bf16 ? pf_fork(b, g->lm_head, V, H) : 0;
  rc = rc || add_norm(g->final_norm, bf16 ? (void *)b->xb : nullptr);
  rc = rc || (bf16 ? gemm_xb(b, g->lm_head, V, H, b->logits, V)
                   : gemm(b, g->lm_head, V, H, b->u, b->logits, V));
  if (want_metrics) {
    rc = rc || mc_row_stats_launch(b->logits, R, V, b->stats, s);
    rc = rc || (spec ? mc_spec_metrics_launch(b->logits, b->stats, b->ring_lg, b->ring_st,
                                              b->ref_row_d, b->tgt, R, V, b->met, s)
                     : mc_row_metrics_launch(b->logits, b->stats, b->tgt, R, K, V, b->met, s));
  }
  rc = rc || pf_join(b); /* none left forked (a capture must end joined) */
  if (ev) cudaEventRecord(ev[3 * g->nblocks + 1], b->stream);
  if (rc)
    return rssm_fail(err, errlen, "final norm, lm_head or metrics: launch failed (%s)",
                     cudaGetErrorString(cudaGetLastError()));
  return 0;
}

/* After the step's synchronisation: add the event intervals to the per-block sums. A block
 * without SSM calls has its SSM events unrecorded: their interval is skipped. */
void prof_accumulate(mc_batch *b, double host_ms) {
  const int nb = b->g->nblocks;
  cudaEvent_t *ev = b->prof_ev;
  for (int i = 0; i < nb; i++) {
    float ms = 0.0f;
    const cudaEvent_t next = i + 1 < nb ? ev[3 * (i + 1)] : ev[3 * nb];
    if (cudaEventElapsedTime(&ms, ev[3 * i], next) == cudaSuccess) b->prof_ms[2 * i] += ms;
    const int kind = b->g->blocks[i].kind;
    if ((kind == BK_GDN || kind == BK_MAMBA2) &&
        cudaEventElapsedTime(&ms, ev[3 * i + 1], ev[3 * i + 2]) == cudaSuccess)
      b->prof_ms[2 * i + 1] += ms;
  }
  float ms = 0.0f;
  if (cudaEventElapsedTime(&ms, ev[3 * nb], ev[3 * nb + 1]) == cudaSuccess) b->prof_ms[2 * nb] += ms;
  b->prof_ms[2 * nb + 1] += host_ms;
  b->prof_steps++;
}

}  // namespace

namespace {

/* A lockstep step on b->stream: the inputs of the slot in flight in from the device copies of
 * the pinned slots (the targets only with the metrics), the forward, then the metrics out into
 * the same slot of the pinned buffer and the slot counter advanced (mc_step_io.h). */
int step_io(mc_batch *b, int want_metrics, char *err, size_t errlen) {
  void *s = (void *)b->stream;
  if (mc_step_ingest(b->slot_d, b->slot_tok, b->slot_pos, want_metrics ? b->slot_tgt : nullptr,
                     b->R, b->K, b->tok, b->pos_d, b->tgt, s) != 0)
    return rssm_fail(err, errlen, "step input launch");
  if (step_launches(b, want_metrics, err, errlen) != 0) return -1;
  if (mc_step_egress(b->slot_d, b->met, want_metrics ? b->d_h_met : nullptr, b->R, s) != 0)
    return rssm_fail(err, errlen, "step output launch");
  return 0;
}

/* Launch one step: from the graph (captured at the first step, again when the metrics are
 * switched on or off), or kernel by kernel. */
int launch_step(mc_batch *b, int want, char *err, size_t errlen) {
  cudaStream_t s = b->stream;
  if (!b->graph_on) return step_io(b, want, err, errlen) != 0 ? RSSM_ERR_IO : RSSM_OK;
  /* the step reads and writes the pinned buffers at fixed addresses and finds its slot on the
   * device, so one capture serves every step (docs/gpu-runtime.md, CUDA Graph) */
  if (b->gexec && b->graph_metrics != want) {
    cudaGraphExecDestroy(b->gexec);
    b->gexec = nullptr;
  }
  if (!b->gexec) {
    cudaGraph_t graph = nullptr;
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
      return rssm_fail(err, errlen, "graph capture: %s", cudaGetErrorString(cudaGetLastError())),
             RSSM_ERR_IO;
    int lrc = step_io(b, want, err, errlen);
    cudaError_t ce = cudaStreamEndCapture(s, &graph);
    if (lrc != 0 || ce != cudaSuccess ||
        cudaGraphInstantiate(&b->gexec, graph, 0) != cudaSuccess) {
      if (graph) cudaGraphDestroy(graph);
      b->gexec = nullptr;
      if (lrc == 0)
        rssm_fail(err, errlen, "graph capture of the step: %s",
                  cudaGetErrorString(ce != cudaSuccess ? ce : cudaGetLastError()));
      return RSSM_ERR_IO;
    }
    cudaGraphDestroy(graph);
    b->graph_metrics = want;
  }
  if (cudaGraphLaunch(b->gexec, s) != cudaSuccess)
    return rssm_fail(err, errlen, "graph launch: %s", cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  return RSSM_OK;
}

/* n steps (logits only with n = 1): inputs into slots 0..n-1 of the pinned buffers, the slot
 * counter reset, n steps launched back to back, one synchronisation, then the metrics out. */
int run_steps(mc_batch *b, int n, const int64_t *tokens /* [n][K] */,
              const int64_t *targets /* [n][K] or NULL */, float *logits /* [R][V] or NULL */,
              mc_row_metrics *metrics /* [n][R] or NULL */, char *err, size_t errlen) {
  const model_config *c = &b->g->cpu->cfg;
  const int R = b->R, K = b->K;
  if (b->spec)
    return rssm_fail(err, errlen, "a spec batch plays rounds (mc_batch_spec_round), not steps"),
           RSSM_ERR_INPUT;
  if (n < 1 || n > MC_STEPS_MAX || (logits && n != 1))
    return rssm_fail(err, errlen, "%d steps in one call (expected 1..%d, 1 with logits)", n,
                     MC_STEPS_MAX),
           RSSM_ERR_INPUT;
  if (b->pos + n > b->max_ctx) {
    rssm_fail(err, errlen, "context full: position %lld + %d steps of %lld", (long long)b->pos, n,
              (long long)b->max_ctx);
    return RSSM_ERR_INPUT;
  }
  for (int64_t i = 0; i < (int64_t)n * K; i++)
    if (tokens[i] < 0 || tokens[i] >= c->V || (targets && (targets[i] < 0 || targets[i] >= c->V))) {
      rssm_fail(err, errlen, "window %d: token id out of range (expected 0 <= id < vocab %lld)",
                (int)(i % K), (long long)c->V);
      return RSSM_ERR_INPUT;
    }
  /* the steps' inputs into the pinned slots; step_io moves each in by a kernel */
  const int want = targets && metrics;
  for (int i = 0; i < n; i++)
    for (int r = 0; r < R; r++) {
      b->h_tok[(int64_t)i * R + r] = tokens[(int64_t)i * K + r % K];
      b->h_pos[(int64_t)i * R + r] = (int)(b->pos + i);
    }
  if (want) memcpy(b->h_tgt, targets, (size_t)n * K * sizeof(int64_t));
  cudaStream_t s = b->stream;
  /* the n slots to the device before the steps (the previous submission's copies are done:
     it ended with a synchronisation), so that each step's ingest reads device memory */
  const size_t nR = (size_t)n * (size_t)R;
  if (cudaMemcpyAsync(b->slot_tok, b->h_tok, nR * 8, cudaMemcpyHostToDevice, s) != cudaSuccess ||
      cudaMemcpyAsync(b->slot_pos, b->h_pos, nR * 4, cudaMemcpyHostToDevice, s) != cudaSuccess ||
      (want && cudaMemcpyAsync(b->slot_tgt, b->h_tgt, (size_t)n * K * 8, cudaMemcpyHostToDevice,
                               s) != cudaSuccess))
    return rssm_fail(err, errlen, "step slots to the device: %s",
                     cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  if (cudaMemsetAsync(b->slot_d, 0, sizeof(int), s) != cudaSuccess)
    return rssm_fail(err, errlen, "step slot reset: %s", cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  for (int i = 0; i < n; i++) {
    struct timespec t_start = {0, 0};
    if (b->prof) clock_gettime(CLOCK_MONOTONIC, &t_start); /* profiling only: off the hot path */
    const int rc = launch_step(b, want, err, errlen);
    if (rc != RSSM_OK) return rc;
    if (b->prof && !b->graph_on) { /* launched steps, one at a time */
      if (cudaStreamSynchronize(s) != cudaSuccess) break;
      struct timespec t_end;
      clock_gettime(CLOCK_MONOTONIC, &t_end);
      prof_accumulate(b, 1e3 * (double)(t_end.tv_sec - t_start.tv_sec) +
                             1e-6 * (double)(t_end.tv_nsec - t_start.tv_nsec));
    }
  }
  int ok = 1;
  if (logits)
    ok = cudaMemcpyAsync(logits, b->logits, (size_t)R * (size_t)c->V * sizeof(float),
                         cudaMemcpyDeviceToHost, s) == cudaSuccess;
  cudaError_t e = cudaStreamSynchronize(s);
  if (!ok || e != cudaSuccess)
    return rssm_fail(err, errlen, "steps at positions %lld..%lld: %s", (long long)b->pos,
                     (long long)(b->pos + n - 1),
                     cudaGetErrorString(e != cudaSuccess ? e : cudaGetLastError())),
           RSSM_ERR_IO;
  if (want) memcpy(metrics, b->h_met, (size_t)n * R * sizeof(mc_row_metrics));
  b->pos += n;
  return RSSM_OK;
}

}  // namespace

extern "C" int mc_batch_step(mc_batch *b, const int64_t *tokens, const int64_t *targets,
                             float *logits, mc_row_metrics *metrics, char *err, size_t errlen) {
  return run_steps(b, 1, tokens, targets, logits, metrics, err, errlen);
}

extern "C" int mc_batch_steps(mc_batch *b, int n, const int64_t *tokens,
                              const int64_t *targets, mc_row_metrics *metrics, char *err,
                              size_t errlen) {
  return run_steps(b, n, tokens, targets, nullptr, metrics, err, errlen);
}

int mc_batch_launches(mc_batch *b, int want_metrics, char *err, size_t errlen) {
  return step_launches(b, want_metrics, err, errlen);
}

/* ------------------------------------------------------------------ row snapshots ---------- */

namespace {

const char ROW_TAG[8] = {'M', 'C', 'R', 'O', 'W', '0', '0', '1'};

/* The (device slice, bytes) pieces of row r after the 16-byte header, in file order; calls
 * f(dev_ptr, bytes, ssm_state or NULL, row in that state) for each. */
template <typename F> void row_pieces(const mc_batch *b, int r, F f) {
  const mc_model *g = b->g;
  const model_config *c = &g->cpu->cfg;
  const int64_t F32 = (int64_t)sizeof(float), kvd = c->n_kv_heads * c->head_dim;
  for (int i = 0; i < g->nblocks; i++) {
    const int kind = g->blocks[i].kind;
    if (kind == BK_GDN || kind == BK_MAMBA2) {
      const int64_t cd = conv_channels(c, kind), Kc = kind == BK_GDN ? c->gdn_kernel : c->m_kernel;
      const int64_t n = (Kc - 1) * cd * F32;
      f((unsigned char *)b->conv_win[i] + (int64_t)r * n, n, (ssm_cuda_state *)nullptr, 0);
      f((unsigned char *)nullptr, (int64_t)0, &b->eng[i][r / b->K], r % b->K);
    } else if (kind == BK_QATTN || kind == BK_NATTN) {
      /* K/V rows below the row's own position (a spec row's drafts above it are scratch) */
      const int64_t rp = b->spec ? b->rpos[r] : b->pos;
      const int64_t n = rp * kvd * F32, row = b->max_ctx * kvd * F32;
      f((unsigned char *)b->kc[i] + (int64_t)r * row, n, (ssm_cuda_state *)nullptr, 0);
      f((unsigned char *)b->vc[i] + (int64_t)r * row, n, (ssm_cuda_state *)nullptr, 0);
    }
  }
}

}  // namespace

extern "C" int64_t mc_batch_row_bytes(const mc_batch *b, int r) {
  /* per row: configurations differ in ring length and checkpoint formats */
  if (r < 0 || r >= b->R) return -1;
  int64_t total = 16;
  row_pieces(b, r, [&](unsigned char *, int64_t n, ssm_cuda_state *st, int) {
    total += st ? mc_ssm_row_bytes(st) : n;
  });
  return total;
}

extern "C" int mc_batch_row_save(const mc_batch *b, int r, void *buf, char *err, size_t errlen) {
  if (r < 0 || r >= b->R) return rssm_fail(err, errlen, "row %d of %d", r, b->R), RSSM_ERR_INPUT;
  unsigned char *p = (unsigned char *)buf;
  memcpy(p, ROW_TAG, 8);
  memcpy(p + 8, b->spec ? &b->rpos[r] : &b->pos, 8);
  p += 16;
  int ok = cudaStreamSynchronize(b->stream) == cudaSuccess;
  row_pieces(b, r, [&](unsigned char *dev, int64_t n, ssm_cuda_state *st, int row) {
    if (!ok) return;
    if (st) {
      ok = mc_ssm_row_save(st, row, p) == 0;
      p += mc_ssm_row_bytes(st);
    } else {
      ok = n == 0 || cudaMemcpy(p, dev, (size_t)n, cudaMemcpyDeviceToHost) == cudaSuccess;
      p += n;
    }
  });
  if (!ok)
    return rssm_fail(err, errlen, "GPU row %d: download failed (%s)", r,
                     cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  return RSSM_OK;
}

extern "C" int mc_batch_row_load(mc_batch *b, int r, const void *buf, int64_t len, char *err,
                                 size_t errlen) {
  const unsigned char *p = (const unsigned char *)buf;
  int64_t pos = -1;
  if (r < 0 || r >= b->R || len < 16 || memcmp(p, ROW_TAG, 8) != 0)
    return rssm_fail(err, errlen, "GPU row %d: not a GPU row state (wrong tag or size)", r),
           RSSM_ERR_INPUT;
  memcpy(&pos, p + 8, 8);
  if (pos < 0 || pos >= b->max_ctx)
    return rssm_fail(err, errlen, "GPU row %d: position %lld outside [0, %lld)", r, (long long)pos,
                     (long long)b->max_ctx),
           RSSM_ERR_INPUT;
  if (b->spec) {
    /* spec rows carry their own positions */
    const int64_t saved = b->rpos[r];
    b->rpos[r] = pos;
    if (len != mc_batch_row_bytes(b, r)) {
      b->rpos[r] = saved;
      return rssm_fail(err, errlen, "GPU row %d: %lld bytes (expected %lld at position %lld)",
                       r, (long long)len, (long long)mc_batch_row_bytes(b, r), (long long)pos),
             RSSM_ERR_INPUT;
    }
  }
  const int64_t saved = b->pos;
  if (!b->spec) b->pos = pos; /* the K/V sizes below depend on it */
  if (len != mc_batch_row_bytes(b, r)) {
    b->pos = saved;
    return rssm_fail(err, errlen, "GPU row %d: %lld bytes (expected %lld at position %lld)", r,
                     (long long)len, (long long)mc_batch_row_bytes(b, r), (long long)pos),
           RSSM_ERR_INPUT;
  }
  if (!b->spec && b->loaded_rows > 0 && pos != saved) {
    b->pos = saved;
    return rssm_fail(err, errlen,
                     "GPU row %d: position %lld, other rows are at %lld (rows advance "
                     "together)",
                     r, (long long)pos, (long long)saved),
           RSSM_ERR_INPUT;
  }
  b->loaded_rows++;
  p += 16;
  int ok = cudaStreamSynchronize(b->stream) == cudaSuccess;
  row_pieces(b, r, [&](unsigned char *dev, int64_t n, ssm_cuda_state *st, int row) {
    if (!ok) return;
    if (st) {
      ok = mc_ssm_row_load(st, row, p) == 0;
      p += mc_ssm_row_bytes(st);
    } else {
      ok = n == 0 || cudaMemcpy(dev, p, (size_t)n, cudaMemcpyHostToDevice) == cudaSuccess;
      p += n;
    }
  });
  /* a pageable H2D cudaMemcpy may return before its DMA lands, and the steps run on
   * non-blocking streams, which the legacy stream does not order: wait for the row */
  ok = ok && cudaDeviceSynchronize() == cudaSuccess;
  if (!ok)
    return rssm_fail(err, errlen, "GPU row %d: upload failed (%s)", r,
                     cudaGetErrorString(cudaGetLastError())),
           RSSM_ERR_IO;
  return RSSM_OK;
}
