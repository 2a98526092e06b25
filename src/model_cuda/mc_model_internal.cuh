/* The device model and batch structures (private to src/model_cuda): shared by mc_model.cu
 * (upload), mc_batch.cu (build, free), mc_step.cu (the step's launches), mc_step_gemm.cu (its
 * GEMMs and L2 prefetch), mc_row_snapshot.cu (rows as bytes) and mc_spec.cu (spec rounds and the
 * reference ring). Everything here is an implementation detail behind mc_model.h. */
#ifndef RSSM_MODEL_CUDA_MC_MODEL_INTERNAL_CUH
#define RSSM_MODEL_CUDA_MC_MODEL_INTERNAL_CUH

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "src/model_cuda/mc_gemm_lt.h"
#include "src/model_cuda/mc_model.h"
#include "src/ssm_cuda/ssm_cuda.h"

namespace mcm {


struct mc_block {
  int kind, layer;
  float *norm;            /* [H] pre-norm */
  /* GEMM weights (w_in, w_out, router, fc1, fc2, sh_in, sh_down): fp32 or bf16 elements, as the
   * model's GEMM precision (mc_model.prec) says */
  void *w_in;             /* [in_rows][H] concatenated input projection */
  int64_t in_rows;
  void *w_out;            /* [H][out_cols] output projection (MLP: down) */
  int64_t out_cols;
  float *conv_w;          /* [conv_dim][K] SSM blocks */
  float *conv_b;          /* [conv_dim] Mamba-2 with conv bias, else NULL */
  float *A_log, *dt_bias; /* [heads] SSM blocks */
  float *D;               /* [Hm] Mamba-2 */
  float *vnorm;           /* GDN [dv]; Mamba-2 [d_inner] (per group slices) */
  float *q_norm, *k_norm; /* [head_dim] Qwen attention, else NULL */
  /* MoE blocks (w_in, w_out unused) */
  void *router;           /* [router_rows][H]: E router rows, then Qwen's shared-expert gate row */
  int64_t router_rows;
  float *corr_bias;       /* [E] Nemotron-H, else NULL */
  float *e_gate;          /* [E][I][Din] Qwen, else NULL */
  float *e_up;            /* [E][I][Din] */
  float *e_down;          /* [E][Din][I] */
  void *fc1, *fc2;        /* [latent][H], [H][latent] or NULL */
  void *sh_in;            /* [sh_rows][H] shared expert: [gate | up] (Qwen) or up, or NULL */
  int64_t sh_rows, Is;    /* 2 Is or Is; 0 without a shared expert */
  void *sh_down;          /* [H][Is] */
  int64_t Din;            /* expert input width: latent, or H */
};

inline int64_t conv_channels(const model_config *c, int kind) {
  if (kind == BK_GDN) return 2 * c->gdn_hk * c->gdn_dk + c->gdn_hv * c->gdn_dv;
  return c->m_heads * c->m_head_dim + 2 * c->m_groups * c->m_state;
}


}  // namespace mcm

struct mc_model {
  const model *cpu;
  float *embed;      /* [V][H]: the real vocabulary's rows only (model_config.h: V <= V_rows) */
  float *final_norm; /* [H] */
  void *lm_head;     /* [V][H] in the GEMM precision; == embed when tied and fp32 */
  mc_gemm_prec prec; /* GEMM weights and inputs: fp32, or bf16 with fp32 accumulation */
  int nblocks;
  mcm::mc_block *blocks; /* [nblocks] host array of device pointers */
  int64_t bytes;
  int64_t gemm_bytes; /* of bytes, the weights the GEMMs read (the tied fp32 lm_head counted) */
  int row_tile;       /* rows per cuBLAS call, mc_row_tile_for(gemm_bytes), set at upload */
  int64_t max_in_rows, max_out_cols;
  /* MoE maxima over the blocks (0 without MoE) */
  int64_t moe_router_rows, moe_din, moe_sh_rows, moe_is;
  int sms;           /* multiprocessors of the device (the attention's split count) */
  /* bf16 models: the GEMM kernel, cuBLAS (0) or the tensor-core kernel of mc_gemm_mma.h (1),
   * chosen at upload by mc_gemm_mma_for_model from the GEMM bytes, RSSM_GEMM_BF16 overriding
   * (gemm_kernel_choice in mc_model.cu) */
  int gemm_mma;
  /* bf16 models: 1 where the wide tensor-core kernel (mc_gemm_wide.h) takes the GEMMs that
   * cuBLAS would (RSSM_GEMM_BF16=wide), 2 only those it splits along k (=wide-split); 0
   * otherwise (gemm_kernel_choice in mc_model.cu) */
  int gemm_wide;
};

