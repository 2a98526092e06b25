/* The SSM state engine on the GPU (docs/ssm-cuda.md): batched kernels that mirror the CPU
 * reference of src/ssm bit for bit.
 *
 * Why the results are identical: every float operation below is one that the CPU engine does, on
 * the same operands, in the same association, through the same functions where they fit
 * (src/ssm/ssm_math.h for the state arithmetic, quant/numerics.h for checkpoint codes), and nvcc
 * compiles with --fmad=false, IEEE division and no flush-to-zero. The reduction order is the one
 * ssm_math.h prescribes: a dot product along dk is one warp, lane l accumulating i = l + 32m in
 * ascending m from +0, then the xor butterfly off = 16..1; sums over records run in ascending
 * record order in one thread.
 *
 * Kernels of one operation (all rows at once; each row follows its own device-side plan):
 *   plan_kernel      per row: the flush decision (flag), misuse checks, records into the ring
 *   mat_kernel       flush rows: S = records folded onto deq(main), warp per state row (and, for
 *                    a step, the output S q); encodes each row straight into unscaled
 *                    checkpoints (fp32, bf16, fp16), else writes S to scratch
 *   store_kernel     flush rows with scaled formats or in a verification: encode scratch S into
 *                    a checkpoint, per head
 *   ro_kernel        output-only readout (non-flush steps, drafts), block per (row, key group):
 *                    the k_j . y dots once per group, the checkpoint row read once for all queries
 *   *_book kernels   per row: h, base, events, pending after the operation
 * No kernel needs a host decision, so an operation can be captured in a CUDA Graph. */
#include <cuda_runtime.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/io/errbuf.h"
#include "quant/decode_fast.h"
#include "quant/numerics.h"
#include "quant/quant.h"
#include "src/ssm/ssm_math.h"
#include "src/ssm_cuda/ssm_cuda.h"

namespace {

enum { FLAG_IDLE = 0, FLAG_NONFLUSH = 1, FLAG_FLUSH = 2 };
enum { OP_STEP = 0, OP_VERIFY = 1, OP_FLUSH = 2 };
enum { Q_U = 0, Q_OUT = 1 };

constexpr int MAXM = 8;       /* elements of one state row per lane: dk <= 32 * MAXM */
constexpr int RO_WARPS = 8;   /* warps of a readout block; each takes tiles of 32 state rows */
constexpr int RO_ROWS = 4;    /* state rows loaded at once by a readout warp */
constexpr int RO_XCHUNK = 8;  /* record values loaded at once per row */
constexpr int MAT_WARPS = 8;  /* warps of a materialise block */
constexpr int MAT_ROWS = 2;   /* state rows per warp at a time */
constexpr int STORE_THREADS = 256;
constexpr int BOOK_THREADS = 128;

/* Device pointers and sizes of the state, passed to kernels by value. */
struct dev_state {
  int B, H, dv, dk, G, hpg, cap, L, T, gdn, conventional, spec, split, recompute;
  int *base, *h, *pending, *flushed, *flag, *misuse;
  int *ndraft;                /* [B] this verification's drafts per row (0..T) */
  double skip;                /* Appendix F threshold (cfg.skip; 0 = off; v3 readout only) */
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

/* One state row as stored: enough to decode element c exactly as q_decode_cpu does. */
struct row_src {
  int kind, block, scale_elem;
  const uint8_t *codes;  /* the row's codes */
  const uint8_t *scales; /* the row's first scale slot, or NULL (unscaled formats) */
  float s_dec;           /* NVFP4 per-matrix S_dec, else 1 */
};

__device__ inline row_src ck_row(const ck_view &v, size_t mat, int i) {
  const uint8_t *m = v.blob + mat * (size_t)v.bpm;
  row_src r;
  r.kind = v.kind;
  r.block = v.block;
  r.scale_elem = (int)v.scale_elem;
  r.codes = m + v.codes_off + (size_t)i * (size_t)v.code_row;
  r.scales = v.scales_off >= 0 ? m + v.scales_off + (size_t)i * (size_t)(v.blocks_per_row * v.scale_elem)
                               : nullptr;
  r.s_dec = v.kind == QF_NVFP4 ? *reinterpret_cast<const float *>(m + v.tscale_off) : 1.0f;
  return r;
}

/* An fp32 row of the scratch S, read through the same decoder (fp32: a plain load). */
__device__ inline row_src fp32_row(const float *row /* [dk] */) {
  row_src r;
  r.kind = QF_FP32;
  r.block = 0;
  r.scale_elem = 0;
  r.codes = reinterpret_cast<const uint8_t *>(row);
  r.scales = nullptr;
  r.s_dec = 1.0f;
  return r;
}

__device__ inline float src_at(const row_src &r, int c) {
  const uint8_t *scale = r.scales ? r.scales + (size_t)(c / r.block) * (size_t)r.scale_elem : nullptr;
  return rssm_decode_at((qformat_kind)r.kind, r.codes, scale, r.s_dec, c);
}

/* Lane l's elements c = l + 32m of a row, in registers (0 beyond dk). */
__device__ inline void load_row(const row_src &r, int dk, int lane, float *x /* [MAXM] */) {
#pragma unroll
  for (int m = 0; m < MAXM; m++) {
    int c = lane + 32 * m;
    x[m] = c < dk ? src_at(r, c) : 0.0f;
  }
}

/* The xor butterfly of ssm_math.h item 1: every lane ends with the same bits. */
__device__ inline float butterfly(float p) {
  for (int off = RSSM_DOT_LANES / 2; off >= 1; off >>= 1) p = p + __shfl_xor_sync(0xffffffffu, p, off);
  return p;
}

/* Warp-32 dot of a row held in registers with a vector y [dk] (ssm_math.h item 1). */
__device__ inline float warp_dot_regs(const float *x /* [MAXM] */, const float *y /* [dk] */, int dk,
                                      int lane) {
  float p = 0.0f;
#pragma unroll
  for (int m = 0; m < MAXM; m++) {
    int c = lane + 32 * m;
    if (c < dk) p = p + x[m] * y[c];
  }
  return butterfly(p);
}

/* Warp-32 dot of two vectors in memory. */
__device__ inline float warp_dot(const float *a /* [dk] */, const float *y /* [dk] */, int dk, int lane) {
  float p = 0.0f;
  for (int c = lane; c < dk; c += 32) p = p + a[c] * y[c];
  return butterfly(p);
}

__device__ inline int slot_of(const dev_state &d, int base, int j) { return (base + j - 1) % d.cap; }

/* The readouts of one row in one operation, in the CPU engine's order.
 * Step (h = the row's h before the step, j = h + 1):
 *   Mamba-2: {OUT, n = j, y = q};  GDN: {U of record j, n = j - 1, y = k_j}, {OUT, n = j, y = q}.
 * Verify (h = the row's h after a flush, drafts at records h + s, s = 1..T):
 *   GDN first {U of record h + s, n = h + s - 1, y = k_{h+s}} for s = 1..T (forward substitution
 *   of the unit-triangular system of Appendix B.3, as ssm_verify does it), then for both kinds
 *   {OUT of draft s, n = h + s, y = q_s}. */
struct query {
  int kind, n, rec, t;
};

/* Tb: the row's drafts in this verification (ndraft[b]; rows of one batch may differ). */
__device__ inline int num_queries(const dev_state &d, int op, int Tb) {
  return (op == OP_STEP ? 1 : Tb) * (d.gdn ? 2 : 1);
}

__device__ inline query query_of(const dev_state &d, int op, int h, int qi, int Tb) {
  query q;
  if (op == OP_STEP) {
    int j = h + 1;
    if (d.gdn && qi == 0) { q.kind = Q_U; q.n = j - 1; q.rec = j; q.t = 0; }
    else { q.kind = Q_OUT; q.n = j; q.rec = 0; q.t = 0; }
  } else if (d.gdn && qi < Tb) {
    q.kind = Q_U; q.rec = h + qi + 1; q.n = h + qi; q.t = qi;
  } else {
    int s = d.gdn ? qi - Tb : qi;
    q.kind = Q_OUT; q.n = h + s + 1; q.rec = 0; q.t = s;
  }
  return q;
}

/* ---------------------------------------------------------------------------------------------
 * Per-row planning and bookkeeping
 * ------------------------------------------------------------------------------------------- */

/* Block per row. Decides the row's plan for this operation (the CPU's branch) and writes the
 * row's input tokens as records h+1..h+n into the ring (n = 1 for a step; for a verification the
 * row's own Tb = nd[b] drafts, or all nt when nd is NULL; the inputs keep the stride nt). A
 * verification of Tb = 0 drafts is idle for that row and, as ssm_verify_n, changes nothing. */
__global__ void plan_kernel(dev_state d, int op, const uint8_t *active /* [B] or NULL */,
                            ssm_cuda_inputs in /* [B][nt][...] */, int nt,
                            const int *nd /* [B] or NULL: drafts per row (verify) */) {
  const int b = blockIdx.x;
  __shared__ int sflag, sn;
  if (threadIdx.x == 0) {
    int act = active ? active[b] != 0 : 1;
    int fl = FLAG_IDLE;
    int n = op == OP_VERIFY ? (nd ? nd[b] : nt) : (op == OP_STEP ? 1 : 0);
    if (act) {
      int h = d.h[b];
      if (op == OP_STEP) {
        if (d.spec || d.pending[b] != 0) d.misuse[b]++;
        else fl = d.conventional ? FLAG_FLUSH : (h + 1 == d.L ? FLAG_FLUSH : FLAG_NONFLUSH);
      } else if (op == OP_VERIFY) {
        if (!d.spec || d.pending[b] != 0 || n < 0 || n > d.T) d.misuse[b]++;
        else if (n > 0) fl = h + n > d.L ? FLAG_FLUSH : FLAG_NONFLUSH;
        /* n == 0: idle, and `flushed` is kept (ssm_verify_n returns before touching anything) */
      } else {
        fl = (!d.conventional && h > 0) ? FLAG_FLUSH : FLAG_IDLE;
      }
      /* the CPU clears `flushed` at the start of every accepted call (ssm_flush: always) */
      if (fl != FLAG_IDLE || op == OP_FLUSH) d.flushed[b] = 0;
    }
    d.flag[b] = fl;
    if (op == OP_VERIFY && fl != FLAG_IDLE) d.ndraft[b] = n;
    sflag = fl;
    sn = n;
  }
  __syncthreads();
  if (op == OP_FLUSH || sflag == FLAG_IDLE) return;
  const int H = d.H, hv = d.H * d.dv, gk = d.G * d.dk;
  const int h = d.h[b], base = d.base[b];
  for (int t = 0; t < sn; t++) {
    const size_t sl = (size_t)b * d.cap + (size_t)slot_of(d, base, h + 1 + t);
    const size_t tok = (size_t)b * nt + t;
    for (int e = threadIdx.x; e < H; e += blockDim.x) {
      d.rec_alpha[sl * H + e] = in.alpha[tok * H + e];
      if (d.gdn) d.rec_beta[sl * H + e] = in.beta[tok * H + e];
    }
    float *xdst = d.gdn ? d.rec_v : d.rec_x;
    for (int e = threadIdx.x; e < hv; e += blockDim.x) xdst[sl * hv + e] = in.v[tok * hv + e];
    for (int e = threadIdx.x; e < gk; e += blockDim.x) d.rec_k[sl * gk + e] = in.k[tok * gk + e];
  }
}

/* A stored checkpoint counts one quantisation event per head (ssm_store). */
__device__ inline void count_store(const dev_state &d, int b) {
  for (int hd = 0; hd < d.H; hd++) d.event[(size_t)b * d.H + hd]++;
  d.nflush[b]++;
  d.flushed[b] = 1;
}

/* After a step: non-flush rows keep the new record (h = j); flush rows count the store and, for
 * replay, drop the folded records (base += j, h = 0); conventional keeps h = 0. */
__global__ void step_book_kernel(dev_state d) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B) return;
  int fl = d.flag[b];
  if (fl == FLAG_NONFLUSH) {
    d.h[b] = d.h[b] + 1;
  } else if (fl == FLAG_FLUSH) {
    count_store(d, b);
    if (!d.conventional) {
      d.base[b] = (d.base[b] + d.h[b] + 1) % d.cap;
      d.h[b] = 0;
    }
  }
}

/* After a flush of the committed records (ssm_flush, or the first half of a verification). */
__global__ void flush_book_kernel(dev_state d) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B || d.flag[b] != FLAG_FLUSH) return;
  count_store(d, b);
  d.base[b] = (d.base[b] + d.h[b]) % d.cap;
  d.h[b] = 0;
}

__global__ void verify_book_kernel(dev_state d) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B || d.flag[b] == FLAG_IDLE) return;
  d.pending[b] = d.ndraft[b];
}

__global__ void commit_kernel(dev_state d, const int *a /* [B] */, const uint8_t *active /* [B] or NULL */) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B || (active && !active[b])) return;
  int ab = a[b], p = d.pending[b];
  /* a row whose verification had no drafts commits a = 0: nothing */
  if (d.spec && p == 0 && ab == 0) return;
  if (!d.spec || p == 0 || ab < 1 || ab > p) {
    d.misuse[b]++;
    return;
  }
  /* rejected drafts stay in their slots and are overwritten by the next round */
  d.h[b] = d.h[b] + ab;
  d.pending[b] = 0;
}

