/* gpu_golden_bytes [--cpu] DIR: the GPU half of the committed GPU bytes (tests/gpu_bytes/golden.h):
 * every item computed with the CUDA code (q_encode_cuda, the batched SSM engine on one row, the
 * src/model_cuda kernels) from golden.h's inputs, written to DIR (NAME.bin + MANIFEST) and
 * compared with the CPU half; exit 0 only when every item is byte-identical to the CPU's. With
 * --cpu: the CPU half only (golden_bytes_cpu), for a machine without a GPU. Run on the H200, then
 * copy DIR into tests/fixtures/gpu-bytes/ (its README). */
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "quant/format.h"
#include "quant/quant.h"
#include "src/model_cuda/mc_kernels.h"
#include "src/ssm/ssm_config.h"
#include "src/ssm_cuda/ssm_cuda.h"
#include "tests/gpu_bytes/golden.h"

namespace {

bool g_cuda_ok = true;

void ok(cudaError_t e, const char *what) {
  if (e != cudaSuccess) {
    fprintf(stderr, "gpu_golden_bytes: %s: %s\n", what, cudaGetErrorString(e));
    g_cuda_ok = false;
  }
}

template <typename T> T *dev(const T *h, size_t n) {
  T *d = nullptr;
  ok(cudaMalloc(&d, n * sizeof(T) + 16), "cudaMalloc");
  if (h) ok(cudaMemcpy(d, h, n * sizeof(T), cudaMemcpyHostToDevice), "upload");
  else ok(cudaMemset(d, 0, n * sizeof(T) + 16), "cudaMemset");
  return d;
}

template <typename T> std::vector<T> host(const T *d, size_t n) {
  std::vector<T> h(n);
  ok(cudaDeviceSynchronize(), "kernel");
  ok(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost), "download");
  return h;
}

template <typename T> int add(golden_set *g, const char *name, const std::vector<T> &v) {
  return golden_add(g, name, v.data(), v.size() * sizeof(T));
}

int quant_items(golden_set *g, char *err, size_t errlen) {
  std::vector<float> x((size_t)GQ_NMAT * GQ_ROWS * GQ_COLS);
  uint64_t ids[GQ_NMAT];
  uint32_t events[GQ_NMAT];
  golden_quant_input(x.data(), ids, events);
  float *dx = dev(x.data(), x.size());
  uint64_t *dids = dev(ids, GQ_NMAT);
  uint32_t *dev_ev = dev(events, GQ_NMAT);
  for (int i = 0; i < GOLDEN_NQUANT; i++) {
    qformat f;
    qlayout L;
    char name[64];
    size_t nb;
    if (golden_quant_format(i, &f, &L, name, sizeof name, &nb, err, errlen) != 0) return -1;
    unsigned char *dblob = dev<unsigned char>(nullptr, nb);
    qsr_params sr = {GOLDEN_SEED, dids, dev_ev, QSR_STREAM_HP};
    q_encode_cuda(&f, &L, GQ_NMAT, dx, dblob, &sr, nullptr);
    if (add(g, name, host(dblob, nb))) return -1;
    cudaFree(dblob);
  }
  cudaFree(dx), cudaFree(dids), cudaFree(dev_ev);
  return 0;
}

