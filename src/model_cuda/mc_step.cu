/* The step (mc_model.h, mc_model_internal.cuh): one lockstep decode step, or one spec round, for
 * a batch's R = C x K rows: embedding; per block RMSNorm, one GEMM for the block's input
 * projection, the glue kernels, the SSM engine per configuration on its own side stream (rows
 * c K .. c K + K - 1 are the engine's [B] rows, contiguous because the batch is
 * configuration-major), the output GEMM and the residual add; the final norm, lm_head and the
 * metrics. Launched kernel by kernel or replayed from a CUDA Graph. docs/gpu-runtime.md. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "src/io/errbuf.h"
#include "src/model_cuda/mc_fused.h"
#include "src/model_cuda/mc_kernels.h"
#include "src/model_cuda/mc_model.h"
#include "src/model_cuda/mc_model_internal.cuh"
#include "src/model_cuda/mc_step_io.h"
#include "src/ssm_cuda/ssm_cuda.h"

using namespace mcm;

namespace {

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