struct mc_batch {
  const mc_model *g;
  /* R = C K state rows (conv windows, K/V caches, SSM engine rows); RT = R T token rows (the
   * scratch, GEMMs, norms, logits, metrics: token row r T + j is draft j of state row r);
   * Rpad = RT rounded up to the model's row_tile */
  int C, K, R, Rpad;
  int T, RT;
  int spec;                  /* a spec batch (mc_batch_build_spec): rounds, per-row positions */
  int64_t max_ctx, pos;      /* pos: the common position of a lockstep batch (T = 1) */
  /* spec batches (T > 1, mc_spec.cu): per-row positions and this round's per-row plan */
  int64_t *rpos;             /* host [R] committed tokens of each row */
  int *h_n, *h_a;            /* host [R] drafts verified (T or 0) and accepted (0..T) */
  int *n_d, *a_d;            /* device [R] the same */
  int *h_ref, *ref_row_d;    /* host / device [RT] reference ring row of each token row */
  const float *ring_lg;      /* the reference ring of the round ([*][V]), or NULL */
  const mc_row_stats *ring_st; /* [*] */
  ssm_config *cfgs;          /* [C] */
  cudaStream_t stream;
  cublasHandle_t blas;
  void *blas_ws; /* [MC_GEMM_LT_WORKSPACE] bytes: cuBLAS's and cuBLASLt's workspace
                    (no allocation inside a step or a capture) */
  /* RSSM_GEMM_LT set (bf16 models): cuBLASLt's handle and the rule sending weights to its
   * ranked algorithms instead of cublasGemmEx (mc_gemm_lt.h); NULL when unset */
  mc_gemm_lt *lt;
  mc_gemm_lt_rule lt_rule;
  __nv_bfloat16 *xb;         /* [Rpad][gemm_cols] bf16 GEMM input (bf16 models only, else NULL) */
  __nv_bfloat16 *xb_act;     /* [Rpad][gemm_cols] bf16 input of an MLP's output projection, made
                                by its input projection (models on the tensor-core kernel, else
                                NULL): mc_gemm_mma_act cannot write into xb while reading it */
  int64_t gemm_cols;         /* the widest GEMM input (bf16 models) */
  float *wide_scratch;       /* [mc_gemm_wide_scratch_max(sms)] the wide kernel's split partials
                                (models on it, else NULL) */
  /* per block (NULL where the block has none) */
  float **conv_win;          /* [nblocks] -> [R][K-1][conv_dim] */
  float **kc, **vc;          /* [nblocks] -> [R][max_ctx][nKV][D] */
  ssm_cuda_state **eng;      /* [nblocks] -> [C] states of K rows each */
  /* scratch */
  float *h, *u, *y;          /* [Rpad][H] residual, normed input, block output */
  float *proj;               /* [Rpad][max_in_rows] input projection */
  float *act;                /* [Rpad][max_out_cols] input of the output projection */
  float *cv;                 /* [R][max conv_dim] conv output */
  float *e_alpha, *e_beta;   /* [R][max SSM heads] engine inputs */
  float *e_v, *e_o;          /* [R][max H*dv] engine input v and output */
  float *e_k, *e_q;          /* [R][max G*dk] */
  float *aq;                 /* [R][nH][D] attention queries */
  /* mc_attn_decode's split count, fixed at build (attn_lab_splits_shipped: the model and the
   * device only, so every batch of a run, its shards and resumes sum in one order) */
  int nsplit;
  float *part_ml;            /* [RT][nH][nsplit][2] split-K scratch (mc_attn_decode) */
  float *part_acc;           /* [RT][nH][nsplit][D] */
  int *cache_row_d;          /* device [RT] cache row r / T of token row r (spec); NULL if T = 1 */
  float *logits;             /* [Rpad][V] */
  float *rope_cos, *rope_sin;/* [max_ctx][rd/2], host-computed (bit-identical RoPE) */
  /* MoE scratch (NULL without MoE blocks) */
  float *mo_lg;              /* [Rpad][router_rows] router logits (+ shared gate) */
  float *mo_scr;             /* [R][4][E] routing scratch */
  int32_t *mo_idx;           /* [R][k] selected experts, ascending */
  float *mo_wt;              /* [R][k] their weights */
  float *mo_h;               /* [R][k][I] expert activations */
  float *mo_y;               /* [R][k][Din] expert outputs */
  float *mo_acc;             /* [Rpad][Din] routed sum */
  float *mo_xl;              /* [Rpad][Din] latent input */
  float *mo_sp, *mo_sa;      /* [Rpad][sh_rows], [Rpad][Is] shared expert */
  float *mo_so;              /* [Rpad][H] shared expert output */
  mc_row_stats *stats;       /* [R] */
  mc_row_metrics *met;       /* [R] */
  int64_t *tok, *tgt;        /* [RT] tokens of the step, targets [K] (T = 1) or [RT] (spec) */
  int *pos_d;                /* [RT] position of each token row */
  /* pinned host buffers: the step's inputs, copied to the device by cudaMemcpyAsync (into the
   * lockstep slots below, or a spec round's rows); the metrics mapped (cudaHostAllocMapped),
   * written by step_egress through their device view d_h_met (mc_step_io.h) */
  int64_t *h_tok; /* host [MC_STEPS_MAX][R] lockstep slots, or [RT] of a spec round */
  int64_t *h_tgt; /* host [MC_STEPS_MAX][K] lockstep slots, or [RT] of a spec round */
  int *h_pos;     /* host [MC_STEPS_MAX][R], or [RT] */
  mc_row_metrics *h_met, *d_h_met; /* host [MC_STEPS_MAX][R] metrics of lockstep steps */
  /* device copies of a submission's lockstep slots, copied in before its steps (run_steps):
   * step_ingest reads them from device memory, not across PCIe (session 36: the ingest of the
   * mapped slots took 4.2-4.3 us of a fixture step, tests/gpu/kernel_trace.c) */
  int64_t *slot_tok;         /* device [MC_STEPS_MAX][R] */
  int *slot_pos;             /* device [MC_STEPS_MAX][R] */
  int64_t *slot_tgt;         /* device [MC_STEPS_MAX][K] */
  int *slot_d;               /* device [1]: the slot of the lockstep step in flight */
  int64_t dev_bytes;
  int loaded_rows;           /* rows restored by mc_batch_row_load (they must agree on pos) */
  int graph_on;              /* replay the step from a CUDA Graph (mc_batch_use_graph) */
  int graph_metrics;         /* whether the captured step computes the metrics */
  cudaGraphExec_t gexec;     /* the captured step, or NULL */
  /* RSSM_CUDA_PROFILE=1 (launched steps only): events around every block and its SSM engine
   * calls, summed per block and printed on stderr by mc_batch_free; for finding where a step's
   * time goes (docs/gpu-runtime.md), never on in a run of record */
  /* The configurations' SSM engine calls of one layer are independent (own states, disjoint
   * output rows) and each is a chain of small latency-bound kernels over K rows: they run
   * concurrently on side streams, forked from and joined back into `stream` by events (a CUDA
   * Graph captures the same fork/join). Same kernels, same inputs: the same bits. */
  int nside;                 /* side streams in use (0: everything on `stream`) */
  cudaStream_t side[MC_SIDE_STREAMS];
  cudaEvent_t fork_ev, join_ev[MC_SIDE_STREAMS];
  /* The L2 prefetch of a cuBLAS GEMM's weights while the kernels before it run (mc_prefetch.h),
   * on its own side stream, forked before those kernels and joined before the GEMM (bf16 models
   * on cuBLAS with RSSM_L2_PREFETCH set); likewise an SSM layer's state before its step
   * (RSSM_L2_PREFETCH_STATE). Neither set: no stream. */
  int64_t pf_budget;       /* bytes ahead of one GEMM */
  int64_t pf_state_budget; /* bytes of an SSM layer's state ahead of its step */
  int pf_on;               /* the stream and events exist */
  int pf_pending;          /* a prefetch forked and not yet joined */
  cudaStream_t pf_stream;
  cudaEvent_t pf_fork_ev, pf_join_ev;
  int prof;
  cudaEvent_t *prof_ev;      /* [3 nblocks + 2]: block start, SSM start, SSM end; head end, step end */
  double *prof_ms;           /* [2 nblocks + 2]: block, SSM part; head; host wall per step */
  int64_t prof_steps;
};

