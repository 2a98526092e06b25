/* The host API of the SSM state engine on the GPU (ssm_cuda.h; docs/ssm-cuda.md): build, free,
 * the operations as launch sequences, downloads, and the launch selection: which kernel runs
 * which case. Only the variant measured fastest for a case ships (docs/gpu-results.md, "SSM
 * kernels v3"); the kernels themselves are in ssm_cuda_{plan,mat,readout}.cu
 * (ssm_cuda_internal.cuh), and every kernel that can run for a case gives the same bits.
 *
 * Operation = launch sequence (all rows at once; each row follows its own device-side plan):
 *   step    plan; readout (non-flush rows); materialise + store (flush rows); step book
 *   verify  plan; materialise + store (rows with h + T > L); flush book; readout; verify book
 *   commit  commit_kernel
 *   flush   plan; materialise + store; flush book */
#include <cuda_runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quant/quant.h"
#include "src/io/env_switch.h"
#include "src/io/errbuf.h"
#include "src/ssm_cuda/ssm_cuda.h"
#include "src/ssm_cuda/ssm_cuda_internal.cuh"

namespace {

using namespace ssmc;

dev_state dev_of(const ssm_cuda_state *st) {
  dev_state d;
  const ssm_config *c = &st->cfg;
  d.B = st->B;
  d.H = st->dims.H;
  d.dv = st->dims.dv;
  d.dk = st->dims.dk;
  d.G = st->dims.G;
  d.hpg = st->dims.H / st->dims.G;
  d.cap = st->cap;
  d.L = c->L;
  d.T = c->strategy == SSM_SPEC ? c->T : 0;
  d.gdn = st->dims.kind == SSM_GDN;
  d.conventional = c->strategy == SSM_CONVENTIONAL;
  d.spec = c->strategy == SSM_SPEC;
  d.split = c->strategy != SSM_CONVENTIONAL && c->split;
  d.recompute = c->gdn_u == SSM_GDN_U_RECOMPUTE;
  d.base = st->base;
  d.h = st->h;
  d.pending = st->pending;
  d.flushed = st->flushed;
  d.flag = st->flag;
  d.misuse = st->misuse;
  d.ndraft = st->ndraft;
  d.skip = c->skip;
  d.nflush = st->nflush;
  d.event = st->event;
  d.matrix_id = st->matrix_id;
  d.rec_alpha = st->rec_alpha;
  d.rec_beta = st->rec_beta;
  d.rec_x = st->rec_x;
  d.rec_v = st->rec_v;
  d.rec_k = st->rec_k;
  d.S = st->S;
  return d;
}

ck_view view_of(const ssm_cuda_ckpt *c) {
  ck_view v;
  v.kind = (int)c->fmt.kind;
  v.block = c->fmt.block;
  v.code_row = c->lay.code_bytes_per_row;
  v.blocks_per_row = c->lay.blocks_per_row;
  v.scale_elem = c->lay.scale_elem_bytes;
  v.codes_off = c->lay.codes_off;
  v.scales_off = c->lay.scales_off;
  v.tscale_off = c->lay.tscale_off;
  v.bpm = c->lay.bytes_per_matrix;
  v.blob = c->blob;
  return v;
}

/* The checkpoint that non-flush steps and drafts read: C_lp when split, else the shared one. */
const ssm_cuda_ckpt *read_ckpt(const ssm_cuda_state *st) { return st->cfg.split ? &st->lp : &st->main; }

int ckpt_init(ssm_cuda_ckpt *c, const qformat *f, uint32_t stream, const ssm_dims *d, int B, char *err,
              size_t errlen) {
  c->fmt = *f;
  c->stream = stream;
  c->blob = nullptr;
  if (qlayout_of(f, d->dv, d->dk, &c->lay) != 0)
    return rssm_fail(err, errlen, "no storage layout for a %d x %d matrix", d->dv, d->dk);
  if (f->kind == QF_NVFP4 || f->kind == QF_MXFP4) {
    /* 4-bit codes: a block must not share a byte with its neighbour (threads write blocks) */
    if (f->block % 2 != 0)
      return rssm_fail(err, errlen, "4-bit format with odd block %d", f->block);
  }
  size_t bpm = (size_t)c->lay.bytes_per_matrix, nmat = (size_t)B * d->H;
  /* S_0 = 0 stored as Q_F(0) with round-to-nearest, no SR event (ssm_state.c ckpt_init) */
  size_t nelem = (size_t)d->dv * d->dk;
  float *zeros = static_cast<float *>(calloc(nelem, sizeof(float)));
  uint8_t *one = static_cast<uint8_t *>(calloc(bpm, 1));
  uint8_t *d_one = nullptr;
  int rc = 0;
  if (!zeros || !one) {
    rc = rssm_fail(err, errlen, "out of host memory");
  } else {
    qformat rtn = *f;
    rtn.rounding = QR_RTN;
    q_encode_cpu(&rtn, &c->lay, 1, zeros, one, nullptr);
    if (cudaMalloc(reinterpret_cast<void **>(&c->blob), nmat * bpm) != cudaSuccess ||
        cudaMalloc(reinterpret_cast<void **>(&d_one), bpm) != cudaSuccess) {
      rc = rssm_fail(err, errlen, "out of device memory for a checkpoint (%zu bytes)", nmat * bpm);
    } else {
      cudaMemcpy(d_one, one, bpm, cudaMemcpyHostToDevice);
      launch_broadcast(c->blob, d_one, nmat, bpm);
      if (cudaDeviceSynchronize() != cudaSuccess)
        rc = rssm_fail(err, errlen, "CUDA error initialising a checkpoint");
    }
  }
  if (d_one) cudaFree(d_one);
  free(zeros);
  free(one);
  return rc;
}

bool inputs_ok(const ssm_cuda_state *st, const ssm_cuda_inputs *in, const float *o) {
  if (!in || !o || !in->alpha || !in->v || !in->k || !in->q) return false;
  return st->dims.kind != SSM_GDN || in->beta != nullptr;
}

int launch_ok(void) { return cudaGetLastError() == cudaSuccess ? 0 : -1; }

store_params store_of(const ssm_cuda_state *st, const ssm_cuda_ckpt *c) {
  store_params p;
  p.v = view_of(c);
  p.sr_on = c->fmt.rounding == QR_SR;
  p.stream = c->stream;
  p.seed = st->seed;
  return p;
}

/* Which kernels materialise the flush rows of an operation: mat4 (rows straight to registers) or
 * mat2, and how many checkpoints they store themselves (nstore; 0: store_kernel afterwards). The
 * store is fused into the materialisation when every checkpoint is unscaled (fp32, bf16, fp16:
 * per-element codes, spread over the lanes) and no verification needs the fp32 S afterwards.
 * Scaled formats go through store_kernel, which has a thread per block (in the warp, one lane
 * would encode a whole block serially) and, for NVFP4, the matrix amax. */
struct flush_kernels {
  bool mat4, f32;
  int nstore;
};

flush_kernels flush_kernels_of(const ssm_cuda_state *st, const dev_state &d, int op) {
  const bool scaled = st->main.fmt.block > 0 || (d.split && st->lp.fmt.block > 0);
  flush_kernels k;
  k.nstore = (op == OP_VERIFY || scaled) ? 0 : (d.split ? 2 : 1);
  /* fp32 source and fp32 (or scratch) destinations, the common case: kernels without the
     decoders and encoders */
  k.f32 = st->main.fmt.kind == QF_FP32 && (k.nstore < 2 || st->lp.fmt.kind == QF_FP32);
  const int ntiles = (d.dv + 31) / 32;
  /* mat4 is faster than mat2 and the staged mat3 for the fp32 materialisations at B = 256
     (2026-12-03, docs/gpu-results.md "Session 15": conventional step 1.04-1.18x, replay flush
     1.34-1.44x against mat3), but the conventional step at B = 1 was 1-2 us faster with mat2
     (28.7-35.8 us against mat3's 29.5-37.6, 2026-12-01, "SSM kernels v3"). All give the same
     bits. */
  const bool b1_conventional_step = op == OP_STEP && d.conventional && st->B == 1;
  k.mat4 = k.f32 && !b1_conventional_step && ntiles <= 8;
  return k;
}

/* mat4's rows per batch: 4 for the conventional step of a GDN state or of any state of at most
 * MAT4_WIDE_B rows, 8 otherwise. On the H200 at B = 256 (2026-12-04, docs/gpu-results.md "Session
 * 17", call 1) 4-row batches (fewer registers, more warps an SM) made the Qwen3.5 shapes'
 * conventional step 1.08-1.09x faster (69.4 -> 75.8 % and 71.8 -> 78.6 % of copy); the Mamba-2
 * steps were equal or 1.7 % slower, and every flush 0.2-2.9 % slower (16 records folded a batch:
 * more work per load in flight). Below MAT4_WIDE_B a step's few blocks are bound by one warp's
 * chain of instructions, not by bytes (session 35, Nsight Compute: the Mamba-2 fixture's step at
 * B = 16 issued 1525 instructions a warp, one warp a scheduler, ~6 cycles each), and 4-row
 * batches give a head of dv = 32 eight warps of 4 rows rather than four of 8. At B =
 * MAT4_WIDE_B itself 4 rows too (H100, session 36 call 2: the Nemotron-3-Nano-4B shape's
 * conventional step at B = 64 195.4 -> 190.0 us alone, its bench e2e step 8.919 -> 8.797 ms).
 * Same bits: each row's sums are the butterfly's whatever the batch. RSSM_MAT4_ROWS=4 or 8 forces one (an A/B
 * switch, read once). */
int mat4_batch_rows(const dev_state &d) {
  static const char *const four_eight[] = {"4", "8"};
  static const int forced = rssm_env_switch("RSSM_MAT4_ROWS", four_eight, 2, -1);
  if (forced >= 0) return forced == 0 ? 4 : 8;
  return d.conventional && (d.gdn || d.B <= MAT4_WIDE_B) ? 4 : 8;
}

/* Materialise and store the flush rows of the current plan (their flag is FLUSH), or with fz.on
 * a conventional step's plan, flush and book in one mat4 launch (step_fuse; only where
 * flush_kernels_of picks mat4 with its stores). */
void launch_flush_rows(ssm_cuda_state *st, const dev_state &d, int op, const float *q, float *o, cudaStream_t s,
                       const step_fuse &fz = step_fuse{}) {
  dim3 grid((unsigned)st->dims.H, (unsigned)st->B);
  const store_params pm = store_of(st, &st->main), pl = d.split ? store_of(st, &st->lp) : pm;
  const flush_kernels k = flush_kernels_of(st, d, op);
  const ck_view src = view_of(&st->main);
  const int M = d.dk <= 128 ? 4 : 8;
  /* mat4's shared memory is mat2's, which ssm_cuda_build checked against the limit */
  const size_t msm = mat2_smem_bytes(d.cap, d.dv, d.dk);
  const int mat4_rows = mat4_batch_rows(d);
  if (k.mat4)
    launch_mat4(M, mat4_rows, grid, msm, s, d, src, op, q, o, k.nstore, pm, pl, fz);
  else
    launch_mat2(M, k.f32, grid, msm, s, d, src, op, q, o, k.nstore, pm, pl);
  if (k.nstore > 0) return;
  launch_store(grid, s, d, pm);
  if (d.split) launch_store(grid, s, d, pl);
}

/* The conventional step in one launch where it applies (step_fuse), unless RSSM_FUSED_STEP=0;
 * read once. The default since gpu_check_ssm passed on it (H100, 2026-12-07, session 33 call 2):
 * bench e2e bf16 K = 16 steps 0.394 -> 0.366 ms (GDN fixture) and 0.265 -> 0.247 (Mamba-2), two
 * launches less per SSM block. RSSM_FUSED_STEP=0 runs plan + flush + book (the GPU checks run
 * both). */
bool fused_step_on() {
  static const char *const off_on[] = {"0", "1"};
  static const bool on = rssm_env_switch("RSSM_FUSED_STEP", off_on, 2, 1) != 0;
  return on;
}

/* Whether pre3 + ro4 run for every operation of a state (its largest: a verification's nq
 * queries; ro4's shared memory does not depend on the read format). */
bool v4_readout_fits(int cap, int nq, const ssm_dims *d, size_t optin) {
  const int ntiles = (d->dv + 31) / 32;
  const ro4_layout L = ro4_layout_of(nq, d->dk, cap, d->dv);
  const size_t psm = pre3_smem_bytes(cap, nq, d->H / d->G, d->dk, nq);
  return L.total <= optin && psm <= optin && d->dk <= 256 && ntiles <= 8;
}

/* pre3 + ro4 when their shared memory fits; false (nothing launched) otherwise. */
bool launch_readout_v4(ssm_cuda_state *st, const dev_state &d, int op, const float *q, int nt, float *o,
                       cudaStream_t s, const ck_view &rd, int nq) {
  const int ntiles = (d.dv + 31) / 32;
  const ro4_layout L = ro4_layout_of(nq, d.dk, d.cap, d.dv);
  const size_t psm = pre3_smem_bytes(d.cap, nq, d.hpg, d.dk, op == OP_STEP ? 1 : d.T);
  if (L.total > st->smem_optin || psm > st->smem_optin || d.dk > 256 || ntiles > 8) return false;
  launch_pre3(dim3((unsigned)d.G, (unsigned)st->B), psm, s, d, op, q, nt, st->coefs, st->nq_max);
  launch_ro4(d.dk <= 128 ? 4 : 8, dim3((unsigned)d.H, (unsigned)st->B), (unsigned)(32 * ntiles), L.total, s, d,
             rd, op, q, nt, o, st->coefs, st->nq_max, st->num_sms);
  return true;
}

void launch_readout(ssm_cuda_state *st, const dev_state &d, int op, const float *q, int nt, float *o,
                    cudaStream_t s) {
  int nq = (op == OP_STEP ? 1 : d.T) * (d.gdn ? 2 : 1);
  const ck_view rd = view_of(read_ckpt(st));
  const int fc = format_class(rd.kind);
  /* pre3 + ro4: every case that fits (docs/gpu-results.md "Session 15"); ro2 otherwise (it has
     no skip=, which ssm_cuda_build refuses where ro4 does not fit) */
  if (launch_readout_v4(st, d, op, q, nt, o, s, rd, nq)) return;
  launch_ro2(d.dk <= 128 ? 4 : 8, fc, dim3((unsigned)d.G, (unsigned)st->B), ro2_smem_bytes(d.cap, nq, d.dk, d.hpg), s,
             d, rd, op, q, nt, o);
}

}  // namespace