/* ---------------------------------------------------------------------------------------------
 * Flush rows: materialise and store
 * ------------------------------------------------------------------------------------------- */

/* Where and how a store writes one checkpoint. */
struct store_params {
  ck_view v;
  int sr_on;
  uint32_t stream;
  uint64_t seed;
};

/* Encode row i of matrix mat (row in shared memory, [dk]) into a checkpoint blob: the same
 * rssm_encode_block calls as q_encode_cpu, spread over the warp (unscaled formats: one element
 * per call, which is what the CPU's whole-row call does element by element; scaled: one block per
 * call). Not for NVFP4, whose element scale needs the whole matrix's amax first; the launcher
 * uses it for unscaled formats only. */
__device__ inline void encode_row_warp(const dev_state &d, const store_params &p, size_t mat, int i,
                                       const float *row /* [dk] */, int lane) {
  const int dk = d.dk;
  uint8_t *m = p.v.blob + mat * (size_t)p.v.bpm;
  uint8_t *codes = m + p.v.codes_off + (size_t)i * (size_t)p.v.code_row;
  rssm_sr_ctx ctx = {p.seed, d.matrix_id[mat], d.event[mat], p.stream, p.sr_on};
  if (p.v.block <= 0) {
    for (int c = lane; c < dk; c += 32)
      rssm_encode_block((qformat_kind)p.v.kind, row, c, 1, (int64_t)i * dk, codes, nullptr, 1.0f, 1.0f, &ctx);
  } else {
    const int nb = (int)p.v.blocks_per_row;
    for (int bi = lane; bi < nb; bi += 32) {
      int c0 = bi * p.v.block, n = dk - c0 < p.v.block ? dk - c0 : p.v.block;
      uint8_t *scale = m + p.v.scales_off + ((size_t)i * nb + bi) * (size_t)p.v.scale_elem;
      rssm_encode_block((qformat_kind)p.v.kind, row, c0, n, (int64_t)i * dk, codes, scale, 1.0f, 1.0f, &ctx);
    }
  }
}

/* Dynamic shared memory of mat_kernel: the records of one head staged once per block, so that the
 * per-row loop reads nothing but its own row from global memory. */
size_t mat_smem_bytes(int cap, int dv, int dk) {
  return ((size_t)cap * (2 + (size_t)dk + (size_t)dv) + (size_t)dk + (size_t)MAT_WARPS * MAT_ROWS * dk) *
         sizeof(float);
}

/* Grid (H, B), MAT_WARPS warps; each warp runs MAT_ROWS state rows at a time (their loads and
 * butterflies in flight together). For flush rows: S = records 1..n folded in order onto
 * deq(main) (ssm_materialise); GDN records j >= rf get u recomputed from the running row (and
 * written back to the ring, as the CPU does). Step: n = h + 1 and o = S q
 * (ssm_output_from_state); verify/flush: n = h, no output. nstore == 0: the row goes to the
 * scratch S, for store_kernel (scaled formats) and, in a verification, for the drafts' readouts.
 * nstore > 0: the row is encoded straight into the nstore (unscaled) checkpoints from shared
 * memory and S is not touched, so such a flush moves only the checkpoint bytes. */
/* (2 blocks per SM: 128 registers, no spills, 16 warps of rows in flight) */
__global__ void __launch_bounds__(MAT_WARPS * 32, 2)
    mat_kernel(dev_state d, ck_view src, int op, const float *q_in /* [B][1][G][dk] */,
               float *o /* [B][H][dv] */, int nstore, store_params st0, store_params st1) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int hd = blockIdx.x, b = blockIdx.y;
  if (d.flag[b] != FLAG_FLUSH) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int H = d.H, dv = d.dv, dk = d.dk, G = d.G, g = hd / d.hpg, cap = d.cap;
  const int h = d.h[b], base = d.base[b];
  const int n = op == OP_STEP ? h + 1 : h;
  int rf; /* recompute_from of ssm_step.c */
  if (d.conventional) rf = 1;
  else if (d.split && d.recompute) rf = 1;
  else rf = op == OP_STEP ? n : n + 1; /* the new record's u always comes from this S */
  const size_t mat = (size_t)b * H + hd;

  float *al = reinterpret_cast<float *>(smem); /* [cap]     record alphas */
  float *bt = al + cap;                         /* [cap]     GDN betas */
  float *kk = bt + cap;                         /* [cap][dk] record k (key group g) */
  float *xx = kk + (size_t)cap * dk;            /* [cap][dv] stored x, or v where u is recomputed */
  float *qv = xx + (size_t)cap * dv;            /* [dk]      step: q */
  float *rows = qv + dk;                        /* [MAT_WARPS][MAT_ROWS][dk] fused store staging */
  for (int j = threadIdx.x + 1; j <= n; j += blockDim.x) {
    size_t ri = ((size_t)b * cap + slot_of(d, base, j)) * H + hd;
    al[j - 1] = d.rec_alpha[ri];
    if (d.gdn) bt[j - 1] = d.rec_beta[ri];
  }
  for (int e = threadIdx.x; e < n * dk; e += blockDim.x) {
    int j = e / dk + 1, c = e % dk;
    kk[e] = d.rec_k[(((size_t)b * cap + slot_of(d, base, j)) * G + g) * dk + c];
  }
  for (int e = threadIdx.x; e < n * dv; e += blockDim.x) {
    int j = e / dv + 1, i = e % dv;
    size_t ri = ((size_t)b * cap + slot_of(d, base, j)) * H + hd;
    xx[e] = (d.gdn && j >= rf) ? d.rec_v[ri * dv + i] : d.rec_x[ri * dv + i];
  }
  if (op == OP_STEP)
    for (int c = threadIdx.x; c < dk; c += blockDim.x) qv[c] = q_in[((size_t)b * G + g) * dk + c];
  __syncthreads();

  for (int i0 = warp; i0 < dv; i0 += MAT_ROWS * MAT_WARPS) {
    float x[MAT_ROWS][MAXM];
    int ii[MAT_ROWS];
#pragma unroll
    for (int r = 0; r < MAT_ROWS; r++) {
      ii[r] = i0 + r * MAT_WARPS;
      if (ii[r] < dv) load_row(ck_row(src, mat, ii[r]), dk, lane, x[r]);
    }
    for (int j = 1; j <= n; j++) {
      const float alpha = al[j - 1];
      const float *kj = kk + (size_t)(j - 1) * dk;
      float kr[MAXM];
#pragma unroll
      for (int m = 0; m < MAXM; m++) {
        int c = lane + 32 * m;
        kr[m] = c < dk ? kj[c] : 0.0f;
      }
      const bool recompute = d.gdn && j >= rf;
#pragma unroll
      for (int r = 0; r < MAT_ROWS; r++) {
        if (ii[r] >= dv) continue; /* warp-uniform */
        float xi = xx[(size_t)(j - 1) * dv + ii[r]];
        if (recompute) {
          /* ssm_math.h item 5 with sk = S_{j-1,i} . k_j (item 1); xi holds v_j[i] here */
          float p = 0.0f;
#pragma unroll
          for (int m = 0; m < MAXM; m++) {
            int c = lane + 32 * m;
            if (c < dk) p = p + x[r][m] * kr[m];
          }
          float skv = butterfly(p);
          xi = rssm_gdn_u(xi, bt[j - 1], alpha, skv);
          if (lane == 0)
            d.rec_x[(((size_t)b * cap + slot_of(d, base, j)) * H + hd) * dv + ii[r]] = xi;
        }
        /* ssm_math.h item 4: s = alpha * s + x * k, two rounded products then their sum */
#pragma unroll
        for (int m = 0; m < MAXM; m++) {
          int c = lane + 32 * m;
          if (c < dk) x[r][m] = alpha * x[r][m] + xi * kr[m];
        }
      }
    }
#pragma unroll
    for (int r = 0; r < MAT_ROWS; r++) {
      const int i = ii[r];
      if (i >= dv) continue; /* warp-uniform */
      if (op == OP_STEP) {
        float p = warp_dot_regs(x[r], qv, dk, lane);
        if (lane == 0) o[mat * dv + i] = p;
      }
      float *srow = nstore > 0 ? rows + ((size_t)warp * MAT_ROWS + r) * dk : d.S + (mat * dv + i) * dk;
#pragma unroll
      for (int m = 0; m < MAXM; m++) {
        int c = lane + 32 * m;
        if (c < dk) srow[c] = x[r][m];
      }
      if (nstore > 0) {
        __syncwarp();
        encode_row_warp(d, st0, mat, i, srow, lane);
        if (nstore > 1) encode_row_warp(d, st1, mat, i, srow, lane);
      }
    }
    __syncwarp(); /* the next rows reuse the staging rows */
  }
}

/* Grid (H, B). Flush rows: encode the scratch S of one head into a checkpoint blob with the
 * encoder of quant/numerics.h, SR counter (seed, matrix id, event of this store, stream), as
 * q_encode_cpu does. Unscaled formats: one thread per element; scaled: one per block of a row;
 * NVFP4 first reduces the matrix amax (a max is exact in any order). Padding bytes are never
 * written: they keep the zeros of the initial blob, as the CPU's memset gives. */
