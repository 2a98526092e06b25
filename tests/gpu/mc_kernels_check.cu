/* GPU check (device machine, not CI): every kernel of src/model_cuda/mc_kernels.h against its CPU
 * reference in mc_ref.c on random inputs (Philox; values in +-[0.05, 1] times a per-array scale,
 * never zero). Tolerances, from the arithmetic (docs/gpu-runtime.md):
 *  - exact (bit-identical): RMSNorm, embedding, the conv window shift, GDN L2 norms, RoPE and
 *    the q/k norms, copies, relu^2, the fused residual add + RMSNorm and the fused kernels' bf16
 *    GEMM inputs (mc_fused.h), and the fused SSM-block glue (conv + prep, Mamba-2's gate + group
 *    norm) against the unfused kernels: the same IEEE operations in the same order,
 *    --fmad=false on the device, ISO C11 (no contraction) on the host;
 *  - one transcendental (SiLU, sigmoid): CUDA expf is within 2 ulp and glibc's within 1, and
 *    x / (1 + e) adds at most 1.5 ulp, so <= 8 ulp = 1e-6 relative;
 *  - gates alpha = exp(-exp(A_log) softplus(.)): the exponent carries ~6 ulp relative, i.e. an
 *    absolute error of ~6 ulp x |g| in the final exp's argument; |g| < 20 here, so 2e-5
 *    relative on alpha, 1e-6 on beta and delta-scaled values (softplus: log1pf and expf);
 *  - attention (mc_attn_decode, the lab's multipos at the runtime's split count
 *    attn_lab_splits_shipped): other summation order; compared against an fp64 evaluation with
 *    |gpu - ref64| <= 2e-5 max|v| (scores carry ~D u |q||k|, the weights then ~1e-6 relative;
 *    the sums run along chains of at most ceil((pos + 1) / nsplit) + 64 groups + nsplit
 *    additions, ~260 at 4096 positions and 33-66 splits, shorter than the old kernel's
 *    256 + 512 the bound was set for: worst case ~3 x 260 u = 5e-5 relative, typically
 *    sqrt of that chain, ~1e-6); and each row alone (R = 1) bit-identical to its row of the
 *    batch (the runtime's row-count invariance: a row's blocks and its combine read only it);
 *  - MoE: routing ids exact and weights 1e-6; experts 1e-5 of max|ref| (warp sums vs dot_f32);
 *  - metrics on identical logits: |dkl| <= 1e-5 kl + 1e-10, |dnll| <= 1e-6 (|nll| + 1),
 *    |ddp| <= 1e-6, argmax and top1 exact (ties: first index).
 * Exit status 0 only when every case passes. Usage: gpu_check_mc_kernels */
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "src/model_cuda/attn_lab.h"
#include "src/model_cuda/mc_fused.h"
#include "src/model_cuda/mc_kernels.h"
#include "src/model_cuda/mc_ref.h"
#include "tests/gpu/mc_check_util.cuh"

static void check_rmsnorm() {
  const int R = 5;
  struct { int ngroups, gs, wmode, plus_one; const char *name; } cs[] = {
      {1, 2560, 1, 1, "rmsnorm H=2560 (1+w)"}, {1, 48, 1, 0, "rmsnorm H=48 plain w"},
      {6, 16, 1, 0, "rmsnorm 6 heads shared w"}, {8, 960, 2, 0, "rmsnorm 8 groups own w"},
      {3, 37, 0, 0, "rmsnorm 3 x 37 no w"}};
  for (auto &c : cs) {
    const int64_t ld = (int64_t)c.ngroups * c.gs;
    auto x = rnd((size_t)(R * ld), 1, 3.0f);
    auto w = rnd((size_t)ld, 2, 1.0f);
    std::vector<float> y(x.size()), yr(x.size());
    float *dx = dev(x), *dw = dev(w), *dy = dev(y);
    const float *wp = c.wmode ? dw : nullptr;
    if (mc_rmsnorm(dx, dy, R, c.ngroups, c.gs, ld, wp, c.wmode == 2, c.plus_one, 1e-6f, 0) != 0)
      g_fail++;
    mc_ref_rmsnorm(x.data(), yr.data(), R, c.ngroups, c.gs, ld, c.wmode ? w.data() : nullptr,
                   c.wmode == 2, c.plus_one, 1e-6f);
    exact(c.name, host(dy, y.size()), yr);
    /* in place, as the Mamba-2 group norm runs */
    if (mc_rmsnorm(dx, dx, R, c.ngroups, c.gs, ld, wp, c.wmode == 2, c.plus_one, 1e-6f, 0) != 0)
      g_fail++;
    exact("  ... in place", host(dx, x.size()), yr);
    cudaFree(dx), cudaFree(dw), cudaFree(dy);
  }
}

static void check_embed_act() {
  const int R = 4;
  const int64_t V = 50, H = 300;
  auto E = rnd((size_t)(V * H), 3, 1.0f);
  std::vector<int64_t> tok = {7, 0, 49, 7};
  std::vector<float> h((size_t)(R * H)), hr(h.size());
  float *dE = dev(E), *dh = dev(h);
  int64_t *dt = dev(tok);
  if (mc_embed(dE, dt, dh, R, H, 0) != 0) g_fail++;
  mc_ref_embed(E.data(), tok.data(), hr.data(), R, H);
  exact("embed", host(dh, h.size()), hr);
  auto up = rnd(h.size(), 5, 2.0f);
  float *du = dev(up);
  std::vector<float> a(h.size()), ar(h.size());
  float *da = dev(a);
  if (mc_relu2(du, da, R, H, 0) != 0) g_fail++;
  mc_ref_relu2(up.data(), ar.data(), R, H);
  exact("relu2", host(da, a.size()), ar);
  auto gu = rnd((size_t)(R * 2 * H), 6, 4.0f);
  float *dgu = dev(gu);
  if (mc_swiglu(dgu, da, R, H, 0) != 0) g_fail++;
  mc_ref_swiglu(gu.data(), ar.data(), R, H);
  close_to("swiglu", host(da, a.size()), ar, 1e-6, 0.0);
  cudaFree(dE), cudaFree(dh), cudaFree(dt), cudaFree(du), cudaFree(da);
  cudaFree(dgu);
}

