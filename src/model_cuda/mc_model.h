/* The GPU runtime's model and batch (docs/gpu-runtime.md).
 *
 * Lifecycle: mc_model_upload / mc_model_free (device copies of a loaded CPU model's fp32 weights,
 * projections concatenated so that one GEMM serves each block input), mc_batch_build /
 * mc_batch_free (the decode state of R = C x K rows: C configurations, configuration 0 usually
 * the reference, times K windows; row r = c K + k).
 *
 * mc_batch_step feeds every row of window k the token tokens[k] at the common position, runs all
 * blocks (cuBLAS fp32 GEMMs with CUBLAS_DEFAULT_MATH over fixed tiles of the model's row tile
 * (mc_model_row_tile: 64 rows, 16 for models with over 1 GiB of fp32 GEMM weights; mc_tile.h), the
 * glue kernels of mc_kernels.h, one ssm_cuda_step per (SSM block, configuration), split-K
 * attention), then the final norm and lm_head, and optionally the metrics against configuration 0
 * and the logits. Synchronous: it waits for the step (optionally one CUDA Graph launch).
 * Spec configurations play rounds in their own batches (mc_batch_build_spec,
 * mc_batch_spec_round; mc_spec.cu). */
#ifndef RSSM_MODEL_CUDA_MC_MODEL_H
#define RSSM_MODEL_CUDA_MC_MODEL_H

#include <stddef.h>
#include <stdint.h>