__global__ void store_kernel(dev_state d, ck_view dst, int sr_on, uint64_t seed, uint32_t stream) {
  const int hd = blockIdx.x, b = blockIdx.y;
  if (d.flag[b] != FLAG_FLUSH) return;
  const int dv = d.dv, dk = d.dk;
  const size_t mat = (size_t)b * d.H + hd;
  const float *x = d.S + mat * dv * dk;
  uint8_t *m = dst.blob + mat * (size_t)dst.bpm;
  float s_enc = 1.0f, s_dec = 1.0f;
  if (dst.kind == QF_NVFP4) {
    __shared__ float red[STORE_THREADS];
    float local = 0.0f;
    for (int e = threadIdx.x; e < dv * dk; e += blockDim.x) {
      float a = rssm_fabs(x[e]);
      if (rssm_isfinite(a) && a > local) local = a;
    }
    red[threadIdx.x] = local;
    __syncthreads();
    for (int s = STORE_THREADS / 2; s > 0; s >>= 1) {
      if ((int)threadIdx.x < s && red[threadIdx.x + s] > red[threadIdx.x])
        red[threadIdx.x] = red[threadIdx.x + s];
      __syncthreads();
    }
    s_enc = rssm_nvfp4_senc(red[0]);
    s_dec = 1.0f / s_enc;
    if (threadIdx.x == 0) *reinterpret_cast<float *>(m + dst.tscale_off) = s_dec;
  }
  rssm_sr_ctx ctx = {seed, d.matrix_id[mat], d.event[mat], stream, sr_on};
  if (dst.block <= 0) {
    for (int e = threadIdx.x; e < dv * dk; e += blockDim.x) {
      int r = e / dk, c = e % dk;
      rssm_encode_block((qformat_kind)dst.kind, x + (size_t)r * dk, c, 1, (int64_t)r * dk,
                        m + dst.codes_off + (size_t)r * (size_t)dst.code_row, nullptr, s_enc, s_dec, &ctx);
    }
  } else {
    const int nb = (int)dst.blocks_per_row;
    for (int e = threadIdx.x; e < dv * nb; e += blockDim.x) {
      int r = e / nb, bi = e % nb, c0 = bi * dst.block;
      int n = dk - c0 < dst.block ? dk - c0 : dst.block;
      uint8_t *scale = m + dst.scales_off + ((size_t)r * nb + bi) * (size_t)dst.scale_elem;
      rssm_encode_block((qformat_kind)dst.kind, x + (size_t)r * dk, c0, n, (int64_t)r * dk,
                        m + dst.codes_off + (size_t)r * (size_t)dst.code_row, scale, s_enc, s_dec, &ctx);
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * Output-only readout (ssm_readout and ssm_gdn_u_readout of ssm_replay.c)
 * ------------------------------------------------------------------------------------------- */

/* Dynamic shared memory of ro_kernel for nq queries and hpg heads per key group. */
size_t ro_smem_bytes(int cap, int nq, int dk, int hpg) {
  size_t ptrs = (size_t)hpg * cap * sizeof(const float *);
  size_t floats = (size_t)hpg * cap                       /* al */
                  + (size_t)nq * dk                       /* ys */
                  + (size_t)nq * cap                      /* dots */
                  + (size_t)hpg * nq * (cap + 1)          /* w */
                  + (size_t)hpg * nq * cap                /* coef */
                  + (size_t)RO_WARPS * nq * 32;           /* cd */
  return ptrs + floats * sizeof(float);
}

/* Grid (G, B), RO_WARPS warps. Rows that take part: step: non-flush rows; verify: every planned
 * row, reading the scratch S (fp32, just materialised) on flush rows and the read checkpoint
 * (C_lp when split, else the shared one) otherwise, as ssm_verify does.
 * Per block: the query vectors y, every k_j . y once for the key group, and the decay weights and
 * coefficients of each (head, query). Then the warps take (head, tile of 32 state rows) items:
 * RO_ROWS rows at a time are loaded and their C_i . y computed for all queries from one read of
 * each row (warp-32 order); then lane r runs row i0 + r through the queries in order (ascending
 * records, ssm_math.h item 3; GDN u, item 5), loading RO_XCHUNK record values at once. */
__global__ void __launch_bounds__(RO_WARPS * 32, 3)
    ro_kernel(dev_state d, ck_view rd, int op, const float *q_in /* [B][nt][G][dk] */, int nt,
              float *o /* [B][nt][H][dv] */) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int g = blockIdx.x, b = blockIdx.y;
  const int fl = d.flag[b];
  if (op == OP_STEP ? fl != FLAG_NONFLUSH : fl == FLAG_IDLE) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int H = d.H, dv = d.dv, dk = d.dk, G = d.G, cap = d.cap, hpg = d.hpg;
  const int h = d.h[b], base = d.base[b];
  const int Tb = op == OP_VERIFY ? d.ndraft[b] : 1; /* this row's drafts */
  const int nq = num_queries(d, op, Tb);
  const int nmax = op == OP_STEP ? h + 1 : h + Tb;

  const float **xs = reinterpret_cast<const float **>(smem); /* [hpg][cap] record x of each head */
  float *al = reinterpret_cast<float *>(xs + (size_t)hpg * cap); /* [hpg][cap] record alphas */
  float *ys = al + (size_t)hpg * cap;                        /* [nq][dk] */
  float *dots = ys + (size_t)nq * dk;                        /* [nq][cap] k_j . y */
  float *w = dots + (size_t)nq * cap;                        /* [hpg][nq][cap+1] */
  float *coef = w + (size_t)hpg * nq * (cap + 1);            /* [hpg][nq][cap] */
  float *cd = coef + (size_t)hpg * nq * cap;                 /* [RO_WARPS][nq][32] C_i . y */

  for (int e = threadIdx.x; e < nq * dk; e += blockDim.x) {
    int qi = e / dk, c = e % dk;
    query qq = query_of(d, op, h, qi, Tb);
    const float *y = qq.kind == Q_U
                         ? d.rec_k + (((size_t)b * cap + slot_of(d, base, qq.rec)) * G + g) * dk
                         : q_in + (((size_t)b * nt + qq.t) * G + g) * dk;
    ys[e] = y[c];
  }
  for (int e = threadIdx.x; e < hpg * nmax; e += blockDim.x) {
    int hh = e / nmax, j = e % nmax + 1;
    size_t ri = ((size_t)b * cap + slot_of(d, base, j)) * H + (size_t)g * hpg + hh;
    al[hh * cap + j - 1] = d.rec_alpha[ri];
    xs[hh * cap + j - 1] = d.rec_x + ri * dv;
  }
  __syncthreads();
  /* k_j . y once per key group: the heads of the group share it (the K^T Q of OUTPUTONLY) */
  for (int qi = 0; qi < nq; qi++) {
    query qq = query_of(d, op, h, qi, Tb);
    for (int j = warp + 1; j <= qq.n; j += RO_WARPS) {
      const float *kj = d.rec_k + (((size_t)b * cap + slot_of(d, base, j)) * G + g) * dk;
      float p = warp_dot(kj, ys + (size_t)qi * dk, dk, lane);
      if (lane == 0) dots[(size_t)qi * cap + (j - 1)] = p;
    }
  }
  __syncthreads();
  for (int t = threadIdx.x; t < hpg * nq; t += blockDim.x) {
    int hh = t / nq, qi = t % nq;
    query qq = query_of(d, op, h, qi, Tb);
    float *wq = w + (size_t)t * (cap + 1);
    rssm_decay_weights(al + (size_t)hh * cap, qq.n, wq);
    for (int j = 0; j < qq.n; j++)
      coef[(size_t)t * cap + j] = rssm_readout_coef(wq[j + 1], dots[(size_t)qi * cap + j]);
  }
  __syncthreads();

  const bool from_S = op == OP_VERIFY && fl == FLAG_FLUSH;
  const int ntiles = (dv + 31) / 32;
  float *cdw = cd + (size_t)warp * nq * 32;
  for (int item = warp; item < hpg * ntiles; item += RO_WARPS) {
    const int hh = item / ntiles, i0 = (item % ntiles) * 32;
    const int hd = g * hpg + hh;
    const size_t mat = (size_t)b * H + hd;
    const int nr = dv - i0 < 32 ? dv - i0 : 32;
    for (int r0 = 0; r0 < nr; r0 += RO_ROWS) {
      float x[RO_ROWS][MAXM];
#pragma unroll
      for (int r = 0; r < RO_ROWS; r++) {
        const int i = i0 + r0 + r;
        if (r0 + r < nr)  /* warp-uniform */
          load_row(from_S ? fp32_row(d.S + (mat * dv + i) * dk) : ck_row(rd, mat, i), dk, lane, x[r]);
      }
      for (int qi = 0; qi < nq; qi++) {
#pragma unroll
        for (int r = 0; r < RO_ROWS; r++) {
          if (r0 + r >= nr) continue; /* warp-uniform */
          float p = warp_dot_regs(x[r], ys + (size_t)qi * dk, dk, lane);
          if (lane == 0) cdw[qi * 32 + r0 + r] = p;
        }
      }
    }
    __syncwarp();
    if (lane < nr) {
      const int i = i0 + lane;
      const float *const *xh = xs + (size_t)hh * cap;
      for (int qi = 0; qi < nq; qi++) {
        query qq = query_of(d, op, h, qi, Tb);
        const size_t t = (size_t)hh * nq + qi;
        const float *cq = coef + t * cap;
        /* rssm_readout_row of ssm_math.h, the same operations in the same order, with the record
         * values loaded RO_XCHUNK at a time so that their loads overlap */
        float acc = cdw[qi * 32 + lane] * w[t * (cap + 1)];
        for (int j0 = 0; j0 < qq.n; j0 += RO_XCHUNK) {
          float xv[RO_XCHUNK];
#pragma unroll
          for (int u = 0; u < RO_XCHUNK; u++) xv[u] = j0 + u < qq.n ? xh[j0 + u][i] : 0.0f;
#pragma unroll
          for (int u = 0; u < RO_XCHUNK; u++)
            if (j0 + u < qq.n) acc = acc + xv[u] * cq[j0 + u];
        }
        if (qq.kind == Q_U) {
          /* u of record rec from S_{rec-1} k_rec; later queries of this lane read it back */
          size_t ri = ((size_t)b * cap + slot_of(d, base, qq.rec)) * H + hd;
          d.rec_x[ri * dv + i] =
              rssm_gdn_u(d.rec_v[ri * dv + i], d.rec_beta[ri], al[hh * cap + qq.rec - 1], acc);
        } else {
          o[(((size_t)b * nt + qq.t) * H + hd) * dv + i] = acc;
        }
      }
    }
    __syncwarp(); /* cdw is reused by the next item */
  }
}

/* ---------------------------------------------------------------------------------------------
 * Kernels v2 (RSSM_SSM_KERNELS=v2; ssm_cuda.h says which version is the default). Every
 * output and every stored element goes through exactly the operations of the first kernels, in
 * the same order (the same ssm_math.h items, the same warp-32 dot order, the same decoders); what
 * changes is how much memory is in flight:
 *   - a lane holds M = ceil(dk / 32) elements of a row (template), not 8, so registers go to rows;
 *   - mat2: 6-8 rows per warp in flight (was 2; 4 when dk > 128), the first rows' loads issued
 *     before the records are staged, unscaled checkpoints stored straight from the registers
 *     (fp32: the bits; bf16, fp16: rssm_quantize_elem with the SR bits of rssm_encode_block);
 *   - ro2: 8 rows per batch (was 4; 4 when dk > 128), the first batch loaded before the block's
 *     setup (fp32 and
 *     16-bit reads), the query held in registers, and 8/4-bit checkpoints decoded through
 *     per-block tables filled by rssm_decode_elem / rssm_e8m0_decode themselves (so a lookup is
 *     the decoder's value), with each lane's code and scale offsets computed once.
 * ------------------------------------------------------------------------------------------- */

constexpr int V2_WARPS = 8;
/* rows per warp in flight (mat2) and per batch (ro2): 8 rows of dk <= 128 (32 registers of
   state per lane), 4 of dk <= 256 */
__host__ __device__ constexpr int v2_rows(int M) { return M <= 4 ? 8 : 4; }

/* How a read checkpoint's row is loaded and decoded. */
enum { FC_F32 = 0, FC_F16 = 1, FC_F8 = 2, FC_F4 = 3 };

int format_class(int kind) {
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

/* A lane's columns c = lane + 32 m, m < M: byte offsets of its codes in a row and of their block
 * scales in the row's scale slots (computed once: the division by the block is not per row). */
template <int M>
struct lane_cols {
  int code[M], scale[M], shift[M];
  bool valid[M];
};

template <int M, int FC>
__device__ inline lane_cols<M> lane_cols_of(const ck_view &v, int dk, int lane) {
  lane_cols<M> lc;
#pragma unroll
  for (int m = 0; m < M; m++) {
    const int c = lane + 32 * m;
    lc.valid[m] = c < dk;
    lc.code[m] = FC == FC_F4 ? (c >> 1) : c;
    lc.shift[m] = FC == FC_F4 ? (c & 1) * 4 : 0;
    lc.scale[m] = (FC >= FC_F8 && v.block > 0) ? (c / v.block) * (int)v.scale_elem : 0;
  }
  return lc;
}

/* Row i of matrix mat of a checkpoint, lane's elements, decoded as rssm_decode_at does. */
template <int M, int FC>
__device__ inline void load_row2(const ck_view &v, const luts *lt, size_t mat, int i, const lane_cols<M> &lc,
                                 float s_dec /* NVFP4: the matrix's S_dec */, float *x /* [M] */) {
  const uint8_t *mb = v.blob + mat * (size_t)v.bpm;
  const uint8_t *codes = mb + v.codes_off + (size_t)i * (size_t)v.code_row;
  if (FC == FC_F32) {
    const float *row = reinterpret_cast<const float *>(codes);
#pragma unroll
    for (int m = 0; m < M; m++) x[m] = lc.valid[m] ? row[lc.code[m]] : 0.0f;
  } else if (FC == FC_F16) {
    const uint16_t *row = reinterpret_cast<const uint16_t *>(codes);
    const int bf16 = v.kind == QF_BF16;
    uint32_t cw[M];
#pragma unroll
    for (int m = 0; m < M; m++) cw[m] = lc.valid[m] ? row[lc.code[m]] : 0u;
#pragma unroll
    for (int m = 0; m < M; m++) x[m] = lc.valid[m] ? rssm_decode16_fast(bf16, cw[m]) : 0.0f;
  } else {
    const uint8_t *scales = mb + v.scales_off + (size_t)i * (size_t)(v.blocks_per_row * v.scale_elem);
    uint32_t cb[M], sb[M];
    float sf[M];
    /* all loads first, so that they are in flight together */
#pragma unroll
    for (int m = 0; m < M; m++) {
      cb[m] = lc.valid[m] ? codes[lc.code[m]] : 0u;
      if (v.kind == QF_NVFP4 || v.kind == QF_MXFP4 || v.kind == QF_MXFP8) {
        sb[m] = lc.valid[m] ? scales[lc.scale[m]] : 0u;
        sf[m] = 0.0f;
      } else {
        sb[m] = 0u;
        sf[m] = lc.valid[m] ? *reinterpret_cast<const float *>(scales + lc.scale[m]) : 0.0f;
      }
    }
#pragma unroll
    for (int m = 0; m < M; m++) {
      if (!lc.valid[m]) {
        x[m] = 0.0f;
      } else if (FC == FC_F4) {
        const float e = lt->elem[(cb[m] >> lc.shift[m]) & 0xFu];
        /* NVFP4: (e * s) * S_dec; MXFP4: e * 2^(scale - 127) (rssm_decode_at) */
        x[m] = v.kind == QF_NVFP4 ? (e * lt->scale[sb[m]]) * s_dec : e * lt->scale[sb[m]];
      } else {
        /* MXFP8: e * 2^(scale - 127); fp8, fp8_e5m2, int8: e * fp32 block scale */
        x[m] = v.kind == QF_MXFP8 ? lt->elem[cb[m]] * lt->scale[sb[m]] : lt->elem[cb[m]] * sf[m];
      }
    }
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

/* Stores row i (lane's elements in registers) into an unscaled checkpoint: per element exactly
 * what rssm_encode_block does for fp32 (a copy), bf16 and fp16 (rssm_quantize_elem with the SR
 * bits of element i * dk + c, counter (seed, matrix id, this store's event, stream)). */
template <int M>
__device__ inline void store_row_unscaled(const dev_state &d, const store_params &p, size_t mat, int i,
                                          const float *x /* [M] */, int lane) {
  const int dk = d.dk;
  uint8_t *codes = p.v.blob + mat * (size_t)p.v.bpm + p.v.codes_off + (size_t)i * (size_t)p.v.code_row;
  if (p.v.kind == QF_FP32) {
    float *dst = reinterpret_cast<float *>(codes);
#pragma unroll
    for (int m = 0; m < M; m++) {
      const int c = lane + 32 * m;
      if (c < dk) dst[c] = x[m];
    }
  } else {
    const rssm_sr_ctx ctx = {p.seed, d.matrix_id[mat], d.event[mat], p.stream, p.sr_on};
    const rssm_elem el = rssm_elem_of((qformat_kind)p.v.kind);
    uint16_t *dst = reinterpret_cast<uint16_t *>(codes);
#pragma unroll
    for (int m = 0; m < M; m++) {
      const int c = lane + 32 * m;
      if (c < dk)
        dst[c] = (uint16_t)rssm_quantize_elem(el, x[m], ctx.sr,
                                              rssm_sr_elem_bits(&ctx, (uint64_t)((int64_t)i * dk + c)));
    }
  }
}

/* mat_kernel with R rows per warp in flight (see the section comment). Grid (H, B), V2_WARPS
 * warps; warp w takes rows w + 8 (r + R t), r < R. ALL_F32: an fp32 source and fp32 (or scratch)
 * destinations only, so no decoder or encoder is compiled in and 6 rows fit in 80 registers
 * (3 blocks per SM); otherwise v2_rows(M) rows at 2 blocks per SM. The arithmetic per row is
 * mat_kernel's. */
template <int M, bool ALL_F32>
__global__ void __launch_bounds__(V2_WARPS * 32, ALL_F32 && M <= 4 ? 3 : 2)
    mat2_kernel(dev_state d, ck_view src, int op, const float *q_in /* [B][1][G][dk] */,
                float *o /* [B][H][dv] */, int nstore, store_params st0, store_params st1) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int R = ALL_F32 && M <= 4 ? 6 : v2_rows(M); /* 6: 3 blocks per SM without spills */
  const int hd = blockIdx.x, b = blockIdx.y;
  if (d.flag[b] != FLAG_FLUSH) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int H = d.H, dv = d.dv, dk = d.dk, G = d.G, g = hd / d.hpg, cap = d.cap;
  const int h = d.h[b], base = d.base[b];
  const int n = op == OP_STEP ? h + 1 : h;
  int rf; /* recompute_from of ssm_step.c */
  if (d.conventional) rf = 1;
  else if (d.split && d.recompute) rf = 1;
  else rf = op == OP_STEP ? n : n + 1;
  const size_t mat = (size_t)b * H + hd;

  /* the first rows' loads go out before the records are staged */
  float x[R][M];
  auto load_rows = [&](int i0) {
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int i = i0 + r * V2_WARPS;
      if (i >= dv) continue; /* warp-uniform */
      if (ALL_F32) {
        load_f32_row<M>(reinterpret_cast<const float *>(src.blob + mat * (size_t)src.bpm + src.codes_off +
                                                        (size_t)i * (size_t)src.code_row),
                        dk, lane, x[r]);
      } else {
        const row_src rs = ck_row(src, mat, i);
#pragma unroll
        for (int m = 0; m < M; m++) {
          const int c = lane + 32 * m;
          x[r][m] = c < dk ? src_at(rs, c) : 0.0f;
        }
      }
    }
  };
  load_rows(warp);

  float *al = reinterpret_cast<float *>(smem); /* [cap]     record alphas */
  float *bt = al + cap;                         /* [cap]     GDN betas */
  float *kk = bt + cap;                         /* [cap][dk] record k (key group g) */
  float *xx = kk + (size_t)cap * dk;            /* [cap][dv] stored x, or v where u is recomputed */
  float *qv = xx + (size_t)cap * dv;            /* [dk]      step: q */
  for (int j = threadIdx.x + 1; j <= n; j += blockDim.x) {
    size_t ri = ((size_t)b * cap + slot_of(d, base, j)) * H + hd;
    al[j - 1] = d.rec_alpha[ri];
    if (d.gdn) bt[j - 1] = d.rec_beta[ri];
  }
  for (int e = threadIdx.x; e < n * dk; e += blockDim.x) {
    int j = e / dk + 1, c = e % dk;
    kk[e] = d.rec_k[(((size_t)b * cap + slot_of(d, base, j)) * G + g) * dk + c];
  }
  for (int e = threadIdx.x; e < n * dv; e += blockDim.x) {
    int j = e / dv + 1, i = e % dv;
    size_t ri = ((size_t)b * cap + slot_of(d, base, j)) * H + hd;
    xx[e] = (d.gdn && j >= rf) ? d.rec_v[ri * dv + i] : d.rec_x[ri * dv + i];
  }
  if (op == OP_STEP)
    for (int c = threadIdx.x; c < dk; c += blockDim.x) qv[c] = q_in[((size_t)b * G + g) * dk + c];
  __syncthreads();

  for (int i0 = warp; i0 < dv; i0 += R * V2_WARPS) {
    if (i0 != warp) load_rows(i0);
    for (int j = 1; j <= n; j++) {
      const float alpha = al[j - 1];
      const float *kj = kk + (size_t)(j - 1) * dk;
      float kr[M];
#pragma unroll
      for (int m = 0; m < M; m++) {
        const int c = lane + 32 * m;
        kr[m] = c < dk ? kj[c] : 0.0f;
      }
      const bool recompute = d.gdn && j >= rf;
#pragma unroll
      for (int r = 0; r < R; r++) {
        const int i = i0 + r * V2_WARPS;
        if (i >= dv) continue; /* warp-uniform */
        float xi = xx[(size_t)(j - 1) * dv + i];
        if (recompute) {
          /* ssm_math.h item 5 with sk = S_{j-1,i} . k_j (item 1); xi holds v_j[i] here */
          const float skv = dot_rr<M>(x[r], kr, dk, lane);
          xi = rssm_gdn_u(xi, bt[j - 1], alpha, skv);
          if (lane == 0) d.rec_x[(((size_t)b * cap + slot_of(d, base, j)) * H + hd) * dv + i] = xi;
        }
        /* ssm_math.h item 4: s = alpha * s + x * k, two rounded products then their sum */
#pragma unroll
        for (int m = 0; m < M; m++) {
          const int c = lane + 32 * m;
          if (c < dk) x[r][m] = alpha * x[r][m] + xi * kr[m];
        }
      }
    }
    float qr[M];
    if (op == OP_STEP) {
#pragma unroll
      for (int m = 0; m < M; m++) {
        const int c = lane + 32 * m;
        qr[m] = c < dk ? qv[c] : 0.0f;
      }
    }
#pragma unroll
    for (int r = 0; r < R; r++) {
      const int i = i0 + r * V2_WARPS;
      if (i >= dv) continue; /* warp-uniform */
      if (op == OP_STEP) {
        const float p = dot_rr<M>(x[r], qr, dk, lane);
        if (lane == 0) o[mat * dv + i] = p;
      }
      if (ALL_F32 && nstore > 0) {
        /* fp32 checkpoints: the bits (rssm_encode_block's fp32 copy) */
        for (int k = 0; k < nstore; k++) {
          const store_params &p = k == 0 ? st0 : st1;
          float *dst = reinterpret_cast<float *>(p.v.blob + mat * (size_t)p.v.bpm + p.v.codes_off +
                                                 (size_t)i * (size_t)p.v.code_row);
#pragma unroll
          for (int m = 0; m < M; m++) {
            const int c = lane + 32 * m;
            if (c < dk) dst[c] = x[r][m];
          }
        }
      } else if (nstore > 0) {
        store_row_unscaled<M>(d, st0, mat, i, x[r], lane);
        if (nstore > 1) store_row_unscaled<M>(d, st1, mat, i, x[r], lane);
      } else {
        float *srow = d.S + (mat * dv + i) * dk;
#pragma unroll
        for (int m = 0; m < M; m++) {
          const int c = lane + 32 * m;
          if (c < dk) srow[c] = x[r][m];
        }
      }
    }
  }
}

/* Dynamic shared memory of mat2_kernel: the staged records (no per-warp staging rows). */
size_t mat2_smem_bytes(int cap, int dv, int dk) {
  return ((size_t)cap * (2 + (size_t)dk + (size_t)dv) + (size_t)dk) * sizeof(float);
}

/* Dynamic shared memory of ro2_kernel: the decode tables, then ro_kernel's layout. */
size_t ro2_smem_bytes(int cap, int nq, int dk, int hpg) { return sizeof(luts) + ro_smem_bytes(cap, nq, dk, hpg); }

/* ro_kernel with v2_rows(M) rows per batch, decode tables and the first batch loaded before the
 * block's setup (see the section comment). Grid (G, B), V2_WARPS warps; the arithmetic of every
 * output and GDN u is ro_kernel's. */
template <int M, int FC>
__global__ void __launch_bounds__(V2_WARPS * 32, M > 4 ? 2 : 3)
    ro2_kernel(dev_state d, ck_view rd, int op, const float *q_in /* [B][nt][G][dk] */, int nt,
               float *o /* [B][nt][H][dv] */) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int R = v2_rows(M);
  const int g = blockIdx.x, b = blockIdx.y;
  const int fl = d.flag[b];
  if (op == OP_STEP ? fl != FLAG_NONFLUSH : fl == FLAG_IDLE) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int H = d.H, dv = d.dv, dk = d.dk, G = d.G, cap = d.cap, hpg = d.hpg;
  const int h = d.h[b], base = d.base[b];
  const int Tb = op == OP_VERIFY ? d.ndraft[b] : 1; /* this row's drafts */
  const int nq = num_queries(d, op, Tb);
  const int nmax = op == OP_STEP ? h + 1 : h + Tb;
  const bool from_S = op == OP_VERIFY && fl == FLAG_FLUSH;
  const int ntiles = (dv + 31) / 32;
  const lane_cols<M> lc = lane_cols_of<M, FC>(rd, dk, lane);

  luts *lt = reinterpret_cast<luts *>(smem);
  const float **xs = reinterpret_cast<const float **>(smem + sizeof(luts)); /* [hpg][cap] record x */
  float *al = reinterpret_cast<float *>(xs + (size_t)hpg * cap); /* [hpg][cap] record alphas */
  float *ys = al + (size_t)hpg * cap;                        /* [nq][dk] */
  float *dots = ys + (size_t)nq * dk;                        /* [nq][cap] k_j . y */
  float *w = dots + (size_t)nq * cap;                        /* [hpg][nq][cap+1] */
  float *coef = w + (size_t)hpg * nq * (cap + 1);            /* [hpg][nq][cap] */
  float *cd = coef + (size_t)hpg * nq * cap;                 /* [V2_WARPS][nq][32] C_i . y */

  /* row i of head hd: the read checkpoint, or on a verification's flush rows the fp32 S */
  float x[R][M];
  auto load_batch = [&](int hd, int i0, int nr) {
    const size_t mat = (size_t)b * H + hd;
    /* NVFP4's per-matrix S_dec, once per batch (the rows of a batch share the head) */
    const float s_dec = (FC == FC_F4 && !from_S && rd.kind == QF_NVFP4)
                            ? *reinterpret_cast<const float *>(rd.blob + mat * (size_t)rd.bpm + rd.tscale_off)
                            : 1.0f;
#pragma unroll
    for (int r = 0; r < R; r++) {
      if (r >= nr) continue; /* warp-uniform */
      if (from_S) load_f32_row<M>(d.S + (mat * dv + i0 + r) * dk, dk, lane, x[r]);
      else load_row2<M, FC>(rd, lt, mat, i0 + r, lc, s_dec, x[r]);
    }
  };
  /* 32-bit and 16-bit reads need no table: the first batch goes out before the setup */
  const bool early = FC <= FC_F16 || from_S;
  if (early && warp < hpg * ntiles)
    load_batch(g * hpg + warp / ntiles, (warp % ntiles) * 32, min(R, dv - (warp % ntiles) * 32));

  if (FC >= FC_F8) fill_luts(lt, rd.kind);
  for (int e = threadIdx.x; e < nq * dk; e += blockDim.x) {
    int qi = e / dk, c = e % dk;
    query qq = query_of(d, op, h, qi, Tb);
    const float *y = qq.kind == Q_U
                         ? d.rec_k + (((size_t)b * cap + slot_of(d, base, qq.rec)) * G + g) * dk
                         : q_in + (((size_t)b * nt + qq.t) * G + g) * dk;
    ys[e] = y[c];
  }
  for (int e = threadIdx.x; e < hpg * nmax; e += blockDim.x) {
    int hh = e / nmax, j = e % nmax + 1;
    size_t ri = ((size_t)b * cap + slot_of(d, base, j)) * H + (size_t)g * hpg + hh;
    al[hh * cap + j - 1] = d.rec_alpha[ri];
    xs[hh * cap + j - 1] = d.rec_x + ri * dv;
  }
  __syncthreads();
  /* k_j . y once per key group: the heads of the group share it (the K^T Q of OUTPUTONLY) */
  for (int qi = 0; qi < nq; qi++) {
    query qq = query_of(d, op, h, qi, Tb);
    for (int j = warp + 1; j <= qq.n; j += V2_WARPS) {
      const float *kj = d.rec_k + (((size_t)b * cap + slot_of(d, base, j)) * G + g) * dk;
      float p = warp_dot(kj, ys + (size_t)qi * dk, dk, lane);
      if (lane == 0) dots[(size_t)qi * cap + (j - 1)] = p;
    }
  }
  __syncthreads();
  for (int t = threadIdx.x; t < hpg * nq; t += blockDim.x) {
    int hh = t / nq, qi = t % nq;
    query qq = query_of(d, op, h, qi, Tb);
    float *wq = w + (size_t)t * (cap + 1);
    rssm_decay_weights(al + (size_t)hh * cap, qq.n, wq);
    for (int j = 0; j < qq.n; j++)
      coef[(size_t)t * cap + j] = rssm_readout_coef(wq[j + 1], dots[(size_t)qi * cap + j]);
  }
  __syncthreads();

  float *cdw = cd + (size_t)warp * nq * 32;
  bool preloaded = early;
  for (int item = warp; item < hpg * ntiles; item += V2_WARPS) {
    const int hh = item / ntiles, i0 = (item % ntiles) * 32;
    const int hd = g * hpg + hh;
    const int nr = dv - i0 < 32 ? dv - i0 : 32;
    for (int r0 = 0; r0 < nr; r0 += R) {
      const int nb = nr - r0 < R ? nr - r0 : R;
      if (preloaded) preloaded = false;
      else load_batch(hd, i0 + r0, nb);
      for (int qi = 0; qi < nq; qi++) {
        float yr[M];
#pragma unroll
        for (int m = 0; m < M; m++) {
          const int c = lane + 32 * m;
          yr[m] = c < dk ? ys[(size_t)qi * dk + c] : 0.0f;
        }
#pragma unroll
        for (int r = 0; r < R; r++) {
          if (r >= nb) continue; /* warp-uniform */
          const float p = dot_rr<M>(x[r], yr, dk, lane);
          if (lane == 0) cdw[qi * 32 + r0 + r] = p;
        }
      }
    }
    __syncwarp();
    if (lane < nr) {
      const int i = i0 + lane;
      const float *const *xh = xs + (size_t)hh * cap;
      for (int qi = 0; qi < nq; qi++) {
        query qq = query_of(d, op, h, qi, Tb);
        const size_t t = (size_t)hh * nq + qi;
        const float *cq = coef + t * cap;
        /* rssm_readout_row of ssm_math.h, the same operations in the same order, with the record
         * values loaded RO_XCHUNK at a time so that their loads overlap */
        float acc = cdw[qi * 32 + lane] * w[t * (cap + 1)];
        for (int j0 = 0; j0 < qq.n; j0 += RO_XCHUNK) {
          float xv[RO_XCHUNK];
#pragma unroll
          for (int u = 0; u < RO_XCHUNK; u++) xv[u] = j0 + u < qq.n ? xh[j0 + u][i] : 0.0f;
#pragma unroll
          for (int u = 0; u < RO_XCHUNK; u++)
            if (j0 + u < qq.n) acc = acc + xv[u] * cq[j0 + u];
        }
        if (qq.kind == Q_U) {
          /* u of record rec from S_{rec-1} k_rec; later queries of this lane read it back */
          size_t ri = ((size_t)b * cap + slot_of(d, base, qq.rec)) * H + hd;
          d.rec_x[ri * dv + i] =
              rssm_gdn_u(d.rec_v[ri * dv + i], d.rec_beta[ri], al[hh * cap + qq.rec - 1], acc);
        } else {
          o[(((size_t)b * nt + qq.t) * H + hd) * dv + i] = acc;
        }
      }
    }
    __syncwarp(); /* cdw is reused by the next item */
  }
}

/* ---------------------------------------------------------------------------------------------
 * Kernels v3 (RSSM_SSM_KERNELS=v3, issue 17): the output-only readout as a precompute kernel and
 * a streaming kernel. Same operations, operands and association as ro_kernel / ro2_kernel for
 * every value (ssm_math.h items 1-3 and 5), so the same bits; what changes is where and when:
 *   - pre3 (grid G x B): the k_j . y dots of every query, the decay weights and the coefficients
 *     c_j = w_{j+1} (k_j . y) per (head, query), written to st->coefs. In ro2 this setup ran
 *     inside the streaming block, three barriers long, with no checkpoint bytes in flight for
 *     the 8- and 4-bit formats.
 *   - ro3 (grid H x B, one warp per tile of 32 state rows): at entry every lane issues
 *     asynchronous 16-byte copies (cp.async) of its warp's whole tile (codes and block scales,
 *     four commit groups of 8 rows), of the queries, the head's coefficients and its records' x
 *     into shared memory, so that a block has all its bytes in flight at once and computes
 *     chunk c while chunks c+1.. arrive. Rows are decoded in registers (quant/decode_fast.h: bit
 *     assembly, no tables), and the dot products C_i . y of 8 rows x up to 4 queries are
 *     reduced together by recursive halving (reduce_sums: 31 shuffles for 32 sums, not 160).
 * ------------------------------------------------------------------------------------------- */

constexpr int PRE_WARPS = 4;
constexpr int R3 = 8;  /* rows per chunk; a warp's 32-row tile is 4 chunks (4 commit groups) */
constexpr int QG3 = 4; /* queries reduced together: QG3 x R3 = 32 sums per halving */

/* Dynamic shared memory of pre3_kernel (T: the drafts of the largest operation, 1 for a step). */
size_t pre3_smem_bytes(int cap, int nq, int hpg, int dk, int T) {
  return ((size_t)hpg * cap + (size_t)nq * cap + (size_t)hpg * nq * (cap + 1) + (size_t)cap * dk +
          (size_t)T * dk) * sizeof(float);
}

/* Grid (G, B), PRE_WARPS warps; the rows of ro_kernel's plan. Per (row, key group): the records'
 * k and the output queries are staged in shared memory (coalesced, all loads in flight), then
 * every k_j . y_qi (warp-32 order; warp per (query, record)), then per (head, query) one thread:
 * rssm_decay_weights and rssm_readout_coef as ro_kernel, stored as
 * coefs[b][hd][qi][0..n-1] = c_j and coefs[b][hd][qi][cap] = w_0 (gamma_n, the checkpoint's). */
__global__ void __launch_bounds__(PRE_WARPS * 32)
    pre3_kernel(dev_state d, int op, const float *q_in /* [B][nt][G][dk] */, int nt,
                float *coefs /* [B][H][NQ][cap + 1] */, int NQ) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int g = blockIdx.x, b = blockIdx.y;
  const int fl = d.flag[b];
  if (op == OP_STEP ? fl != FLAG_NONFLUSH : fl == FLAG_IDLE) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int H = d.H, dk = d.dk, G = d.G, cap = d.cap, hpg = d.hpg;
  const int h = d.h[b], base = d.base[b];
  const int Tb = op == OP_VERIFY ? d.ndraft[b] : 1;
  const int nq = num_queries(d, op, Tb);
  const int nmax = op == OP_STEP ? h + 1 : h + Tb;
  const int nout = op == OP_STEP ? 1 : Tb;       /* output queries (their y is q_t) */
  float *al = reinterpret_cast<float *>(smem); /* [hpg][cap] record alphas */
  float *dots = al + (size_t)hpg * cap;         /* [nq][cap] k_j . y */
  float *w = dots + (size_t)nq * cap;           /* [hpg][nq][cap + 1] decay weights */
  float *kk = w + (size_t)hpg * nq * (cap + 1); /* [nmax][dk] record k of the group */
  float *qv = kk + (size_t)cap * dk;            /* [nout][dk] output queries */
  for (int e = threadIdx.x; e < hpg * nmax; e += blockDim.x) {
    const int hh = e / nmax, j = e % nmax + 1;
    al[hh * cap + j - 1] = d.rec_alpha[((size_t)b * cap + slot_of(d, base, j)) * H + (size_t)g * hpg + hh];
  }
  for (int e = threadIdx.x; e < nmax * dk; e += blockDim.x) {
    const int j = e / dk + 1, c = e % dk;
    kk[e] = d.rec_k[(((size_t)b * cap + slot_of(d, base, j)) * G + g) * dk + c];
  }
  for (int e = threadIdx.x; e < nout * dk; e += blockDim.x) {
    const int t = e / dk, c = e % dk;
    qv[e] = q_in[(((size_t)b * nt + t) * G + g) * dk + c];
  }
  __syncthreads();
  for (int p = warp; p < nq * nmax; p += PRE_WARPS) {
    const int qi = p / nmax, j = p % nmax + 1;
    const query qq = query_of(d, op, h, qi, Tb);
    if (j > qq.n) continue; /* warp-uniform */
    /* a U query's y is k_rec, an output query's q_t: the same values as ro_kernel's ys */
    const float *y = qq.kind == Q_U ? kk + (size_t)(qq.rec - 1) * dk : qv + (size_t)qq.t * dk;
    const float pd = warp_dot(kk + (size_t)(j - 1) * dk, y, dk, lane);
    if (lane == 0) dots[(size_t)qi * cap + (j - 1)] = pd;
  }
  __syncthreads();
  for (int t = threadIdx.x; t < hpg * nq; t += blockDim.x) {
    const int hh = t / nq, qi = t % nq;
    const query qq = query_of(d, op, h, qi, Tb);
    float *wq = w + (size_t)t * (cap + 1);
    rssm_decay_weights(al + (size_t)hh * cap, qq.n, wq);
    float *dst = coefs + (((size_t)b * H + (size_t)g * hpg + hh) * NQ + qi) * (size_t)(cap + 1);
    for (int j = 0; j < qq.n; j++) dst[j] = rssm_readout_coef(wq[j + 1], dots[(size_t)qi * cap + j]);
    dst[cap] = wq[0];
  }
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
/* Chunk c of 4 (commit groups issued in order, the last one last): wait until it has arrived. */
__device__ inline void cp_async_wait_chunk(int c) {
  if (c == 0) cp_async_wait<3>();
  else if (c == 1) cp_async_wait<2>();
  else if (c == 2) cp_async_wait<1>();
  else cp_async_wait<0>();
}

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

/* Shared-memory layout of ro3_kernel (byte offsets), from the shape and the read format.
 * crow/srow: staged code and scale bytes per state row (the larger of the checkpoint's and, in
 * a verification, the fp32 scratch row's). */
struct ro3_layout {
  size_t tile, stile, codes, scales, ys, cf, cd, xs, total;
};
__host__ __device__ inline ro3_layout ro3_layout_of(int ntiles, size_t crow, size_t srow, int nq, int dk, int cap,
                                                    int dv) {
  ro3_layout l;
  l.tile = align16(32 * crow);
  l.stile = align16(32 * srow);
  l.codes = 0;
  l.scales = l.codes + (size_t)ntiles * l.tile;
  l.ys = l.scales + (size_t)ntiles * l.stile;
  l.cf = l.ys + align16((size_t)nq * dk * sizeof(float));
  l.cd = l.cf + align16((size_t)nq * (cap + 1) * sizeof(float));
  l.xs = l.cd + align16((size_t)nq * dv * sizeof(float));
  l.total = l.xs + align16((size_t)cap * dv * sizeof(float));
  return l;
}

/* Lane's columns c = lane + 32 m of one staged row, decoded as rssm_decode_at does (FC: the
 * read format's class; fp32 rows of the scratch S take FC_F32). The fast decoders return the
 * reference decoders' bits (quant/decode_fast.h); formats without one (fp8_e5m2, int8, mxfp8,
 * mxfp4) call rssm_decode_at itself on the staged bytes. */
template <int M, int FC>
__device__ inline void decode_row3(const uint8_t *codes /* smem row */, const uint8_t *scales /* smem row */,
                                   int kind, int block, int scale_elem, float s_dec, int dk, int lane,
                                   float *x /* [M] */) {
#pragma unroll
  for (int m = 0; m < M; m++) {
    const int c = lane + 32 * m;
    if (c >= dk) {
      x[m] = 0.0f;
      continue;
    }
    if (FC == FC_F32) {
      x[m] = reinterpret_cast<const float *>(codes)[c];
    } else if (FC == FC_F16) {
      x[m] = rssm_decode16_fast(kind == QF_BF16, reinterpret_cast<const uint16_t *>(codes)[c]);
    } else {
      const uint8_t *sc = scales + (size_t)(c / block) * (size_t)scale_elem;
      if (FC == FC_F8 && kind == QF_FP8_E4M3)
        x[m] = rssm_e4m3_fast(codes[c]) * *reinterpret_cast<const float *>(sc);
      else if (FC == FC_F4 && kind == QF_NVFP4)
        x[m] = (rssm_e2m1_fast(rssm_get_nibble(codes, c)) * rssm_e4m3_fast(*sc)) * s_dec;
      else
        x[m] = rssm_decode_at((qformat_kind)kind, codes, sc, s_dec, c);
    }
  }
}

/* 32 sums, one per entry of v, each a warp-32 butterfly (ssm_math.h item 1) done by recursive
 * halving: at level off = 16, 8, 4, 2, 1 a lane keeps half of its sums (the upper half when its
 * bit off is set), sends the other half to lane ^ off and adds what it receives. The value kept
 * for a sum is then own + partner's, exactly the butterfly's p[l] + p[l ^ off] at every level (a
 * float + is commutative bit for bit), so every result has the butterfly's bits; lane l ends
 * with sum l. 31 shuffles instead of 32 x 5. */
template <int K /* 8, 16 or 32 */>
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

/* C_i . y of the chunk's R3 rows (registers) for queries q0.. in groups of QG, reduced together;
 * written to cd[qi][row0 + r] for rows r < rn. */
template <int M, int QG>
__device__ inline void cy_chunk(const float (*x)[M] /* [R3][M] */, const float *ys /* [nq][dk] */, int nq,
                                int dk, int dv, int row0, int rn, int lane, float *cd /* [nq][dv] */,
                                const float *cf /* [nq][cap + 1] */, int cap, double skip) {
  for (int q0 = 0; q0 < nq; q0 += QG) {
    float v[QG * R3];
#pragma unroll
    for (int qq = 0; qq < QG; qq++) {
      const int qi = q0 + qq < nq ? q0 + qq : nq - 1; /* past nq: a copy, not stored */
      float y[M];
#pragma unroll
      for (int m = 0; m < M; m++) {
        const int cc = lane + 32 * m;
        y[m] = cc < dk ? ys[(size_t)qi * dk + cc] : 0.0f;
      }
#pragma unroll
      for (int r = 0; r < R3; r++) {
        /* lane's warp-32 partial: +0, then p + x*y over m ascending (c < dk) */
        float p = 0.0f;
#pragma unroll
        for (int m = 0; m < M; m++)
          if (lane + 32 * m < dk) p = p + x[r][m] * y[m];
        v[qq * R3 + r] = p;
      }
    }
    const float sum = reduce_sums<QG * R3>(v, lane);
    const int idx = lane / (32 / (QG * R3)), qi = q0 + idx / R3, r = idx % R3;
    if (lane % (32 / (QG * R3)) == 0 && qi < nq && r < rn) {
      /* Appendix F (ssm_readout): a query whose checkpoint weight gamma_n = w_0 is below the
         threshold (compared as doubles) counts C_i . y as +0 */
      const bool sk = skip > 0.0 && (double)cf[(size_t)qi * (cap + 1) + cap] < skip;
      cd[(size_t)qi * dv + row0 + r] = sk ? 0.0f : sum;
    }
  }
}

/* Grid (H, B), one warp per 32-row tile of the head (ceil(dv / 32) warps). The rows and the
 * arithmetic of ro_kernel: per row i, for each query in order, acc = (C_i . y) * w_0 and then
 * acc = acc + x_j[i] * c_j over the records in ascending order (rssm_readout_row); GDN U queries
 * turn acc into u (rssm_gdn_u), written to the ring and to the staged x that later queries of
 * this lane read. */
template <int M, int FC>
__global__ void __launch_bounds__(256, 2)
    ro3_kernel(dev_state d, ck_view rd, int op, const float *q_in /* [B][nt][G][dk] */, int nt,
               float *o /* [B][nt][H][dv] */, const float *coefs /* [B][H][NQ][cap + 1] */, int NQ,
               size_t crow, size_t srow) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int hd = blockIdx.x, b = blockIdx.y;
  const int fl = d.flag[b];
  if (op == OP_STEP ? fl != FLAG_NONFLUSH : fl == FLAG_IDLE) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nthr = blockDim.x;
  const int H = d.H, dv = d.dv, dk = d.dk, G = d.G, cap = d.cap, g = hd / d.hpg;
  const int h = d.h[b], base = d.base[b];
  const int Tb = op == OP_VERIFY ? d.ndraft[b] : 1;
  const int nq = num_queries(d, op, Tb);
  const int nmax = op == OP_STEP ? h + 1 : h + Tb;
  const bool from_S = op == OP_VERIFY && fl == FLAG_FLUSH;
  const size_t mat = (size_t)b * H + hd;
  const ro3_layout L = ro3_layout_of((int)((dv + 31) / 32), crow, srow, nq, dk, cap, dv);
  float *ys = reinterpret_cast<float *>(smem + L.ys); /* [nq][dk] queries */
  float *cf = reinterpret_cast<float *>(smem + L.cf); /* [nq][cap + 1] c_j, w_0 at cap */
  float *cd = reinterpret_cast<float *>(smem + L.cd); /* [nq][dv] C_i . y */
  float *xs = reinterpret_cast<float *>(smem + L.xs); /* [nmax][dv] record x of this head */

  /* group 0: what every warp reads (queries, coefficients, records) */
  for (int qi = 0; qi < nq; qi++) {
    const query qq = query_of(d, op, h, qi, Tb);
    const float *y = qq.kind == Q_U ? d.rec_k + (((size_t)b * cap + slot_of(d, base, qq.rec)) * G + g) * dk
                                    : q_in + (((size_t)b * nt + qq.t) * G + g) * dk;
    stage(reinterpret_cast<uint8_t *>(ys + (size_t)qi * dk), reinterpret_cast<const uint8_t *>(y),
          (size_t)dk * sizeof(float), threadIdx.x, nthr);
  }
  /* the coefficients of this head's nq queries are contiguous: [qi][cap + 1] */
  stage(reinterpret_cast<uint8_t *>(cf), reinterpret_cast<const uint8_t *>(coefs + mat * NQ * (size_t)(cap + 1)),
        (size_t)nq * (cap + 1) * sizeof(float), threadIdx.x, nthr);
  for (int j = 1; j <= nmax; j++)
    stage(reinterpret_cast<uint8_t *>(xs + (size_t)(j - 1) * dv),
          reinterpret_cast<const uint8_t *>(d.rec_x + (((size_t)b * cap + slot_of(d, base, j)) * H + hd) * dv),
          (size_t)dv * sizeof(float), threadIdx.x, nthr);
  cp_async_commit();
  /* Appendix F: with skip=THR the coefficients come first, and a head whose every query has
     w_0 < THR loads no checkpoint byte at all (that is the time the threshold saves) */
  bool all_skip = false;
  if (d.skip > 0.0) { /* block-uniform */
    cp_async_wait<0>();
    __syncthreads();
    all_skip = true;
    for (int qi = 0; qi < nq; qi++) all_skip = all_skip && (double)cf[(size_t)qi * (cap + 1) + cap] < d.skip;
  }

  /* groups 1-4: this warp's tile, 8 rows each (codes, then block scales) */
  const int i0 = warp * 32, nr = dv - i0 < 32 ? dv - i0 : 32;
  const uint8_t *mb = rd.blob + mat * (size_t)rd.bpm;
  const uint8_t *gcodes = from_S ? reinterpret_cast<const uint8_t *>(d.S + (mat * dv + i0) * dk)
                                 : mb + rd.codes_off + (size_t)i0 * (size_t)rd.code_row;
  const size_t code_row = from_S ? (size_t)dk * sizeof(float) : (size_t)rd.code_row;
  const bool scaled = !from_S && rd.scales_off >= 0;
  const size_t scale_row = scaled ? (size_t)(rd.blocks_per_row * rd.scale_elem) : 0;
  const uint8_t *gscales = scaled ? mb + rd.scales_off + (size_t)i0 * scale_row : nullptr;
  uint8_t *tcodes = smem + L.codes + (size_t)warp * L.tile;
  uint8_t *tscales = smem + L.scales + (size_t)warp * L.stile;
#pragma unroll
  for (int c = 0; c < 4; c++) {
    const int r0 = c * R3, rn = nr - r0 < R3 ? nr - r0 : R3;
    if (rn > 0 && !all_skip) {
      stage(tcodes + (size_t)r0 * code_row, gcodes + (size_t)r0 * code_row, (size_t)rn * code_row, lane, 32);
      if (scaled)
        stage(tscales + (size_t)r0 * scale_row, gscales + (size_t)r0 * scale_row, (size_t)rn * scale_row, lane, 32);
    }
    cp_async_commit();
  }
  const float s_dec =
      (!from_S && !all_skip && rd.kind == QF_NVFP4) ? *reinterpret_cast<const float *>(mb + rd.tscale_off) : 1.0f;

  cp_async_wait<4>(); /* this thread's group 0 */
  __syncthreads();    /* everyone's */

  if (all_skip)
    for (int qi = 0; qi < nq; qi++)
      if (lane < nr) cd[(size_t)qi * dv + i0 + lane] = 0.0f;
#pragma unroll 1
  for (int c = 0; c < 4; c++) {
    const int r0 = c * R3;
    if (r0 >= nr || all_skip) break; /* warp-uniform */
    cp_async_wait_chunk(c);
    __syncwarp();
    float x[R3][M];
#pragma unroll
    for (int r = 0; r < R3; r++) {
      if (r0 + r >= nr) { /* rows past dv: zeros, their sums are not stored */
#pragma unroll
        for (int m = 0; m < M; m++) x[r][m] = 0.0f;
        continue;
      }
      const uint8_t *rc = tcodes + (size_t)(r0 + r) * code_row;
      const uint8_t *rs = tscales + (size_t)(r0 + r) * scale_row;
      if (from_S) decode_row3<M, FC_F32>(rc, rs, QF_FP32, 0, 0, 1.0f, dk, lane, x[r]);
      else decode_row3<M, FC>(rc, rs, rd.kind, rd.block, (int)rd.scale_elem, s_dec, dk, lane, x[r]);
    }
    const int rn = nr - r0 < R3 ? nr - r0 : R3;
    /* a step has 1 (Mamba-2) or 2 (GDN) queries: 8 or 16 sums per reduction, else 32 */
    if (nq == 1) cy_chunk<M, 1>(x, ys, nq, dk, dv, i0 + r0, rn, lane, cd, cf, cap, d.skip);
    else if (nq == 2) cy_chunk<M, 2>(x, ys, nq, dk, dv, i0 + r0, rn, lane, cd, cf, cap, d.skip);
    else cy_chunk<M, QG3>(x, ys, nq, dk, dv, i0 + r0, rn, lane, cd, cf, cap, d.skip);
  }
  __syncwarp();
  if (lane >= nr) return;
  const int i = i0 + lane;
  for (int qi = 0; qi < nq; qi++) {
    const query qq = query_of(d, op, h, qi, Tb);
    const float *cq = cf + (size_t)qi * (cap + 1);
    /* rssm_readout_row of ssm_math.h, the same operations in the same order */
    float acc = cd[(size_t)qi * dv + i] * cq[cap];
    for (int j = 0; j < qq.n; j++) acc = acc + xs[(size_t)j * dv + i] * cq[j];
    if (qq.kind == Q_U) {
      const size_t ri = ((size_t)b * cap + slot_of(d, base, qq.rec)) * H + hd;
      const float u = rssm_gdn_u(d.rec_v[ri * dv + i], d.rec_beta[ri], d.rec_alpha[ri], acc);
      d.rec_x[ri * dv + i] = u;
      xs[(size_t)(qq.rec - 1) * dv + i] = u; /* later queries of this lane read it */
    } else {
      o[(((size_t)b * nt + qq.t) * H + hd) * dv + i] = acc;
    }
  }
}

/* v3 materialisation of fp32 sources into fp32 destinations (the conventional fp32 step and the
 * fp32 flushes; mat2_kernel<M, true> otherwise): grid (H, B), one warp per 32-row tile of the
 * head. At entry the block stages the records (alphas, betas, the group's k, x or v) and every
 * warp issues asynchronous 16-byte copies of its whole tile of source rows (four commit groups
 * of 8 rows), so a block has all its bytes in flight at once and folds chunk c while chunks
 * c+1.. arrive (mat2: 6 rows per warp in flight, loaded after the previous rows were stored).
 * Per row exactly mat2's arithmetic: the fold of ssm_math.h item 4 per record in ascending
 * order; GDN u (item 5) from S_{j-1,i} . k_j, whose 8 sums per chunk are reduced together
 * (reduce_sums: the butterfly's bits) and broadcast from the lane that holds each; the output
 * S q (op STEP) the same way; fp32 stores of the registers' bits. */
size_t mat3_smem_bytes(int ntiles, int cap, int dv, int dk) {
  return (size_t)ntiles * 32 * dk * sizeof(float) +
         ((size_t)cap * (2 + (size_t)dk + (size_t)dv) + (size_t)dk) * sizeof(float);
}

template <int M>
__global__ void __launch_bounds__(256, 2)
    mat3_kernel(dev_state d, ck_view src, int op, const float *q_in /* [B][1][G][dk] */,
                float *o /* [B][H][dv] */, int nstore, store_params st0, store_params st1) {
  extern __shared__ __align__(16) unsigned char smem[];
  const int hd = blockIdx.x, b = blockIdx.y;
  if (d.flag[b] != FLAG_FLUSH) return;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nthr = blockDim.x;
  const int H = d.H, dv = d.dv, dk = d.dk, G = d.G, g = hd / d.hpg, cap = d.cap;
  const int ntiles = (dv + 31) / 32;
  const int h = d.h[b], base = d.base[b];
  const int n = op == OP_STEP ? h + 1 : h;
  int rf; /* recompute_from of ssm_step.c, as mat_kernel */
  if (d.conventional) rf = 1;
  else if (d.split && d.recompute) rf = 1;
  else rf = op == OP_STEP ? n : n + 1;
  const size_t mat = (size_t)b * H + hd;

  float *tiles = reinterpret_cast<float *>(smem);       /* [ntiles][32][dk] source rows */
  float *al = tiles + (size_t)ntiles * 32 * dk;         /* [cap]     record alphas */
  float *bt = al + cap;                                 /* [cap]     GDN betas */
  float *kk = bt + cap;                                 /* [cap][dk] record k (key group g) */
  float *xx = kk + (size_t)cap * dk;                    /* [cap][dv] stored x, or v where u is recomputed */
  float *qv = xx + (size_t)cap * dv;                    /* [dk]      step: q */

  /* group 0: the records (and q); groups 1-4: this warp's tile, 8 rows each */
  const size_t rowb = (size_t)dk * sizeof(float); /* fp32: code_row = 4 dk */
  for (int j = threadIdx.x + 1; j <= n; j += nthr) {
    const size_t ri = ((size_t)b * cap + slot_of(d, base, j)) * H + hd;
    al[j - 1] = d.rec_alpha[ri];
    if (d.gdn) bt[j - 1] = d.rec_beta[ri];
  }
  for (int j = 1; j <= n; j++) {
    const size_t sl = (size_t)b * cap + slot_of(d, base, j);
    stage(reinterpret_cast<uint8_t *>(kk + (size_t)(j - 1) * dk),
          reinterpret_cast<const uint8_t *>(d.rec_k + (sl * G + g) * dk), rowb, threadIdx.x, nthr);
    const float *xsrc = (d.gdn && j >= rf) ? d.rec_v : d.rec_x;
    stage(reinterpret_cast<uint8_t *>(xx + (size_t)(j - 1) * dv),
          reinterpret_cast<const uint8_t *>(xsrc + (sl * H + hd) * dv), (size_t)dv * sizeof(float), threadIdx.x, nthr);
  }
  if (op == OP_STEP)
    stage(reinterpret_cast<uint8_t *>(qv), reinterpret_cast<const uint8_t *>(q_in + ((size_t)b * G + g) * dk), rowb,
          threadIdx.x, nthr);
  cp_async_commit();
  const int i0 = warp * 32, nr = dv - i0 < 32 ? dv - i0 : 32;
  const uint8_t *grow = src.blob + mat * (size_t)src.bpm + src.codes_off + (size_t)i0 * (size_t)src.code_row;
  float *tile = tiles + (size_t)warp * 32 * dk;
#pragma unroll
  for (int c = 0; c < 4; c++) {
    const int r0 = c * R3, rn = nr - r0 < R3 ? nr - r0 : R3;
    if (rn > 0)
      stage(reinterpret_cast<uint8_t *>(tile + (size_t)r0 * dk), grow + (size_t)r0 * rowb, (size_t)rn * rowb, lane, 32);
    cp_async_commit();
  }
  cp_async_wait<4>(); /* this thread's group 0 */
  __syncthreads();    /* everyone's (and the plain loads of al, bt) */

  float qr[M];
#pragma unroll
  for (int m = 0; m < M; m++) {
    const int c = lane + 32 * m;
    qr[m] = (op == OP_STEP && c < dk) ? qv[c] : 0.0f;
  }
#pragma unroll 1
  for (int c0 = 0; c0 < 4; c0++) {
    const int r0 = c0 * R3;
    if (r0 >= nr) break; /* warp-uniform */
    const int rn = nr - r0 < R3 ? nr - r0 : R3;
    cp_async_wait_chunk(c0);
    __syncwarp();
    float x[R3][M];
#pragma unroll
    for (int r = 0; r < R3; r++)
#pragma unroll
      for (int m = 0; m < M; m++) {
        const int c = lane + 32 * m;
        x[r][m] = (r < rn && c < dk) ? tile[(size_t)(r0 + r) * dk + c] : 0.0f;
      }
    for (int j = 1; j <= n; j++) {
      const float alpha = al[j - 1];
      const float *kj = kk + (size_t)(j - 1) * dk;
      float kr[M];
#pragma unroll
      for (int m = 0; m < M; m++) {
        const int c = lane + 32 * m;
        kr[m] = c < dk ? kj[c] : 0.0f;
      }
      float xi[R3];
#pragma unroll
      for (int r = 0; r < R3; r++) xi[r] = r < rn ? xx[(size_t)(j - 1) * dv + i0 + r0 + r] : 0.0f;
      if (d.gdn && j >= rf) {
        /* ssm_math.h item 5 with sk = S_{j-1,i} . k_j (item 1): xi holds v_j[i] here */
        float v[R3];
#pragma unroll
        for (int r = 0; r < R3; r++) {
          float p = 0.0f;
#pragma unroll
          for (int m = 0; m < M; m++)
            if (lane + 32 * m < dk) p = p + x[r][m] * kr[m];
          v[r] = p;
        }
        const float sum = reduce_sums<R3>(v, lane); /* lane 4 r holds row r's */
#pragma unroll
        for (int r = 0; r < R3; r++) {
          const float skv = __shfl_sync(0xffffffffu, sum, 4 * r);
          xi[r] = rssm_gdn_u(xi[r], bt[j - 1], alpha, skv);
          if (lane == 0 && r < rn)
            d.rec_x[(((size_t)b * cap + slot_of(d, base, j)) * H + hd) * dv + i0 + r0 + r] = xi[r];
        }
      }
      /* ssm_math.h item 4: s = alpha * s + x * k, two rounded products then their sum */
#pragma unroll
      for (int r = 0; r < R3; r++)
#pragma unroll
        for (int m = 0; m < M; m++)
          if (lane + 32 * m < dk) x[r][m] = alpha * x[r][m] + xi[r] * kr[m];
    }
    if (op == OP_STEP) {
      float v[R3];
#pragma unroll
      for (int r = 0; r < R3; r++) {
        float p = 0.0f;
#pragma unroll
        for (int m = 0; m < M; m++)
          if (lane + 32 * m < dk) p = p + x[r][m] * qr[m];
        v[r] = p;
      }
      const float sum = reduce_sums<R3>(v, lane);
      if (lane % 4 == 0 && lane / 4 < rn) o[mat * dv + i0 + r0 + lane / 4] = sum;
    }
    /* fp32 checkpoints: the bits (rssm_encode_block's fp32 copy); else the scratch S */
#pragma unroll
    for (int r = 0; r < R3; r++) {
      if (r >= rn) break; /* warp-uniform */
      const int i = i0 + r0 + r;
      for (int k = 0; k < (nstore > 0 ? nstore : 1); k++) {
        const ck_view &dv_ = k == 0 ? st0.v : st1.v;
        float *dst = nstore == 0 ? d.S + (mat * dv + i) * dk
                                 : reinterpret_cast<float *>(dv_.blob + mat * (size_t)dv_.bpm + dv_.codes_off +
                                                             (size_t)i * (size_t)dv_.code_row);
#pragma unroll
        for (int m = 0; m < M; m++) {
          const int c = lane + 32 * m;
          if (c < dk) dst[c] = x[r][m];
        }
      }
    }
  }
}

/* The v2 decoders against rssm_decode_elem / rssm_e8m0_decode on the device, every code: the
 * 16-bit fast path and the per-block tables of every 8-bit and 4-bit format. One thread per code;
 * mismatches (bit patterns) are counted in *bad. */
__global__ void check_decoders_kernel(unsigned long long *bad) {
  __shared__ luts lt;
  const int kinds[] = {QF_FP8_E4M3, QF_FP8_E5M2, QF_INT8, QF_MXFP8, QF_NVFP4, QF_MXFP4};
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; /* grid covers 65536 codes */
  unsigned long long n = 0;
  for (int bf = 0; bf < 2; bf++) {
    /* the register decoders of v2 and v3 (quant/decode_fast.h) */
    const float b = rssm_decode_elem(bf ? RSSM_EL_BF16 : RSSM_EL_FP16, t);
    n += rssm_f32_bits(rssm_decode16_fast(bf, t)) != rssm_f32_bits(b);
  }
  if (t < 256) {
    n += rssm_f32_bits(rssm_e4m3_fast(t)) != rssm_f32_bits(rssm_decode_elem(RSSM_EL_E4M3, t));
    n += rssm_f32_bits(rssm_e8m0_fast(t)) != rssm_f32_bits(rssm_e8m0_decode(t));
    if (t < 16) n += rssm_f32_bits(rssm_e2m1_fast(t)) != rssm_f32_bits(rssm_decode_elem(RSSM_EL_E2M1, t));
  }
  for (int ki = 0; ki < 6; ki++) {
    __syncthreads();
    fill_luts(&lt, kinds[ki]);
    __syncthreads();
    if (t < 256) {
      const int four = kinds[ki] == QF_NVFP4 || kinds[ki] == QF_MXFP4;
      if (!four || t < 16)
        n += rssm_f32_bits(lt.elem[t]) != rssm_f32_bits(rssm_decode_elem(rssm_elem_of((qformat_kind)kinds[ki]), t));
      float sc = kinds[ki] == QF_NVFP4 ? rssm_decode_elem(RSSM_EL_E4M3, t) : rssm_e8m0_decode(t);
      if (kinds[ki] == QF_NVFP4 || kinds[ki] == QF_MXFP4 || kinds[ki] == QF_MXFP8)
        n += rssm_f32_bits(lt.scale[t]) != rssm_f32_bits(sc);
    }
  }
  if (n) atomicAdd(bad, n);
}

/* Copies one encoded zero matrix into every [B][H] slot of a blob (the initial state). */
__global__ void broadcast_kernel(uint8_t *blob /* [nmat][bpm] */, const uint8_t *one /* [bpm] */, size_t nmat,
                                 size_t bpm) {
  size_t total = nmat * bpm;
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x)
    blob[e] = one[e % bpm];
}

