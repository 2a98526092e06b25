/* GPU check (run on the device machine, not in CI): the batched CUDA SSM engine of src/ssm_cuda
 * against B independent CPU ssm_state objects (src/ssm), fed the same random inputs, for Mamba-2
 * and GDN, every strategy, two shapes. Rows are desynchronised: row b is inactive for its first
 * b % L steps and for a sprinkle of later steps, so rows flush at different steps; spec rows draw
 * their own acceptance lengths (ssm_accept_draw, the same a for both sides); replay and spec runs
 * also call an explicit flush halfway. The realistic shape runs through CUDA Graphs (each
 * operation captured once and replayed), which checks that no operation needs the host.
 *
 * Compared, bit for bit: every output value of every active row at every step; and, every 16
 * steps and at the end, every row's checkpoint blob(s) byte for byte, its quantisation events,
 * h, base, pending, flush count and flushed flag. docs/ssm-cuda.md explains why everything is
 * expected to agree exactly (no tolerance is needed). Exit status 0 only when all agree.
 *
 * Usage: gpu_check_ssm [steps_scale (default 1.0)]
 *        gpu_check_ssm bench      (a first timing at B = 256, serving shapes; no comparison) */
#include <cuda_runtime.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "quant/numerics.h"
#include "src/ssm/ssm_accept.h"
#include "src/ssm/ssm_engine.h"
#include "src/ssm_cuda/ssm_cuda.h"

#define CUDA_OK(call)                                                                        \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      exit(2);                                                                               \
    }                                                                                        \
  } while (0)