extern "C" int ssm_cuda_build(ssm_cuda_state *st, const ssm_config *cfg, const ssm_dims *dims, int B,
                              uint64_t seed, uint32_t layer, const uint32_t *sequences, char *err,
                              size_t errlen) {
  memset(st, 0, sizeof *st);
  const ssm_dims *d = dims;
  if (d->kind != SSM_MAMBA2 && d->kind != SSM_GDN)
    return rssm_fail(err, errlen, "unknown SSM kind");
  if (d->H < 1 || d->dv < 1 || d->dk < 1 || d->G < 1 || B < 1 || B > 65535)
    return rssm_fail(err, errlen, "dims must be positive (H=%d dv=%d dk=%d G=%d B=%d)", d->H, d->dv,
                     d->dk, d->G, B);
  if (d->H % d->G != 0)
    return rssm_fail(err, errlen, "H=%d is not a multiple of the key groups G=%d", d->H, d->G);
  if (d->H > 65535 || layer >= 4096)
    return rssm_fail(err, errlen, "head (%d) or layer (%u) outside the SR matrix-id range", d->H,
                     layer);
  if (d->dk > DK_MAX)
    return rssm_fail(err, errlen, "dk=%d > %d (one state row per warp in registers)", d->dk, DK_MAX);
  if (cfg->strategy != SSM_CONVENTIONAL && cfg->L < 1)
    return rssm_fail(err, errlen, "L=%d < 1", cfg->L);
  if (cfg->strategy == SSM_SPEC && (cfg->T < 1 || cfg->T > cfg->L))
    return rssm_fail(err, errlen, "T=%d outside [1, L=%d]", cfg->T, cfg->L);
  if (!sequences) return rssm_fail(err, errlen, "no sequence ids");
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return rssm_fail(err, errlen, "no CUDA device");

  st->cfg = *cfg;
  st->dims = *d;
  st->B = B;
  st->seed = seed;
  st->layer = layer;
  st->cap = cfg->strategy == SSM_CONVENTIONAL ? 1 : cfg->strategy == SSM_REPLAY ? cfg->L : cfg->L + cfg->T;

  /* shared memory: the readout's largest operation (a verification, for spec) and the
     materialisation's staged records must fit */
  int nq = (cfg->strategy == SSM_SPEC ? cfg->T : 1) * (d->kind == SSM_GDN ? 2 : 1);
  /* (ro2 and mat2 are the kernels that every shape can fall back to; mat4, pre3 and ro4 run only
     where they fit) */
  size_t smem = ro2_smem_bytes(st->cap, nq, d->dk, d->H / d->G);
  size_t msmem = mat2_smem_bytes(st->cap, d->dv, d->dk);
  int optin = 0;
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (smem > (size_t)optin || msmem > (size_t)optin)
    return rssm_fail(err, errlen,
                     "ring of %d slots, %d queries and %d heads per group need %zu + %zu bytes of "
                     "shared memory (> %d)",
                     st->cap, nq, d->H / d->G, smem, msmem, optin);
  if (raise_smem_readout(smem, optin, err, errlen) != 0 || raise_smem_mat(msmem, optin, err, errlen) != 0) return -1;
  st->smem_optin = (size_t)optin;
  cudaDeviceGetAttribute(&st->num_sms, cudaDevAttrMultiProcessorCount, dev);
  st->nq_max = nq;
  /* Appendix F's skip= lives in ro4 only; it must then run for every readout */
  if (cfg->skip > 0.0 && !v4_readout_fits(st->cap, nq, d, (size_t)optin))
    return rssm_fail(err, errlen, "skip=: the v4 readout does not fit this shape (%d x %d)", d->dv, d->dk);

  size_t Bz = (size_t)B, H = (size_t)d->H, dv = (size_t)d->dv, dk = (size_t)d->dk, G = (size_t)d->G;
  size_t cap = (size_t)st->cap;
  int gdn = d->kind == SSM_GDN;
  bool oom = false;
  auto dalloc = [&](void **p, size_t bytes) {
    if (oom) return;
    if (cudaMalloc(p, bytes) != cudaSuccess || cudaMemset(*p, 0, bytes) != cudaSuccess) {
      *p = nullptr;
      oom = true;
    }
  };
  dalloc(reinterpret_cast<void **>(&st->base), Bz * sizeof(int));
  dalloc(reinterpret_cast<void **>(&st->h), Bz * sizeof(int));
  dalloc(reinterpret_cast<void **>(&st->pending), Bz * sizeof(int));
  dalloc(reinterpret_cast<void **>(&st->flushed), Bz * sizeof(int));
  dalloc(reinterpret_cast<void **>(&st->flag), Bz * sizeof(int));
  dalloc(reinterpret_cast<void **>(&st->misuse), Bz * sizeof(int));
  dalloc(reinterpret_cast<void **>(&st->ndraft), Bz * sizeof(int));
  dalloc(reinterpret_cast<void **>(&st->nflush), Bz * sizeof(uint64_t));
  dalloc(reinterpret_cast<void **>(&st->event), Bz * H * sizeof(uint32_t));
  dalloc(reinterpret_cast<void **>(&st->matrix_id), Bz * H * sizeof(uint64_t));
  dalloc(reinterpret_cast<void **>(&st->rec_alpha), Bz * cap * H * sizeof(float));
  dalloc(reinterpret_cast<void **>(&st->rec_x), Bz * cap * H * dv * sizeof(float));
  dalloc(reinterpret_cast<void **>(&st->rec_k), Bz * cap * G * dk * sizeof(float));
  if (gdn) {
    dalloc(reinterpret_cast<void **>(&st->rec_beta), Bz * cap * H * sizeof(float));
    dalloc(reinterpret_cast<void **>(&st->rec_v), Bz * cap * H * dv * sizeof(float));
  }
  dalloc(reinterpret_cast<void **>(&st->S), Bz * H * dv * dk * sizeof(float));
  if (cfg->strategy != SSM_CONVENTIONAL)
    dalloc(reinterpret_cast<void **>(&st->coefs), Bz * H * (size_t)nq * (cap + 1) * sizeof(float));
  if (oom) {
    ssm_cuda_free(st);
    return rssm_fail(err, errlen, "out of device memory for the SSM state");
  }
  uint64_t *ids = static_cast<uint64_t *>(malloc(Bz * H * sizeof(uint64_t)));
  if (!ids) {
    ssm_cuda_free(st);
    return rssm_fail(err, errlen, "out of host memory");
  }
  for (size_t b = 0; b < Bz; b++)
    for (size_t hd = 0; hd < H; hd++) ids[b * H + hd] = qsr_matrix_id(layer, (uint32_t)hd, sequences[b]);
  cudaMemcpy(st->matrix_id, ids, Bz * H * sizeof(uint64_t), cudaMemcpyHostToDevice);
  free(ids);

  int rc;
  if (cfg->strategy == SSM_CONVENTIONAL) {
    rc = ckpt_init(&st->main, &cfg->state, QSR_STREAM_STATE, d, B, err, errlen);
  } else if (!cfg->split) {
    rc = ckpt_init(&st->main, &cfg->ckpt, QSR_STREAM_STATE, d, B, err, errlen);
  } else {
    rc = ckpt_init(&st->main, &cfg->hp, QSR_STREAM_HP, d, B, err, errlen);
    if (rc == 0) rc = ckpt_init(&st->lp, &cfg->lp, QSR_STREAM_LP, d, B, err, errlen);
  }
  if (rc == 0 && cudaDeviceSynchronize() != cudaSuccess)
    rc = rssm_fail(err, errlen, "CUDA error building the state");
  if (rc != 0) {
    ssm_cuda_free(st);
    return -1;
  }
  return 0;
}