static void check_conv() {
  const int R = 3, K = 4;
  const int64_t C = 9728 / 8 + 3, ldx = C + 40;
  for (int with_bias = 0; with_bias < 2; with_bias++) {
    auto win = rnd((size_t)(R * (K - 1) * C), 10, 2.0f), winr = win;
    auto w = rnd((size_t)(C * K), 11, 0.7f), bias = rnd((size_t)C, 12, 0.3f);
    float *dwin = dev(win), *dw = dev(w), *db = dev(bias);
    std::vector<float> out((size_t)(R * C)), outr(out.size());
    float *dout = dev(out);
    for (int step = 0; step < 3; step++) { /* three steps: the shift feeds the next sum */
      auto x = rnd((size_t)(R * ldx), 13 + step, 2.0f);
      float *dx = dev(x);
      if (mc_conv_step(dwin, dx, ldx, dw, with_bias ? db : nullptr, dout, R, C, K, 0) != 0)
        g_fail++;
      mc_ref_conv_step(winr.data(), x.data(), ldx, w.data(), with_bias ? bias.data() : nullptr,
                       outr.data(), R, C, K);
      close_to(with_bias ? "conv_step +bias: out" : "conv_step: out", host(dout, out.size()),
               outr, 1e-6, 0.0);
      exact("  ... window after the shift", host(dwin, win.size()), winr);
      cudaFree(dx);
    }
    cudaFree(dwin), cudaFree(dw), cudaFree(db), cudaFree(dout);
  }
}

static void check_gdn() {
  const int R = 4, Hk = 4, Hv = 12, dk = 24, dv = 16;
  const int64_t conv_dim = 2 * Hk * dk + Hv * dv, ldba = 3 * Hv + 5;
  auto cv = rnd((size_t)(R * conv_dim), 20, 1.5f), ba = rnd((size_t)(R * ldba), 21, 3.0f);
  auto A = rnd(Hv, 22, 1.2f), dtb = rnd(Hv, 23, 1.0f);
  float *dcv = dev(cv), *dba = dev(ba), *dA = dev(A), *ddt = dev(dtb);
  std::vector<float> q((size_t)(R * Hk * dk)), k(q.size()), v((size_t)(R * Hv * dv));
  std::vector<float> al((size_t)(R * Hv)), be(al.size());
  auto qr = q, kr = k, vr = v, alr = al, ber = be;
  float *dq = dev(q), *dk_ = dev(k), *dv_ = dev(v), *dal = dev(al), *dbe = dev(be);
  if (mc_gdn_prep(dcv, dba, ldba, Hv + 2, 2 * Hv + 4, dA, ddt, dq, dk_, dv_, dal, dbe, R, Hk, Hv,
                  dk, dv, 0) != 0)
    g_fail++;
  mc_ref_gdn_prep(cv.data(), ba.data(), ldba, Hv + 2, 2 * Hv + 4, A.data(), dtb.data(), qr.data(),
                  kr.data(), vr.data(), alr.data(), ber.data(), R, Hk, Hv, dk, dv);
  exact("gdn_prep q (l2, dk^-1/2)", host(dq, q.size()), qr);
  exact("gdn_prep k (l2)", host(dk_, k.size()), kr);
  exact("gdn_prep v", host(dv_, v.size()), vr);
  close_to("gdn_prep alpha", host(dal, al.size()), alr, 2e-5, 0.0);
  close_to("gdn_prep beta", host(dbe, be.size()), ber, 1e-6, 0.0);
  cudaFree(dcv), cudaFree(dba), cudaFree(dA), cudaFree(ddt), cudaFree(dq), cudaFree(dk_);
  cudaFree(dv_), cudaFree(dal), cudaFree(dbe);
}

static void check_mamba2() {
  const int R = 3, Hm = 6, P = 8, G = 2, N = 24;
  const int64_t di = (int64_t)Hm * P, conv_dim = di + 2 * G * N, in_rows = di + conv_dim + Hm;
  auto zx = rnd((size_t)(R * in_rows), 30, 2.0f), cv = rnd((size_t)(R * conv_dim), 31, 1.5f);
  auto A = rnd(Hm, 32, 1.2f), dtb = rnd(Hm, 33, 1.0f), D = rnd(Hm, 34, 1.0f);
  float *dzx = dev(zx), *dcv = dev(cv), *dA = dev(A), *ddt = dev(dtb), *dD = dev(D);
  std::vector<float> al((size_t)(R * Hm)), v((size_t)(R * di)), Bm((size_t)(R * G * N)), Cm(Bm.size());
  auto alr = al, vr = v, Bmr = Bm, Cmr = Cm;
  float *dal = dev(al), *dv_ = dev(v), *dB = dev(Bm), *dC = dev(Cm);
  /* a time_step_limit that binds on both sides (softplus of these inputs spans ~0.05..3), in the
     rows at position 0 (the prompt: clamped) and not in the row at position 4 (decode) */
  const std::vector<int> pos = {0, 4, 0};
  int *dpos = dev(pos);
  if (mc_mamba2_prep(dzx, in_rows, di + conv_dim, dcv, conv_dim, dA, ddt, 0.3f, 2.5f, dpos, dal,
                     dv_, dB, dC, R, Hm, P, G, N, 0) != 0)
    g_fail++;
  mc_ref_mamba2_prep(zx.data(), in_rows, di + conv_dim, cv.data(), conv_dim, A.data(), dtb.data(),
                     0.3f, 2.5f, pos.data(), alr.data(), vr.data(), Bmr.data(), Cmr.data(), R, Hm,
                     P, G, N);
  cudaFree(dpos);
  close_to("mamba2_prep alpha", host(dal, al.size()), alr, 2e-5, 0.0);
  close_to("mamba2_prep v = delta x", host(dv_, v.size()), vr, 1e-6, 0.0);
  exact("mamba2_prep B", host(dB, Bm.size()), Bmr);
  exact("mamba2_prep C", host(dC, Cm.size()), Cmr);
  auto o = rnd((size_t)(R * di), 35, 1.0f);
  float *do_ = dev(o);
  std::vector<float> t((size_t)(R * di)), tr(t.size());
  float *dt = dev(t);
  if (mc_mamba2_gate(do_, dcv, conv_dim, dzx, in_rows, dD, dt, R, Hm, P, 0) != 0) g_fail++;
  mc_ref_mamba2_gate(o.data(), cv.data(), conv_dim, zx.data(), in_rows, D.data(), tr.data(), R, Hm,
                     P);
  close_to("mamba2_gate", host(dt, t.size()), tr, 1e-6, 0.0);
  cudaFree(dzx), cudaFree(dcv), cudaFree(dA), cudaFree(ddt), cudaFree(dD), cudaFree(dal);
  cudaFree(dv_), cudaFree(dB), cudaFree(dC), cudaFree(do_), cudaFree(dt);
}

