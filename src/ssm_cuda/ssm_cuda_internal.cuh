/* Internal to src/ssm_cuda (docs/ssm-cuda.md): what the kernel files and the host API share.
 *
 * Why the results are identical: every float operation in the kernels is one that the CPU engine
 * does, on the same operands, in the same association, through the same functions where they fit
 * (src/ssm/ssm_math.h for the state arithmetic, quant/numerics.h for checkpoint codes), and nvcc
 * compiles with --fmad=false, IEEE division and no flush-to-zero. The reduction order is the one
 * ssm_math.h prescribes: a dot product along dk is one warp, lane l accumulating i = l + 32m in
 * ascending m from +0, then the xor butterfly off = 16..1; sums over records run in ascending
 * record order in one thread.
 *
 * Files (one job each; each kernel file launches only its own kernels, through the launchers
 * declared at the end of this header; the host API picks which one runs):
 *   ssm_cuda_api.cu       the public API of ssm_cuda.h: build, free, step, verify, commit, flush,
 *                         download; the launch selection (which kernel runs which case)
 *   ssm_cuda_plan.cu      plan_kernel (per row: flush decision, misuse checks, records into the
 *                         ring), the *_book kernels and commit_kernel, the initial-state fill
 *   ssm_cuda_mat.cu       flush rows (conventional steps, replay flushes, a verification's
 *                         flush): mat2_kernel and mat4_kernel materialise S = records folded
 *                         onto deq(main) (and a step's output S q), store_kernel encodes scaled
 *                         checkpoints
 *   ssm_cuda_readout.cu   output-only readouts (replay non-flush steps, spec drafts, GDN u):
 *                         pre3_kernel + ro4_kernel (the default), ro2_kernel (shapes ro4 does
 *                         not take)
 *   ssm_cuda_decoders.cu  ssm_cuda_check_decoders: the readouts' fast decoders and tables against
 *                         the reference decoders, every code
 * Kernel names keep the generation they were measured as (v2: mat2, ro2; v3: mat3, pre3, ro3;
 * v4 (session 15): ro4, mat4, rows straight to registers;
 * docs/gpu-results.md); only the variant that won each case ships (docs/ssm-cuda.md, "Kernels").
 * No kernel needs a host decision, so an operation can be captured in a CUDA Graph. */
#ifndef RSSM_SSM_CUDA_INTERNAL_CUH
#define RSSM_SSM_CUDA_INTERNAL_CUH

#include <cuda_runtime.h>

#include <stddef.h>
#include <stdint.h>

#include "quant/decode_fast.h"
#include "quant/numerics.h"
#include "src/ssm/ssm_math.h"
#include "src/ssm_cuda/ssm_cuda.h"
#include "src/ssm_cuda/cuda_pdl.h"