/* ---------------------------------------------------------------------------------------------
 * Host side
 * ------------------------------------------------------------------------------------------- */

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
      broadcast_kernel<<<1024, 256>>>(c->blob, d_one, nmat, bpm);
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

unsigned book_blocks(int B) { return (unsigned)((B + BOOK_THREADS - 1) / BOOK_THREADS); }

/* Materialise and store the flush rows of the current plan (their flag is FLUSH). */
store_params store_of(const ssm_cuda_state *st, const ssm_cuda_ckpt *c) {
  store_params p;
  p.v = view_of(c);
  p.sr_on = c->fmt.rounding == QR_SR;
  p.stream = c->stream;
  p.seed = st->seed;
  return p;
}

/* Materialise and store the flush rows of the current plan (their flag is FLUSH). The store is
 * fused into the materialisation when every checkpoint is unscaled (fp32, bf16, fp16: per-element
 * codes, spread over the lanes) and no verification needs the fp32 S afterwards. Scaled formats
 * go through store_kernel, which has a thread per block (in the warp, one lane would encode a
 * whole block serially) and, for NVFP4, the matrix amax. */
void launch_flush_rows(ssm_cuda_state *st, const dev_state &d, int op, const float *q, float *o,
                       cudaStream_t s) {
  dim3 grid((unsigned)st->dims.H, (unsigned)st->B);
  const store_params pm = store_of(st, &st->main), pl = d.split ? store_of(st, &st->lp) : pm;
  const bool scaled = st->main.fmt.block > 0 || (d.split && st->lp.fmt.block > 0);
  const int nstore = (op == OP_VERIFY || scaled) ? 0 : (d.split ? 2 : 1);
  const ck_view src = view_of(&st->main);
  if (st->kernels == SSM_CUDA_KERNELS_LEGACY) {
    mat_kernel<<<grid, MAT_WARPS * 32, mat_smem_bytes(d.cap, d.dv, d.dk), s>>>(d, src, op, q, o, nstore, pm, pl);
  } else {
    const size_t sm = mat2_smem_bytes(d.cap, d.dv, d.dk);
    /* fp32 source and fp32 (or scratch) destinations, the common case: a kernel without the
       decoders and encoders, small enough for 3 blocks per SM */
    const bool f32 = src.kind == QF_FP32 &&
                     (nstore == 0 || (pm.v.kind == QF_FP32 && (nstore < 2 || pl.v.kind == QF_FP32)));
#define MAT2(M, F) mat2_kernel<M, F><<<grid, V2_WARPS * 32, sm, s>>>(d, src, op, q, o, nstore, pm, pl)
    const int ntiles = (d.dv + 31) / 32;
    const size_t sm3 = mat3_smem_bytes(ntiles, d.cap, d.dv, d.dk);
    if (st->kernels == SSM_CUDA_KERNELS_V3 && f32 && sm3 <= st->smem_optin && ntiles <= 8) {
      /* v3: the fp32 materialisation with the whole tile in flight */
      if (d.dk <= 128) mat3_kernel<4><<<grid, 32 * ntiles, sm3, s>>>(d, src, op, q, o, nstore, pm, pl);
      else mat3_kernel<8><<<grid, 32 * ntiles, sm3, s>>>(d, src, op, q, o, nstore, pm, pl);
    } else if (d.dk <= 128) {
      if (f32) MAT2(4, true);
      else MAT2(4, false);
    } else {
      if (f32) MAT2(8, true);
      else MAT2(8, false);
    }
#undef MAT2
  }
  if (nstore > 0) return;
  store_kernel<<<grid, STORE_THREADS, 0, s>>>(d, pm.v, pm.sr_on, pm.seed, pm.stream);
  if (d.split) store_kernel<<<grid, STORE_THREADS, 0, s>>>(d, pl.v, pl.sr_on, pl.seed, pl.stream);
}

