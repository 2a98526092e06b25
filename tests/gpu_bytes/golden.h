/* The committed GPU bytes (tests/fixtures/gpu-bytes/): a small set of results that the H200
 * produces and that the CPU must reproduce byte for byte, checked in CPU CI by
 * test_gpu_bytes. Items, in this order, each one file NAME.bin:
 *   quant_FMT       q_encode of GQ_NMAT matrices [GQ_ROWS][GQ_COLS] (NaN, -inf and values over
 *                   many magnitudes) in each of the GOLDEN_NQUANT formats, RTN and SR
 *   ssm_KIND_I      GS_STEPS standard steps of the SSM engine (config golden_ssm_configs[I], one
 *                   row): the outputs [GS_STEPS][H][dv] float32, then the final checkpoint
 *                   blob(s) (main, then lp for split)
 *   mc_rmsnorm_*, mc_gdn_prep_{q,k,v}, mc_qk_prepare_{q,k,v}: src/model_cuda kernel outputs
 *                   that the contract makes bit-identical to mc_ref.c
 * Inputs come from this file's generators, so the CPU half (golden.c) and the GPU half
 * (tests/gpu/gpu_golden_bytes.cu) compute the same items from the same numbers. */
#ifndef RSSM_TESTS_GPU_BYTES_GOLDEN_H
#define RSSM_TESTS_GPU_BYTES_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#include "quant/format.h"
#include "src/ssm/ssm_engine.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { GQ_NMAT = 4, GQ_ROWS = 8, GQ_COLS = 40, GOLDEN_NQUANT = 25 };
enum { GS_STEPS = 12, GOLDEN_NSSM = 3 };
#define GOLDEN_SEED 0x0123456789abcdefULL

typedef struct {
  char name[64];
  unsigned char *bytes;
  size_t n;
} golden_item;

typedef struct {
  golden_item *items;
  int n, cap;
} golden_set;

extern const char *const golden_quant_formats[GOLDEN_NQUANT];
extern const char *const golden_ssm_configs[GOLDEN_NSSM];

/* Appends a copy of bytes [n] as item name. Returns 0 or -1 (out of memory). */
int golden_add(golden_set *g, const char *name, const void *bytes, size_t n);
void golden_free(golden_set *g);
/* Item file name of a quantiser format: "quant_" + text with '/' -> '_', '@' -> '_at'. */
void golden_quant_name(const char *fmt, char *out, size_t cap);

/* Format i of golden_quant_formats, its layout for [GQ_ROWS][GQ_COLS] matrices, the item's name
 * (golden_quant_name) and the blob's bytes. Returns 0, or -1 with err. */
int golden_quant_format(int i, qformat *f, qlayout *L, char *name, size_t cap, size_t *blob_bytes,
                        char *err, size_t errlen);

/* x [GQ_NMAT][GQ_ROWS][GQ_COLS]; matrix ids [GQ_NMAT] and events [GQ_NMAT] of the SR draws. */
void golden_quant_input(float *x, uint64_t *ids, uint32_t *events);

/* The SSM shape of kind, and the inputs of step t (arrays as ssm_inputs, n = 1; beta NULL for
 * Mamba-2 is the caller's business: it is always filled). */
ssm_dims golden_ssm_dims(ssm_kind kind);
void golden_ssm_step_inputs(ssm_kind kind, int t, float *alpha /* [H] */, float *beta /* [H] */,
                            float *v /* [H][dv] */, float *k /* [G][dk] */, float *q /* [G][dk] */);

/* Deterministic floats in [-scale, scale): element i of stream salt. */
float golden_uniform(uint32_t salt, uint64_t i, float scale);

/* Kernel shapes */
enum { GM_R = 3, GM_NORM_GROUPS = 4, GM_NORM_GS = 24 };
enum { GM_HK = 2, GM_HV = 4, GM_DK = 16, GM_DV = 8 };
enum { GM_NH = 4, GM_NKV = 2, GM_D = 16, GM_RD = 8, GM_CTX = 6 };

enum { GM_LD = GM_NORM_GROUPS * GM_NORM_GS, GM_KD = GM_HK * GM_DK, GM_VD = GM_HV * GM_DV,
       GM_CD = 2 * GM_KD + GM_VD, GM_QD = GM_NH * GM_D, GM_KVD = GM_NKV * GM_D,
       GM_LDQ = 2 * GM_QD + 2 * GM_KVD };

/* The kernels' inputs: rmsnorm x, w; gdn_prep cv, ba, A_log, dt_bias; qk_prepare qkv, the (1+w)
 * norms, RoPE tables (mc_ref_rope_tables, as the GPU runtime uploads them) and positions. */
typedef struct {
  float x[GM_R * GM_LD], w[GM_LD];
  float cv[GM_R * GM_CD], ba[GM_R * 2 * GM_HV], A_log[GM_HV], dt_bias[GM_HV];
  float qkv[GM_R * GM_LDQ], q_norm[GM_D], k_norm[GM_D];
  float rope_cos[GM_CTX * GM_RD / 2], rope_sin[GM_CTX * GM_RD / 2];
  int pos[GM_R];
} golden_mc_inputs;
void golden_mc_fill(golden_mc_inputs *in);

/* The CPU half: every item, in order. Returns 0 or -1 with err. */
int golden_cpu(golden_set *g, char *err, size_t errlen);

/* Writes DIR/NAME.bin for every item and DIR/MANIFEST (one "NAME BYTES" line each). */
int golden_write(const golden_set *g, const char *dir, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