/* q/k preparation (exact) and the attention decode (fp64-referenced). */
static void check_attention(int gated, int nH, int nKV, int D, int64_t max_ctx,
                            const std::vector<int> &pos, const char *name) {
  const int R = (int)pos.size();
  const int64_t qd = (int64_t)nH * D, kvd = (int64_t)nKV * D;
  const int64_t ld = (gated ? 2 * qd : qd) + 2 * kvd + 3;
  const int rd = gated ? D / 4 : 0, half = rd / 2;
  std::vector<float> cs((size_t)(max_ctx * (half > 0 ? half : 1))), sn(cs.size());
  if (half > 0) mc_ref_rope_tables(1e7, rd, max_ctx, cs.data(), sn.data());
  auto qn = rnd((size_t)D, 40, 0.3f), kn = rnd((size_t)D, 41, 0.3f);
  /* caches filled with random history; the prepare kernel writes position pos[r] */
  auto kc = rnd((size_t)(R * max_ctx * kvd), 42, 1.0f), vc = rnd(kc.size(), 43, 1.0f);
  auto qkv = rnd((size_t)(R * ld), 44, 2.0f);
  float *dcs = dev(cs), *dsn = dev(sn), *dqn = dev(qn), *dkn = dev(kn), *dkc = dev(kc),
        *dvc = dev(vc), *dqkv = dev(qkv);
  int *dpos = dev(pos);
  std::vector<float> q((size_t)(R * qd)), qr(q.size());
  float *dq = dev(q);
  auto kcr = kc, vcr = vc;
  if (mc_qk_prepare(dqkv, ld, gated, dqn, dkn, dcs, dsn, rd, 1e-6f, dpos, dq, dkc, dvc, max_ctx, R,
                    nH, nKV, D, 0) != 0)
    g_fail++;
  mc_ref_qk_prepare(qkv.data(), ld, gated, qn.data(), kn.data(), cs.data(), sn.data(), rd, 1e-6f,
                    pos.data(), qr.data(), kcr.data(), vcr.data(), max_ctx, R, nH, nKV, D);
  char nm[96];
  snprintf(nm, sizeof nm, "%s: q prepare", name);
  exact(nm, host(dq, q.size()), qr);
  snprintf(nm, sizeof nm, "%s: k cache", name);
  exact(nm, host(dkc, kc.size()), kcr);
  snprintf(nm, sizeof nm, "%s: v cache", name);
  exact(nm, host(dvc, vc.size()), vcr);

  int dev_id = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev_id));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev_id));
  const int nsplit = attn_lab_splits_shipped(nKV, sms); /* what mc_batch_build fixes */
  float *dml, *dacc, *dout, *dout1;
  CUDA_OK(cudaMalloc(&dml, (size_t)(R * nH * nsplit * 2) * sizeof(float)));
  CUDA_OK(cudaMalloc(&dacc, (size_t)(R * nH * nsplit * D) * sizeof(float)));
  CUDA_OK(cudaMalloc(&dout, (size_t)(R * qd) * sizeof(float)));
  CUDA_OK(cudaMalloc(&dout1, (size_t)(R * qd) * sizeof(float)));
  if (mc_attn_decode(dq, dkc, dvc, dpos, nullptr, max_ctx, gated ? dqkv : nullptr, ld, dml, dacc,
                     dout, R, nH, nKV, D, nsplit, 0) != 0)
    g_fail++;
  /* each row alone, from its own slices of q, the caches, pos and the gates */
  for (int r = 0; r < R; r++)
    if (mc_attn_decode(dq + r * qd, dkc + r * max_ctx * kvd, dvc + r * max_ctx * kvd, dpos + r,
                       nullptr, max_ctx, gated ? dqkv + r * ld : nullptr, ld, dml, dacc,
                       dout1 + r * qd, 1, nH, nKV, D, nsplit, 0) != 0)
      g_fail++;
  auto og = host(dout, (size_t)(R * qd));
  std::vector<float> ocpu((size_t)(R * qd));
  mc_ref_attn_decode(qr.data(), kcr.data(), vcr.data(), pos.data(), max_ctx,
                     gated ? qkv.data() : nullptr, ld, ocpu.data(), R, nH, nKV, D);
  /* fp64 reference from the same (exact) q and caches */
  double worst_g = 0.0, worst_c = 0.0, vmax = 0.0;
  for (float x : vcr) vmax = fmax(vmax, fabs((double)x));
  const double scale = 1.0 / sqrt((double)D);
  std::vector<double> sc((size_t)max_ctx);
  for (int r = 0; r < R; r++)
    for (int h = 0; h < nH; h++) {
      const int kh = h / (nH / nKV);
      const float *qh = &qr[(size_t)(r * qd + h * D)];
      double mx = -INFINITY, sum = 0.0;
      for (int64_t j = 0; j <= pos[r]; j++) {
        const float *kj = &kcr[(size_t)(((int64_t)r * max_ctx + j) * kvd + kh * D)];
        double s = 0.0;
        for (int d = 0; d < D; d++) s += (double)qh[d] * (double)kj[d];
        sc[(size_t)j] = s * scale;
        mx = fmax(mx, sc[(size_t)j]);
      }
      for (int64_t j = 0; j <= pos[r]; j++) sum += exp(sc[(size_t)j] - mx);
      for (int d = 0; d < D; d++) {
        double o = 0.0;
        for (int64_t j = 0; j <= pos[r]; j++)
          o += exp(sc[(size_t)j] - mx) / sum *
               (double)vcr[(size_t)(((int64_t)r * max_ctx + j) * kvd + kh * D + d)];
        if (gated) o *= 1.0 / (1.0 + exp(-(double)qkv[(size_t)(r * ld + qd + h * D + d)]));
        const size_t i = (size_t)(r * qd + h * D + d);
        worst_g = fmax(worst_g, fabs((double)og[i] - o));
        worst_c = fmax(worst_c, fabs((double)ocpu[i] - o));
      }
    }
  snprintf(nm, sizeof nm, "%s: attention (%d splits)", name, nsplit);
  report(nm, worst_g <= 2e-5 * vmax, "max|gpu - fp64| %.3g (cpu order: %.3g)", worst_g, worst_c);
  snprintf(nm, sizeof nm, "%s: attention 1 row = batch", name);
  exact(nm, host(dout1, (size_t)(R * qd)), og);
  cudaFree(dcs), cudaFree(dsn), cudaFree(dqn), cudaFree(dkn), cudaFree(dkc), cudaFree(dvc);
  cudaFree(dqkv), cudaFree(dpos), cudaFree(dq), cudaFree(dml), cudaFree(dacc), cudaFree(dout);
  cudaFree(dout1);
}