/* Whether the v3 readout runs for every operation of a state (the largest staged row: a
 * verification's fp32 S row; the largest scale row: 4 bytes per 8 elements bounds every format). */
bool v3_readout_fits(int cap, int nq, const ssm_dims *d, size_t optin) {
  const int ntiles = (d->dv + 31) / 32;
  const size_t crow = (size_t)d->dk * sizeof(float), srow = ((size_t)d->dk + 7) / 8 * 4;
  const ro3_layout L = ro3_layout_of(ntiles, crow, srow, nq, d->dk, cap, d->dv);
  const size_t psm = pre3_smem_bytes(cap, nq, d->H / d->G, d->dk, nq);
  return L.total <= optin && psm <= optin && d->dk <= 256 && ntiles <= 8;
}

/* The v3 readout (pre3 + ro3) when its shared memory fits; false (nothing launched) otherwise,
 * and the caller runs the v2 readout. */
bool launch_readout_v3(ssm_cuda_state *st, const dev_state &d, int op, const float *q, int nt, float *o,
                       cudaStream_t s, const ck_view &rd, int nq, int fc) {
  const int ntiles = (d.dv + 31) / 32;
  size_t crow = (size_t)rd.code_row;
  if (op == OP_VERIFY && crow < (size_t)d.dk * sizeof(float)) crow = (size_t)d.dk * sizeof(float);
  const size_t srow = rd.scales_off >= 0 ? (size_t)(rd.blocks_per_row * rd.scale_elem) : 0;
  const ro3_layout L = ro3_layout_of(ntiles, crow, srow, nq, d.dk, d.cap, d.dv);
  const size_t psm = pre3_smem_bytes(d.cap, nq, d.hpg, d.dk, op == OP_STEP ? 1 : d.T);
  /* one warp per 32 rows within the kernels' 256-thread launch bounds */
  if (L.total > st->smem_optin || psm > st->smem_optin || d.dk > 256 || ntiles > 8) return false;
  pre3_kernel<<<dim3((unsigned)d.G, (unsigned)st->B), PRE_WARPS * 32, psm, s>>>(d, op, q, nt, st->coefs, st->nq_max);
  dim3 grid((unsigned)d.H, (unsigned)st->B);
  const unsigned thr = (unsigned)(32 * ntiles);
#define RO3(M, FC) \
  ro3_kernel<M, FC><<<grid, thr, L.total, s>>>(d, rd, op, q, nt, o, st->coefs, st->nq_max, crow, srow)
  if (d.dk <= 128) {
    if (fc == FC_F32) RO3(4, FC_F32);
    else if (fc == FC_F16) RO3(4, FC_F16);
    else if (fc == FC_F8) RO3(4, FC_F8);
    else RO3(4, FC_F4);
  } else {
    if (fc == FC_F32) RO3(8, FC_F32);
    else if (fc == FC_F16) RO3(8, FC_F16);
    else if (fc == FC_F8) RO3(8, FC_F8);
    else RO3(8, FC_F4);
  }
#undef RO3
  return true;
}

