/* Flush rows of the SSM state engine on the GPU (ssm_cuda_internal.cuh): the conventional step,
 * replay and spec flushes, a verification's flush. S = records folded onto deq(main)
 * (ssm_materialise), a step's output S q (ssm_output_from_state), and the stores.
 *   mat4_kernel   fp32 source into fp32 (or scratch) destinations, rows straight to registers
 *   mat2_kernel   every other source and destination format (and fp32 where mat4 does not run: dv > 256, the B = 1 conventional step)
 *   store_kernel  scaled destination formats and verifications: encode scratch S per head
 * Which one runs is decided in ssm_cuda_api.cu (launch_flush_rows). */
#include "src/io/env_switch.h"
#include "src/io/errbuf.h"
#include "src/ssm_cuda/ssm_cuda_internal.cuh"

namespace ssmc {
namespace {

constexpr int STORE_THREADS = 256;

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

__device__ inline float src_at(const row_src &r, int c) {
  const uint8_t *scale = r.scales ? r.scales + (size_t)(c / r.block) * (size_t)r.scale_elem : nullptr;
  return rssm_decode_at((qformat_kind)r.kind, r.codes, scale, r.s_dec, c);
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

/* Grid (H, B), V2_WARPS warps; warp w takes rows w + 8 (r + R t), r < R, R rows in flight (their
 * loads and butterflies together). For flush rows: S = records 1..n folded in order onto
 * deq(main) (ssm_materialise); GDN records j >= rf get u recomputed from the running row (and
 * written back to the ring, as the CPU does). Step: n = h + 1 and o = S q
 * (ssm_output_from_state); verify/flush: n = h, no output. nstore == 0: the row goes to the
 * scratch S, for store_kernel (scaled formats) and, in a verification, for the drafts' readouts.
 * nstore > 0: the row is stored straight from the registers into the nstore (unscaled)
 * checkpoints (store_row_unscaled) and S is not touched, so such a flush moves only the
 * checkpoint bytes. The first rows' loads go out before the records are staged. A lane holds
 * M = ceil(dk / 32) elements of a row (template), so the registers go to rows. ALL_F32: an fp32
 * source and fp32 (or scratch) destinations only, so no decoder or encoder is compiled in and 6
 * rows fit in 80 registers (3 blocks per SM); otherwise v2_rows(M) rows at 2 blocks per SM. */
template <int M, bool ALL_F32>
__global__ void __launch_bounds__(V2_WARPS * 32, ALL_F32 && M <= 4 ? 3 : 2)
    mat2_kernel(dev_state d, ck_view src, int op, const float *q_in /* [B][1][G][dk] */,
                float *o /* [B][H][dv] */, int nstore, store_params st0, store_params st1) {
  pdl_enter();
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

/* mat4: rows row0 .. row0 + rn - 1 (registers) into the nstore fp32 checkpoints as their
 * bits (rssm_encode_block's fp32 copy), or into the scratch S when nstore == 0. */
template <int M, int RB>
__device__ inline void store_rows_f32(const dev_state &d, size_t mat, int row0, int rn, const float (*x)[M] /* [RB][M] */,
                                      int nstore, const store_params &st0, const store_params &st1, int lane) {
  const int dv = d.dv, dk = d.dk;
#pragma unroll
  for (int r = 0; r < RB; r++) {
    if (r >= rn) break; /* warp-uniform */
    const int i = row0 + r;
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

/* mat4: fp32 rows r0 .. r0 + RB - 1 of a tile (rows >= nr: zeros) straight into registers. */
template <int M, int RB>
__device__ inline void load_rows_f32(const uint8_t *tile_rows /* the tile's first row */, size_t rowb, int r0, int nr,
                                     int dk, int lane, float (*xn)[M] /* [RB][M] */) {
#pragma unroll
  for (int r = 0; r < RB; r++) {
    const float *row = reinterpret_cast<const float *>(tile_rows + (size_t)(r0 + r) * rowb);
#pragma unroll
    for (int m = 0; m < M; m++) {
      const int c = lane + 32 * m;
      xn[r][m] = (r0 + r < nr && c < dk) ? row[c] : 0.0f;
    }
  }
}

/* v4 materialisation (session 15) of fp32 sources into fp32 destinations (the
 * conventional fp32 step and the fp32 flushes; mat2_kernel<M, true> otherwise): grid (H, B), one
 * warp per wr-row tile of the head (wr a multiple of RB, at most 32: mat4_rows_per_warp). At
 * entry the block stages the records (alphas, betas, the group's k, x or v) and every warp loads
 * its first RB source rows (RB = 4 or 8: launch_flush_rows picks) straight into registers; each
 * batch's successor is loaded before the batch is folded. (v3's mat3_kernel staged the whole tile
 * in shared memory, 48-83 KB a block, 2-4 blocks an SM; docs/gpu-results.md "Session 15".)
 * Per row exactly mat2's arithmetic: the fold of ssm_math.h item 4 per record in ascending
 * order; GDN u (item 5) from S_{j-1,i} . k_j, whose RB sums per batch are reduced together
 * (reduce_sums: the butterfly's bits) and broadcast from the lane that holds each; the output
 * S q (op STEP) the same way; fp32 stores of the registers' bits.
 * Launch bounds (256, 1), not (256, 2): at two blocks of 256 an SM the compiler had 128 registers,
 * and <4, 8> (the Mamba-2 step) spilled 120 bytes, <8, 8> 804: a spill store of a row element
 * waits for its load, so the batch's loads went out in three or four rounds (Nsight Compute,
 * session 35: mat4 took 7.5 us of the M2 fixture's step, its first stall the spill stores). With
 * up to 255 no variant spills (ptxas -v: 96, 165, 168, 215 registers); the blocks are mostly
 * 64-128 threads, so several still fit an SM. <4, 4> may have 16 warps (mat4_max_warps). */
template <int M, int RB>
__global__ void __launch_bounds__(32 * mat4_max_warps(M, RB), 1)
    mat4_kernel(dev_state d, ck_view src, int op, const float *q_in /* [B][1][G][dk] */, float *o /* [B][H][dv] */,
                int nstore, store_params st0, store_params st1, int wr,
                step_fuse fz /* on: the conventional step's plan and book too */) {
  pdl_enter();
  extern __shared__ __align__(16) unsigned char smem[];
  const int hd = blockIdx.x, b = blockIdx.y;
  /* The row's ring position, and with fz.on the plan's inputs, loaded in one batch before any
     decision: behind the decision's branches and head 0's stores below (which the compiler must
     assume may alias them) they were a chain of three or four L2 round trips before the first
     staging load (session 34: mat4 adds 7-9 us to a fixture step, tests/gpu/kernel_trace.c).
     Nothing in this kernel writes d.h, d.base, d.pending or fz.active. */
  const int h = d.h[b], base = d.base[b];
  const int pending = fz.on ? d.pending[b] : 0;
  const int act = !fz.on || !fz.active || fz.active[b] != 0;
  /* likewise the counters the fused step's book advances at the end (thread 0: the head's event,
     head 0's also the row's nflush): incremented in place there, their loads were a last round
     trip on the kernel's critical path. Only that thread of this block writes them. */
  const size_t mat = (size_t)b * d.H + hd; /* the block's (row, head) matrix */
  const bool books = fz.on && threadIdx.x == 0;
  const uint32_t event0 = books ? d.event[mat] : 0u;
  const uint64_t nflush0 = books && hd == 0 ? d.nflush[b] : 0u;
  if (fz.on) {
    /* plan_kernel's decision for the row, written (and a misuse counted) by head 0's block. Every
       thread decides for itself from the same reads (nothing here writes what step_flag_from
       reads), rather than through a static __shared__ flag: static shared memory lowers the
       dynamic maximum below the opt-in limit raise_smem_mat sets, and the attribute call failed
       (H100, 2026-12-07, session 33 call 1). */
    bool misuse;
    const int fl = step_flag_from(d, act, pending, h, &misuse);
    if (threadIdx.x == 0 && hd == 0) {
      if (misuse) d.misuse[b]++;
      if (fl != FLAG_IDLE) d.flushed[b] = 0; /* the CPU clears it at every accepted call */
      d.flag[b] = fl;
    }
    if (fl != FLAG_FLUSH) return;
  } else if (d.flag[b] != FLAG_FLUSH) {
    return;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nthr = blockDim.x;
  const int H = d.H, dv = d.dv, dk = d.dk, G = d.G, g = hd / d.hpg, cap = d.cap;
  const int n = op == OP_STEP ? h + 1 : h;
  int rf; /* recompute_from of ssm_step.c, as mat2_kernel */
  if (d.conventional) rf = 1;
  else if (d.split && d.recompute) rf = 1;
  else rf = op == OP_STEP ? n : n + 1;

  float *al = reinterpret_cast<float *>(smem);          /* [cap]     record alphas */
  float *bt = al + cap;                                 /* [cap]     GDN betas */
  float *kk = bt + cap;                                 /* [cap][dk] record k (key group g) */
  float *xx = kk + (size_t)cap * dk;                    /* [cap][dv] stored x, or v where u is recomputed */
  float *qv = xx + (size_t)cap * dv;                    /* [dk]      step: q */

  /* the records (and q), one commit group */
  const size_t rowb = (size_t)dk * sizeof(float); /* fp32: code_row = 4 dk */
  if (fz.on) {
    /* the step's one record (n = h + 1 = 1), from the inputs; into the ring as plan_kernel
       writes it (its slot h + 1), so the state after the step is the unfused one */
    const size_t sl = (size_t)b * cap + slot_of(d, base, n);
    const float *ka = fz.in.k + ((size_t)b * G + g) * dk;  /* [dk] */
    const float *va = fz.in.v + ((size_t)b * H + hd) * dv; /* [dv] */
    if (threadIdx.x == 0) {
      al[0] = d.rec_alpha[sl * H + hd] = fz.in.alpha[(size_t)b * H + hd];
      if (d.gdn) bt[0] = d.rec_beta[sl * H + hd] = fz.in.beta[(size_t)b * H + hd];
    }
    stage(reinterpret_cast<uint8_t *>(kk), reinterpret_cast<const uint8_t *>(ka), rowb, threadIdx.x, nthr);
    stage(reinterpret_cast<uint8_t *>(xx), reinterpret_cast<const uint8_t *>(va), (size_t)dv * sizeof(float),
          threadIdx.x, nthr);
    float *vring = (d.gdn ? d.rec_v : d.rec_x) + (sl * H + hd) * dv; /* [dv] */
    for (int i = threadIdx.x; i < dv; i += nthr) vring[i] = va[i];
    if (hd % d.hpg == 0) /* the key group's first head writes its k */
      for (int i = threadIdx.x; i < dk; i += nthr) d.rec_k[(sl * G + g) * dk + i] = ka[i];
  } else {
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
            reinterpret_cast<const uint8_t *>(xsrc + (sl * H + hd) * dv), (size_t)dv * sizeof(float), threadIdx.x,
            nthr);
    }
  }
  if (op == OP_STEP)
    stage(reinterpret_cast<uint8_t *>(qv), reinterpret_cast<const uint8_t *>(q_in + ((size_t)b * G + g) * dk), rowb,
          threadIdx.x, nthr);
  cp_async_commit();
  /* rows i0 .. i0 + nr - 1; wr is a multiple of RB, so a row takes the same place in its batch
     (row mod RB) and the same arithmetic whatever wr is: the bits do not depend on it */
  const int i0 = warp * wr, nr = dv - i0 < wr ? dv - i0 : wr;
  const uint8_t *grow = src.blob + mat * (size_t)src.bpm + src.codes_off + (size_t)i0 * (size_t)src.code_row;
  /* rows go from global memory straight to registers, RB at a time, the next batch's loads
     issued before this batch's folds; the block's shared memory is only the records, so many
     more blocks fit an SM than with session 14's staged tile (48-83 KB a block) */
  float xn[RB][M];
  load_rows_f32<M, RB>(grow, rowb, 0, nr, dk, lane, xn);
  cp_async_wait<0>();
  __syncthreads();    /* everyone's (and the plain loads of al, bt) */

  float qr[M];
#pragma unroll
  for (int m = 0; m < M; m++) {
    const int c = lane + 32 * m;
    qr[m] = (op == OP_STEP && c < dk) ? qv[c] : 0.0f;
  }
#pragma unroll 1
  for (int c0 = 0; c0 < wr / RB; c0++) {
    const int r0 = c0 * RB;
    if (r0 >= nr) break; /* warp-uniform */
    const int rn = nr - r0 < RB ? nr - r0 : RB;
    float x[RB][M];
#pragma unroll
    for (int r = 0; r < RB; r++)
#pragma unroll
      for (int m = 0; m < M; m++) x[r][m] = xn[r][m];
    if (r0 + RB < nr) load_rows_f32<M, RB>(grow, rowb, r0 + RB, nr, dk, lane, xn); /* the next batch, ahead */
    for (int j = 1; j <= n; j++) {
      const float alpha = al[j - 1];
      const float *kj = kk + (size_t)(j - 1) * dk;
      float kr[M];
#pragma unroll
      for (int m = 0; m < M; m++) {
        const int c = lane + 32 * m;
        kr[m] = c < dk ? kj[c] : 0.0f;
      }
      float xi[RB];
#pragma unroll
      for (int r = 0; r < RB; r++) xi[r] = r < rn ? xx[(size_t)(j - 1) * dv + i0 + r0 + r] : 0.0f;
      if (d.gdn && j >= rf) {
        /* ssm_math.h item 5 with sk = S_{j-1,i} . k_j (item 1): xi holds v_j[i] here */
        float v[RB];
#pragma unroll
        for (int r = 0; r < RB; r++) {
          float p = 0.0f;
#pragma unroll
          for (int m = 0; m < M; m++)
            if (lane + 32 * m < dk) p = p + x[r][m] * kr[m];
          v[r] = p;
        }
        const float sum = reduce_sums<RB>(v, lane); /* lane (32 / RB) r holds row r's */
#pragma unroll
        for (int r = 0; r < RB; r++) {
          const float skv = __shfl_sync(0xffffffffu, sum, (32 / RB) * r);
          xi[r] = rssm_gdn_u(xi[r], bt[j - 1], alpha, skv);
          if (lane == 0 && r < rn)
            d.rec_x[(((size_t)b * cap + slot_of(d, base, j)) * H + hd) * dv + i0 + r0 + r] = xi[r];
        }
      }
      /* ssm_math.h item 4: s = alpha * s + x * k, two rounded products then their sum */
#pragma unroll
      for (int r = 0; r < RB; r++)
#pragma unroll
        for (int m = 0; m < M; m++)
          if (lane + 32 * m < dk) x[r][m] = alpha * x[r][m] + xi[r] * kr[m];
    }
    if (op == OP_STEP) {
      float v[RB];
#pragma unroll
      for (int r = 0; r < RB; r++) {
        float p = 0.0f;
#pragma unroll
        for (int m = 0; m < M; m++)
          if (lane + 32 * m < dk) p = p + x[r][m] * qr[m];
        v[r] = p;
      }
      const float sum = reduce_sums<RB>(v, lane);
      constexpr int lanes_per_sum = 32 / RB;
      if (lane % lanes_per_sum == 0 && lane / lanes_per_sum < rn) o[mat * dv + i0 + r0 + lane / lanes_per_sum] = sum;
    }
    store_rows_f32<M, RB>(d, mat, i0 + r0, rn, x, nstore, st0, st1, lane);
  }
  if (fz.on) {
    /* step_book_kernel's count_store, after every warp's stores have read the head's event */
    __syncthreads();
    if (books) {
      d.event[mat] = event0 + 1u;
      if (hd == 0) {
        d.nflush[b] = nflush0 + 1u;
        d.flushed[b] = 1;
      }
    }
  }
}

/* Grid (H, B). Flush rows: encode the scratch S of one head into a checkpoint blob with the
 * encoder of quant/numerics.h, SR counter (seed, matrix id, event of this store, stream), as
 * q_encode_cpu does. Unscaled formats: one thread per element; scaled: one per block of a row;
 * NVFP4 first reduces the matrix amax (a max is exact in any order). Padding bytes are never
 * written: they keep the zeros of the initial blob, as the CPU's memset gives. */
__global__ void store_kernel(dev_state d, ck_view dst, int sr_on, uint64_t seed, uint32_t stream) {
  pdl_enter();
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

}  // namespace

void launch_mat2(int M, bool all_f32, dim3 grid, size_t smem, cudaStream_t s, const dev_state &d, const ck_view &src,
                 int op, const float *q, float *o, int nstore, const store_params &st0, const store_params &st1) {
#define MAT2(M, F) pdl_launch(mat2_kernel<M, F>, grid, V2_WARPS * 32, smem, s, d, src, op, q, o, nstore, st0, st1)
  if (M <= 4) {
    if (all_f32) MAT2(4, true);
    else MAT2(4, false);
  } else {
    if (all_f32) MAT2(8, true);
    else MAT2(8, false);
  }
#undef MAT2
}

int mat4_rows_per_warp(int dv, int M, int rows, int B) {
  /* 32 at wide B: 16 or 8 rows a warp were slower at the 4B shapes' B = 64 (session 36 call 2,
     docs/gpu-results.md: qwen4b 117.4 -> 120.4 / 150.0 us, nano 195.4 -> 216.8 us) */
  if (B >= MAT4_WIDE_B) return 32;
  static const char *const eight_only[] = {"8"};
  static const bool eight = rssm_env_switch("RSSM_MAT4_WARPS", eight_only, 1, -1) == 0;
  const int most = eight ? 8 : mat4_max_warps(M, rows);
  int wr = rows;
  while (wr < 32 && (dv + wr - 1) / wr > most) wr += rows;
  return wr;
}

void launch_mat4(int M, int rows, dim3 grid, size_t smem, cudaStream_t s, const dev_state &d, const ck_view &src,
                 int op, const float *q, float *o, int nstore, const store_params &st0, const store_params &st1,
                 const step_fuse &fz) {
  const int wr = mat4_rows_per_warp(d.dv, M, rows, d.B);
  const unsigned threads = 32u * (unsigned)((d.dv + wr - 1) / wr);
  if (rows == 4) {
    if (M <= 4)
      pdl_launch(mat4_kernel<4, 4>, grid, threads, smem, s, d, src, op, q, o, nstore, st0, st1, wr, fz);
    else
      pdl_launch(mat4_kernel<8, 4>, grid, threads, smem, s, d, src, op, q, o, nstore, st0, st1, wr, fz);
    return;
  }
  if (M <= 4)
    pdl_launch(mat4_kernel<4, 8>, grid, threads, smem, s, d, src, op, q, o, nstore, st0, st1, wr, fz);
  else
    pdl_launch(mat4_kernel<8, 8>, grid, threads, smem, s, d, src, op, q, o, nstore, st0, st1, wr, fz);
}

void launch_store(dim3 grid, cudaStream_t s, const dev_state &d, const store_params &p) {
  pdl_launch(store_kernel, grid, STORE_THREADS, 0, s, d, p.v, p.sr_on, p.seed, p.stream);
}

int raise_smem_mat(size_t mat2_bytes, int optin, char *err, size_t errlen) {
  const void *m2[] = {
      reinterpret_cast<const void *>(mat2_kernel<4, true>), reinterpret_cast<const void *>(mat2_kernel<4, false>),
      reinterpret_cast<const void *>(mat2_kernel<8, true>), reinterpret_cast<const void *>(mat2_kernel<8, false>),
  };
  if (mat2_bytes > 48 * 1024)
    for (const void *f : m2)
      if (cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)mat2_bytes) != cudaSuccess)
        return rssm_fail(err, errlen, "cannot raise the %s kernel's shared memory to %zu bytes",
                         "materialisation v2", mat2_bytes);
  /* mat4 has mat2's layout (the records), which fits: raised to the opt-in maximum */
  const void *m4[] = {reinterpret_cast<const void *>(mat4_kernel<4, 8>), reinterpret_cast<const void *>(mat4_kernel<8, 8>),
                      reinterpret_cast<const void *>(mat4_kernel<4, 4>), reinterpret_cast<const void *>(mat4_kernel<8, 4>)};
  for (const void *f : m4)
    if (cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) != cudaSuccess)
      return rssm_fail(err, errlen, "cannot raise the v4 materialisation's shared memory to %d bytes", optin);
  return 0;
}

}  // namespace ssmc