/* MoE: routing (expert ids exact, weights within expf ulps), experts (warp sums against
 * dot_f32: reassociation of sums of Din and I terms, |d| <= 1e-5 max|ref|; the reference's ids
 * and weights feed both sides so the two parts are checked separately), shared-expert add. */
static void check_moe(int qwen, int64_t E, int64_t k, int64_t n_group, int64_t topk_group,
                      int64_t I, int64_t Din, const char *name) {
  const int R = 5;
  const int64_t ldl = E + 4;
  auto lg = rnd((size_t)(R * ldl), 60, 3.0f), cb = rnd((size_t)E, 61, 0.05f);
  float *dlg = dev(lg), *dcb = dev(cb), *dscr;
  int32_t *didx;
  float *dwt;
  CUDA_OK(cudaMalloc(&dscr, (size_t)(R * 4 * E) * sizeof(float)));
  CUDA_OK(cudaMalloc(&didx, (size_t)(R * k) * sizeof(int32_t)));
  CUDA_OK(cudaMalloc(&dwt, (size_t)(R * k) * sizeof(float)));
  const float scaling = qwen ? 1.0f : 2.5f;
  if (mc_moe_route(dlg, ldl, qwen ? nullptr : dcb, qwen, E, k, 1, scaling, n_group, topk_group,
                   dscr, didx, dwt, R, 0) != 0)
    g_fail++;
  std::vector<int32_t> ix((size_t)(R * k));
  std::vector<float> wr((size_t)(R * k));
  mc_ref_moe_route(lg.data(), ldl, qwen ? nullptr : cb.data(), qwen, E, k, 1, scaling, n_group,
                   topk_group, ix.data(), wr.data(), R);
  auto gix = host(didx, ix.size());
  char nm[96];
  snprintf(nm, sizeof nm, "%s: routing ids", name);
  report(nm, memcmp(gix.data(), ix.data(), ix.size() * sizeof(int32_t)) == 0, "%.0f rows x %.0f",
         (double)R, (double)k);
  snprintf(nm, sizeof nm, "%s: routing weights", name);
  close_to(nm, host(dwt, wr.size()), wr, 1e-6, 0.0);

  auto x = rnd((size_t)(R * Din), 62, 1.0f);
  auto wg = rnd((size_t)(E * I * Din), 63, 1.0f / sqrtf((float)Din));
  auto wu = rnd((size_t)(E * I * Din), 64, 1.0f / sqrtf((float)Din));
  auto wd = rnd((size_t)(E * Din * I), 65, 1.0f / sqrtf((float)I));
  float *dx = dev(x), *dwg = dev(wg), *dwu = dev(wu), *dwd = dev(wd), *dh, *dy, *dacc;
  CUDA_OK(cudaMalloc(&dh, (size_t)(R * k * I) * sizeof(float)));
  CUDA_OK(cudaMalloc(&dy, (size_t)(R * k * Din) * sizeof(float)));
  CUDA_OK(cudaMalloc(&dacc, (size_t)(R * Din) * sizeof(float)));
  int32_t *dix = dev(ix);
  float *dwr = dev(wr);
  if (mc_moe_experts(dx, Din, dix, dwr, qwen ? dwg : nullptr, dwu, dwd, dh, dy, dacc, R, k, I, Din,
                     0) != 0)
    g_fail++;
  std::vector<float> acc((size_t)(R * Din));
  mc_ref_moe_experts(x.data(), Din, ix.data(), wr.data(), qwen ? wg.data() : nullptr, wu.data(),
                     wd.data(), acc.data(), R, k, I, Din);
  double amax = 0.0;
  for (float v : acc) amax = fmax(amax, fabs((double)v));
  snprintf(nm, sizeof nm, "%s: experts", name);
  close_to(nm, host(dacc, acc.size()), acc, 0.0, 1e-5 * amax);

  auto y = rnd((size_t)(R * Din), 66, 1.0f), sh = rnd((size_t)(R * Din), 67, 1.0f);
  float *dy2 = dev(y), *dsh = dev(sh);
  if (mc_moe_shared_add(dy2, dsh, qwen ? dlg + E : nullptr, ldl, R, Din, 0) != 0) g_fail++;
  mc_ref_moe_shared_add(y.data(), sh.data(), qwen ? lg.data() + E : nullptr, ldl, R, Din);
  snprintf(nm, sizeof nm, "%s: shared add", name);
  close_to(nm, host(dy2, y.size()), y, 1e-6, 1e-7);
  cudaFree(dlg), cudaFree(dcb), cudaFree(dscr), cudaFree(didx), cudaFree(dwt), cudaFree(dx);
  cudaFree(dwg), cudaFree(dwu), cudaFree(dwd), cudaFree(dh), cudaFree(dy), cudaFree(dacc);
  cudaFree(dix), cudaFree(dwr), cudaFree(dy2), cudaFree(dsh);
}