extern "C" void ssm_cuda_free(ssm_cuda_state *st) {
  if (!st) return;
  void *ptrs[] = {st->base,      st->h,     st->pending,   st->flushed, st->flag,  st->misuse, st->ndraft,
                  st->nflush,    st->event, st->matrix_id, st->rec_alpha, st->rec_beta, st->rec_x,
                  st->rec_v,     st->rec_k, st->main.blob, st->lp.blob, st->S, st->coefs};
  for (void *p : ptrs)
    if (p) cudaFree(p);
  memset(st, 0, sizeof *st);
}

extern "C" int ssm_cuda_step(ssm_cuda_state *st, const ssm_cuda_inputs *in, const uint8_t *active, float *o,
                             void *stream) {
  if (st->cfg.strategy == SSM_SPEC || !inputs_ok(st, in, o)) return -1;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  dev_state d = dev_of(st);
  if (d.conventional && fused_step_on()) {
    const flush_kernels k = flush_kernels_of(st, d, OP_STEP);
    if (k.mat4 && k.nstore > 0) { /* plan, flush and book in one launch */
      launch_flush_rows(st, d, OP_STEP, in->q, o, s, step_fuse{1, active, *in});
      return launch_ok();
    }
  }
  launch_plan(d, OP_STEP, active, *in, 1, nullptr, s);
  if (!d.conventional) launch_readout(st, d, OP_STEP, in->q, 1, o, s);
  launch_flush_rows(st, d, OP_STEP, in->q, o, s);
  launch_step_book(d, s);
  return launch_ok();
}

