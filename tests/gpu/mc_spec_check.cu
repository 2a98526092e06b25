/* GPU check (device machine, not CI): the spec-round kernels (mc_conv_spec, mc_qk_prepare_t,
 * mc_attn_decode with the spec batch's cache-row map r / T, mc_spec_metrics_launch) against
 * their CPU references in mc_ref.c and against
 * the lockstep kernels, on random inputs (Philox; +-[0.05, 1) times a scale, never zero).
 * Tolerances, from the arithmetic:
 *  - against the lockstep kernels on the device, bit-exact: a round's draft j is the same IEEE
 *    operations in the same order as standard step j (conv: the taps over the window and the
 *    earlier drafts in ascending k; attention: the same kernel reading the state row's cache;
 *    metrics: the same device function metrics_row; attention: both at the runtime's split count
 *    attn_lab_splits_shipped, so the same partition of every row's positions);
 *  - against mc_ref.c: conv outputs 1e-6 relative (one SiLU: CUDA expf <= 2 ulp, glibc < 1,
 *    the division <= 1.5 ulp: <= 8 ulp), committed windows exact (copies); q and the K/V writes
 *    exact (host RoPE tables, dot_f32 order); attention |gpu - cpu| <= 4e-5 max|v| (each within
 *    2e-5 max|v| of fp64, gpu_check_mc_kernels' bound, in another summation order); metrics as
 *    gpu_check_mc_kernels: |dkl| <= 1e-5 kl + 1e-10, |dnll| <= 1e-6 (|nll| + 1), |ddp| <= 1e-6,
 *    argmax and top1 exact.
 * Exit status 0 only when every case passes. Usage: gpu_check_mc_spec */
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "src/model_cuda/attn_lab.h"
#include "src/model_cuda/mc_kernels.h"
#include "src/model_cuda/mc_ref.h"
#include "tests/gpu/mc_check_util.cuh"

static void check_conv_spec(int T, int K, int with_bias) {
  const int R = 4;
  const int64_t C = 1219, ldx = C + 40, W = (int64_t)(K - 1) * C;
  auto win = rnd((size_t)(R * W), 60 + T, 2.0f), winr = win, win0 = win;
  auto x = rnd((size_t)(R * T * ldx), 61 + T, 2.0f);
  auto w = rnd((size_t)(C * K), 62, 0.7f), bias = rnd((size_t)C, 63, 0.3f);
  std::vector<int> a(R);
  for (int r = 0; r < R; r++) a[(size_t)r] = r == 0 ? 0 : 1 + (r * 7) % T; /* row 0 sits out */
  std::vector<float> out((size_t)(R * T * C)), outr(out.size());
  float *dwin = dev(win), *dx = dev(x), *dw = dev(w), *db = dev(bias), *dout = dev(out);
  int *da = dev(a);
  if (mc_conv_spec(dwin, dx, ldx, dw, with_bias ? db : nullptr, da, dout, R, T, C, K, 0) != 0)
    g_fail++;
  mc_ref_conv_spec(winr.data(), x.data(), ldx, w.data(), with_bias ? bias.data() : nullptr,
                   a.data(), outr.data(), R, T, C, K);
  char nm[96];
  snprintf(nm, sizeof nm, "conv_spec T=%d K=%d%s: out", T, K, with_bias ? " +bias" : "");
  auto og = host(dout, out.size());
  close_to(nm, og, outr, 1e-6, 0.0);
  exact("  ... window after commit(a)", host(dwin, win.size()), winr);
  /* against T lockstep steps on the device, from the same windows */
  float *dws = dev(win0), *dos = dev(std::vector<float>((size_t)C));
  std::vector<float> steps(out.size()), wa(win0.size());
  for (int r = 0; r < R; r++)
    for (int j = 0; j < T; j++) {
      if (mc_conv_step(dws + r * W, dx + ((int64_t)r * T + j) * ldx, ldx, dw,
                       with_bias ? db : nullptr, dos, 1, C, K, 0) != 0)
        g_fail++;
      auto o1 = host(dos, (size_t)C);
      memcpy(&steps[(size_t)(((int64_t)r * T + j) * C)], o1.data(), (size_t)C * sizeof(float));
      if (j + 1 == a[(size_t)r] || (a[(size_t)r] == 0 && j == 0)) {
        auto wr = a[(size_t)r] == 0 ? win0 : host(dws, win0.size());
        memcpy(&wa[(size_t)(r * W)], &wr[(size_t)(r * W)], (size_t)W * sizeof(float));
      }
    }
  exact("  ... out = T lockstep steps", og, steps);
  exact("  ... window = a lockstep steps", host(dwin, win.size()), wa);
  cudaFree(dwin), cudaFree(dx), cudaFree(dw), cudaFree(db), cudaFree(dout), cudaFree(da);
  cudaFree(dws), cudaFree(dos);
}