/* the model runtime's headers are C without linkage guards: include them as C from CUDA */
#ifdef __cplusplus
extern "C" {
#endif
#include "src/model/model.h"
#include "src/model_cuda/mc_device_check.h"
#include "src/model_cuda/mc_kernels.h"
#include "src/model_cuda/mc_tile.h"
#include "src/ssm/ssm_config.h"

/* at most this many configurations' SSM calls of a layer run concurrently (side streams) */
#define MC_SIDE_STREAMS 16

typedef struct mc_model mc_model;
typedef struct mc_batch mc_batch;

/* GEMM precision of a device model, the same for every configuration and row of its batches
 * (docs/gpu-runtime.md, "What the GPU path computes"):
 *  MC_GEMM_FP32 (the default, and the only one `run` and `logits` use): fp32 weights, cublasSgemm
 *    with CUBLAS_DEFAULT_MATH (no TF32);
 *  MC_GEMM_BF16: the GEMM weights (every projection, router, latent and shared-expert matrix, the
 *    lm_head) stored bf16 (round to nearest even), each GEMM input rounded to bf16 the same way,
 *    products accumulated in fp32 (cublasGemmEx, CUBLAS_COMPUTE_32F, tensor cores) and written
 *    fp32. Everything else (embedding gather, norms, SSM engine, attention, routed experts,
 *    metrics) stays fp32. For throughput measurements (`bench e2e --gemm bf16`). */
typedef enum { MC_GEMM_FP32 = 0, MC_GEMM_BF16 = 1 } mc_gemm_prec;

/* Device copy of m's weights. m must outlive the returned model (its config is read from it).
 * Returns RSSM_OK, RSSM_ERR_INPUT (unsupported block, e.g. MoE) or RSSM_ERR_IO (no device, out
 * of device memory), with one line in err. */
int mc_model_upload(const model *m, mc_model **out, char *err, size_t errlen);
/* The same with an explicit GEMM precision (mc_model_upload is MC_GEMM_FP32). */
int mc_model_upload_prec(const model *m, mc_gemm_prec prec, mc_model **out, char *err,
                         size_t errlen);
void mc_model_free(mc_model *g);
/* Bytes of device memory the weights take. */
int64_t mc_model_bytes(const mc_model *g);
/* Bytes of the weights the GEMMs read (the lm_head counted even when it is the tied fp32
 * embedding), and the model's row tile: cuBLAS is called on tiles of this many rows whatever the
 * batch, so that every call has the same shape (a row's bits must not depend on how many rows
 * share the step); mc_row_tile_for(mc_model_gemm_bytes(g), bf16 GEMMs), fixed at upload. */
int64_t mc_model_gemm_bytes(const mc_model *g);
int mc_model_row_tile(const mc_model *g);
mc_gemm_prec mc_model_prec(const mc_model *g);
/* The GEMM kernel the model's steps call: "cuBLAS", or "tensor-core kernel" for bf16 models that
 * take mc_gemm_mma.h (mc_gemm_mma_for_model, or RSSM_GEMM_BF16=mma / =cublas), the wide kernel
 * (=wide, =wide-split), or cuBLASLt's ranked algorithm with its rank (RSSM_GEMM_LT); for logs
 * and bench lines. */
const char *mc_model_gemm_kernel(const mc_model *g);
const char *mc_gemm_prec_name(mc_gemm_prec p); /* "fp32", "bf16" */

/* cfgs [C]: the SSM strategy of each configuration (no spec: RSSM_ERR_INPUT); K windows with global ids
 * sequences [K] (seed stochastic rounding as on the CPU); max_ctx: positions the KV caches hold.
 * Refuses (RSSM_ERR_INPUT) a batch whose memory would exceed the device's free memory, naming
 * both. */
int mc_batch_build(mc_batch **out, const mc_model *g, const ssm_config *cfgs /* [C] */, int C,
                   int K, uint64_t seed, const uint32_t *sequences /* [K] */, int64_t max_ctx,
                   char *err, size_t errlen);
void mc_batch_free(mc_batch *b);
int mc_batch_rows(const mc_batch *b);
/* Device bytes mc_batch_build estimates for R rows at max_ctx positions (the budget of
 * docs/gpu-runtime.md; it leaves out the SSM record ring, cuBLAS and graph memory), and from
 * the same estimate the most rows (0..65535) that fit in budget bytes at max_ctx positions and
 * the most positions (0..2^31-1) at which R rows fit. The refusal message names both. */
int64_t mc_batch_estimate(const mc_model *g, int R, int64_t max_ctx);
int64_t mc_batch_rows_fit(const mc_model *g, int64_t max_ctx, int64_t budget);
int64_t mc_batch_ctx_fit(const mc_model *g, int R, int64_t budget);
/* Free and total device memory now (cudaMemGetInfo): 0, or -1 when the call failed. */
int mc_device_mem(int64_t *free_b, int64_t *total_b);
/* Replay each step from a CUDA Graph captured at the first step (on = 1) or launch it kernel by
 * kernel (0, the default until gpu_check_mc_forward has shown both give the same bits).
 * The run engine and `logits` turn it on unless RSSM_CUDA_GRAPH=0. */
void mc_batch_use_graph(mc_batch *b, int on);
int64_t mc_batch_pos(const mc_batch *b);

/* One step for every row: tokens host [K]; targets host [K] (the next tokens, for the metrics)
 * or NULL; logits host [R][V] or NULL; metrics host [R] or NULL (needs targets). Returns RSSM_OK,
 * RSSM_ERR_INPUT (token out of range, context full) or RSSM_ERR_IO (a CUDA or cuBLAS error,
 * named). */
int mc_batch_step(mc_batch *b, const int64_t *tokens /* [K] */, const int64_t *targets /* [K] */,
                  float *logits /* [R][V] */, mc_row_metrics *metrics /* [R] */, char *err,
                  size_t errlen);

/* n <= MC_STEPS_MAX consecutive steps in one submission: tokens host [n][K], targets host [n][K]
 * or NULL, metrics host [n][R] or NULL (needs targets). The same steps, the same bits, as n calls
 * of mc_batch_step without logits; the n step graphs are launched back to back and the host
 * synchronises once (mc_step_io.h: a fixture model's step is ~0.2 ms, and a synchronisation per
 * step left the GPU idle between steps). Returns as mc_batch_step; nothing runs when an input is
 * refused. */
#define MC_STEPS_MAX 64
int mc_batch_steps(mc_batch *b, int n, const int64_t *tokens /* [n][K] */,
                   const int64_t *targets /* [n][K] */, mc_row_metrics *metrics /* [n][R] */,
                   char *err, size_t errlen);

/* Resume (docs/gpu-runtime.md): row r's state between two steps, as host bytes: a tag, the
 * position, then per block in order the SSM conv window [K-1][conv_dim] and engine row
 * (mc_ssm_rows.h), or the attention K and V rows 0..pos-1. Synchronous. Loading sets the
 * batch's position; every loaded row must carry the same one (rows advance in lockstep). Sizes
 * differ between configurations (ring length, checkpoint formats): ask per row.
 * Return RSSM_OK, RSSM_ERR_INPUT (wrong size, tag or position) or RSSM_ERR_IO (CUDA). */
int64_t mc_batch_row_bytes(const mc_batch *b, int r); /* row r's size (-1: no such row) */
int mc_batch_row_save(const mc_batch *b, int r, void *buf /* [row_bytes] */, char *err,
                      size_t errlen);
int mc_batch_row_load(mc_batch *b, int r, const void *buf /* [len] */, int64_t len, char *err,
                      size_t errlen);

/* ---- spec configurations (mc_spec.cu; docs/gpu-runtime.md, "Spec configurations") ----------
 * A spec batch: C spec configurations of one T times K windows, R = C K state rows (row
 * c K + k), each with T token rows (draft j of row r is token row r T + j), every row at its
 * own position (mc_batch_row_pos). max_ctx must hold a round's drafts past the last committed
 * token: N + T for N steps. The reference ring holds the reference rows' logits and stats of the
 * last `slots` steps of each window (slot step % slots), stored after every lockstep step; a
 * round's metrics compare each draft with the ring entry of its step. */
typedef struct mc_ref_ring mc_ref_ring;
int mc_batch_build_spec(mc_batch **out, const mc_model *g, const ssm_config *cfgs /* [C] */,
                        int C, int K, uint64_t seed, const uint32_t *sequences /* [K] */,
                        int64_t max_ctx, char *err, size_t errlen);
int mc_batch_tokens_per_row(const mc_batch *b); /* T of a spec batch, 1 for a lockstep batch */
int mc_batch_is_spec(const mc_batch *b);
int64_t mc_batch_row_pos(const mc_batch *b, int r); /* committed tokens of row r */
/* mc_batch_estimate and mc_batch_rows_fit for R state rows of T token rows each */
int64_t mc_batch_estimate_t(const mc_model *g, int R, int T, int64_t max_ctx);
int64_t mc_batch_rows_fit_t(const mc_model *g, int T, int64_t max_ctx, int64_t budget);
/* One spec round. drafts and targets host [R][T] (the T drafted tokens of each row and the
 * token after each); accept host [R]: a in 1..T for a row that plays the round (it verifies its
 * T drafts and commits the first a: conv window, SSM engine and position advance by a, K/V
 * slots of rejected drafts are left to be overwritten), -1 for a row that sits it out (nothing
 * of it changes). metrics host [R][T] or NULL: draft j of row r against the ring's entry of
 * window r % K at step pos + j (meaningful for j < a). Synchronous. RSSM_ERR_INPUT for a bad
 * request (a out of range, token id, context full), RSSM_ERR_IO for CUDA failures. */
int mc_batch_spec_round(mc_batch *b, const mc_ref_ring *q, const int64_t *drafts /* [R][T] */,
                        const int64_t *targets /* [R][T] */, const int *accept /* [R] */,
                        mc_row_metrics *metrics /* [R][T] */, char *err, size_t errlen);
/* The last round's logits, host [R T][V] (checks). */
int mc_batch_spec_logits(const mc_batch *b, float *logits /* [R*T][V] */, char *err,
                         size_t errlen);
int mc_ref_ring_build(mc_ref_ring **out, const mc_model *g, int K, int slots, char *err,
                      size_t errlen);
void mc_ref_ring_free(mc_ref_ring *q);
int64_t mc_ref_ring_bytes(int64_t K, int64_t slots, int64_t V); /* device bytes */
/* Copy the reference rows (0..K-1) of lockstep batch b's last step into slot step % slots. */
int mc_ref_ring_store(mc_ref_ring *q, const mc_batch *b, int64_t step, char *err,
                      size_t errlen);
/* Resume: one (window k, step) entry as host bytes [entry_bytes]; 0 or -1. */
int64_t mc_ref_ring_entry_bytes(const mc_ref_ring *q);
int mc_ref_ring_save(const mc_ref_ring *q, int k, int64_t step, void *buf);
int mc_ref_ring_load(mc_ref_ring *q, int k, int64_t step, const void *buf);

/* `replayssm logits --device cuda`: decode tok [N] as one row (sequence 0) under cfg and write
 * the logits [N][V] (a spec configuration in rounds, the accepted positions' logits, as the CPU
 * command). RSSM_ERR_INPUT (exit status 2) without a usable device and for unsupported blocks;
 * RSSM_ERR_IO for device failures. */
int mc_logits_decode(const model *m, const ssm_config *cfg, uint64_t seed,
                     const int64_t *tok /* [N] */, int64_t N, float *out /* [N][V] */, char *err,
                     size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