void launch_readout(ssm_cuda_state *st, const dev_state &d, int op, const float *q, int nt, float *o,
                    cudaStream_t s) {
  int nq = (op == OP_STEP ? 1 : d.T) * (d.gdn ? 2 : 1);
  dim3 grid((unsigned)d.G, (unsigned)st->B);
  const ck_view rd = view_of(read_ckpt(st));
  if (st->kernels == SSM_CUDA_KERNELS_LEGACY) {
    ro_kernel<<<grid, RO_WARPS * 32, ro_smem_bytes(d.cap, nq, d.dk, d.hpg), s>>>(d, rd, op, q, nt, o);
    return;
  }
  const int fc = format_class(rd.kind);
  /* v3's readout is faster than v2's for fp32 reads and 3-4x slower for 4- and 8-bit ones (H200,
     2026-12-01, docs/gpu-results.md "SSM kernels v3"); both give the same bits, so v3 reads only
     fp32 checkpoints, and every format when skip= needs it (only v3 has the threshold). */
  const bool v3_readout = st->kernels == SSM_CUDA_KERNELS_V3 && (fc == FC_F32 || d.skip > 0.0);
  if (v3_readout && launch_readout_v3(st, d, op, q, nt, o, s, rd, nq, fc)) return;
  const size_t sm = ro2_smem_bytes(d.cap, nq, d.dk, d.hpg);
#define RO2(M, FC) ro2_kernel<M, FC><<<grid, V2_WARPS * 32, sm, s>>>(d, rd, op, q, nt, o)
  if (d.dk <= 128) {
    if (fc == FC_F32) RO2(4, FC_F32);
    else if (fc == FC_F16) RO2(4, FC_F16);
    else if (fc == FC_F8) RO2(4, FC_F8);
    else RO2(4, FC_F4);
  } else {
    if (fc == FC_F32) RO2(8, FC_F32);
    else if (fc == FC_F16) RO2(8, FC_F16);
    else if (fc == FC_F8) RO2(8, FC_F8);
    else RO2(8, FC_F4);
  }
#undef RO2
}

