/* Correctness check of an attention-lab variant (bench_attn_check.h).
 *
 * Inputs (never zero): q = +-[0.05, 1) x 8 (so the scores s = q.k / sqrt(D) spread over a few
 * units and the softmax is peaked: a kernel that mis-weights, drops or repeats a split moves the
 * output), k = +-[0.05, 1), v = +[0.05, 1) and gates +-[0.05, 2). With v > 0 and sigmoid > 0,
 * o = sum p_j v_j / sum p_j (times the gate) is positive and every sum below is of positive
 * terms, so a relative bound on each output holds and is meaningful.
 *
 * Tolerance, from the arithmetic (fp32, u = 2^-24; no FMA contraction on either side):
 *  - a score is a D-term dot product times the scale: |ds_j| <= eps_s = k_s u scale sum_d |q_d k_jd|
 *    with k_s the longest chain of additions any term goes through: the CPU's dot_f32 sums 8
 *    interleaved partials of D / 8 terms and adds them by a tree of 3, so D / 8 + 3; the GPU lanes
 *    sum D / 32 (shipped) or 4 VPL <= 8 terms (lab) and the butterfly adds 5; k_s = D / 8 + 8
 *    covers all of them (+1 for the scale's product);
 *  - p_j = expf(s_j - m): relative error <= 2 eps_s (s_j and the max) + |s_j - m| u (the
 *    subtraction) + 2u (CUDA's expf is within 2 ulp, glibc's within 1);
 *  - l = sum p_j and acc = sum p_j v_j are sums of positive terms along chains of at most `chain`
 *    sequential additions: relative error <= chain u each. chain = the positions one thread
 *    sums in order plus the partials merged after it: every variant (the shipped one is
 *    variant 4) at most ceil(n / nsplit) positions (a split's, counted whole though its NG
 *    groups share them) + NG <= 64 groups + nsplit splits; the CPU n;
 *  - the online rescales (acc and l multiplied by the same rounded c, at most `chain` of them,
 *    each one rounding of each: <= 2 chain u in the ratio) and the combine's expf (2 x 3u),
 *    the division (u) and the gate (sigmoid 3u, product u).
 * Summing, |o - o64| / o64 <= bound = (6 chain + 64) u + 4 eps_s + 4 smax u, smax = max_j |s_j - m|
 * (a factor of ~1.5 over the sum of the terms above, for the few-ulp terms counted loosely). The
 * check requires |gpu - o64| <= bound(gpu chain) o64 for every output, and |gpu - cpu| <=
 * (bound(gpu chain) + bound(n)) o64 against mc_ref_attn_decode (the CPU runtime's arithmetic);
 * the worst ratios are reported. This is a worst-case bound: at D = 256 and 8192 positions it is
 * ~2e-4 (score part) plus 6 chain u (4e-5 at 132 splits, 7e-4 at 4), while the observed errors are
 * typically ~1e-6 (docs/gpu-runtime.md); the table prints both, so a variant whose error is far
 * above the others' but under the bound still shows. */
#include "src/bench_attn/bench_attn_check.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/model_cuda/attn_lab.h"
#include "src/model_cuda/mc_ref.h"

#define CK_R 4
#define CK_CTX 8192

static const int ck_pos[CK_R] = {0, 777, 4096, CK_CTX - 1};