extern "C" int ssm_cuda_verify(ssm_cuda_state *st, const ssm_cuda_inputs *drafts, const uint8_t *active,
                               float *o, void *stream) {
  return ssm_cuda_verify_n(st, drafts, nullptr, active, o, stream);
}

extern "C" int ssm_cuda_verify_n(ssm_cuda_state *st, const ssm_cuda_inputs *drafts, const int *n,
                                 const uint8_t *active, float *o, void *stream) {
  if (st->cfg.strategy != SSM_SPEC || !inputs_ok(st, drafts, o)) return -1;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  dev_state d = dev_of(st);
  launch_plan(d, OP_VERIFY, active, *drafts, d.T, n, s);
  /* Appendix D.1: rows with h + T > L fold their committed records first; their drafts then
   * read the fp32 S that the flush built */
  launch_flush_rows(st, d, OP_VERIFY, nullptr, nullptr, s);
  launch_flush_book(d, s);
  launch_readout(st, d, OP_VERIFY, drafts->q, d.T, o, s);
  launch_verify_book(d, s);
  return launch_ok();
}

extern "C" int ssm_cuda_commit(ssm_cuda_state *st, const int *a, const uint8_t *active, void *stream) {
  if (st->cfg.strategy != SSM_SPEC || !a) return -1;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  launch_commit(dev_of(st), a, active, s);
  return launch_ok();
}