namespace ssmc {

enum { FLAG_IDLE = 0, FLAG_NONFLUSH = 1, FLAG_FLUSH = 2 };
enum { OP_STEP = 0, OP_VERIFY = 1, OP_FLUSH = 2 };
enum { Q_U = 0, Q_OUT = 1 };
/* How a read checkpoint's row is loaded and decoded. */
enum { FC_F32 = 0, FC_F16 = 1, FC_F8 = 2, FC_F4 = 3 };

constexpr int DK_MAX = 256; /* one state row per warp in registers: M = ceil(dk / 32) <= 8 per lane */
constexpr int V2_WARPS = 8; /* warps of a mat2 or ro2 block */
/* rows per warp in flight (mat2) and per batch (ro2): 8 rows of dk <= 128 (32 registers of
   state per lane), 4 of dk <= 256 */
__host__ __device__ constexpr int v2_rows(int M) { return M <= 4 ? 8 : 4; }
constexpr int R3 = 8; /* mat4, ro4: rows per batch; a warp's 32-row tile is 4 batches */

/* Device pointers and sizes of the state, passed to kernels by value. */
struct dev_state {
  int B, H, dv, dk, G, hpg, cap, L, T, gdn, conventional, spec, split, recompute;
  int *base, *h, *pending, *flushed, *flag, *misuse;
  int *ndraft;                /* [B] this verification's drafts per row (0..T) */
  double skip;                /* Appendix F threshold (cfg.skip; 0 = off; ro4 only) */
  uint64_t *nflush;
  uint32_t *event;            /* [B][H] */
  const uint64_t *matrix_id;  /* [B][H] */
  float *rec_alpha, *rec_beta, *rec_x, *rec_v, *rec_k, *S;
};

/* A checkpoint's geometry (quant/format.h layout) and blob. */
struct ck_view {
  int kind, block;
  long long code_row, blocks_per_row, scale_elem, codes_off, scales_off, tscale_off, bpm;
  uint8_t *blob; /* [B][H][bpm] */
};

/* Where and how a store writes one checkpoint. */
struct store_params {
  ck_view v;
  int sr_on;
  uint32_t stream;
  uint64_t seed;
};

/* The xor butterfly of ssm_math.h item 1: every lane ends with the same bits. */
__device__ inline float butterfly(float p) {
  for (int off = RSSM_DOT_LANES / 2; off >= 1; off >>= 1) p = p + __shfl_xor_sync(0xffffffffu, p, off);
  return p;
}

__device__ inline int slot_of(const dev_state &d, int base, int j) { return (base + j - 1) % d.cap; }

/* A step's plan of row b (plan_kernel's OP_STEP branch; the fused conventional step's): FLAG_IDLE
 * for an inactive row (act 0) or a misuse (a spec state, or drafts pending: *misuse set for the
 * caller to count), else FLAG_FLUSH for conventional and for replay at h + 1 == L, else
 * FLAG_NONFLUSH. */
__device__ inline int step_flag_from(const dev_state &d, int act, int pending, int h, bool *misuse) {
  *misuse = false;
  if (!act) return FLAG_IDLE;
  if (d.spec || pending != 0) {
    *misuse = true;
    return FLAG_IDLE;
  }
  return d.conventional ? FLAG_FLUSH : (h + 1 == d.L ? FLAG_FLUSH : FLAG_NONFLUSH);
}
/* The same from the row's d.pending[b] and d.h[b] (plan_kernel; mat4_kernel loads them itself,
 * in one batch with the rest it needs, and calls step_flag_from). */
__device__ inline int step_flag_of(const dev_state &d, int act, int b, bool *misuse) {
  return step_flag_from(d, act, act ? d.pending[b] : 0, act && !d.conventional ? d.h[b] : 0, misuse);
}

/* The conventional step in one launch (issue 18; the default, RSSM_FUSED_STEP=0 turns it off:
 * ssm_cuda_api.cu's fused_step_on): mat4_kernel with `on` decides each row's plan itself
 * (step_flag_from, every thread from the same reads), writes the step's records into the ring as
 * plan_kernel does (each block its head's alpha, beta and v, the first head of a key group its k),
 * stages them from the inputs rather than the ring, and after its stores counts the store as
 * step_book_kernel does (its head's event; head 0 the row's nflush, flushed and flag). A
 * conventional row touches only its own slot h + 1 = 1 and no other block reads it, so nothing
 * crosses blocks. The bits of plan + mat4 + step_book. */
struct step_fuse {
  int on;
  const uint8_t *active; /* [B] or NULL */
  ssm_cuda_inputs in;    /* n = 1 */
};

inline int format_class(int kind) {
  switch (kind) {
    case QF_FP32: return FC_F32;
    case QF_BF16: case QF_FP16: return FC_F16;
    case QF_NVFP4: case QF_MXFP4: return FC_F4;
    default: return FC_F8; /* fp8, fp8_e5m2, int8, mxfp8 */
  }
}

/* Decode tables of one block: entry t is the decoder's own value for code t. */
struct luts {
  float elem[256];  /* element codes: 8-bit formats, or E2M1 (first 16) for 4-bit ones */
  float scale[256]; /* block scale codes: E4M3 (NVFP4) or E8M0 (MX formats); unused otherwise */
};

__device__ inline void fill_luts(luts *lt, int kind) {
  const rssm_elem el = rssm_elem_of((qformat_kind)kind);
  const bool four = kind == QF_NVFP4 || kind == QF_MXFP4;
  for (int t = threadIdx.x; t < 256; t += blockDim.x) {
    lt->elem[t] = (!four || t < 16) ? rssm_decode_elem(el, (uint32_t)t) : 0.0f;
    lt->scale[t] = kind == QF_NVFP4 ? rssm_decode_elem(RSSM_EL_E4M3, (uint32_t)t)
                                    : rssm_e8m0_decode((uint32_t)t); /* only MX kinds read it */
  }
}

/* An fp32 row in memory (the scratch S). */
template <int M>
__device__ inline void load_f32_row(const float *row /* [dk] */, int dk, int lane, float *x /* [M] */) {
#pragma unroll
  for (int m = 0; m < M; m++) {
    const int c = lane + 32 * m;
    x[m] = c < dk ? row[c] : 0.0f;
  }
}

/* Warp-32 dot (ssm_math.h item 1) of a row in registers with y in registers (lane's columns). */
template <int M>
__device__ inline float dot_rr(const float *x /* [M] */, const float *y /* [M] */, int dk, int lane) {
  float p = 0.0f;
#pragma unroll
  for (int m = 0; m < M; m++) {
    const int c = lane + 32 * m;
    if (c < dk) p = p + x[m] * y[m];
  }
  return butterfly(p);
}

/* Asynchronous global -> shared copies (sm_80+). cp.async.cg takes 16 bytes, .ca 4 or 8. */
__device__ inline void cp_async(void *smem_dst, const void *gsrc, int bytes) {
  const unsigned s = (unsigned)__cvta_generic_to_shared(smem_dst);
  if (bytes == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gsrc) : "memory");
  else if (bytes == 8) asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(s), "l"(gsrc) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(s), "l"(gsrc) : "memory");
}
__device__ inline void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ inline void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory"); }