static void check_attn_t(int gated, int nH, int nKV, int D, int64_t max_ctx, int T,
                         const std::vector<int> &rpos, const char *name) {
  const int R = (int)rpos.size(), RT = R * T;
  const int64_t qd = (int64_t)nH * D, kvd = (int64_t)nKV * D, row = max_ctx * kvd;
  const int64_t ld = (gated ? 2 * qd : qd) + 2 * kvd + 3;
  const int rd = gated ? D / 4 : 0, half = rd / 2;
  std::vector<int> pos((size_t)RT);
  for (int i = 0; i < RT; i++) pos[(size_t)i] = rpos[(size_t)(i / T)] + i % T;
  std::vector<float> cs((size_t)(max_ctx * (half > 0 ? half : 1))), sn(cs.size());
  if (half > 0) mc_ref_rope_tables(1e7, rd, max_ctx, cs.data(), sn.data());
  auto qn = rnd((size_t)D, 70, 0.3f), kn = rnd((size_t)D, 71, 0.3f);
  auto kc = rnd((size_t)(R * row), 72, 1.0f), vc = rnd(kc.size(), 73, 1.0f);
  auto qkv = rnd((size_t)(RT * ld), 74, 2.0f);
  float *dcs = dev(cs), *dsn = dev(sn), *dqn = dev(qn), *dkn = dev(kn), *dkc = dev(kc),
        *dvc = dev(vc), *dqkv = dev(qkv);
  int *dpos = dev(pos);
  std::vector<float> q((size_t)(RT * qd)), qr(q.size());
  float *dq = dev(q);
  auto kcr = kc, vcr = vc;
  if (mc_qk_prepare_t(dqkv, ld, gated, dqn, dkn, dcs, dsn, rd, 1e-6f, dpos, dq, dkc, dvc, max_ctx,
                      RT, T, nH, nKV, D, 0) != 0)
    g_fail++;
  mc_ref_qk_prepare_t(qkv.data(), ld, gated, qn.data(), kn.data(), cs.data(), sn.data(), rd,
                      1e-6f, pos.data(), qr.data(), kcr.data(), vcr.data(), max_ctx, RT, T, nH,
                      nKV, D);
  char nm[112];
  snprintf(nm, sizeof nm, "%s T=%d: q prepare", name, T);
  exact(nm, host(dq, q.size()), qr);
  snprintf(nm, sizeof nm, "%s T=%d: k, v caches", name, T);
  auto kg = host(dkc, kc.size()), vg = host(dvc, vc.size());
  kg.insert(kg.end(), vg.begin(), vg.end());
  auto kv = kcr;
  kv.insert(kv.end(), vcr.begin(), vcr.end());
  exact(nm, kg, kv);
  int dev_id = 0, sms = 0;
  CUDA_OK(cudaGetDevice(&dev_id));
  CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev_id));
  const int nsplit = attn_lab_splits_shipped(nKV, sms); /* what mc_batch_build fixes */
  std::vector<int> crow((size_t)RT);                    /* the spec batch's cache_row_d */
  for (int i = 0; i < RT; i++) crow[(size_t)i] = i / T;
  int *dcrow = dev(crow);
  float *dml, *dacc, *dout, *dout1;
  CUDA_OK(cudaMalloc(&dml, (size_t)(RT * nH * nsplit * 2) * sizeof(float)));
  CUDA_OK(cudaMalloc(&dacc, (size_t)(RT * nH * nsplit * D) * sizeof(float)));
  CUDA_OK(cudaMalloc(&dout, (size_t)(RT * qd) * sizeof(float)));
  CUDA_OK(cudaMalloc(&dout1, (size_t)(RT * qd) * sizeof(float)));
  if (mc_attn_decode(dq, dkc, dvc, dpos, dcrow, max_ctx, gated ? dqkv : nullptr, ld, dml, dacc,
                     dout, RT, nH, nKV, D, nsplit, 0) != 0)
    g_fail++;
  auto og = host(dout, (size_t)(RT * qd));
  std::vector<float> ocpu((size_t)(RT * qd));
  mc_ref_attn_decode_t(qr.data(), kcr.data(), vcr.data(), pos.data(), max_ctx,
                       gated ? qkv.data() : nullptr, ld, ocpu.data(), RT, T, nH, nKV, D);
  double worst = 0.0, vmax = 0.0;
  for (float v : vcr) vmax = fmax(vmax, fabs((double)v));
  for (size_t i = 0; i < og.size(); i++) worst = fmax(worst, fabs((double)og[i] - ocpu[i]));
  snprintf(nm, sizeof nm, "%s T=%d: attention vs cpu", name, T);
  report(nm, worst <= 4e-5 * vmax, "max|gpu - cpu| %.3g (bound %.3g)", worst, 4e-5 * vmax);
  /* the lockstep kernel on one cache row per token row holding the state row's cache */
  std::vector<float> kc1((size_t)(RT * row)), vc1(kc1.size());
  for (int i = 0; i < RT; i++) {
    memcpy(&kc1[(size_t)(i * row)], &kg[(size_t)((i / T) * row)], (size_t)row * sizeof(float));
    memcpy(&vc1[(size_t)(i * row)], &vg[(size_t)((i / T) * row)], (size_t)row * sizeof(float));
  }
  float *dkc1 = dev(kc1), *dvc1 = dev(vc1);
  if (mc_attn_decode(dq, dkc1, dvc1, dpos, nullptr, max_ctx, gated ? dqkv : nullptr, ld, dml,
                     dacc, dout1, RT, nH, nKV, D, nsplit, 0) != 0)
    g_fail++;
  snprintf(nm, sizeof nm, "%s T=%d: attention = lockstep", name, T);
  exact(nm, og, host(dout1, (size_t)(RT * qd)));
  cudaFree(dcs), cudaFree(dsn), cudaFree(dqn), cudaFree(dkn), cudaFree(dkc), cudaFree(dvc);
  cudaFree(dqkv), cudaFree(dpos), cudaFree(dq), cudaFree(dml), cudaFree(dacc), cudaFree(dout);
  cudaFree(dout1), cudaFree(dkc1), cudaFree(dvc1), cudaFree(dcrow);
}