int ssm_items(golden_set *g, char *err, size_t errlen) {
  for (int kind = 0; kind < 2; kind++) {
    const ssm_kind kd = kind ? SSM_GDN : SSM_MAMBA2;
    const ssm_dims d = golden_ssm_dims(kd);
    for (int c = 0; c < GOLDEN_NSSM; c++) {
      ssm_config cfg;
      if (ssm_config_parse(golden_ssm_configs[c], &cfg, err, errlen) != 0) return -1;
      ssm_cuda_state st;
      const uint32_t seq = 11;
      if (ssm_cuda_build(&st, &cfg, &d, 1, GOLDEN_SEED, 3, &seq, err, errlen) != 0) return -1;
      const size_t hv = (size_t)(d.H * d.dv), gk = (size_t)(d.G * d.dk);
      std::vector<float> alpha(d.H), beta(d.H), v(hv), k(gk), q(gk);
      float *da = dev<float>(nullptr, d.H), *db = dev<float>(nullptr, d.H), *dv = dev<float>(nullptr, hv);
      float *dk = dev<float>(nullptr, gk), *dq = dev<float>(nullptr, gk), *dout = dev<float>(nullptr, hv);
      std::vector<unsigned char> out;
      int rc = 0;
      for (int t = 0; rc == 0 && t < GS_STEPS; t++) {
        golden_ssm_step_inputs(kd, t, alpha.data(), beta.data(), v.data(), k.data(), q.data());
        ok(cudaMemcpy(da, alpha.data(), d.H * sizeof(float), cudaMemcpyHostToDevice), "upload");
        ok(cudaMemcpy(db, beta.data(), d.H * sizeof(float), cudaMemcpyHostToDevice), "upload");
        ok(cudaMemcpy(dv, v.data(), hv * sizeof(float), cudaMemcpyHostToDevice), "upload");
        ok(cudaMemcpy(dk, k.data(), gk * sizeof(float), cudaMemcpyHostToDevice), "upload");
        ok(cudaMemcpy(dq, q.data(), gk * sizeof(float), cudaMemcpyHostToDevice), "upload");
        ssm_cuda_inputs in = {da, kd == SSM_GDN ? db : nullptr, dv, dk, dq};
        rc = ssm_cuda_step(&st, &in, nullptr, dout, nullptr);
        std::vector<float> o = host(dout, hv);
        const unsigned char *ob = (const unsigned char *)o.data();
        out.insert(out.end(), ob, ob + hv * sizeof(float));
      }
      std::vector<unsigned char> mainb((size_t)(d.H * st.main.lay.bytes_per_matrix));
      std::vector<unsigned char> lpb(cfg.split ? (size_t)(d.H * st.lp.lay.bytes_per_matrix) : 0);
      ssm_cuda_row_info info;
      if (rc == 0)
        rc = ssm_cuda_download_row(&st, 0, &info, nullptr, mainb.data(), cfg.split ? lpb.data() : nullptr);
      out.insert(out.end(), mainb.begin(), mainb.end());
      out.insert(out.end(), lpb.begin(), lpb.end());
      char name[64];
      snprintf(name, sizeof name, "ssm_%s_%d", kind ? "gdn" : "mamba2", c);
      if (rc == 0) rc = add(g, name, out);
      cudaFree(da), cudaFree(db), cudaFree(dv), cudaFree(dk), cudaFree(dq), cudaFree(dout);
      ssm_cuda_free(&st);
      if (rc) return snprintf(err, errlen, "%s: the CUDA engine refused a step", name), -1;
    }
  }
  return 0;
}

int mc_items(golden_set *g) {
  static golden_mc_inputs in;
  golden_mc_fill(&in);
  float *dx = dev(in.x, GM_R * GM_LD), *dw = dev(in.w, GM_LD), *dy = dev<float>(nullptr, GM_R * GM_LD);
  int rc = mc_rmsnorm(dx, dy, GM_R, GM_NORM_GROUPS, GM_NORM_GS, GM_LD, dw, 0, 1, 1e-6f, nullptr);
  rc |= add(g, "mc_rmsnorm_shared", host(dy, GM_R * GM_LD));
  rc |= mc_rmsnorm(dx, dy, GM_R, GM_NORM_GROUPS, GM_NORM_GS, GM_LD, dw, 1, 0, 1e-5f, nullptr);
  rc |= add(g, "mc_rmsnorm_groups", host(dy, GM_R * GM_LD));

  float *dcv = dev(in.cv, GM_R * GM_CD), *dba = dev(in.ba, GM_R * 2 * GM_HV);
  float *dA = dev(in.A_log, GM_HV), *ddt = dev(in.dt_bias, GM_HV);
  float *dq = dev<float>(nullptr, GM_R * GM_KD), *dk = dev<float>(nullptr, GM_R * GM_KD);
  float *dv = dev<float>(nullptr, GM_R * GM_VD), *dal = dev<float>(nullptr, GM_R * GM_HV);
  float *dbe = dev<float>(nullptr, GM_R * GM_HV);
  rc |= mc_gdn_prep(dcv, dba, 2 * GM_HV, 0, GM_HV, dA, ddt, dq, dk, dv, dal, dbe, GM_R, GM_HK, GM_HV,
                    GM_DK, GM_DV, nullptr);
  rc |= add(g, "mc_gdn_prep_q", host(dq, GM_R * GM_KD));
  rc |= add(g, "mc_gdn_prep_k", host(dk, GM_R * GM_KD));
  rc |= add(g, "mc_gdn_prep_v", host(dv, GM_R * GM_VD));

  float *dqkv = dev(in.qkv, GM_R * GM_LDQ), *dqn = dev(in.q_norm, GM_D), *dkn = dev(in.k_norm, GM_D);
  float *dcs = dev(in.rope_cos, GM_CTX * GM_RD / 2), *dsn = dev(in.rope_sin, GM_CTX * GM_RD / 2);
  int *dpos = dev(in.pos, GM_R);
  float *dqo = dev<float>(nullptr, GM_R * GM_QD);
  float *dkc = dev<float>(nullptr, GM_R * GM_CTX * GM_KVD), *dvc = dev<float>(nullptr, GM_R * GM_CTX * GM_KVD);
  rc |= mc_qk_prepare(dqkv, GM_LDQ, 1, dqn, dkn, dcs, dsn, GM_RD, 1e-6f, dpos, dqo, dkc, dvc, GM_CTX,
                      GM_R, GM_NH, GM_NKV, GM_D, nullptr);
  rc |= add(g, "mc_qk_prepare_q", host(dqo, GM_R * GM_QD));
  rc |= add(g, "mc_qk_prepare_k", host(dkc, GM_R * GM_CTX * GM_KVD));
  rc |= add(g, "mc_qk_prepare_v", host(dvc, GM_R * GM_CTX * GM_KVD));
  for (void *p : {(void *)dx, (void *)dw, (void *)dy, (void *)dcv, (void *)dba, (void *)dA,
                  (void *)ddt, (void *)dq, (void *)dk, (void *)dv, (void *)dal, (void *)dbe,
                  (void *)dqkv, (void *)dqn, (void *)dkn, (void *)dcs, (void *)dsn, (void *)dpos,
                  (void *)dqo, (void *)dkc, (void *)dvc})
    cudaFree(p);
  return rc ? -1 : 0;
}

}  // namespace

