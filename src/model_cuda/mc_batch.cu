/* The batch (mc_model.h, mc_model_internal.cuh): its device bytes estimated and fitted to the
 * device, built (streams, cuBLAS handles, the scratch, every layer's conv windows, K/V caches and
 * SSM engine states) and freed. The scratch is padded to the model's row tile and its padding rows
 * stay zero (mc_model.cu's header says why). docs/gpu-runtime.md. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/errbuf.h"
#include "src/model_cuda/attn_lab.h"
#include "src/model_cuda/mc_fit.h"
#include "src/model_cuda/mc_gemm_lt.h"
#include "src/model_cuda/mc_gemm_wide.h"
#include "src/model_cuda/mc_model.h"
#include "src/model_cuda/mc_model_internal.cuh"
#include "src/model_cuda/mc_prefetch.h"
#include "src/model_cuda/mc_ref.h"
#include "src/model_cuda/mc_tile.h"
#include "src/ssm_cuda/ssm_cuda.h"

using namespace mcm;

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