static void check_spec_metrics(int64_t V) {
  const int RT = 6, NR = 3;
  auto ring = rnd((size_t)(NR * V), 80, 6.0f);
  std::vector<float> lg((size_t)(RT * V));
  const int ref_row[RT] = {2, 0, 1, 2, 0, 1};
  const float pert[RT] = {0.0f, 1e-3f, 0.3f, 1e-2f, 0.0f, 2.0f};
  for (int i = 0; i < RT; i++) {
    auto e = rnd((size_t)V, 81 + i, 1.0f);
    for (int64_t j = 0; j < V; j++)
      lg[(size_t)(i * V + j)] = ring[(size_t)(ref_row[i] * V + j)] + pert[i] * e[(size_t)j];
  }
  lg[(size_t)(5 * V + 11)] = INFINITY; /* a non-finite draft */
  std::vector<int64_t> tg = {3, V - 1, 0, 17, 5, 9};
  std::vector<int> rr(ref_row, ref_row + RT);
  float *dring = dev(ring), *dl = dev(lg);
  int64_t *dtg = dev(tg);
  int *drr = dev(rr);
  mc_row_stats *drs, *ds;
  mc_row_metrics *dm;
  CUDA_OK(cudaMalloc(&drs, NR * sizeof(mc_row_stats)));
  CUDA_OK(cudaMalloc(&ds, RT * sizeof(mc_row_stats)));
  CUDA_OK(cudaMalloc(&dm, RT * sizeof(mc_row_metrics)));
  if (mc_row_stats_launch(dring, NR, V, drs, 0) != 0 || mc_row_stats_launch(dl, RT, V, ds, 0) != 0 ||
      mc_spec_metrics_launch(dl, ds, dring, drs, drr, dtg, RT, V, dm, 0) != 0)
    g_fail++;
  auto mt = host(dm, RT);
  std::vector<mc_row_stats> sr(RT);
  std::vector<mc_row_metrics> mr(RT);
  mc_ref_spec_metrics(lg.data(), ring.data(), rr.data(), tg.data(), RT, V, sr.data(), mr.data());
  int ok = 1, same_bits = 1;
  double wkl = 0.0;
  for (int i = 0; i < RT; i++) {
    const mc_row_metrics &g = mt[(size_t)i], &c = mr[(size_t)i];
    if (g.finite != c.finite) ok = 0;
    if (!c.finite) continue;
    if (g.argmax != c.argmax || g.top1 != c.top1) ok = 0;
    const double dkl = fabs((double)g.kl - (double)c.kl);
    if (!(dkl <= 1e-5 * c.kl + 1e-10) ||
        !(fabs((double)g.nll - (double)c.nll) <= 1e-6 * (fabs((double)c.nll) + 1.0)) ||
        !(fabs((double)g.dp - (double)c.dp) <= 1e-6))
      ok = 0;
    wkl = fmax(wkl, dkl);
    /* the lockstep metrics kernel on the pair (reference row, token row): the same bits */
    std::vector<float> pair((size_t)(2 * V));
    memcpy(pair.data(), &ring[(size_t)(ref_row[i] * V)], (size_t)V * sizeof(float));
    memcpy(pair.data() + V, &lg[(size_t)(i * V)], (size_t)V * sizeof(float));
    float *dp = dev(pair);
    int64_t *dt1 = dev(std::vector<int64_t>{tg[(size_t)i]});
    mc_row_stats *ds2;
    mc_row_metrics *dm2;
    CUDA_OK(cudaMalloc(&ds2, 2 * sizeof(mc_row_stats)));
    CUDA_OK(cudaMalloc(&dm2, 2 * sizeof(mc_row_metrics)));
    if (mc_row_stats_launch(dp, 2, V, ds2, 0) != 0 ||
        mc_row_metrics_launch(dp, ds2, dt1, 2, 1, V, dm2, 0) != 0)
      g_fail++;
    auto m2 = host(dm2, 2);
    if (memcmp(&m2[1], &g, sizeof g) != 0) same_bits = 0;
    cudaFree(dp), cudaFree(dt1), cudaFree(ds2), cudaFree(dm2);
  }
  if (mt[5].finite != 0) ok = 0;
  char nm[64];
  snprintf(nm, sizeof nm, "spec metrics V=%lld vs cpu", (long long)V);
  report(nm, ok, "max |dkl| %.3g (%.0f non-finite rows)", wkl, 1.0);
  snprintf(nm, sizeof nm, "spec metrics V=%lld = lockstep", (long long)V);
  report(nm, same_bits, "%.0f of %.0f rows differ", (double)!same_bits, (double)RT);
  cudaFree(dring), cudaFree(dl), cudaFree(dtg), cudaFree(drr), cudaFree(drs), cudaFree(ds);
  cudaFree(dm);
}

int main(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
    fprintf(stderr, "gpu_check_mc_spec: no CUDA device\n");
    return 2;
  }
  check_conv_spec(4, 4, 0);
  check_conv_spec(8, 4, 1);
  check_conv_spec(1, 4, 1);
  check_conv_spec(16, 2, 0);
  check_attn_t(1, 4, 2, 32, 600, 4, {0, 250, 590}, "qwen fixture shape");
  check_attn_t(0, 4, 2, 16, 300, 8, {0, 5, 291}, "nemotron fixture shape");
  check_attn_t(1, 16, 4, 256, 1100, 8, {1000, 3}, "qwen3.5-4b heads");
  check_spec_metrics(1000);
  check_spec_metrics(248320);
  CUDA_OK(cudaDeviceSynchronize());
  printf("gpu_check_mc_spec: %s (%d failed)\n", g_fail ? "FAIL" : "all passed", g_fail);
  return g_fail ? 1 : 0;
}