/* Copies len bytes from global src to shared dst (16-byte aligned) with the threads t = 0..nt-1
 * of a group: 16-, 8- or 4-byte asynchronous pieces when src and len allow, else plain byte
 * copies (shapes whose rows are not 4-byte multiples; done by the time the caller syncs). */
__device__ inline void stage(uint8_t *dst, const uint8_t *src, size_t len, int t, int nt) {
  /* both addresses and the length must be multiples of the piece (a shared generic address has
     the low bits of its offset) */
  const uintptr_t al = (uintptr_t)src | (uintptr_t)dst | (uintptr_t)len;
  const int piece = (al & 15) == 0 ? 16 : (al & 7) == 0 ? 8 : (al & 3) == 0 ? 4 : 1;
  if (piece == 1) {
    for (size_t o = (size_t)t; o < len; o += (size_t)nt) dst[o] = src[o];
    return;
  }
  for (size_t o = (size_t)t * piece; o < len; o += (size_t)nt * piece) cp_async(dst + o, src + o, piece);
}

__host__ __device__ constexpr size_t align16(size_t x) { return (x + 15) & ~(size_t)15; }

/* Shared-memory layout of ro4_kernel (byte offsets): only what every warp of a head reads (the
 * queries, the coefficients, C_i . y, the records' x); the checkpoint rows go straight to
 * registers, so the block is small and many are resident. */
struct ro4_layout {
  size_t ys, cf, cd, xs, sc, total;
};
__host__ __device__ inline ro4_layout ro4_layout_of(int nq, int dk, int cap, int dv) {
  ro4_layout l;
  l.ys = 0;
  l.cf = l.ys + align16((size_t)nq * dk * sizeof(float));
  l.cd = l.cf + align16((size_t)nq * (cap + 1) * sizeof(float));
  l.xs = l.cd + align16((size_t)nq * dv * sizeof(float));
  l.sc = l.xs + align16((size_t)cap * dv * sizeof(float));
  l.total = l.sc + (size_t)((dv + 31) / 32) * R3 * 8 * sizeof(float); /* [warps][R3][8] NVFP4 scales */
  return l;
}