/* Raises the dynamic shared memory limit of every kernel variant that may run with more than the
 * default 48 KiB. Returns 0, or -1 naming the kernel in err. */
/* The v3 readout kernels may use up to the opt-in maximum (launch_readout_v3 falls back to v2
 * beyond it). Returns 0, or -1 naming the kernel in err. */
int raise_smem_v3(int optin, char *err, size_t errlen) {
  const void *fs[] = {
      reinterpret_cast<const void *>(pre3_kernel),
      reinterpret_cast<const void *>(ro3_kernel<4, FC_F32>), reinterpret_cast<const void *>(ro3_kernel<4, FC_F16>),
      reinterpret_cast<const void *>(ro3_kernel<4, FC_F8>),  reinterpret_cast<const void *>(ro3_kernel<4, FC_F4>),
      reinterpret_cast<const void *>(ro3_kernel<8, FC_F32>), reinterpret_cast<const void *>(ro3_kernel<8, FC_F16>),
      reinterpret_cast<const void *>(ro3_kernel<8, FC_F8>),  reinterpret_cast<const void *>(ro3_kernel<8, FC_F4>),
      reinterpret_cast<const void *>(mat3_kernel<4>),        reinterpret_cast<const void *>(mat3_kernel<8>),
  };
  for (const void *f : fs)
    if (cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) != cudaSuccess)
      return rssm_fail(err, errlen, "cannot raise the v3 readout's shared memory to %d bytes", optin);
  return 0;
}

