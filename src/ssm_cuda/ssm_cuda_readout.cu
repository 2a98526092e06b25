/* Output-only readouts of the SSM state engine on the GPU (ssm_readout and ssm_gdn_u_readout of
 * ssm_replay.c; ssm_cuda_internal.cuh): replay non-flush steps, every spec draft, GDN u.
 * Rows that take part: step: non-flush rows; verify: every planned row, reading the scratch S
 * (fp32, just materialised) on flush rows and the read checkpoint (C_lp when split, else the
 * shared one) otherwise, as ssm_verify does.
 *   pre3_kernel, ro4_kernel  the precompute / stream split: every read format and skip= (the
 *                            default; measured as "v4", docs/gpu-results.md "Session 15")
 *   ro2_kernel               one block per (row, key group), its own setup: the shapes ro4 does
 *                            not take (dv > 256, or its shared memory over the limit), never skip=
 * Both give the same bits for every value; which one runs is decided in ssm_cuda_api.cu
 * (launch_readout). The staged-tile ro3 of 2026-12-01 (v3) lost to ro4 in every case and was
 * deleted in session 15 (git history before that holds it). */
#include <type_traits>

#include "src/io/errbuf.h"
#include "src/ssm_cuda/ssm_cuda_internal.cuh"

namespace ssmc {
namespace {

constexpr int RO_XCHUNK = 8; /* ro2: record values loaded at once per row */
constexpr int PRE_WARPS = 4; /* warps of a pre3 block */
constexpr int QG3 = 4;       /* ro4: queries reduced together: QG3 x R3 = 32 sums per halving */

/* Warp-32 dot of two vectors in memory. */
__device__ inline float warp_dot(const float *a /* [dk] */, const float *y /* [dk] */, int dk, int lane) {
  float p = 0.0f;
  for (int c = lane; c < dk; c += 32) p = p + a[c] * y[c];
  return butterfly(p);
}

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
 * ro2 (measured as "v2", docs/gpu-results.md): ships for the shapes whose ro4 does not fit. What
 * keeps memory in flight: v2_rows(M) rows per batch (8; 4 when dk > 128), the first batch loaded
 * before the block's setup (fp32 and 16-bit reads), the query held in registers, and 8/4-bit
 * checkpoints decoded through per-block tables filled by rssm_decode_elem / rssm_e8m0_decode
 * themselves (so a lookup is the decoder's value), with each lane's code and scale offsets
 * computed once.
 * ------------------------------------------------------------------------------------------- */

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

/* Grid (G, B), V2_WARPS warps. Per block: the query vectors y, every k_j . y once for the key
 * group, and the decay weights and coefficients of each (head, query). Then the warps take (head,
 * tile of 32 state rows) items: v2_rows(M) rows at a time are loaded and their C_i . y computed
 * for all queries from one read of each row (warp-32 order); then lane r runs row i0 + r through
 * the queries in order (ascending records, ssm_math.h item 3; GDN u, item 5), loading RO_XCHUNK
 * record values at once. Decode tables and the first batch go out before the block's setup (see
 * the section comment). */
template <int M, int FC>
__global__ void __launch_bounds__(V2_WARPS * 32, M > 4 ? 2 : 3)
    ro2_kernel(dev_state d, ck_view rd, int op, const float *q_in /* [B][nt][G][dk] */, int nt,
               float *o /* [B][nt][H][dv] */) {
  pdl_enter();
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
 * pre3 (measured with ro3 as "v3", issue 17): the precompute half of the output-only readout.
 * Same operations, operands and association as ro2_kernel for every value (ssm_math.h items 1-3
 * and 5), so the same bits: the k_j . y dots of every query, the decay weights and the
 * coefficients c_j = w_{j+1} (k_j . y) per (head, query), written to st->coefs. In ro2 this setup
 * ran inside the streaming block, three barriers long, with no checkpoint bytes in flight. The
 * streaming half, ro4, reduces the dot products C_i . y of 8 rows x up to 4 queries together by
 * recursive halving (cy_chunk, reduce_sums: 31 shuffles for 32 sums, not 160).
 * ------------------------------------------------------------------------------------------- */

/* Grid (G, B), PRE_WARPS warps; the rows of ro2_kernel's plan. Per (row, key group): the records'
 * k and the output queries are staged in shared memory (coalesced, all loads in flight), then
 * every k_j . y_qi (warp-32 order; warp per (query, record)), then per (head, query) one thread:
 * rssm_decay_weights and rssm_readout_coef as ro2_kernel, stored as
 * coefs[b][hd][qi][0..n-1] = c_j and coefs[b][hd][qi][cap] = w_0 (gamma_n, the checkpoint's). */
__global__ void __launch_bounds__(PRE_WARPS * 32)
    pre3_kernel(dev_state d, int op, const float *q_in /* [B][nt][G][dk] */, int nt,
                float *coefs /* [B][H][NQ][cap + 1] */, int NQ) {
  pdl_enter();
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
    /* a U query's y is k_rec, an output query's q_t: the same values as ro2_kernel's ys */
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

/* C_i . y of the chunk's R rows (registers) for queries q0.. in groups of QG, reduced together
 * (QG x R sums per halving); written to cd[qi][row0 + r] for rows r < rn. Each sum is its row's
 * and query's warp-32 dot whatever R and QG are (reduce_sums), so the batch size is free. */
template <int M, int QG, int R>
__device__ inline void cy_chunk(const float (*x)[M] /* [R][M] */, const float *ys /* [nq][dk] */, int nq,
                                int dk, int dv, int row0, int rn, int lane, float *cd /* [nq][dv] */,
                                const float *cf /* [nq][cap + 1] */, int cap, double skip) {
  for (int q0 = 0; q0 < nq; q0 += QG) {
    float v[QG * R];
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
      for (int r = 0; r < R; r++) {
        /* lane's warp-32 partial: +0, then p + x*y over m ascending (c < dk) */
        float p = 0.0f;
#pragma unroll
        for (int m = 0; m < M; m++)
          if (lane + 32 * m < dk) p = p + x[r][m] * y[m];
        v[qq * R + r] = p;
      }
    }
    const float sum = reduce_sums<QG * R>(v, lane);
    const int idx = lane / (32 / (QG * R)), qi = q0 + idx / R, r = idx % R;
    if (lane % (32 / (QG * R)) == 0 && qi < nq && r < rn) {
      /* Appendix F (ssm_readout): a query whose checkpoint weight gamma_n = w_0 is below the
         threshold (compared as doubles) counts C_i . y as +0 */
      const bool sk = skip > 0.0 && (double)cf[(size_t)qi * (cap + 1) + cap] < skip;
      cd[(size_t)qi * dv + row0 + r] = sk ? 0.0f : sum;
    }
  }
}

/* ---------------------------------------------------------------------------------------------
 * ro4 (issue 17, session 15): pre3's coefficients, then a streaming kernel that reads the
 * checkpoint rows from global memory straight into registers. Why: ro3 (v3) staged each warp's whole
 * 32-row tile in shared memory (55-96 KB a block), so 2-4 blocks fitted an SM (17-18 %
 * occupancy, DRAM 43 %, ncu 2026-12-03), and its decoders spent ~20 instructions an element (the
 * runtime division c / block, branchy E2M1 / E4M3 decodes). Here a block holds only the queries,
 * coefficients, C_i . y and the head's record x (ro4_layout, ~10 KB for a step), the lane's code
 * and scale offsets are computed once (lane_cols_of), the read format is a template parameter
 * (one code and one scale register per element in flight, no runtime format switch) and the
 * decodes are the branch-free register ones of quant/decode_fast.h. fp32 rows and the word
 * kinds' codes are loaded one batch ahead (the next batch's loads go out before this batch's dot
 * products; RO4_ROWS a batch but two fp32 cases, ro4_rows_q); a verification's fp32 scratch
 * rows in a low-precision instance take a loop of their own (ro4_kernel). Same operations, operands and association as ro2 (and the CPU engine)
 * for every value: the same bits.
 * ------------------------------------------------------------------------------------------- */

/* The read formats ro4 decodes (template parameter FK). RK_GEN: every other stored format
 * (fp16 too), decoded element by element by rssm_decode_at from global memory. */
/* blocks of 256 threads an SM that the registers must allow: 2 (128 registers). 3 (80) spilled
 * with session 15's 8-row batches and was no faster (docs/gpu-results.md "Session 15"); with
 * 4-row batches (RO4_ROWS) the word kinds stay under 82 at 2 and fit 80 without spills at 3
 * (session 16, compiled, not timed) */
constexpr int RO4_MIN_BLOCKS = 2;

enum { RK_F32 = 0, RK_BF16 = 1, RK_NVFP4 = 2, RK_E4M3 = 3, RK_GEN = 4, RK_NVFP4W = 5, RK_E4M3W = 6, RK_BF16W = 7 };

/* The template instance for a checkpoint: NVFP4 with its standard 16-element blocks of one-byte
 * scales, and fp8 e4m3 whose fp32 block scale covers a whole row (block >= 32 M, the default 128
 * with dk <= 128), have register decoders with compile-time offsets; everything else is RK_GEN.
 * At dk = 128 with 4-byte aligned rows those two load whole 32-bit words instead (the *W kinds):
 * a lane's columns c = lane + 32 m sit two bytes (bf16), one byte (e4m3) or one nibble (NVFP4)
 * apart from their neighbours', so a warp's narrow loads would move 16-64 bytes an instruction;
 * word loads move 128 and a shuffle hands each lane its code. */
inline int ro4_kind(const ck_view &v, int M, int dk) {
  const bool words = M == 4 && dk == 128 && ((v.codes_off | v.code_row | v.scales_off | v.bpm) & 3) == 0;
  switch (v.kind) {
    case QF_FP32: return RK_F32;
    case QF_BF16: return words ? RK_BF16W : RK_BF16;
    case QF_NVFP4: return v.block == 16 && v.scale_elem == 1 ? (words ? RK_NVFP4W : RK_NVFP4) : RK_GEN;
    case QF_FP8_E4M3: return v.block >= 32 * M && v.scale_elem == 4 ? (words ? RK_E4M3W : RK_E4M3) : RK_GEN;
    default: return RK_GEN;
  }
}

/* Rows per batch of an instance (R of ro4_tile): 4, but for two fp32 cases below. Every value has the same
 * bits for any R (each C_i . y is its own warp-32 dot, cy_chunk), so R only moves registers and
 * loads in flight. At 8 rows (session 15) the low-precision instances took 126-128 registers,
 * most of them spilling (up to 548 bytes at M = 4, 1624 at M = 8, where a batch is 64 floats a
 * lane), so 4-5 blocks of 4 warps fitted an SM (~20 % occupancy). 4 rows halve the decoded batch
 * and the codes held with it: no spills, the word kinds at 64-82 registers, and on the H200 bf16
 * reads 1.08-1.28x and nvfp4 up to 1.08x faster than 8 rows, fp8 within 1.1 % or faster
 * (docs/gpu-results.md, "Session 16", call 3, where both builds ran). fp32 at M = 4 kept 8 rows
 * until session 17 (120 registers, latency-bound at 21-24 % occupancy); 4 rows made its
 * non-flush step 1.03-1.13x faster on all four shapes (docs/gpu-results.md, "Session 17", call 2,
 * both builds in one call). M = 8 spilled 244-492 bytes at 8 rows for fp32 too. */
__host__ __device__ constexpr bool ro4_word(int FK) { return FK == RK_NVFP4W || FK == RK_E4M3W || FK == RK_BF16W; }
constexpr int RO4_ROWS = 4;
/* A verification's fp32 instance (QG3 queries a group) keeps 8 rows: its 4 queries x 8 rows make
 * the 32 sums one halving reduces, and on the H200 it made the T = 8 round 1.04-1.05x faster than
 * 4 rows (docs/gpu-results.md, "Session 17", call 3, both builds in one call). */
__host__ __device__ constexpr int ro4_rows_q(int M, int FK, int QG) {
  return (M == 4 && FK == RK_F32 && QG > 2) ? 8 : RO4_ROWS;
}
/* A step's fp32 instance (M = 4) on a grid of at most one block an SM (B = 1 on every bench shape) takes
 * 8 rows: there no other block hides a warp's dependent chain of batches, so half as many
 * batches is what counts, not the registers; on the H200 at B = 1 the 4-row non-flush step was
 * 1.0-1.5 us slower than 8 rows (24.0 against 22.5 us on nano; docs/gpu-results.md "Session 17",
 * calls 2 and 3), at B = 256 1.03-1.13x faster. */
inline bool ro4_one_wave(unsigned blocks, int sms) { return sms > 0 && blocks <= (unsigned)sms; }

/* One batch of R rows as loaded: the lane's code unit of each of its M columns and the block
 * scale it needs (the E4M3 byte for NVFP4, the fp32 scale's bits for fp8). */
template <int M, int R>
struct raw_batch {
  uint32_t code[R][M];
  uint32_t scale[R][M];
};

/* Issues the loads of rows row0 .. row0 + R - 1 of the tile (rows >= nr: zeros, their sums are
 * not stored). FK = RK_F32: fp32 rows into x directly, at f32 + row * dk when f32 != nullptr (a
 * verification's scratch S), else the checkpoint's; the other kinds never read f32 (their
 * instances run scratch rows through RK_F32, ro4_kernel). RK_GEN decodes here. */
template <int M, int FK, int R>
__device__ inline void ro4_load(raw_batch<M, R> &rb, float (*x)[M] /* [R][M] */, const float *f32 /* [dv][dk] */,
                                const ck_view &v, const uint8_t *mb /* this matrix */, float s_dec, int row0, int nr,
                                const lane_cols<M> &lc, int dk, int lane) {
#pragma unroll
  for (int r = 0; r < R; r++) {
    const int i = row0 + r;
    const bool live = r < nr;
    if (FK == RK_F32) {
      const float *row = f32 != nullptr ? f32 + (size_t)i * dk
                                        : reinterpret_cast<const float *>(mb + v.codes_off + (size_t)i * v.code_row);
#pragma unroll
      for (int m = 0; m < M; m++) x[r][m] = live && lc.valid[m] ? row[lane + 32 * m] : 0.0f;
      continue;
    }
    const uint8_t *codes = mb + v.codes_off + (size_t)i * (size_t)v.code_row;
    const uint8_t *scales = mb + v.scales_off + (size_t)i * (size_t)(v.blocks_per_row * v.scale_elem);
    if (FK == RK_BF16W) { /* words lane and lane + 32 of the row's 64 (128 codes) */
      rb.code[r][0] = live ? reinterpret_cast<const uint32_t *>(codes)[lane] : 0u;
      rb.code[r][1] = live ? reinterpret_cast<const uint32_t *>(codes)[lane + 32] : 0u;
      continue;
    }
    if (FK == RK_E4M3W) { /* word lane of the row's 32 (128 codes), and the row's fp32 scale */
      rb.code[r][0] = live ? reinterpret_cast<const uint32_t *>(codes)[lane] : 0u;
      rb.scale[r][0] = live ? *reinterpret_cast<const uint32_t *>(scales) : 0u;
      continue;
    }
    if (FK == RK_NVFP4W) { /* 16 words a row: lane holds word lane % 16 of row 2 p + lane / 16 */
      if ((r & 1) != 0) continue;
      const int rr = r + (lane >> 4);
      const uint8_t *c2 = mb + v.codes_off + (size_t)(row0 + rr) * (size_t)v.code_row;
      rb.code[r >> 1][0] = rr < nr ? reinterpret_cast<const uint32_t *>(c2)[lane & 15] : 0u;
      if (r == 0) { /* the batch's R x 8 scale bytes, contiguous: lane < 2 R holds word lane */
        const uint8_t *s2 = mb + v.scales_off + (size_t)(row0 + (lane >> 1)) * 8;
        rb.scale[0][0] = lane < 2 * R && (lane >> 1) < nr ? reinterpret_cast<const uint32_t *>(s2)[lane & 1] : 0u;
      }
      continue;
    }
    /* per-lane bases plus compile-time column offsets, so that a row needs one address: column
       c = lane + 32 m is code unit c (bf16, e4m3) or byte c / 2 = lane / 2 + 16 m (NVFP4), in
       NVFP4 block c / 16 = lane / 16 + 2 m; the e4m3 row has one block scale (ro4_kind) */
    if (FK == RK_E4M3) rb.scale[r][0] = live ? *reinterpret_cast<const uint32_t *>(scales) : 0u;
#pragma unroll
    for (int m = 0; m < M; m++) {
      const bool ok = live && lc.valid[m];
      if (FK == RK_BF16) {
        rb.code[r][m] = ok ? reinterpret_cast<const uint16_t *>(codes)[lane + 32 * m] : 0u;
      } else if (FK == RK_NVFP4) {
        rb.code[r][m] = ok ? codes[(lane >> 1) + 16 * m] : 0u;
        rb.scale[r][m] = ok ? scales[(lane >> 4) + 2 * m] : 0u;
      } else if (FK == RK_E4M3) {
        rb.code[r][m] = ok ? codes[lane + 32 * m] : 0u;
      } else { /* RK_GEN */
        x[r][m] = ok ? rssm_decode_at((qformat_kind)v.kind, codes, scales + lc.scale[m], s_dec, lane + 32 * m) : 0.0f;
      }
    }
  }
}

/* Decodes a loaded batch into x as rssm_decode_at does (fp32 and RK_GEN rows are values already).
 * Columns past dk and rows past the tile decode their zero codes: the dot skips the former
 * (c < dk) and the latter's sums are not stored. */
template <int M, int FK, int R>
__device__ inline void ro4_decode(const raw_batch<M, R> &rb, float (*x)[M] /* [R][M] */, float s_dec, int lane,
                                  float *sc /* [R][8] this warp's decoded NVFP4 block scales */) {
  if constexpr (FK == RK_BF16W) {
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int m = 0; m < M; m++) {
        /* column c = lane + 32 m is half c % 2 of word c / 2 = lane / 2 + 16 m: word w < 32 is
           lane w's first register, w >= 32 lane w - 32's second */
        const uint32_t w = __shfl_sync(0xffffffffu, rb.code[r][m >> 1], 16 * (m & 1) + (lane >> 1));
        x[r][m] = rssm_decode16_fast(1, (w >> (16 * (lane & 1))) & 0xFFFFu);
      }
  } else if constexpr (FK == RK_E4M3W) {
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int m = 0; m < M; m++) {
        /* column c = lane + 32 m is byte c of the row: word lane / 4 + 8 m, byte lane % 4 */
        const uint32_t w = __shfl_sync(0xffffffffu, rb.code[r][0], (lane >> 2) + 8 * m);
        x[r][m] = rssm_e4m3_fast((w >> (8 * (lane & 3))) & 0xFFu) * rssm_bits_f32(rb.scale[r][0]);
      }
  } else if constexpr (FK == RK_NVFP4W) {
    /* the R x 8 scales decoded once (lanes 0 .. 2 R - 1, four each), read back by the 16 lanes of
       a block */
    __syncwarp();
    if (lane < 2 * R)
#pragma unroll
      for (int k = 0; k < 4; k++) sc[lane * 4 + k] = rssm_e4m3_fast((rb.scale[0][0] >> (8 * k)) & 0xFFu);
    __syncwarp();
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int m = 0; m < M; m++) {
        /* column c = lane + 32 m is nibble c % 2 of byte c / 2 = lane / 2 + 16 m: word lane / 8 + 4 m
           (held by lane 16 (r % 2) + that), bits 4 (lane % 8) up; its block c / 16 = lane / 16 + 2 m */
        const uint32_t w = __shfl_sync(0xffffffffu, rb.code[r >> 1][0], 16 * (r & 1) + (lane >> 3) + 4 * m);
        const float e = rssm_e2m1_fast((w >> (4 * (lane & 7))) & 0xFu);
        x[r][m] = (e * sc[r * 8 + (lane >> 4) + 2 * m]) * s_dec;
      }
  } else {
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
      for (int m = 0; m < M; m++) {
        const uint32_t cw = rb.code[r][m];
        if (FK == RK_BF16) /* the bf16 decode of rssm_decode16_fast */
          x[r][m] = rssm_decode16_fast(1, cw);
        else if (FK == RK_NVFP4) /* (e * s) * S_dec */
          x[r][m] = (rssm_e2m1_fast((cw >> ((lane & 1) * 4)) & 0xFu) * rssm_e4m3_fast(rb.scale[r][m])) * s_dec;
        else if (FK == RK_E4M3) /* e * fp32 block scale (the row's one) */
          x[r][m] = rssm_e4m3_fast(cw) * rssm_bits_f32(rb.scale[r][0]);
      }
  }
}

/* One warp's tile of nr rows from i0: batches of R rows loaded (ro4_load), decoded (ro4_decode)
 * and their C_i . y reduced into cd (cy_chunk). The first batch's loads go out before the block
 * waits for its staged vectors (the barrier is here: ro4_kernel calls one instance per block,
 * chosen by block-uniform values). AHEAD: the next batch's loads go out before this batch's dot
 * products (codes into rb, fp32 rows into xn), so two batches are held at once. */
template <int M, int FK, int QG, int R, bool AHEAD>
__device__ inline void ro4_tile(const float *f32 /* [dv][dk], RK_F32 only */, const ck_view &rd,
                                const uint8_t *mb /* this matrix */, float s_dec, const lane_cols<M> &lc, int i0,
                                int nr, bool all_skip, const float *ys /* [nq][dk] */, int nq, int dk, int dv,
                                float *cd /* [nq][dv] */, const float *cf /* [nq][cap + 1] */, int cap, double skip,
                                float *scw /* [R][8] this warp's NVFP4W scales */, int lane) {
  static_assert(R <= R3 && R % 2 == 0, "ro4_layout sizes the NVFP4W scales for R3 rows; NVFP4W pairs rows");
  constexpr bool rows_f32 = FK == RK_F32 || FK == RK_GEN; /* ro4_load leaves values in xn */
  const int nbatch = all_skip ? 0 : (nr + R - 1) / R;
  raw_batch<M, R> rb;
  float x[R][M], xn[R][M]; /* this batch's decoded rows; the next batch's fp32 rows */
  if (nbatch > 0) ro4_load<M, FK, R>(rb, xn, f32, rd, mb, s_dec, i0, nr, lc, dk, lane);
  cp_async_wait<0>();
  __syncthreads();
#pragma unroll 1
  for (int c = 0; c < nbatch; c++) {
    const int r0 = c * R, rn = nr - r0 < R ? nr - r0 : R;
    if (rows_f32) {
#pragma unroll
      for (int r = 0; r < R; r++)
#pragma unroll
        for (int m = 0; m < M; m++) x[r][m] = xn[r][m];
    } else {
      ro4_decode<M, FK, R>(rb, x, s_dec, lane, scw);
    }
    if (AHEAD && c + 1 < nbatch) ro4_load<M, FK, R>(rb, xn, f32, rd, mb, s_dec, i0 + r0 + R, nr - r0 - R, lc, dk, lane);
    /* QG x R sums per reduction; a step's 1 (Mamba-2) or 2 (GDN) queries are one group, and
       the instance is chosen per operation so that a step does not hold a verification's
       32 sums in registers */
    cy_chunk<M, QG, R>(x, ys, nq, dk, dv, i0 + r0, rn, lane, cd, cf, cap, skip);
    if (!AHEAD && c + 1 < nbatch) ro4_load<M, FK, R>(rb, xn, f32, rd, mb, s_dec, i0 + r0 + R, nr - r0 - R, lc, dk, lane);
  }
}

/* Grid (H, B), one warp per 32-row tile of the head (ceil(dv / 32) warps): per row
 * i, for each query in order, acc = (C_i . y) * w_0, then acc = acc + x_j[i] * c_j over the records
 * in ascending order (rssm_readout_row); GDN U queries turn acc into u (rssm_gdn_u), written to the
 * ring and to the staged x that later queries of this lane read. */
template <int M, int FK, int QG /* queries reduced together: 1, 2 or QG3 (ro4_qg) */,
          int R /* rows per batch of the checkpoint loop: ro4_rows_q, or 8 on one wave (ro4_one_wave) */>
__global__ void __launch_bounds__(256, RO4_MIN_BLOCKS)
    ro4_kernel(dev_state d, ck_view rd, int op, const float *q_in /* [B][nt][G][dk] */, int nt,
               float *o /* [B][nt][H][dv] */, const float *coefs /* [B][H][NQ][cap + 1] */, int NQ) {
  pdl_enter();
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
  const ro4_layout L = ro4_layout_of(nq, dk, cap, dv);
  float *ys = reinterpret_cast<float *>(smem + L.ys); /* [nq][dk] queries */
  float *cf = reinterpret_cast<float *>(smem + L.cf); /* [nq][cap + 1] c_j, w_0 at cap */
  float *cd = reinterpret_cast<float *>(smem + L.cd); /* [nq][dv] C_i . y */
  float *xs = reinterpret_cast<float *>(smem + L.xs); /* [nmax][dv] record x of this head */

  for (int qi = 0; qi < nq; qi++) {
    const query qq = query_of(d, op, h, qi, Tb);
    const float *y = qq.kind == Q_U ? d.rec_k + (((size_t)b * cap + slot_of(d, base, qq.rec)) * G + g) * dk
                                    : q_in + (((size_t)b * nt + qq.t) * G + g) * dk;
    stage(reinterpret_cast<uint8_t *>(ys + (size_t)qi * dk), reinterpret_cast<const uint8_t *>(y),
          (size_t)dk * sizeof(float), threadIdx.x, nthr);
  }
  stage(reinterpret_cast<uint8_t *>(cf), reinterpret_cast<const uint8_t *>(coefs + mat * NQ * (size_t)(cap + 1)),
        (size_t)nq * (cap + 1) * sizeof(float), threadIdx.x, nthr);
  for (int j = 1; j <= nmax; j++)
    stage(reinterpret_cast<uint8_t *>(xs + (size_t)(j - 1) * dv),
          reinterpret_cast<const uint8_t *>(d.rec_x + (((size_t)b * cap + slot_of(d, base, j)) * H + hd) * dv),
          (size_t)dv * sizeof(float), threadIdx.x, nthr);
  cp_async_commit();
  /* Appendix F: a head whose every query has w_0 < THR loads no checkpoint byte at all */
  bool all_skip = false;
  if (d.skip > 0.0) { /* block-uniform */
    cp_async_wait<0>();
    __syncthreads();
    all_skip = true;
    for (int qi = 0; qi < nq; qi++) all_skip = all_skip && (double)cf[(size_t)qi * (cap + 1) + cap] < d.skip;
  }

  const int i0 = warp * 32, nr = dv - i0 < 32 ? dv - i0 : 32;
  const uint8_t *mb = rd.blob + mat * (size_t)rd.bpm;
  const float *f32 = from_S ? d.S + mat * (size_t)dv * dk : nullptr; /* [dv][dk] */
  const lane_cols<M> lc = lane_cols_of<M, (FK == RK_F32 ? FC_F32 : (FK == RK_BF16 || FK == RK_BF16W) ? FC_F16 : (FK == RK_NVFP4 || FK == RK_NVFP4W) ? FC_F4 : FC_F8)>(
      rd, dk, lane);
  const float s_dec = (!from_S && !all_skip && (rd.kind == QF_NVFP4 || rd.kind == QF_MXFP4 || rd.kind == QF_MXFP8))
                          ? (rd.kind == QF_NVFP4 ? *reinterpret_cast<const float *>(mb + rd.tscale_off) : 1.0f)
                          : 1.0f;
  float *scw = reinterpret_cast<float *>(smem + L.sc) + (size_t)warp * R3 * 8; /* [R3][8] NVFP4W scales */
  /* fp32 rows and the word kinds' codes one batch ahead (the next batch's loads go out before
     this batch's dot products) */
  constexpr bool ahead = FK == RK_F32 || ro4_word(FK);
  if (FK != RK_F32 && from_S) {
    /* a verification's fp32 scratch rows in a low-precision instance: the RK_F32 loop, not
       ahead (one float batch) and in the instance's batch size, in a branch of their own so that
       the checkpoint loop's code batch and these floats are never live together (they were one
       loop with a run-time f32 switch until session 16; the kernel's registers are the larger
       branch's). Its values and operations are those of that loop's f32 rows: ro4_load's fp32
       rows at f32 + row * dk, then cy_chunk, whose sums do not depend on the batch size */
    ro4_tile<M, RK_F32, QG, RO4_ROWS, false>(f32, rd, mb, s_dec, lc, i0, nr, all_skip, ys, nq, dk, dv, cd, cf, cap,
                                       d.skip, scw, lane);
  } else {
    /* the RK_F32 instance takes its scratch rows here too (f32 != nullptr), as before */
    ro4_tile<M, FK, QG, R, ahead>(f32, rd, mb, s_dec, lc, i0, nr, all_skip, ys, nq, dk, dv, cd, cf, cap,
                                             d.skip, scw, lane);
  }

  if (all_skip)
    for (int qi = 0; qi < nq; qi++)
      if (lane < nr) cd[(size_t)qi * dv + i0 + lane] = 0.0f;
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

/* Calls f(M, FK) with both as std::integral_constant; the word kinds exist at M = 4 only
 * (ro4_kind), so M = 8 does not instantiate them. */
template <int M, class F>
void with_fk(int FK, F f) {
  if constexpr (M == 4) {
    if (FK == RK_NVFP4W) return f(std::integral_constant<int, M>(), std::integral_constant<int, RK_NVFP4W>());
    if (FK == RK_E4M3W) return f(std::integral_constant<int, M>(), std::integral_constant<int, RK_E4M3W>());
    if (FK == RK_BF16W) return f(std::integral_constant<int, M>(), std::integral_constant<int, RK_BF16W>());
  }
  if (FK == RK_F32) f(std::integral_constant<int, M>(), std::integral_constant<int, RK_F32>());
  else if (FK == RK_BF16) f(std::integral_constant<int, M>(), std::integral_constant<int, RK_BF16>());
  else if (FK == RK_NVFP4) f(std::integral_constant<int, M>(), std::integral_constant<int, RK_NVFP4>());
  else if (FK == RK_E4M3) f(std::integral_constant<int, M>(), std::integral_constant<int, RK_E4M3>());
  else f(std::integral_constant<int, M>(), std::integral_constant<int, RK_GEN>());
}

/* Calls f(M, FC) with M and FC as std::integral_constant: the template instance of a run. */
template <int M, class F>
void with_fc(int FC, F f) {
  if (FC == FC_F32) f(std::integral_constant<int, M>(), std::integral_constant<int, FC_F32>());
  else if (FC == FC_F16) f(std::integral_constant<int, M>(), std::integral_constant<int, FC_F16>());
  else if (FC == FC_F8) f(std::integral_constant<int, M>(), std::integral_constant<int, FC_F8>());
  else f(std::integral_constant<int, M>(), std::integral_constant<int, FC_F4>());
}
template <class F>
void with_m_fc(int M, int FC, F f) {
  if (M <= 4) with_fc<4>(FC, f);
  else with_fc<8>(FC, f);
}

}  // namespace

void launch_ro2(int M, int FC, dim3 grid, size_t smem, cudaStream_t s, const dev_state &d, const ck_view &rd, int op,
                const float *q, int nt, float *o) {
  with_m_fc(M, FC, [&](auto m, auto fc) {
    pdl_launch(ro2_kernel<decltype(m)::value, decltype(fc)::value>, grid, V2_WARPS * 32, smem, s, d, rd, op, q, nt, o);
  });
}

void launch_pre3(dim3 grid, size_t smem, cudaStream_t s, const dev_state &d, int op, const float *q, int nt,
                 float *coefs, int NQ) {
  pdl_launch(pre3_kernel, grid, PRE_WARPS * 32, smem, s, d, op, q, nt, coefs, NQ);
}

/* The query group of an operation: a step's 1 or 2 queries at once, a verification's in fours. */
inline int ro4_qg(const dev_state &d, int op) { return op == OP_STEP ? (d.gdn ? 2 : 1) : QG3; }

void launch_ro4(int M, dim3 grid, unsigned threads, size_t smem, cudaStream_t s, const dev_state &d,
                const ck_view &rd, int op, const float *q, int nt, float *o, const float *coefs, int NQ, int sms) {
  const int qg = ro4_qg(d, op);
  const unsigned blocks = grid.x * grid.y;
  auto go = [&](auto m, auto fk) {
    constexpr int MM = decltype(m)::value, FK = decltype(fk)::value;
    if constexpr (MM == 4 && FK == RK_F32) { /* a step's 8-row instances on one wave */
      if (qg <= 2 && ro4_one_wave(blocks, sms)) {
        if (qg == 1)
          pdl_launch(ro4_kernel<MM, FK, 1, 8>, grid, threads, smem, s, d, rd, op, q, nt, o, coefs, NQ);
        else
          pdl_launch(ro4_kernel<MM, FK, 2, 8>, grid, threads, smem, s, d, rd, op, q, nt, o, coefs, NQ);
        return;
      }
    }
    if (qg == 1)
      pdl_launch(ro4_kernel<MM, FK, 1, ro4_rows_q(MM, FK, 1)>, grid, threads, smem, s, d, rd, op, q, nt, o, coefs, NQ);
    else if (qg == 2)
      pdl_launch(ro4_kernel<MM, FK, 2, ro4_rows_q(MM, FK, 2)>, grid, threads, smem, s, d, rd, op, q, nt, o, coefs, NQ);
    else
      pdl_launch(ro4_kernel<MM, FK, QG3, ro4_rows_q(MM, FK, QG3)>, grid, threads, smem, s, d, rd, op, q, nt, o, coefs,
                 NQ);
  };
  if (M <= 4) with_fk<4>(ro4_kind(rd, 4, d.dk), go);
  else with_fk<8>(ro4_kind(rd, 8, d.dk), go);
}

/* Raises the dynamic shared memory limit of every ro4 instance of one M to optin. */
template <int M, int FK>
bool raise_ro4_one(int optin) {
  const cudaFuncAttribute a = cudaFuncAttributeMaxDynamicSharedMemorySize;
  bool ok = cudaFuncSetAttribute(ro4_kernel<M, FK, 1, ro4_rows_q(M, FK, 1)>, a, optin) == cudaSuccess &&
            cudaFuncSetAttribute(ro4_kernel<M, FK, 2, ro4_rows_q(M, FK, 2)>, a, optin) == cudaSuccess &&
            cudaFuncSetAttribute(ro4_kernel<M, FK, QG3, ro4_rows_q(M, FK, QG3)>, a, optin) == cudaSuccess;
  if constexpr (M == 4 && FK == RK_F32) /* a step's 8-row instances on one wave (ro4_one_wave) */
    ok = ok && cudaFuncSetAttribute(ro4_kernel<M, FK, 1, 8>, a, optin) == cudaSuccess &&
         cudaFuncSetAttribute(ro4_kernel<M, FK, 2, 8>, a, optin) == cudaSuccess;
  return ok;
}
template <int M>
bool raise_ro4(int optin) {
  bool ok = raise_ro4_one<M, RK_F32>(optin) && raise_ro4_one<M, RK_BF16>(optin) && raise_ro4_one<M, RK_NVFP4>(optin) &&
            raise_ro4_one<M, RK_E4M3>(optin) && raise_ro4_one<M, RK_GEN>(optin);
  if constexpr (M == 4) /* the word kinds (with_fk) */
    ok = ok && raise_ro4_one<M, RK_NVFP4W>(optin) && raise_ro4_one<M, RK_E4M3W>(optin) &&
         raise_ro4_one<M, RK_BF16W>(optin);
  return ok;
}

int raise_smem_readout(size_t ro2_bytes, int optin, char *err, size_t errlen) {
  const void *r2[] = {
      reinterpret_cast<const void *>(ro2_kernel<4, FC_F32>), reinterpret_cast<const void *>(ro2_kernel<4, FC_F16>),
      reinterpret_cast<const void *>(ro2_kernel<4, FC_F8>),  reinterpret_cast<const void *>(ro2_kernel<4, FC_F4>),
      reinterpret_cast<const void *>(ro2_kernel<8, FC_F32>), reinterpret_cast<const void *>(ro2_kernel<8, FC_F16>),
      reinterpret_cast<const void *>(ro2_kernel<8, FC_F8>),  reinterpret_cast<const void *>(ro2_kernel<8, FC_F4>),
  };
  if (ro2_bytes > 48 * 1024)
    for (const void *f : r2)
      if (cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)ro2_bytes) != cudaSuccess)
        return rssm_fail(err, errlen, "cannot raise the %s kernel's shared memory to %zu bytes", "readout v2",
                         ro2_bytes);
  /* pre3 and ro4 may use up to the opt-in maximum (launch_readout falls back to ro2 beyond it) */
  const void *r3[] = {
      reinterpret_cast<const void *>(pre3_kernel),
  };
  for (const void *f : r3)
    if (cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, optin) != cudaSuccess)
      return rssm_fail(err, errlen, "cannot raise the readout precompute's shared memory to %d bytes", optin);
  if (!raise_ro4<4>(optin) || !raise_ro4<8>(optin))
    return rssm_fail(err, errlen, "cannot raise the v4 readout's shared memory to %d bytes", optin);
  return 0;
}

}  // namespace ssmc