/* 32 sums, one per entry of v, each a warp-32 butterfly (ssm_math.h item 1) done by recursive
 * halving: at level off = 16, 8, 4, 2, 1 a lane keeps half of its sums (the upper half when its
 * bit off is set), sends the other half to lane ^ off and adds what it receives. The value kept
 * for a sum is then own + partner's, exactly the butterfly's p[l] + p[l ^ off] at every level (a
 * float + is commutative bit for bit), so every result has the butterfly's bits; lane l ends
 * with sum l. 31 shuffles instead of 32 x 5. */
template <int K /* 4, 8, 16 or 32 */>
__device__ inline float reduce_sums(float *v /* [K] */, int lane) {
  int half = K / 2;
#pragma unroll
  for (int off = 16; off >= 1; off >>= 1) {
    if (half >= 1) { /* a halving level */
      const bool upper = (lane & off) != 0;
#pragma unroll
      for (int s = 0; s < K / 2; s++) {
        if (s >= half) break;
        const float send = upper ? v[s] : v[s + half];
        const float keep = upper ? v[s + half] : v[s];
        v[s] = keep + __shfl_xor_sync(0xffffffffu, send, off);
      }
      half >>= 1;
    } else { /* the butterfly's remaining levels: the partner holds the same sum */
      v[0] = v[0] + __shfl_xor_sync(0xffffffffu, v[0], off);
    }
  }
  return v[0]; /* lane l holds sum l / (32 / K) */
}

/* ---- dynamic shared memory of the kernels (bytes) ---------------------------------------------- */

/* mat2_kernel: the records of one head staged once per block (alphas, betas, the group's k, x or
 * v) and a step's q, so that the per-row loop reads nothing but its own rows from global memory. */
inline size_t mat2_smem_bytes(int cap, int dv, int dk) {
  return ((size_t)cap * (2 + (size_t)dk + (size_t)dv) + (size_t)dk) * sizeof(float);
}



/* ro2_kernel for nq queries and hpg heads per key group: the decode tables, the record x
 * pointers, then the floats. */
inline size_t ro2_smem_bytes(int cap, int nq, int dk, int hpg) {
  size_t ptrs = (size_t)hpg * cap * sizeof(const float *);
  size_t floats = (size_t)hpg * cap                       /* al */
                  + (size_t)nq * dk                       /* ys */
                  + (size_t)nq * cap                      /* dots */
                  + (size_t)hpg * nq * (cap + 1)          /* w */
                  + (size_t)hpg * nq * cap                /* coef */
                  + (size_t)V2_WARPS * nq * 32;          /* cd */
  return sizeof(luts) + ptrs + floats * sizeof(float);
}

/* pre3_kernel (T: the drafts of the largest operation, 1 for a step). */
inline size_t pre3_smem_bytes(int cap, int nq, int hpg, int dk, int T) {
  return ((size_t)hpg * cap + (size_t)nq * cap + (size_t)hpg * nq * (cap + 1) + (size_t)cap * dk +
          (size_t)T * dk) * sizeof(float);
}

/* ---- launchers: each kernel file launches its own kernels on stream s ------------------------- */

/* ssm_cuda_plan.cu */
void launch_plan(const dev_state &d, int op, const uint8_t *active, const ssm_cuda_inputs &in, int nt,
                 const int *nd, cudaStream_t s);
void launch_step_book(const dev_state &d, cudaStream_t s);
void launch_flush_book(const dev_state &d, cudaStream_t s);
void launch_verify_book(const dev_state &d, cudaStream_t s);
void launch_commit(const dev_state &d, const int *a, const uint8_t *active, cudaStream_t s);
/* one encoded matrix into every slot of a blob, on the default stream */
void launch_broadcast(uint8_t *blob, const uint8_t *one, size_t nmat, size_t bpm);