static void check_metrics(int64_t V) {
  const int K = 2, C = 4, R = C * K;
  auto base = rnd((size_t)(K * V), 50, 6.0f);
  std::vector<float> lg((size_t)(R * V));
  const float pert[C] = {0.0f, 0.0f, 1e-3f, 0.3f}; /* c = 1: identical to the reference */
  for (int c = 0; c < C; c++) {
    auto e = rnd((size_t)(K * V), 51 + c, 1.0f);
    for (int k = 0; k < K; k++)
      for (int64_t i = 0; i < V; i++)
        lg[(size_t)((c * K + k) * V + i)] = base[(size_t)(k * V + i)] + pert[c] * e[(size_t)(k * V + i)];
  }
  /* a tie for the maximum in window 0 of the reference (argmax: the first index), and a
   * non-finite configuration row */
  float mx = -INFINITY;
  for (int64_t i = 0; i < V; i++) mx = fmaxf(mx, lg[(size_t)i]);
  lg[5] = mx + 1.0f;
  lg[(size_t)(V - 3)] = mx + 1.0f;
  lg[(size_t)((3 * K + 1) * V + 17)] = INFINITY;
  std::vector<int64_t> tg = {3, V - 1};
  float *dl = dev(lg);
  int64_t *dtg = dev(tg);
  mc_row_stats *ds;
  mc_row_metrics *dm;
  CUDA_OK(cudaMalloc(&ds, R * sizeof(mc_row_stats)));
  CUDA_OK(cudaMalloc(&dm, R * sizeof(mc_row_metrics)));
  if (mc_row_stats_launch(dl, R, V, ds, 0) != 0) g_fail++;
  if (mc_row_metrics_launch(dl, ds, dtg, R, K, V, dm, 0) != 0) g_fail++;
  auto st = host(ds, R);
  auto mt = host(dm, R);
  std::vector<mc_row_stats> sr(R);
  std::vector<mc_row_metrics> mr(R);
  mc_ref_row_metrics(lg.data(), tg.data(), R, K, V, sr.data(), mr.data());
  int ok = 1;
  double wkl = 0.0, wnll = 0.0;
  for (int r = 0; r < R; r++) {
    const mc_row_metrics &g = mt[(size_t)r], &c = mr[(size_t)r];
    if (g.finite != c.finite) ok = 0;
    if (!c.finite) continue;
    if (g.argmax != c.argmax || g.top1 != c.top1) ok = 0;
    double dkl = fabs((double)g.kl - (double)c.kl), dn = fabs((double)g.nll - (double)c.nll);
    if (!(dkl <= 1e-5 * c.kl + 1e-10) || !(dn <= 1e-6 * (fabs((double)c.nll) + 1.0)) ||
        !(fabs((double)g.dp - (double)c.dp) <= 1e-6))
      ok = 0;
    wkl = fmax(wkl, dkl);
    wnll = fmax(wnll, dn);
  }
  if (st[0].argmax != 5) ok = 0;
  char nm[64];
  snprintf(nm, sizeof nm, "metrics V=%lld", (long long)V);
  report(nm, ok, "max |dkl| %.3g, max |dnll| %.3g", wkl, wnll);
  if (!ok)
    for (int r = 0; r < R; r++)
      printf("    row %d: gpu kl %.9g nll %.9g dp %.3g top1 %d am %d fin %d | cpu kl %.9g nll %.9g "
             "dp %.3g top1 %d am %d fin %d\n", r, mt[(size_t)r].kl, mt[(size_t)r].nll,
             mt[(size_t)r].dp, mt[(size_t)r].top1, mt[(size_t)r].argmax, mt[(size_t)r].finite,
             mr[(size_t)r].kl, mr[(size_t)r].nll, mr[(size_t)r].dp, mr[(size_t)r].top1,
             mr[(size_t)r].argmax, mr[(size_t)r].finite);
  cudaFree(dl), cudaFree(dtg), cudaFree(ds), cudaFree(dm);
}

/* bf16 round to nearest even of a finite float, by its bits (the project's bf16 format, independent
 * of CUDA's __float2bfloat16_rn): add 0x7fff plus the lowest kept bit, drop the low 16 bits. */