int main(int argc, char **argv) {
  const bool cpu_only = argc == 3 && strcmp(argv[1], "--cpu") == 0;
  if (argc != 2 && !cpu_only) {
    fprintf(stderr, "usage: gpu_golden_bytes [--cpu] DIR\n");
    return 2;
  }
  const char *dir = argv[argc - 1];
  char err[512];
  golden_set cpu = {}, gpu = {};
  if (golden_cpu(&cpu, err, sizeof err) != 0) {
    fprintf(stderr, "gpu_golden_bytes: CPU half: %s\n", err);
    return 1;
  }
  if (cpu_only) {
    int rc = golden_write(&cpu, dir, err, sizeof err);
    if (rc) fprintf(stderr, "gpu_golden_bytes: %s\n", err);
    else printf("%d CPU items written to %s\n", cpu.n, dir);
    golden_free(&cpu);
    return rc ? 1 : 0;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    fprintf(stderr, "gpu_golden_bytes: no usable CUDA device (--cpu writes the CPU half)\n");
    golden_free(&cpu);
    return 2;
  }
  if (quant_items(&gpu, err, sizeof err) != 0 || ssm_items(&gpu, err, sizeof err) != 0 ||
      mc_items(&gpu) != 0 || !g_cuda_ok) {
    fprintf(stderr, "gpu_golden_bytes: GPU half: %s\n", g_cuda_ok ? err : "CUDA error");
    return 1;
  }
  int differ = gpu.n != cpu.n;
  for (int i = 0; i < gpu.n && i < cpu.n; i++) {
    const golden_item &a = gpu.items[i], &b = cpu.items[i];
    size_t off = 0;
    while (off < a.n && off < b.n && a.bytes[off] == b.bytes[off]) off++;
    const bool same = a.n == b.n && off == a.n && strcmp(a.name, b.name) == 0;
    printf("%-24s %7zu bytes  %s", a.name, a.n, same ? "= CPU\n" : "DIFFERS from the CPU");
    if (!same) printf(" (first at byte %zu)\n", off);
    differ += !same;
  }
  if (golden_write(&gpu, dir, err, sizeof err) != 0) {
    fprintf(stderr, "gpu_golden_bytes: %s\n", err);
    return 1;
  }
  printf("%d GPU items written to %s; %d differ from the CPU\n", gpu.n, dir, differ);
  golden_free(&cpu);
  golden_free(&gpu);
  return differ ? 1 : 0;
}