/* splitmix64 to (0, 1) */
static double u01(uint64_t *st) {
  uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return ((double)(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* x[i] = sign * (lo + (hi - lo) u), sign random when signed_ */
static void fill(float *x /* [n] */, size_t n, uint64_t seed, float lo, float hi, int signed_) {
  uint64_t st = seed;
  for (size_t i = 0; i < n; i++) {
    float v = (float)(lo + (hi - lo) * u01(&st));
    x[i] = signed_ && u01(&st) < 0.5 ? -v : v;
  }
}

static int cuda_fail(cudaError_t e, const char *what, char *err, size_t errlen) {
  if (e == cudaSuccess) return 0;
  snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
  return -1;
}

/* The sequential chain of the sums at n positions and nsplit splits (see the argument above):
 * the same for every variant. NG = 8 warps x 32 / (D / 4) lanes, at most 64 (D = 16). */
static double chain_of(int64_t n, int nsplit, int D) {
  int64_t len = (n + nsplit - 1) / nsplit;
  if (len < 16) len = 16;
  const int lp = D / 4 < 32 ? D / 4 : 32;
  return (double)len + (double)(8 * 32 / lp) + (double)nsplit;
}

typedef struct {
  int nH, nKV, D, gated;
  int64_t kvd, qd, ld;
  float *q, *kc, *vc, *gate; /* host: [R][nH][D], [R][CK_CTX][nKV][D] x 2, [R][ld] */
  double *o64;               /* [R][nH][D] */
  double *relb_s;            /* [R][nH]: 4 eps_s + 4 smax u of that head (bound's score part) */
  float *ocpu;               /* [R][nH][D] */
} ck_inputs;

/* fp64 outputs and the score part of each head's bound. */
static void reference64(ck_inputs *c) {
  const double u = ldexp(1.0, -24), scale = 1.0 / sqrt((double)c->D);
  const int rep = c->nH / c->nKV;
  double *sc = malloc(CK_CTX * sizeof *sc); /* [CK_CTX] */
  if (!sc) return;
  for (int r = 0; r < CK_R; r++)
    for (int h = 0; h < c->nH; h++) {
      const int kh = h / rep;
      const float *qh = c->q + (r * c->qd + (int64_t)h * c->D); /* [D] */
      double mx = -INFINITY, mn = INFINITY, eps = 0.0, sum = 0.0;
      for (int j = 0; j <= ck_pos[r]; j++) {
        const float *kj = c->kc + ((int64_t)r * CK_CTX + j) * c->kvd + (int64_t)kh * c->D;
        double s = 0.0, a = 0.0;
        for (int d = 0; d < c->D; d++) {
          s += (double)qh[d] * kj[d];
          a += fabs((double)qh[d] * kj[d]);
        }
        sc[j] = s * scale;
        if (sc[j] > mx) mx = sc[j];
        if (sc[j] < mn) mn = sc[j];
        if (a * scale > eps) eps = a * scale;
      }
      for (int j = 0; j <= ck_pos[r]; j++) {
        sc[j] = exp(sc[j] - mx); /* the weights from here on */
        sum += sc[j];
      }
      c->relb_s[r * c->nH + h] = 4.0 * (c->D / 8 + 8) * u * eps + 4.0 * (mx - mn) * u;
      for (int d = 0; d < c->D; d++) {
        double o = 0.0;
        for (int j = 0; j <= ck_pos[r]; j++)
          o += sc[j] * c->vc[((int64_t)r * CK_CTX + j) * c->kvd + (int64_t)kh * c->D + d];
        o /= sum;
        if (c->gated) o *= 1.0 / (1.0 + exp(-(double)c->gate[r * c->ld + c->qd + (int64_t)h * c->D + d]));
        c->o64[r * c->qd + (int64_t)h * c->D + d] = o;
      }
    }
  free(sc);
}

/* Folds one GPU output into the result. */
static void judge(const ck_inputs *c, int nsplit, const float *og /* [R][nH][D] */,
                  attn_check_result *res) {
  const double u = ldexp(1.0, -24);
  for (int r = 0; r < CK_R; r++) {
    const int64_t n = ck_pos[r] + 1;
    const double chain_g = chain_of(n, nsplit, c->D), chain_c = (double)n;
    for (int h = 0; h < c->nH; h++) {
      const double sb = c->relb_s[r * c->nH + h];
      const double bg = (6.0 * chain_g + 64.0) * u + sb, bc = (6.0 * chain_c + 64.0) * u + sb;
      for (int d = 0; d < c->D; d++) {
        const int64_t i = r * c->qd + (int64_t)h * c->D + d;
        const double o = c->o64[i], g = og[i], cp = c->ocpu[i];
        const double eg = fabs(g - o) / o, ec = fabs(g - cp) / o;
        if (!(eg <= bg) || !(ec <= bg + bc)) res->ok = 0; /* NaN fails too */
        if (!(eg / bg <= res->worst_ratio)) res->worst_ratio = eg / bg;
        if (!(eg <= res->worst_rel)) res->worst_rel = eg;
        if (!(ec <= res->worst_cpu)) res->worst_cpu = ec;
        const double cr = fabs(cp - o) / o;
        if (cr > res->worst_cpu_rel) res->worst_cpu_rel = cr;
      }
    }
  }
}

static void free_inputs(ck_inputs *c) {
  free(c->q);
  free(c->kc);
  free(c->vc);
  free(c->gate);
  free(c->o64);
  free(c->relb_s);
  free(c->ocpu);
}

/* Host inputs, the fp64 reference and mc_ref_attn_decode's outputs; 0 or -1. */
static int make_inputs(ck_inputs *c, int nH, int nKV, int D, int gated) {
  memset(c, 0, sizeof *c);
  c->nH = nH;
  c->nKV = nKV;
  c->D = D;
  c->gated = gated;
  c->kvd = (int64_t)nKV * D;
  c->qd = (int64_t)nH * D;
  c->ld = 2 * c->qd; /* q | gate, the gate at column nH D as in the projection */
  const size_t nq = (size_t)CK_R * c->qd, nc = (size_t)CK_R * CK_CTX * c->kvd;
  c->q = malloc(nq * sizeof(float));
  c->kc = malloc(nc * sizeof(float));
  c->vc = malloc(nc * sizeof(float));
  c->gate = malloc((size_t)CK_R * c->ld * sizeof(float));
  c->o64 = malloc(nq * sizeof(double));
  c->relb_s = malloc((size_t)CK_R * nH * sizeof(double));
  c->ocpu = malloc(nq * sizeof(float));
  if (!c->q || !c->kc || !c->vc || !c->gate || !c->o64 || !c->relb_s || !c->ocpu) return -1;
  const uint64_t seed = 0x18a7700ULL + (uint64_t)(nH * 1000 + nKV * 10) + (uint64_t)D * 100000;
  fill(c->q, nq, seed + 1, 0.4f, 8.0f, 1);
  fill(c->kc, nc, seed + 2, 0.05f, 1.0f, 1);
  fill(c->vc, nc, seed + 3, 0.05f, 1.0f, 0);
  fill(c->gate, (size_t)CK_R * c->ld, seed + 4, 0.05f, 2.0f, 1);
  reference64(c);
  mc_ref_attn_decode(c->q, c->kc, c->vc, ck_pos, CK_CTX, gated ? c->gate : NULL, c->ld, c->ocpu,
                     CK_R, nH, nKV, D);
  return 0;
}

int attn_check_variant(int variant, int nH, int nKV, int D, int gated, int nsplit,
                       attn_check_result *res, char *err, size_t errlen) {
  memset(res, 0, sizeof *res);
  /* The host inputs and references depend only on the shape: kept from the previous call when it
     had the same one (gpu_check_attn_lab runs 13 cases per shape, the bench 4 per (shape, R); the
     fp64 and CPU references take seconds each at the 4B shapes, on the device machine's time). */
  static ck_inputs cache;
  static int cached = 0;
  if (!cached || cache.nH != nH || cache.nKV != nKV || cache.D != D || cache.gated != gated) {
    if (cached) free_inputs(&cache);
    cached = 0;
    if (make_inputs(&cache, nH, nKV, D, gated) != 0) {
      free_inputs(&cache);
      snprintf(err, errlen, "out of host memory for the check");
      return -1;
    }
    cached = 1;
  }
  const ck_inputs c = cache; /* read only below */
  /* device copies, and a second cache whose row perm[r] holds token row r's history: read
     through cache_row = perm it must give the same outputs */
  const size_t nq = (size_t)CK_R * c.qd, nc = (size_t)CK_R * CK_CTX * c.kvd, row = (size_t)CK_CTX * c.kvd;
  const size_t scratch = attn_lab_scratch_floats(CK_R, nH, D, nsplit);
  float *dq = NULL, *dk = NULL, *dv = NULL, *dkp = NULL, *dvp = NULL, *dg = NULL, *dsc = NULL, *dout = NULL;
  int *dpos = NULL, *dperm = NULL;
  float *og = malloc(nq * sizeof(float));
  int rc = -1;
  const int perm[CK_R] = {1, 2, 3, 0};
  if (!og || cuda_fail(cudaMalloc((void **)&dq, nq * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&dk, nc * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&dv, nc * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&dkp, nc * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&dvp, nc * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&dg, (size_t)CK_R * c.ld * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&dsc, scratch * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&dout, nq * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&dpos, CK_R * sizeof(int)), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&dperm, CK_R * sizeof(int)), "cudaMalloc", err, errlen))
    goto done;
  cudaMemcpy(dq, c.q, nq * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dk, c.kc, nc * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dv, c.vc, nc * 4, cudaMemcpyHostToDevice);
  for (int r = 0; r < CK_R; r++) { /* token row r's history at cache row perm[r] */
    cudaMemcpy(dkp + perm[r] * row, c.kc + r * row, row * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dvp + perm[r] * row, c.vc + r * row, row * 4, cudaMemcpyHostToDevice);
  }
  cudaMemcpy(dg, c.gate, (size_t)CK_R * c.ld * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dpos, ck_pos, sizeof ck_pos, cudaMemcpyHostToDevice);
  if (cuda_fail(cudaMemcpy(dperm, perm, sizeof perm, cudaMemcpyHostToDevice), "upload", err, errlen)) goto done;
  res->ok = 1;
  for (int way = 0; way < 2; way++) { /* cache_row NULL, then the permutation */
    /* a poisoned output: a kernel that writes nothing fails */
    cudaMemset(dout, 0xff, nq * 4);
    int lrc = attn_lab_decode(variant, dq, way ? dkp : dk, way ? dvp : dv, dpos, way ? dperm : NULL,
                              CK_CTX, gated ? dg : NULL, c.ld, dsc, dout, CK_R, nH, nKV, D, nsplit, NULL);
    if (lrc == -2) {
      res->ran = 0;
      res->ok = 0;
      rc = 0;
      goto done;
    }
    if (lrc != 0) {
      cuda_fail(cudaGetLastError(), "launch", err, errlen);
      goto done;
    }
    if (cuda_fail(cudaMemcpy(og, dout, nq * 4, cudaMemcpyDeviceToHost), "kernel", err, errlen)) goto done;
    res->ran = 1;
    judge(&c, nsplit, og, res);
  }
  rc = 0;
done:
  cudaFree(dq), cudaFree(dk), cudaFree(dv), cudaFree(dkp), cudaFree(dvp), cudaFree(dg);
  cudaFree(dsc), cudaFree(dout), cudaFree(dpos), cudaFree(dperm);
  free(og);
  return rc;
}