namespace {

const uint64_t kSeed = 0x5eed0123456789abULL;
const uint32_t kLayer = 3;
const int kB = 37;

/* Uniform (0, 1) from Philox: never exactly 0 or 1. */
float uniform01(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  uint32_t ctr[4] = {a, b, c, d}, key[2] = {0x1234567u, 0x89abcdefu}, out[4];
  rssm_philox4x32_10(ctr, key, out);
  return ((float)(out[0] >> 8) + 0.5f) * 5.9604644775390625e-08f;
}

struct shape {
  const char *name;
  int H, G, dv, dk;
  int steps;  /* standard steps, or spec rounds */
  bool graph; /* run the operations through captured CUDA Graphs */
};

/* Host inputs of one operation for all rows: [B][n][...]. */
struct host_inputs {
  std::vector<float> alpha, beta, v, k, q;
};

void l2norm(float *x, int n, float scale) {
  double s = 0.0;
  for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
  float inv = (float)(1.0 / std::sqrt(s)) * scale;
  for (int i = 0; i < n; i++) x[i] = x[i] * inv;
}

/* SPEC-like random inputs, never zero: alpha = 1 - 10^-U(0.5, 4); GDN beta in (0.05, 0.95), k and
 * q L2-normalised, q scaled by dk^-1/2; v, and Mamba-2 k and q, U(-1, 1). */
void make_inputs(host_inputs &in, const ssm_dims &d, int n, uint32_t op_index, uint32_t salt) {
  const int B = kB, H = d.H, dv = d.dv, dk = d.dk, G = d.G;
  in.alpha.assign((size_t)B * n * H, 0.0f);
  in.beta.assign((size_t)B * n * H, 0.0f);
  in.v.assign((size_t)B * n * H * dv, 0.0f);
  in.k.assign((size_t)B * n * G * dk, 0.0f);
  in.q.assign((size_t)B * n * G * dk, 0.0f);
  for (int b = 0; b < B; b++)
    for (int t = 0; t < n; t++) {
      uint32_t tok = op_index * 64u + (uint32_t)t;
      size_t bt = (size_t)b * n + t;
      for (int h = 0; h < H; h++) {
        float u = 0.5f + 3.5f * uniform01(tok, (uint32_t)b, (uint32_t)h, salt ^ 0x100u);
        in.alpha[bt * H + h] = 1.0f - (float)std::pow(10.0, -(double)u);
        in.beta[bt * H + h] = 0.05f + 0.9f * uniform01(tok, (uint32_t)b, (uint32_t)h, salt ^ 0x200u);
        for (int i = 0; i < dv; i++)
          in.v[(bt * H + h) * dv + i] =
              2.0f * uniform01(tok, (uint32_t)b, (uint32_t)(h * dv + i), salt ^ 0x300u) - 1.0f;
      }
      for (int g = 0; g < G; g++) {
        float *k = &in.k[(bt * G + g) * dk], *q = &in.q[(bt * G + g) * dk];
        for (int c = 0; c < dk; c++) {
          k[c] = 2.0f * uniform01(tok, (uint32_t)b, (uint32_t)(g * dk + c), salt ^ 0x400u) - 1.0f;
          q[c] = 2.0f * uniform01(tok, (uint32_t)b, (uint32_t)(g * dk + c), salt ^ 0x500u) - 1.0f;
        }
        if (d.kind == SSM_GDN) {
          l2norm(k, dk, 1.0f);
          l2norm(q, dk, 1.0f / std::sqrt((float)dk));
        }
      }
    }
}

/* Device copies of one operation's inputs, at fixed addresses (so a captured graph can reuse them). */
struct dev_inputs {
  float *alpha = nullptr, *beta = nullptr, *v = nullptr, *k = nullptr, *q = nullptr;
  void alloc(const ssm_dims &d, int n) {
    CUDA_OK(cudaMalloc(&alpha, (size_t)kB * n * d.H * sizeof(float)));
    CUDA_OK(cudaMalloc(&beta, (size_t)kB * n * d.H * sizeof(float)));
    CUDA_OK(cudaMalloc(&v, (size_t)kB * n * d.H * d.dv * sizeof(float)));
    CUDA_OK(cudaMalloc(&k, (size_t)kB * n * d.G * d.dk * sizeof(float)));
    CUDA_OK(cudaMalloc(&q, (size_t)kB * n * d.G * d.dk * sizeof(float)));
  }
  void upload(const host_inputs &in) {
    CUDA_OK(cudaMemcpy(alpha, in.alpha.data(), in.alpha.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(beta, in.beta.data(), in.beta.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(v, in.v.data(), in.v.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(k, in.k.data(), in.k.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemcpy(q, in.q.data(), in.q.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  void release() {
    cudaFree(alpha);
    cudaFree(beta);
    cudaFree(v);
    cudaFree(k);
    cudaFree(q);
  }
  ssm_cuda_inputs view(bool gdn) const { return {alpha, gdn ? beta : nullptr, v, k, q}; }
};

ssm_inputs cpu_view(const host_inputs &in, const ssm_dims &d, int n, int b, bool gdn) {
  ssm_inputs x;
  x.alpha = in.alpha.data() + (size_t)b * n * d.H;
  x.beta = gdn ? in.beta.data() + (size_t)b * n * d.H : nullptr;
  x.v = in.v.data() + (size_t)b * n * d.H * d.dv;
  x.k = in.k.data() + (size_t)b * n * d.G * d.dk;
  x.q = in.q.data() + (size_t)b * n * d.G * d.dk;
  return x;
}

/* Runs f(b) for every row b with want[b] on all cores (the CPU states are independent). */
template <class F>
void for_rows(const std::vector<uint8_t> &want, F f) {
  unsigned nt = std::thread::hardware_concurrency();
  if (nt < 1) nt = 1;
  if (nt > 16) nt = 16;
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nt; t++)
    pool.emplace_back([&, t]() {
      for (int b = (int)t; b < kB; b += (int)nt)
        if (want[(size_t)b]) f(b);
    });
  for (auto &th : pool) th.join();
}

struct tally {
  long long outputs = 0, out_diff = 0, ckpt_bytes = 0, ckpt_diff = 0, state_diff = 0, flushes = 0;
  double max_rel = 0.0;
  bool error = false;
  char error_text[256] = ""; /* the error, or the first mismatch (for debugging) */
};

void note_first(tally &t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void note_first(tally &t, const char *fmt, ...) {
  if (t.error_text[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t.error_text, sizeof t.error_text, fmt, ap);
  va_end(ap);
}

void compare_outputs(tally &t, const float *gpu, const float *cpu, size_t n, int step, int b, int cpu_h) {
  for (size_t i = 0; i < n; i++) {
    t.outputs++;
    if (rssm_isnan(gpu[i]) && rssm_isnan(cpu[i])) continue;
    if (memcmp(&gpu[i], &cpu[i], sizeof(float)) == 0) continue;
    t.out_diff++;
    note_first(t, "first: step %d row %d out[%zu] gpu %.9g cpu %.9g (cpu h after %d)", step, b, i,
               (double)gpu[i], (double)cpu[i], cpu_h);
    double ref = std::fabs((double)cpu[i]);
    double rel = std::fabs((double)gpu[i] - (double)cpu[i]) / (ref > 1e-30 ? ref : 1e-30);
    if (!(rel <= t.max_rel)) t.max_rel = rel; /* NaN or larger */
  }
}

/* Every row's checkpoint bytes and bookkeeping against its CPU state. */
void compare_states(tally &t, const ssm_cuda_state &g, std::vector<ssm_state> &cpu, int step) {
  const int H = g.dims.H;
  std::vector<unsigned char> mb((size_t)H * g.main.lay.bytes_per_matrix);
  std::vector<unsigned char> lb(g.cfg.split ? (size_t)H * g.lp.lay.bytes_per_matrix : 1);
  std::vector<uint32_t> ev((size_t)H);
  for (int b = 0; b < kB; b++) {
    ssm_cuda_row_info info;
    if (ssm_cuda_download_row(&g, b, &info, ev.data(), mb.data(), g.cfg.split ? lb.data() : nullptr) != 0) {
      t.error = true;
      snprintf(t.error_text, sizeof t.error_text, "download of row %d failed", b);
      return;
    }
    const ssm_state &c = cpu[(size_t)b];
    for (size_t i = 0; i < mb.size(); i++)
      if (mb[i] != c.main.blob[i]) {
        t.ckpt_diff++;
        note_first(t, "first: step %d row %d main byte %zu gpu %u cpu %u (nflush %llu)", step, b, i, mb[i],
                   c.main.blob[i], (unsigned long long)c.nflush);
      }
    t.ckpt_bytes += (long long)mb.size();
    if (g.cfg.split) {
      for (size_t i = 0; i < lb.size(); i++)
        if (lb[i] != c.lp.blob[i]) {
          t.ckpt_diff++;
          note_first(t, "first: step %d row %d lp byte %zu gpu %u cpu %u", step, b, i, lb[i], c.lp.blob[i]);
        }
      t.ckpt_bytes += (long long)lb.size();
    }
    int bad = info.h != c.h || info.base != c.base || info.pending != c.pending || info.flushed != c.flushed ||
              info.nflush != c.nflush || info.misuse != 0;
    for (int hd = 0; hd < H; hd++) bad |= ev[(size_t)hd] != c.event[hd];
    t.state_diff += bad;
    if (bad)
      note_first(t,
                 "first: step %d row %d gpu h %d base %d pend %d fl %d nf %llu mis %d ev0 %u / cpu h %d "
                 "base %d pend %d fl %d nf %llu ev0 %u",
                 step, b, info.h, info.base, info.pending, info.flushed,
                 (unsigned long long)info.nflush, info.misuse, ev[0], c.h, c.base, c.pending, c.flushed,
                 (unsigned long long)c.nflush, c.event[0]);
  }
}

/* A captured operation: the graph of one call, replayed for later calls with the same buffers. */
struct graph_slot {
  cudaGraphExec_t exec = nullptr;
  cudaGraph_t graph = nullptr;
  ~graph_slot() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
  }
};

template <class F>
int run_op(bool use_graph, graph_slot &gs, cudaStream_t s, F launch) {
  if (!use_graph) return launch(s);
  if (!gs.exec) {
    CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    int rc = launch(s);
    CUDA_OK(cudaStreamEndCapture(s, &gs.graph));
    if (rc != 0) return rc;
    CUDA_OK(cudaGraphInstantiate(&gs.exec, gs.graph, 0));
  }
  CUDA_OK(cudaGraphLaunch(gs.exec, s));
  return 0;
}

tally run_one(const char *cfg_text, ssm_kind kind, const shape &sh, double scale) {
  tally t;
  ssm_config cfg;
  char err[200];
  if (ssm_config_parse(cfg_text, &cfg, err, sizeof err) != 0) {
    t.error = true;
    snprintf(t.error_text, sizeof t.error_text, "config: %s", err);
    return t;
  }
  const bool gdn = kind == SSM_GDN;
  ssm_dims d = {kind, sh.H, sh.dv, sh.dk, sh.G};
  std::vector<uint32_t> seqs((size_t)kB);
  for (int b = 0; b < kB; b++) seqs[(size_t)b] = 1000u + 7u * (uint32_t)b;

  ssm_cuda_state g;
  if (ssm_cuda_build(&g, &cfg, &d, kB, kSeed, kLayer, seqs.data(), err, sizeof err) != 0) {
    t.error = true;
    snprintf(t.error_text, sizeof t.error_text, "cuda build: %s", err);
    return t;
  }
  std::vector<ssm_state> cpu((size_t)kB);
  for (int b = 0; b < kB; b++) {
    ssm_ids ids = {kSeed, kLayer, seqs[(size_t)b]};
    if (ssm_state_build(&cpu[(size_t)b], &cfg, &d, &ids, err, sizeof err) != 0) {
      fprintf(stderr, "cpu build: %s\n", err);
      exit(2);
    }
  }
  const bool spec = cfg.strategy == SSM_SPEC;
  const int n = spec ? cfg.T : 1;
  const int phase = cfg.strategy == SSM_CONVENTIONAL ? 16 : cfg.L;
  const int steps = (int)(sh.steps * scale) < 4 ? 4 : (int)(sh.steps * scale);
  const size_t out_row = (size_t)n * d.H * d.dv;

  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  dev_inputs din;
  din.alloc(d, n);
  float *d_o;
  uint8_t *d_active;
  int *d_a;
  CUDA_OK(cudaMalloc(&d_o, kB * out_row * sizeof(float)));
  CUDA_OK(cudaMemset(d_o, 0, kB * out_row * sizeof(float)));
  CUDA_OK(cudaMalloc(&d_active, kB));
  CUDA_OK(cudaMalloc(&d_a, kB * sizeof(int)));
  std::vector<float> o_gpu(kB * out_row), o_cpu(kB * out_row);
  std::vector<uint8_t> active((size_t)kB);
  std::vector<int> a((size_t)kB, 0);
  std::vector<uint32_t> round((size_t)kB, 0);
  std::vector<int> cpu_rc((size_t)kB, 0);
  host_inputs in;
  graph_slot g_op, g_commit, g_flush;
  const ssm_cuda_inputs dview = din.view(gdn);

  for (int step = 0; step < steps && !t.error; step++) {
    for (int b = 0; b < kB; b++)
      active[(size_t)b] = step >= b % phase && ((unsigned)(step * 7 + b * 3) % 23u) != 0u;
    make_inputs(in, d, n, (uint32_t)step, (uint32_t)kind);
    din.upload(in);
    CUDA_OK(cudaMemcpy(d_active, active.data(), kB, cudaMemcpyHostToDevice));
    CUDA_OK(cudaDeviceSynchronize()); /* pageable copies may still be in flight on return */
    int rc = run_op(sh.graph, g_op, s, [&](cudaStream_t st_) {
      return spec ? ssm_cuda_verify(&g, &dview, d_active, d_o, st_)
                  : ssm_cuda_step(&g, &dview, d_active, d_o, st_);
    });
    if (rc != 0) {
      t.error = true;
      snprintf(t.error_text, sizeof t.error_text, "cuda %s returned %d at step %d",
               spec ? "verify" : "step", rc, step);
      break;
    }
    CUDA_OK(cudaStreamSynchronize(s));
    CUDA_OK(cudaMemcpy(o_gpu.data(), d_o, o_gpu.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for_rows(active, [&](int b) {
      ssm_inputs x = cpu_view(in, d, n, b, gdn);
      float *o = o_cpu.data() + (size_t)b * out_row;
      cpu_rc[(size_t)b] = spec ? ssm_verify(&cpu[(size_t)b], &x, o) : ssm_step(&cpu[(size_t)b], &x, o);
    });
    for (int b = 0; b < kB; b++) {
      if (!active[(size_t)b]) continue;
      if (cpu_rc[(size_t)b] != 0) {
        t.error = true;
        snprintf(t.error_text, sizeof t.error_text, "cpu op failed at step %d row %d", step, b);
      }
      compare_outputs(t, o_gpu.data() + (size_t)b * out_row, o_cpu.data() + (size_t)b * out_row, out_row, step,
                      b, cpu[(size_t)b].h);
    }
    if (spec) {
      for (int b = 0; b < kB; b++)
        a[(size_t)b] =
            active[(size_t)b] ? ssm_accept_draw(&cfg, kSeed, seqs[(size_t)b], round[(size_t)b]++) : 0;
      CUDA_OK(cudaMemcpy(d_a, a.data(), kB * sizeof(int), cudaMemcpyHostToDevice));
      CUDA_OK(cudaDeviceSynchronize());
      auto commit = [&](cudaStream_t st_) { return ssm_cuda_commit(&g, d_a, d_active, st_); };
      if (run_op(sh.graph, g_commit, s, commit)) t.error = true;
      for (int b = 0; b < kB; b++)
        if (active[(size_t)b] && ssm_commit(&cpu[(size_t)b], a[(size_t)b]) != 0) t.error = true;
    }
    if (cfg.strategy != SSM_CONVENTIONAL && step == steps / 2) {
      /* an explicit flush of the active rows, whatever their h */
      if (run_op(sh.graph, g_flush, s, [&](cudaStream_t st_) { return ssm_cuda_flush(&g, d_active, st_); }))
        t.error = true;
      for_rows(active, [&](int b) { ssm_flush(&cpu[(size_t)b]); });
    }
    if (step % 16 == 15 || step == steps - 1) {
      CUDA_OK(cudaStreamSynchronize(s));
      compare_states(t, g, cpu, step);
    }
  }
  CUDA_OK(cudaGetLastError());
  for (int b = 0; b < kB; b++) t.flushes += (long long)cpu[(size_t)b].nflush;
  for (auto &c : cpu) ssm_state_free(&c);
  ssm_cuda_free(&g);
  din.release();
  cudaFree(d_o);
  cudaFree(d_active);
  cudaFree(d_a);
  cudaStreamDestroy(s);
  return t;
}

/* ---------------------------------------------------------------------------------------------
 * `gpu_check_ssm bench`: a first timing of the operations at serving shapes (B = 256), each
 * operation replayed from a CUDA Graph with all rows active. Not a benchmark of record (that is
 * another issue); it shows the kernels are in the right range and that the operations capture.
 * ------------------------------------------------------------------------------------------- */
struct bench_shape {
  const char *name;
  ssm_kind kind;
  int H, G, dv, dk;
};

void fill_random(std::vector<float> &x, size_t n, uint32_t salt, float lo, float hi) {
  x.resize(n);
  uint32_t st = 0x9e3779b9u ^ salt;
  for (size_t i = 0; i < n; i++) {
    st = st * 1664525u + 1013904223u;
    x[i] = lo + (hi - lo) * (((float)(st >> 8) + 0.5f) * 5.9604644775390625e-08f);
  }
}

void run_bench(void) {
  const int B = 256;
  const bench_shape shapes[] = {
      {"Nemotron-3-Nano-4B", SSM_MAMBA2, 96, 8, 80, 128},
      {"Nemotron-3-Super", SSM_MAMBA2, 128, 8, 64, 128},
      {"Qwen3.5-4B", SSM_GDN, 32, 16, 128, 128},
  };
  const char *configs[] = {"conventional state=fp32", "replay L=16 ckpt=fp32", "replay L=16 hp=fp32 lp=nvfp4",
                           "spec L=16 T=4 ckpt=fp32 accept=uniform"};
  printf("bench: B = %d, all rows active, each operation replayed from a CUDA Graph\n", B);
  printf("%-20s %-6s %-40s %12s %14s %12s\n", "shape", "kind", "config", "us/op", "ckpt MB/op", "GB/s");
  for (const bench_shape &sh : shapes) {
    ssm_dims d = {sh.kind, sh.H, sh.dv, sh.dk, sh.G};
    for (const char *ct : configs) {
      ssm_config cfg;
      char err[200];
      if (ssm_config_parse(ct, &cfg, err, sizeof err) != 0) {
        printf("config: %s\n", err);
        continue;
      }
      std::vector<uint32_t> seqs((size_t)B);
      for (int b = 0; b < B; b++) seqs[(size_t)b] = (uint32_t)b;
      ssm_cuda_state g;
      if (ssm_cuda_build(&g, &cfg, &d, B, kSeed, kLayer, seqs.data(), err, sizeof err) != 0) {
        printf("%-20s %s: build: %s\n", sh.name, ct, err);
        continue;
      }
      const bool spec = cfg.strategy == SSM_SPEC;
      const int n = spec ? cfg.T : 1;
      std::vector<float> alpha, beta, v, k, q;
      fill_random(alpha, (size_t)B * n * d.H, 1, 0.9f, 0.9999f);
      fill_random(beta, (size_t)B * n * d.H, 2, 0.05f, 0.95f);
      fill_random(v, (size_t)B * n * d.H * d.dv, 3, -1.0f, 1.0f);
      fill_random(k, (size_t)B * n * d.G * d.dk, 4, -0.1f, 0.1f);
      fill_random(q, (size_t)B * n * d.G * d.dk, 5, -0.1f, 0.1f);
      float *dp[5];
      std::vector<float> *hp[5] = {&alpha, &beta, &v, &k, &q};
      for (int i = 0; i < 5; i++) {
        CUDA_OK(cudaMalloc(&dp[i], hp[i]->size() * sizeof(float)));
        CUDA_OK(cudaMemcpy(dp[i], hp[i]->data(), hp[i]->size() * sizeof(float), cudaMemcpyHostToDevice));
      }
      ssm_cuda_inputs in = {dp[0], sh.kind == SSM_GDN ? dp[1] : nullptr, dp[2], dp[3], dp[4]};
      float *d_o;
      int *d_a;
      CUDA_OK(cudaMalloc(&d_o, (size_t)B * n * d.H * d.dv * sizeof(float)));
      CUDA_OK(cudaMalloc(&d_a, (size_t)B * sizeof(int)));
      std::vector<int> a((size_t)B);
      for (int b = 0; b < B; b++) a[(size_t)b] = 1 + b % (spec ? cfg.T : 1);
      CUDA_OK(cudaMemcpy(d_a, a.data(), (size_t)B * sizeof(int), cudaMemcpyHostToDevice));
      cudaStream_t s;
      CUDA_OK(cudaStreamCreate(&s));
      CUDA_OK(cudaDeviceSynchronize());
      graph_slot gs;
      auto op = [&](cudaStream_t st_) {
        if (!spec) return ssm_cuda_step(&g, &in, nullptr, d_o, st_);
        int rc = ssm_cuda_verify(&g, &in, nullptr, d_o, st_);
        return rc ? rc : ssm_cuda_commit(&g, d_a, nullptr, st_);
      };
      const int warm = 32, timed = 64; /* multiples of L = 16: flushes amortised as in serving */
      for (int i = 0; i < warm; i++)
        if (run_op(true, gs, s, op) != 0) printf("op failed\n");
      cudaEvent_t e0, e1;
      CUDA_OK(cudaEventCreate(&e0));
      CUDA_OK(cudaEventCreate(&e1));
      CUDA_OK(cudaEventRecord(e0, s));
      for (int i = 0; i < timed; i++) run_op(true, gs, s, op);
      CUDA_OK(cudaEventRecord(e1, s));
      CUDA_OK(cudaEventSynchronize(e1));
      float ms = 0.0f;
      CUDA_OK(cudaEventElapsedTime(&ms, e0, e1));
      CUDA_OK(cudaGetLastError());
      double us = 1000.0 * ms / timed;
      /* checkpoint traffic model per operation: conventional reads and writes the state; replay and
         spec read the read checkpoint every operation and (amortised) fold into the main one once
         per L tokens (spec: per L / mean(a) rounds) */
      double mats = (double)B * d.H;
      double rd = (double)(cfg.split ? g.lp.lay.bytes_per_matrix : g.main.lay.bytes_per_matrix);
      double mainb = (double)g.main.lay.bytes_per_matrix;
      double lpb = cfg.split ? (double)g.lp.lay.bytes_per_matrix : 0.0;
      double bytes;
      if (cfg.strategy == SSM_CONVENTIONAL) bytes = 2.0 * mats * mainb;
      else {
        double tokens_per_op = spec ? (1.0 + cfg.T) / 2.0 : 1.0;
        bytes = mats * (rd + (mainb + mainb + lpb) * tokens_per_op / cfg.L);
      }
      printf("%-20s %-6s %-40s %12.1f %14.1f %12.1f\n", sh.name, sh.kind == SSM_GDN ? "gdn" : "mamba2", ct, us,
             bytes / 1e6, bytes / (us * 1e3));
      fflush(stdout);
      cudaEventDestroy(e0);
      cudaEventDestroy(e1);
      cudaStreamDestroy(s);
      for (int i = 0; i < 5; i++) cudaFree(dp[i]);
      cudaFree(d_o);
      cudaFree(d_a);
      ssm_cuda_free(&g);
    }
  }
}

}  // namespace

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "bench") == 0) {
    cudaDeviceProp prop;
    CUDA_OK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s\n", prop.name);
    run_bench();
    return 0;
  }
  double scale = argc > 1 ? atof(argv[1]) : 1.0;
  if (!(scale > 0.0)) scale = 1.0;
  cudaDeviceProp prop;
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  printf("device: %s; B = %d rows, seed 0x%llx, layer %u\n", prop.name, kB, (unsigned long long)kSeed, kLayer);

  const shape shapes[] = {
      {"H6 G2 dv20 dk72", 6, 2, 20, 72, 300, false},
      {"H32 G16 dv128 dk128", 32, 16, 128, 128, 40, true},
  };
  const char *configs[] = {
      "conventional state=fp32",
      "conventional state=fp8/sr",
      "conventional state=fp16",
      "replay L=16 ckpt=fp32",
      "replay L=16 ckpt=nvfp4/sr",
      "replay L=8 hp=fp32 lp=nvfp4",
      "replay L=16 hp=fp16/sr lp=fp8",
      "replay L=16 hp=fp16/sr lp=fp8 gdn_u=cached",
      "replay L=16 hp=fp32 lp=fp16/sr", /* both unscaled: the store fused into the flush */
      "spec L=16 T=4 hp=fp32 lp=nvfp4 accept=uniform",
      "spec L=16 T=8 ckpt=fp8/sr accept=geom:0.7",
  };
  int failures = 0;
  printf("%-6s %-20s %-46s %9s %7s %9s %10s %7s %6s %7s\n", "kind", "shape", "config", "outputs", "differ",
         "max rel", "ckpt bytes", "differ", "state", "stores");
  for (int kk = 0; kk < 2; kk++) {
    ssm_kind kind = kk == 0 ? SSM_MAMBA2 : SSM_GDN;
    for (const shape &sh : shapes) {
      for (const char *c : configs) {
        if (kind == SSM_MAMBA2 && strstr(c, "gdn_u=")) continue; /* GDN only */
        double sc = scale;
        tally t = run_one(c, kind, sh, sc);
        bool ok = !t.error && t.out_diff == 0 && t.ckpt_diff == 0 && t.state_diff == 0;
        failures += !ok;
        printf("%-6s %-20s %-46s %9lld %7lld %9.2e %10lld %7lld %6lld %7lld%s\n",
               kind == SSM_GDN ? "gdn" : "mamba2", sh.name, c, t.outputs, t.out_diff, t.max_rel, t.ckpt_bytes,
               t.ckpt_diff, t.state_diff, t.flushes, ok ? "" : "  FAIL");
        if (t.error_text[0]) printf("    %s%s\n", t.error ? "error: " : "", t.error_text);
        fflush(stdout);
      }
    }
  }
  printf("%s: %d run(s) differ\n", failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