int raise_smem(size_t ro_smem, size_t mat_smem, char *err, size_t errlen) {
  struct item {
    const void *f;
    size_t bytes;
    const char *name;
  };
  const item items[] = {
      {reinterpret_cast<const void *>(ro_kernel), ro_smem, "readout"},
      {reinterpret_cast<const void *>(mat_kernel), mat_smem, "materialisation"},
      {reinterpret_cast<const void *>(ro2_kernel<4, FC_F32>), ro_smem + sizeof(luts), "readout v2"},
      {reinterpret_cast<const void *>(ro2_kernel<4, FC_F16>), ro_smem + sizeof(luts), "readout v2"},
      {reinterpret_cast<const void *>(ro2_kernel<4, FC_F8>), ro_smem + sizeof(luts), "readout v2"},
      {reinterpret_cast<const void *>(ro2_kernel<4, FC_F4>), ro_smem + sizeof(luts), "readout v2"},
      {reinterpret_cast<const void *>(ro2_kernel<8, FC_F32>), ro_smem + sizeof(luts), "readout v2"},
      {reinterpret_cast<const void *>(ro2_kernel<8, FC_F16>), ro_smem + sizeof(luts), "readout v2"},
      {reinterpret_cast<const void *>(ro2_kernel<8, FC_F8>), ro_smem + sizeof(luts), "readout v2"},
      {reinterpret_cast<const void *>(ro2_kernel<8, FC_F4>), ro_smem + sizeof(luts), "readout v2"},
      {reinterpret_cast<const void *>(mat2_kernel<4, true>), mat_smem, "materialisation v2"},
      {reinterpret_cast<const void *>(mat2_kernel<4, false>), mat_smem, "materialisation v2"},
      {reinterpret_cast<const void *>(mat2_kernel<8, true>), mat_smem, "materialisation v2"},
      {reinterpret_cast<const void *>(mat2_kernel<8, false>), mat_smem, "materialisation v2"},
  };
  for (const item &it : items)
    if (it.bytes > 48 * 1024 &&
        cudaFuncSetAttribute(it.f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)it.bytes) != cudaSuccess)
      return rssm_fail(err, errlen, "cannot raise the %s kernel's shared memory to %zu bytes",
                       it.name, it.bytes);
  return 0;
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
  if (d->dk > 32 * MAXM)
    return rssm_fail(err, errlen, "dk=%d > %d (one state row per warp in registers)", d->dk,
                     32 * MAXM);
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
  size_t smem = ro_smem_bytes(st->cap, nq, d->dk, d->H / d->G);
  size_t msmem = mat_smem_bytes(st->cap, d->dv, d->dk);
  int optin = 0;
  cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  /* the v2 readout adds its decode tables; mat_smem_bytes (with the legacy staging rows) bounds
     mat2_smem_bytes */
  if (smem + sizeof(luts) > (size_t)optin || msmem > (size_t)optin)
    return rssm_fail(err, errlen,
                     "ring of %d slots, %d queries and %d heads per group need %zu + %zu bytes of "
                     "shared memory (> %d)",
                     st->cap, nq, d->H / d->G, smem + sizeof(luts), msmem, optin);
  if (raise_smem(smem, msmem, err, errlen) != 0) return -1;
  st->smem_optin = (size_t)optin;
  st->nq_max = nq;
  /* RSSM_SSM_KERNELS=v3|v2|legacy, else the default (ssm_cuda.h; docs/ssm-cuda.md, "Kernel versions") */
  const char *kv = getenv("RSSM_SSM_KERNELS");
  st->kernels = kv && strcmp(kv, "v2") == 0       ? SSM_CUDA_KERNELS_V2
                : kv && strcmp(kv, "legacy") == 0 ? SSM_CUDA_KERNELS_LEGACY
                : kv && strcmp(kv, "v3") == 0     ? SSM_CUDA_KERNELS_V3
                                                  : SSM_CUDA_KERNELS_DEFAULT;
  if (st->kernels == SSM_CUDA_KERNELS_V3 && raise_smem_v3(optin, err, errlen) != 0) return -1;
  /* Appendix F's skip= lives in the v3 readout only; it must then run for every readout */
  if (cfg->skip > 0.0 && st->kernels != SSM_CUDA_KERNELS_V3)
    return rssm_fail(err, errlen, "skip= needs the v3 kernels (RSSM_SSM_KERNELS=v3)");
  if (cfg->skip > 0.0 && !v3_readout_fits(st->cap, nq, d, (size_t)optin))
    return rssm_fail(err, errlen, "skip=: the v3 readout does not fit this shape (%d x %d)", d->dv, d->dk);

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
  if (st->kernels == SSM_CUDA_KERNELS_V3 && cfg->strategy != SSM_CONVENTIONAL)
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
  plan_kernel<<<st->B, 128, 0, s>>>(d, OP_STEP, active, *in, 1, nullptr);
  if (!d.conventional) launch_readout(st, d, OP_STEP, in->q, 1, o, s);
  launch_flush_rows(st, d, OP_STEP, in->q, o, s);
  step_book_kernel<<<book_blocks(st->B), BOOK_THREADS, 0, s>>>(d);
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
  plan_kernel<<<st->B, 128, 0, s>>>(d, OP_VERIFY, active, *drafts, d.T, n);
  /* Appendix D.1: rows with h + T > L fold their committed records first; their drafts then
   * read the fp32 S that the flush built */
  launch_flush_rows(st, d, OP_VERIFY, nullptr, nullptr, s);
  flush_book_kernel<<<book_blocks(st->B), BOOK_THREADS, 0, s>>>(d);
  launch_readout(st, d, OP_VERIFY, drafts->q, d.T, o, s);
  verify_book_kernel<<<book_blocks(st->B), BOOK_THREADS, 0, s>>>(d);
  return launch_ok();
}

extern "C" int ssm_cuda_commit(ssm_cuda_state *st, const int *a, const uint8_t *active, void *stream) {
  if (st->cfg.strategy != SSM_SPEC || !a) return -1;
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  commit_kernel<<<book_blocks(st->B), BOOK_THREADS, 0, s>>>(dev_of(st), a, active);
  return launch_ok();
}

extern "C" int ssm_cuda_flush(ssm_cuda_state *st, const uint8_t *active, void *stream) {
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  dev_state d = dev_of(st);
  ssm_cuda_inputs none = {nullptr, nullptr, nullptr, nullptr, nullptr};
  plan_kernel<<<st->B, 128, 0, s>>>(d, OP_FLUSH, active, none, 0, nullptr);
  if (!d.conventional) {
    launch_flush_rows(st, d, OP_FLUSH, nullptr, nullptr, s);
    flush_book_kernel<<<book_blocks(st->B), BOOK_THREADS, 0, s>>>(d);
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

extern "C" long long ssm_cuda_check_decoders(void) {
  unsigned long long *d_bad = nullptr, bad = 0;
  if (cudaMalloc(reinterpret_cast<void **>(&d_bad), sizeof bad) != cudaSuccess) return -1;
  long long rc = -1;
  if (cudaMemset(d_bad, 0, sizeof bad) == cudaSuccess) {
    check_decoders_kernel<<<256, 256>>>(d_bad);
    if (cudaMemcpy(&bad, d_bad, sizeof bad, cudaMemcpyDeviceToHost) == cudaSuccess) rc = (long long)bad;
  }
  cudaFree(d_bad);
  return rc;
}