extern "C" int ssm_cuda_flush(ssm_cuda_state *st, const uint8_t *active, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  dev_state d = dev_of(st);
  ssm_cuda_inputs none = {nullptr, nullptr, nullptr, nullptr, nullptr};
  launch_plan(d, OP_FLUSH, active, none, 0, nullptr, s);
  if (!d.conventional) {
    launch_flush_rows(st, d, OP_FLUSH, nullptr, nullptr, s);
    launch_flush_book(d, s);
  }
  return launch_ok();
}

extern "C" int ssm_cuda_download_row(const ssm_cuda_state *st, int b, ssm_cuda_row_info *info, uint32_t *event,
                                     unsigned char *main_blob, unsigned char *lp_blob) {
  if (b < 0 || b >= st->B) return -1;
  if (cudaDeviceSynchronize() != cudaSuccess) return -1;
  bool ok = true;
  auto get = [&](void *dst, const void *src, size_t bytes) {
    if (ok && cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) ok = false;
  };
  if (info) {
    get(&info->h, st->h + b, sizeof(int));
    get(&info->base, st->base + b, sizeof(int));
    get(&info->pending, st->pending + b, sizeof(int));
    get(&info->flushed, st->flushed + b, sizeof(int));
    get(&info->misuse, st->misuse + b, sizeof(int));
    get(&info->nflush, st->nflush + b, sizeof(uint64_t));
  }
  size_t H = (size_t)st->dims.H;
  if (event) get(event, st->event + (size_t)b * H, H * sizeof(uint32_t));
  if (main_blob) {
    size_t n = H * (size_t)st->main.lay.bytes_per_matrix;
    get(main_blob, st->main.blob + (size_t)b * n, n);
  }
  if (lp_blob && st->lp.blob) {
    size_t n = H * (size_t)st->lp.lay.bytes_per_matrix;
    get(lp_blob, st->lp.blob + (size_t)b * n, n);
  }
  return ok ? 0 : -1;
}