/* ssm_cuda_mat.cu. M = ceil(dk / 32) rounded up to 4 or 8. */
void launch_mat2(int M, bool all_f32, dim3 grid, size_t smem, cudaStream_t s, const dev_state &d, const ck_view &src,
                 int op, const float *q, float *o, int nstore, const store_params &st0, const store_params &st1);
/* mat4_kernel: the rows straight into registers; its shared memory is mat2's (the staged records).
 * rows: 4 or 8 rows folded per batch (mat4_rows). Each warp takes wr = mat4_rows_per_warp rows of
 * its head's dv, so a block has ceil(dv / wr) warps. */
void launch_mat4(int M, int rows, dim3 grid, size_t smem, cudaStream_t s, const dev_state &d, const ck_view &src,
                 int op, const float *q, float *o, int nstore, const store_params &st0, const store_params &st1,
                 const step_fuse &fz);
/* The most warps a mat4_kernel<M, RB> block may have (its launch bounds are 32 times this, one
 * block an SM): 16 for <4, 4> (96 registers, within the 128 that 512 threads leave), 8 for the
 * others (165-215 registers: at 128 they spilled, docs/gpu-runtime.md "What each kernel adds"). */
constexpr int mat4_max_warps(int M, int rb) { return M <= 4 && rb == 4 ? 16 : 8; }
/* Rows of a head per warp in mat4_kernel: 32 at B >= MAT4_WIDE_B (the batches the kernel was
 * tuned on: B = 256, docs/gpu-results.md "Session 15", "Session 17"); below that the fewest
 * multiple of `rows` (the batch) that keeps a block at <= max_warps warps (mat4_max_warps, or 8
 * with RSSM_MAT4_WARPS=8, an A/B switch read once), so that a small batch's few blocks fold their
 * rows in parallel rather than a warp's rows in turn: at B = 16 a GDN head of dv = 64 had 2 warps
 * for 8 batches, then 8 warps of 2 batches (issue 18), now 16 warps of one batch (session 35: a
 * step's mat4 is bound by one warp's chain of instructions, and the Mamba-2 step's went from
 * 7.2-9.0 to 4.3-5.3 us of the step with one batch a warp rather than one of 8 rows, unspilled).
 * The bits do not depend on it (mat4_kernel). */
#define MAT4_WIDE_B 64
int mat4_rows_per_warp(int dv, int M, int rows, int B);
void launch_store(dim3 grid, cudaStream_t s, const dev_state &d, const store_params &p);
/* mat2 up to mat2_bytes, mat4 up to optin. Returns 0, or -1 naming the kernel in err. */
int raise_smem_mat(size_t mat2_bytes, int optin, char *err, size_t errlen);

/* ssm_cuda_readout.cu */
void launch_ro2(int M, int FC, dim3 grid, size_t smem, cudaStream_t s, const dev_state &d, const ck_view &rd, int op,
                const float *q, int nt, float *o);
void launch_pre3(dim3 grid, size_t smem, cudaStream_t s, const dev_state &d, int op, const float *q, int nt,
                 float *coefs, int NQ);
/* the instance follows the read checkpoint rd (ro4_kind) and, for fp32 steps, whether the grid
 * has at most one block per SM (sms: the device's multiprocessors) */
void launch_ro4(int M, dim3 grid, unsigned threads, size_t smem, cudaStream_t s, const dev_state &d,
                const ck_view &rd, int op, const float *q, int nt, float *o, const float *coefs, int NQ, int sms);
/* ro2 up to ro2_bytes, pre3 and ro4 up to optin. Returns 0, or -1 naming the kernel in err. */
int raise_smem_readout(size_t ro2_bytes, int optin, char *err, size_t errlen);

}  // namespace ssmc

#endif