/* Shared by mc_step.cu and mc_spec.cu (defined in mc_batch.cu and mc_step.cu). */
/* The batch of C configurations x K windows with T token rows per row (T = 1: the lockstep
 * batch; T > 1: a spec batch, every configuration spec with this T). */
int mc_batch_build_t(mc_batch **out, const mc_model *g, const ssm_config *cfgs /* [C] */, int C,
                     int K, int T, uint64_t seed, const uint32_t *sequences /* [K] */,
                     int64_t max_ctx, char *err, size_t errlen);
/* The step's (T = 1) or the round's (T > 1) launches on b->stream; 0 or -1 with a message. */
int mc_batch_launches(mc_batch *b, int want_metrics, char *err, size_t errlen);

namespace mcm {

/* mc_step_gemm.cu: the step's GEMMs and the L2 prefetch ahead of them. */

/* RSSM_GEMM_LT (mc_gemm_lt.h): which bf16 GEMMs go to cuBLASLt's ranked algorithms; read once. */
mc_gemm_lt_rule gemm_lt_rule();
/* dst = bf16(src), round to nearest even, on stream s; 0 or -1 on a launch error. */
int f32_to_bf16(const float *src /* [n] */, __nv_bfloat16 *dst /* [n] */, int64_t n,
                cudaStream_t s);
/* The L2 prefetch (mc_prefetch.h) on b's side stream: the first bytes of each row of the bf16
 * weights W [rows][cols] of the GEMM after the next kernel(s), or of an SSM layer's stored state;
 * nothing when the batch has no budget or one is pending. pf_join makes the step's stream wait
 * for it (every GEMM and every SSM step calls it). 0, or -1 on a launch error. */
int pf_fork(mc_batch *b, const void *W, int64_t rows, int64_t cols);
int pf_fork_state(mc_batch *b, const ssm_cuda_state *st);
int pf_join(mc_batch *b);
/* An MLP block on the tensor-core kernel: input projection and activation in one launch into
 * xb_act. 0, -1 on a launch error, -2 when not taken (nothing launched). */
int gemm_mlp_act(mc_batch *b, const mc_block *w, int64_t H);
/* bf16 models: Y = W . xb, xb [Rpad][cols] already holding the bf16 input (NULL: b->xb). */
int gemm_xb(mc_batch *b, const void *W, int64_t rows, int64_t cols, float *Y /* [Rpad][ldy] */,
            int64_t ldy, const __nv_bfloat16 *xb = nullptr /* [Rpad][cols] */);
/* Y = W . X for every row of the padded batch on the model's row tiles (fp32 or bf16 models). */
int gemm(mc_batch *b, const void *W, int64_t rows, int64_t cols, const float *X /* [Rpad][cols] */,
         float *Y /* [Rpad][ldy] */, int64_t ldy);

}  // namespace mcm

#endif