static uint16_t bf16_rne(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* ub [Rpad][n] against bf16_rne of the fp32 values g [R][n], and zeros in rows R..Rpad-1. */
static void bf16_rows(const char *name, const uint16_t *ub, const std::vector<float> &g, int R,
                      int Rpad, int64_t n) {
  size_t bad = 0;
  for (int64_t i = 0; i < (int64_t)Rpad * n; i++)
    if (ub[i] != (i < (int64_t)R * n ? bf16_rne(g[(size_t)i]) : 0)) bad++;
  report(name, bad == 0, "%.0f differing of %.0f (bit-exact, padding rows zero)", (double)bad,
         (double)Rpad * (double)n);
}

/* The fused glue (mc_fused.h) against the unfused kernels' arithmetic, bit for bit: h + y and
 * the norm against the CPU references (bit-identical, as the unfused kernels are), the bf16
 * inputs against bf16_rne of the fp32 outputs, and the padding rows zero (the buffer starts as
 * 0xff bytes, so a row left unwritten fails). Sizes include a hidden width that is not a
 * multiple of the block (300), a padded batch (R = 5 of Rpad = 16) and a row too wide for the
 * kernel's shared copy (12500 floats; the others are staged). */
static void check_fused() {
  struct {
    int R, Rpad;
    int64_t H;
    int with_y, with_ub, plus_one;
    const char *name;
  } cases[] = {{5, 16, 300, 1, 1, 1, "add_rmsnorm R=5/16 H=300 (1+w) bf16"},
               {4, 4, 256, 0, 1, 0, "add_rmsnorm no y (first block) bf16"},
               {16, 64, 2560, 1, 1, 0, "add_rmsnorm R=16/64 H=2560 bf16"},
               {3, 3, 320, 1, 0, 0, "add_rmsnorm fp32 (no bf16 output)"},
               /* a row past the 48 KiB shared copy (mc_norm_stage_bytes): read from global memory */
               {2, 4, 12500, 1, 1, 1, "add_rmsnorm H=12500 unstaged bf16"}};
  for (auto &c : cases) {
    const size_t n = (size_t)c.R * (size_t)c.H;
    auto h = rnd(n, 40, 3.0f), y = rnd(n, 41, 2.0f), w = rnd((size_t)c.H, 42, 1.0f);
    std::vector<float> u(n), hr = h, ur(n);
    float *dh = dev(h), *dy = dev(y), *dw = dev(w), *du = dev(u);
    uint16_t *dub = nullptr;
    const size_t nb = (size_t)c.Rpad * (size_t)c.H;
    if (c.with_ub) {
      CUDA_OK(cudaMalloc(&dub, nb * sizeof(uint16_t)));
      CUDA_OK(cudaMemset(dub, 0xff, nb * sizeof(uint16_t)));
    }
    if (mc_add_rmsnorm(dh, c.with_y ? dy : nullptr, du, dub, c.R, c.Rpad, c.H, dw, c.plus_one,
                       1e-6f, 0) != 0)
      g_fail++;
    if (c.with_y) mc_ref_add(hr.data(), y.data(), (int64_t)n);
    mc_ref_rmsnorm(hr.data(), ur.data(), c.R, 1, (int)c.H, c.H, w.data(), 0, c.plus_one, 1e-6f);
    char nm[96];
    snprintf(nm, sizeof nm, "%s: h", c.name);
    exact(nm, host(dh, n), hr);
    snprintf(nm, sizeof nm, "%s: u", c.name);
    auto ug = host(du, n);
    exact(nm, ug, ur);
    if (c.with_ub) {
      auto ub = host(dub, nb);
      snprintf(nm, sizeof nm, "%s: ub", c.name);
      bf16_rows(nm, ub.data(), ug, c.R, c.Rpad, c.H);
      cudaFree(dub);
    }
    cudaFree(dh), cudaFree(dy), cudaFree(dw), cudaFree(du);
  }
  /* the embedding fused into the first norm: h = embed[tok] and u against the CPU's embedding
   * and norm, ub against bf16(u), padding rows zero (a repeated token and the last id included) */
  {
    const int R = 5, Rpad = 16;
    const int64_t V = 40, H = 300;
    auto E = rnd((size_t)(V * H), 49, 2.0f), w = rnd((size_t)H, 50, 1.0f);
    std::vector<int64_t> tok = {39, 3, 0, 3, 17};
    std::vector<float> h((size_t)(R * H), 7.0f), u(h.size()), hr(h.size()), ur(h.size());
    float *dE = dev(E), *dw = dev(w), *dh = dev(h), *du = dev(u);
    int64_t *dt = dev(tok);
    uint16_t *dub = nullptr;
    const size_t nb = (size_t)Rpad * (size_t)H;
    CUDA_OK(cudaMalloc(&dub, nb * sizeof(uint16_t)));
    CUDA_OK(cudaMemset(dub, 0xff, nb * sizeof(uint16_t)));
    if (mc_embed_rmsnorm(dE, dt, dh, du, dub, R, Rpad, H, dw, 1, 1e-6f, 0) != 0) g_fail++;
    mc_ref_embed(E.data(), tok.data(), hr.data(), R, H);
    mc_ref_rmsnorm(hr.data(), ur.data(), R, 1, (int)H, H, w.data(), 0, 1, 1e-6f);
    exact("embed_rmsnorm: h", host(dh, h.size()), hr);
    auto ug = host(du, u.size());
    exact("embed_rmsnorm: u", ug, ur);
    bf16_rows("embed_rmsnorm: ub", host(dub, nb).data(), ug, R, Rpad, H);
    cudaFree(dE), cudaFree(dw), cudaFree(dh), cudaFree(du), cudaFree(dt), cudaFree(dub);
  }
  /* the SSM blocks' output norms: GDN's per-head norm with the gate (z strided, as the gate slice
   * of the projection; within 1e-6 of the CPU: one expf in silu), Mamba-2's in-place grouped
   * norm with per-group weights (bit-exact); both with the bf16 copy */
  {
    const int Rg = 5, Rgpad = 16, ng = 4, gs = 96;
    const int64_t ld = (int64_t)ng * gs, ldz = 3 * ld;
    const size_t n = (size_t)Rg * (size_t)ld, nb = (size_t)Rgpad * (size_t)ld;
    auto x = rnd(n, 45, 3.0f), z = rnd((size_t)Rg * (size_t)ldz, 46, 6.0f);
    auto wsh = rnd((size_t)gs, 47, 1.0f), wpg = rnd((size_t)ld, 48, 1.0f);
    std::vector<float> y(n), yr(n);
    float *dx = dev(x), *dz = dev(z), *dws = dev(wsh), *dwp = dev(wpg), *dyv = dev(y);
    uint16_t *dyb = nullptr;
    CUDA_OK(cudaMalloc(&dyb, nb * sizeof(uint16_t)));
    CUDA_OK(cudaMemset(dyb, 0xff, nb * sizeof(uint16_t)));
    if (mc_rmsnorm_gate(dx, dyv, dyb, dz, ldz, Rg, Rgpad, ng, gs, ld, dws, 0, 1e-6f, 0) != 0)
      g_fail++;
    mc_ref_rmsnorm(x.data(), yr.data(), Rg, ng, gs, ld, wsh.data(), 0, 0, 1e-6f);
    mc_ref_mul_silu(yr.data(), z.data(), ldz, Rg, ld);
    auto yg = host(dyv, n);
    close_to("rmsnorm_gate GDN (gate, shared w)", yg, yr, 1e-6, 0.0);
    bf16_rows("rmsnorm_gate GDN: yb", host(dyb, nb).data(), yg, Rg, Rgpad, ld);
    CUDA_OK(cudaMemset(dyb, 0xff, nb * sizeof(uint16_t)));
    if (mc_rmsnorm_gate(dx, dx, dyb, nullptr, 0, Rg, Rgpad, ng, gs, ld, dwp, 1, 1e-5f, 0) != 0)
      g_fail++;
    mc_ref_rmsnorm(x.data(), yr.data(), Rg, ng, gs, ld, wpg.data(), 1, 0, 1e-5f);
    yg = host(dx, n);
    exact("rmsnorm_gate Mamba-2 (in place, own w)", yg, yr);
    bf16_rows("rmsnorm_gate Mamba-2: yb", host(dyb, nb).data(), yg, Rg, Rgpad, ld);
    cudaFree(dx), cudaFree(dz), cudaFree(dws), cudaFree(dwp), cudaFree(dyv), cudaFree(dyb);
  }
  /* swiglu and relu2 with the bf16 output: act bit-identical to the unfused kernels' on the GPU
   * (the same silu), within 1e-6 of the CPU (one expf: see the header) */
  const int R = 5, Rpad = 16;
  const int64_t I = 700;
  const size_t n = (size_t)R * (size_t)I, nb = (size_t)Rpad * (size_t)I;
  auto gu = rnd((size_t)R * 2 * (size_t)I, 43, 4.0f), up = rnd(n, 44, 2.0f);
  std::vector<float> a(n), ar(n);
  float *dgu = dev(gu), *dup = dev(up), *da = dev(a), *da2 = dev(a);
  uint16_t *dab = nullptr;
  CUDA_OK(cudaMalloc(&dab, nb * sizeof(uint16_t)));
  CUDA_OK(cudaMemset(dab, 0xff, nb * sizeof(uint16_t)));
  if (mc_swiglu_bf16(dgu, da, dab, R, Rpad, I, 0) != 0) g_fail++;
  if (mc_swiglu(dgu, da2, R, I, 0) != 0) g_fail++;
  auto ag = host(da, n);
  exact("swiglu_bf16: act = swiglu's", ag, host(da2, n));
  mc_ref_swiglu(gu.data(), ar.data(), R, I);
  close_to("swiglu_bf16: act vs cpu", ag, ar, 1e-6, 0.0);
  bf16_rows("swiglu_bf16: actb", host(dab, nb).data(), ag, R, Rpad, I);
  CUDA_OK(cudaMemset(dab, 0xff, nb * sizeof(uint16_t)));
  if (mc_relu2_bf16(dup, da, dab, R, Rpad, I, 0) != 0) g_fail++;
  ag = host(da, n);
  mc_ref_relu2(up.data(), ar.data(), R, I);
  exact("relu2_bf16: act", ag, ar);
  bf16_rows("relu2_bf16: actb", host(dab, nb).data(), ag, R, Rpad, I);
  cudaFree(dgu), cudaFree(dup), cudaFree(da), cudaFree(da2), cudaFree(dab);
}

/* The fused SSM-block glue (mc_fused.h: conv + prep of Mamba-2 and GDN, Mamba-2's gate + group
 * norm) against the unfused kernels on the same inputs, bit for bit: every output, the conv
 * windows after each of three steps (the shift feeds the next step's sum), the bf16 copy and its
 * padding rows (buffers start as 0xff bytes, so an unwritten element fails). The unfused kernels
 * are checked against the CPU above, so the fused ones inherit those tolerances. Shapes: the
 * fixtures' kinds at small sizes, a 4B-like GDN head (dk = dv = 128: the key-head blocks loop,
 * the value channels span several blocks) and padded bf16 rows (R = 3 of Rpad = 5). */
static void exact_u16(const char *name, const std::vector<uint16_t> &g,
                      const std::vector<uint16_t> &r) {
  size_t bad = 0;
  for (size_t i = 0; i < r.size(); i++) bad += g[i] != r[i];
  report(name, bad == 0, "%.0f differing of %.0f (bit-exact, padding rows included)",
         (double)bad, (double)r.size());
}

/* The unfused kernel's device output a[n] against the fused one's b[n], bit for bit, reported as
 * "<who> step <step>: <what>". */
static void same_dev(const char *who, int step, const char *what, const float *a, const float *b,
                     size_t n) {
  char nm[128];
  snprintf(nm, sizeof nm, "%s step %d: %s", who, step, what);
  exact(nm, host(b, n), host(a, n));
}

/* K: the conv width (4, the shipped one, runs the kernel instance compiled for it; another runs
   the instance with the width an argument: mc_fused.cu's CONV_K_FIXED) */
static void check_fused_mamba2(int K) {
  const int R = 3, Rpad = 5, Hm = 6, P = 8, G = 2, N = 24;
  char who[40];
  snprintf(who, sizeof who, "mamba2 fused K=%d", K);
  const int64_t di = (int64_t)Hm * P, gn = (int64_t)G * N, conv_dim = di + 2 * gn;
  const int64_t in_rows = di + conv_dim + Hm;
  auto win = rnd((size_t)(R * (K - 1) * conv_dim), 60, 2.0f);
  auto cw = rnd((size_t)(conv_dim * K), 61, 0.7f), cb = rnd((size_t)conv_dim, 62, 0.3f);
  auto A = rnd(Hm, 63, 1.2f), dtb = rnd(Hm, 64, 1.0f), D = rnd(Hm, 65, 1.0f);
  auto nw = rnd((size_t)di, 66, 1.0f);
  const std::vector<int> pos = {0, 4, 0}; /* clamped (prompt) and free (decode) rows */
  float *dwa = dev(win), *dwb = dev(win), *dcw = dev(cw), *dcb = dev(cb), *dA = dev(A);
  float *ddt = dev(dtb), *dD = dev(D), *dnw = dev(nw);
  int *dpos = dev(pos);
  std::vector<float> cv((size_t)(R * conv_dim)), al((size_t)(R * Hm)), v((size_t)(R * di)),
      bc((size_t)(R * gn)), t((size_t)(R * di));
  float *cva = dev(cv), *cvb = dev(cv), *ala = dev(al), *alb = dev(al), *va = dev(v), *vb = dev(v);
  float *Ba = dev(bc), *Bb = dev(bc), *Ca = dev(bc), *Cb = dev(bc), *ta = dev(t), *tb_ = dev(t);
  const size_t nb = (size_t)Rpad * (size_t)di;
  uint16_t *ba = nullptr, *bb = nullptr;
  CUDA_OK(cudaMalloc(&ba, nb * sizeof(uint16_t)));
  CUDA_OK(cudaMalloc(&bb, nb * sizeof(uint16_t)));
  for (int step = 0; step < 3; step++) {
    auto zx = rnd((size_t)(R * in_rows), 67 + step, 2.0f), o = rnd((size_t)(R * di), 70 + step, 1.0f);
    float *dzx = dev(zx), *dO = dev(o);
    if (mc_conv_step(dwa, dzx + di, in_rows, dcw, dcb, cva, R, conv_dim, K, 0) != 0 ||
        mc_mamba2_prep(dzx, in_rows, di + conv_dim, cva, conv_dim, dA, ddt, 0.3f, 2.5f, dpos, ala,
                       va, Ba, Ca, R, Hm, P, G, N, 0) != 0 ||
        mc_mamba2_conv_prep(dwb, dzx, in_rows, dcw, dcb, cvb, conv_dim, K, dA, ddt, 0.3f, 2.5f,
                            dpos, alb, vb, Bb, Cb, R, Hm, P, G, N, 0) != 0)
      g_fail++;
    same_dev(who, step, "window", dwa, dwb, win.size());
    same_dev(who, step, "cv", cva, cvb, cv.size());
    same_dev(who, step, "alpha", ala, alb, al.size());
    same_dev(who, step, "v = delta x", va, vb, v.size());
    same_dev(who, step, "B", Ba, Bb, bc.size());
    same_dev(who, step, "C", Ca, Cb, bc.size());
    /* gate + norm, with the bf16 copy (step 0, 2) and without (step 1) */
    const int with_b = step != 1;
    CUDA_OK(cudaMemset(ba, 0xff, nb * sizeof(uint16_t)));
    CUDA_OK(cudaMemset(bb, 0xff, nb * sizeof(uint16_t)));
    if (mc_mamba2_gate(dO, cva, conv_dim, dzx, in_rows, dD, ta, R, Hm, P, 0) != 0 ||
        mc_rmsnorm_gate(ta, ta, with_b ? ba : nullptr, nullptr, 0, R, Rpad, G, (int)(di / G), di,
                        dnw, 1, 1e-5f, 0) != 0 ||
        mc_mamba2_gate_norm(dO, cva, conv_dim, dzx, in_rows, dD, tb_, with_b ? bb : nullptr, R,
                            Rpad, Hm, P, G, dnw, 1e-5f, 0) != 0)
      g_fail++;
    same_dev(who, step, "gate + group norm", ta, tb_, t.size());
    char nm[80];
    snprintf(nm, sizeof nm, "mamba2 fused step %d: %s", step, with_b ? "bf16 copy" : "no bf16 (0xff)");
    exact_u16(nm, host(bb, nb), host(ba, nb));
    cudaFree(dzx), cudaFree(dO);
  }
  cudaFree(dwa), cudaFree(dwb), cudaFree(dcw), cudaFree(dcb), cudaFree(dA), cudaFree(ddt);
  cudaFree(dD), cudaFree(dnw), cudaFree(dpos), cudaFree(cva), cudaFree(cvb), cudaFree(ala);
  cudaFree(alb), cudaFree(va), cudaFree(vb), cudaFree(Ba), cudaFree(Bb), cudaFree(Ca);
  cudaFree(Cb), cudaFree(ta), cudaFree(tb_), cudaFree(ba), cudaFree(bb);
}

static void check_fused_gdn(int R, int Hk, int Hv, int dk, int dv, int K, const char *name) {
  const int64_t key_dim = (int64_t)Hk * dk, vd = (int64_t)Hv * dv, conv_dim = 2 * key_dim + vd;
  const int64_t b_off = conv_dim + vd, a_off = b_off + Hv, in_rows = a_off + Hv + 3;
  auto win = rnd((size_t)(R * (K - 1) * conv_dim), 80, 2.0f);
  auto cw = rnd((size_t)(conv_dim * K), 81, 0.7f);
  auto A = rnd(Hv, 82, 1.2f), dtb = rnd(Hv, 83, 1.0f);
  float *dwa = dev(win), *dwb = dev(win), *dcw = dev(cw), *dA = dev(A), *ddt = dev(dtb);
  std::vector<float> cv((size_t)R * conv_dim), qk((size_t)R * key_dim), v((size_t)R * vd),
      g((size_t)(R * Hv));
  float *cva = dev(cv), *cvb = dev(cv), *qa = dev(qk), *qb = dev(qk), *ka = dev(qk), *kb = dev(qk);
  float *va = dev(v), *vb = dev(v), *ala = dev(g), *alb = dev(g), *bea = dev(g), *beb = dev(g);
  char who[96];
  snprintf(who, sizeof who, "gdn fused %s", name);
  for (int step = 0; step < 3; step++) {
    auto proj = rnd((size_t)R * in_rows, 84 + step, 2.0f);
    float *dp = dev(proj);
    if (mc_conv_step(dwa, dp, in_rows, dcw, nullptr, cva, R, conv_dim, K, 0) != 0 ||
        mc_gdn_prep(cva, dp, in_rows, b_off, a_off, dA, ddt, qa, ka, va, ala, bea, R, Hk, Hv, dk,
                    dv, 0) != 0 ||
        mc_gdn_conv_prep(dwb, dp, in_rows, b_off, a_off, dcw, cvb, K, dA, ddt, qb, kb, vb, alb,
                         beb, R, Hk, Hv, dk, dv, 0) != 0)
      g_fail++;
    same_dev(who, step, "window", dwa, dwb, win.size());
    same_dev(who, step, "cv", cva, cvb, cv.size());
    same_dev(who, step, "q (l2, dk^-1/2)", qa, qb, qk.size());
    same_dev(who, step, "k (l2)", ka, kb, qk.size());
    same_dev(who, step, "v", va, vb, v.size());
    same_dev(who, step, "alpha", ala, alb, g.size());
    same_dev(who, step, "beta", bea, beb, g.size());
    cudaFree(dp);
  }
  cudaFree(dwa), cudaFree(dwb), cudaFree(dcw), cudaFree(dA), cudaFree(ddt), cudaFree(cva);
  cudaFree(cvb), cudaFree(qa), cudaFree(qb), cudaFree(ka), cudaFree(kb), cudaFree(va);
  cudaFree(vb), cudaFree(ala), cudaFree(alb), cudaFree(bea), cudaFree(beb);
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    fprintf(stderr, "gpu_check_mc_kernels: no CUDA device\n");
    return 2;
  }
  /* the norm kernels in both of their forms (mc_fused_norms: rows read from global memory, or
     staged in shared memory first); the same bits are required of each */
  for (int mode = MC_NORMS_PLAIN; mode <= MC_NORMS_STAGED; mode++) {
    mc_fused_norms_set(mode);
    printf("-- norms %s\n", mode == MC_NORMS_PLAIN ? "plain" : "staged");
    check_rmsnorm();
    check_fused();
    check_fused_mamba2(4);
    check_fused_mamba2(3);
    check_fused_gdn(4, 4, 12, 24, 16, 4, "R=4 Hk=4 Hv=12 dk=24 dv=16 K=4");
    check_fused_gdn(4, 4, 12, 24, 16, 3, "R=4 Hk=4 Hv=12 dk=24 dv=16 K=3");
    check_fused_gdn(2, 2, 4, 128, 128, 4, "R=2 4B head 128 x 128 K=4");
  }
  check_embed_act();
  check_conv();
  check_gdn();
  check_mamba2();
  check_attention(1, 4, 2, 32, 600, {0, 1, 255, 256, 257, 599}, "qwen fixture shape");
  check_attention(0, 4, 2, 16, 300, {0, 5, 299}, "nemotron fixture shape");
  check_attention(1, 16, 4, 256, 4096, {4095, 1000}, "qwen3.5-4b heads");
  check_attention(0, 40, 8, 128, 2048, {2047}, "nemotron-4b heads");
  check_moe(1, 8, 2, 1, 1, 24, 48, "moe qwen fixture shape");
  check_moe(0, 8, 2, 2, 1, 24, 24, "moe nemotron groups");
  check_moe(1, 128, 8, 1, 1, 64, 256, "moe qwen E=128 top-8");
  check_moe(0, 128, 6, 8, 4, 64, 128, "moe nemotron E=128 8 groups");
  check_metrics(1000);
  check_metrics(248320);
  CUDA_OK(cudaDeviceSynchronize());
  printf("%s: %d failing case(s)\n", g_fail ? "FAIL" : "ok", g_fail);
  return g_fail ? 1 : 0;
}
