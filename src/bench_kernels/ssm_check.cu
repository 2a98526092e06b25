/* Bit-identity checks of the GPU SSM kernels against the CPU engine (ssm_check.h), moved out of
 * tests/gpu/ssm_gpu_check.cu so that `replayssm bench kernels` checks what it times with the same
 * code. docs/ssm-cuda.md explains why everything is expected to agree exactly (no tolerance). */
#include <cuda_runtime.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "quant/numerics.h"
#include "src/bench_kernels/snapshot.h"
#include "src/bench_kernels/ssm_check.h"
#include "src/ssm/ssm_accept.h"
#include "src/ssm_cuda/ssm_cuda.h"

namespace {

const uint64_t kSeed = 0x5eed0123456789abULL;
const uint32_t kLayer = 3;

/* A CUDA error inside a check is recorded in the tally (the caller reports it), not fatal. */
struct cuda_error {};
#define CK(call)                                                                                   \
  do {                                                                                             \
    cudaError_t e_ = (call);                                                                       \
    if (e_ != cudaSuccess) {                                                                       \
      snprintf(cuda_error_text, sizeof cuda_error_text, "%s:%d: %s: %s", __FILE__, __LINE__, #call, \
               cudaGetErrorString(e_));                                                            \
      throw cuda_error();                                                                          \
    }                                                                                              \
  } while (0)
char cuda_error_text[256];

/* Uniform (0, 1) from Philox: never exactly 0 or 1. */
float uniform01(uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
  uint32_t ctr[4] = {a, b, c, d}, key[2] = {0x1234567u, 0x89abcdefu}, out[4];
  rssm_philox4x32_10(ctr, key, out);
  return ((float)(out[0] >> 8) + 0.5f) * 5.9604644775390625e-08f;
}

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

template <class F>
void for_rows(const std::vector<uint8_t> &want, F f);

/* SPEC-like random inputs, never zero: alpha = 1 - 10^-U(0.5, 4); GDN beta in (0.05, 0.95), k and
 * q L2-normalised, q scaled by dk^-1/2; v, and Mamba-2 k and q, U(-1, 1). Rows are filled on all
 * cores (a Philox draw per value is the checks' largest host cost at the serving shapes). */
void make_inputs(host_inputs &in, const ssm_dims &d, int B, int n, uint32_t op_index, uint32_t salt) {
  const int H = d.H, dv = d.dv, dk = d.dk, G = d.G;
  in.alpha.assign((size_t)B * n * H, 0.0f);
  in.beta.assign((size_t)B * n * H, 0.0f);
  in.v.assign((size_t)B * n * H * dv, 0.0f);
  in.k.assign((size_t)B * n * G * dk, 0.0f);
  in.q.assign((size_t)B * n * G * dk, 0.0f);
  const std::vector<uint8_t> all((size_t)B, 1);
  for_rows(all, [&](int b) {
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
  });
}

/* Device copies of one operation's inputs, at fixed addresses (so a captured graph can reuse them). */
struct dev_inputs {
  float *alpha = nullptr, *beta = nullptr, *v = nullptr, *k = nullptr, *q = nullptr;
  void alloc(const ssm_dims &d, int B, int n) {
    CK(cudaMalloc(&alpha, (size_t)B * n * d.H * sizeof(float)));
    CK(cudaMalloc(&beta, (size_t)B * n * d.H * sizeof(float)));
    CK(cudaMalloc(&v, (size_t)B * n * d.H * d.dv * sizeof(float)));
    CK(cudaMalloc(&k, (size_t)B * n * d.G * d.dk * sizeof(float)));
    CK(cudaMalloc(&q, (size_t)B * n * d.G * d.dk * sizeof(float)));
  }
  void upload(const host_inputs &in) {
    CK(cudaMemcpy(alpha, in.alpha.data(), in.alpha.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(beta, in.beta.data(), in.beta.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(v, in.v.data(), in.v.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(k, in.k.data(), in.k.size() * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(q, in.q.data(), in.q.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  ~dev_inputs() {
    cudaFree(alpha);
    cudaFree(beta);
    cudaFree(v);
    cudaFree(k);
    cudaFree(q);
  }
  ssm_cuda_inputs view(bool gdn) const { return {alpha, gdn ? beta : nullptr, v, k, q}; }
};

/* Row b's slice as CPU inputs; t0 skips t0 tokens of the row's n (a one-token view of a draft). */
ssm_inputs cpu_view(const host_inputs &in, const ssm_dims &d, int n, int b, bool gdn, int t0 = 0) {
  ssm_inputs x;
  size_t bt = (size_t)b * n + t0;
  x.alpha = in.alpha.data() + bt * d.H;
  x.beta = gdn ? in.beta.data() + bt * d.H : nullptr;
  x.v = in.v.data() + bt * d.H * d.dv;
  x.k = in.k.data() + bt * d.G * d.dk;
  x.q = in.q.data() + bt * d.G * d.dk;
  return x;
}

/* Runs f(b) for every row b with want[b] on all cores (the CPU states are independent). */
template <class F>
void for_rows(const std::vector<uint8_t> &want, F f) {
  unsigned nt = std::thread::hardware_concurrency();
  if (nt < 1) nt = 1;
  if (nt > 16) nt = 16;
  const int B = (int)want.size();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < nt; t++)
    pool.emplace_back([&, t]() {
      for (int b = (int)t; b < B; b += (int)nt)
        if (want[(size_t)b]) f(b);
    });
  for (auto &th : pool) th.join();
}

void note_first(ssm_check_tally &t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void note_first(ssm_check_tally &t, const char *fmt, ...) {
  if (t.text[0]) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t.text, sizeof t.text, fmt, ap);
  va_end(ap);
}

void set_error(ssm_check_tally &t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void set_error(ssm_check_tally &t, const char *fmt, ...) {
  t.error = 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t.text, sizeof t.text, fmt, ap);
  va_end(ap);
}

void compare_outputs(ssm_check_tally &t, const float *gpu, const float *cpu, size_t n, int step, int b, int cpu_h) {
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
void compare_states(ssm_check_tally &t, const ssm_cuda_state &g, std::vector<ssm_state> &cpu, int step) {
  const int H = g.dims.H, B = g.B;
  std::vector<unsigned char> mb((size_t)H * g.main.lay.bytes_per_matrix);
  std::vector<unsigned char> lb(g.cfg.split ? (size_t)H * g.lp.lay.bytes_per_matrix : 1);
  std::vector<uint32_t> ev((size_t)H);
  for (int b = 0; b < B; b++) {
    ssm_cuda_row_info info;
    if (ssm_cuda_download_row(&g, b, &info, ev.data(), mb.data(), g.cfg.split ? lb.data() : nullptr) != 0) {
      set_error(t, "download of row %d failed", b);
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
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    int rc = launch(s);
    CK(cudaStreamEndCapture(s, &gs.graph));
    if (rc != 0) return rc;
    CK(cudaGraphInstantiate(&gs.exec, gs.graph, 0));
  }
  CK(cudaGraphLaunch(gs.exec, s));
  return 0;
}

/* Device buffers of one check, freed on every exit path (a CUDA error throws). */
struct dev_buf {
  void *p = nullptr;
  ~dev_buf() {
    if (p) cudaFree(p);
  }
};
struct stream_holder {
  cudaStream_t s = nullptr;
  ~stream_holder() {
    if (s) cudaStreamDestroy(s);
  }
};
struct cpu_states {
  std::vector<ssm_state> v;
  size_t built = 0;
  ~cpu_states() {
    for (size_t i = 0; i < built; i++) ssm_state_free(&v[i]);
  }
};
struct gpu_state_holder {
  ssm_cuda_state g;
  bool built = false;
  ~gpu_state_holder() {
    if (built) ssm_cuda_free(&g);
  }
};

/* Mixed T (spec only): row b verifies nd = (5 b + 3 step) % (T + 1) drafts in step `step`, so every
 * count 0..T occurs, rows of one batch differ, and rows with 0 drafts sit next to full ones. */
int mixed_drafts(int b, int step, int T) { return (5 * b + 3 * step) % (T + 1); }

const uint32_t kUntouched = 0xFFFFFFFFu; /* the output sentinel of mixed runs (a NaN pattern) */

void run_one(ssm_check_tally &t, const char *cfg_text, const ssm_dims &d, int B, int steps, int flush_at,
             bool use_graph, bool mixed_t) {
  ssm_config cfg;
  char err[200];
  if (ssm_config_parse(cfg_text, &cfg, err, sizeof err) != 0) {
    set_error(t, "config: %s", err);
    return;
  }
  const bool gdn = d.kind == SSM_GDN;
  std::vector<uint32_t> seqs((size_t)B);
  for (int b = 0; b < B; b++) seqs[(size_t)b] = 1000u + 7u * (uint32_t)b;

  gpu_state_holder gh;
  ssm_cuda_state &g = gh.g;
  if (ssm_cuda_build(&g, &cfg, &d, B, kSeed, kLayer, seqs.data(), err, sizeof err) != 0) {
    set_error(t, "cuda build: %s", err);
    return;
  }
  gh.built = true;
  cpu_states cs;
  std::vector<ssm_state> &cpu = cs.v;
  cpu.resize((size_t)B);
  for (int b = 0; b < B; b++) {
    ssm_ids ids = {kSeed, kLayer, seqs[(size_t)b]};
    if (ssm_state_build(&cpu[(size_t)b], &cfg, &d, &ids, err, sizeof err) != 0) {
      set_error(t, "cpu build: %s", err);
      return;
    }
    cs.built++;
  }
  const bool spec = cfg.strategy == SSM_SPEC;
  const int n = spec ? cfg.T : 1;
  if (mixed_t && !spec) {
    set_error(t, "mixed T needs a spec configuration");
    return;
  }
  const int phase = cfg.strategy == SSM_CONVENTIONAL ? 16 : cfg.L;
  const size_t out_row = (size_t)n * d.H * d.dv;

  stream_holder sh;
  CK(cudaStreamCreate(&sh.s));
  cudaStream_t s = sh.s;
  dev_inputs din;
  din.alloc(d, B, n);
  dev_buf bo, bact, ba, bnd;
  CK(cudaMalloc(&bnd.p, (size_t)B * sizeof(int)));
  int *d_nd = static_cast<int *>(bnd.p);
  std::vector<int> nd((size_t)B, n);
  CK(cudaMalloc(&bo.p, B * out_row * sizeof(float)));
  CK(cudaMemset(bo.p, 0, B * out_row * sizeof(float)));
  CK(cudaMalloc(&bact.p, (size_t)B));
  CK(cudaMalloc(&ba.p, (size_t)B * sizeof(int)));
  float *d_o = static_cast<float *>(bo.p);
  uint8_t *d_active = static_cast<uint8_t *>(bact.p);
  int *d_a = static_cast<int *>(ba.p);
  std::vector<float> o_gpu(B * out_row), o_cpu(B * out_row);
  std::vector<uint8_t> active((size_t)B);
  std::vector<int> a((size_t)B, 0);
  std::vector<uint32_t> round((size_t)B, 0);
  std::vector<int> cpu_rc((size_t)B, 0);
  host_inputs in;
  graph_slot g_op, g_commit, g_flush;
  const ssm_cuda_inputs dview = din.view(gdn);

  for (int step = 0; step < steps && !t.error; step++) {
    for (int b = 0; b < B; b++)
      active[(size_t)b] = step >= b % phase && ((unsigned)(step * 7 + b * 3) % 23u) != 0u;
    make_inputs(in, d, B, n, (uint32_t)step, (uint32_t)d.kind);
    din.upload(in);
    CK(cudaMemcpy(d_active, active.data(), (size_t)B, cudaMemcpyHostToDevice));
    if (mixed_t) {
      for (int b = 0; b < B; b++) nd[(size_t)b] = mixed_drafts(b, step, n);
      CK(cudaMemcpy(d_nd, nd.data(), (size_t)B * sizeof(int), cudaMemcpyHostToDevice));
      /* every output not written by this operation must keep the sentinel */
      CK(cudaMemset(d_o, 0xFF, B * out_row * sizeof(float)));
    }
    CK(cudaDeviceSynchronize()); /* pageable copies may still be in flight on return */
    int rc = run_op(use_graph, g_op, s, [&](cudaStream_t st_) {
      if (mixed_t) return ssm_cuda_verify_n(&g, &dview, d_nd, d_active, d_o, st_);
      return spec ? ssm_cuda_verify(&g, &dview, d_active, d_o, st_) : ssm_cuda_step(&g, &dview, d_active, d_o, st_);
    });
    if (rc != 0) {
      set_error(t, "cuda %s returned %d at step %d", spec ? "verify" : "step", rc, step);
      break;
    }
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(o_gpu.data(), d_o, o_gpu.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for_rows(active, [&](int b) {
      ssm_inputs x = cpu_view(in, d, n, b, gdn);
      float *o = o_cpu.data() + (size_t)b * out_row;
      cpu_rc[(size_t)b] = mixed_t ? ssm_verify_n(&cpu[(size_t)b], &x, nd[(size_t)b], o)
                          : spec  ? ssm_verify(&cpu[(size_t)b], &x, o)
                                  : ssm_step(&cpu[(size_t)b], &x, o);
    });
    const size_t tok_out = (size_t)d.H * d.dv;
    for (int b = 0; b < B; b++) {
      /* the outputs the row wrote: all of them, or in a mixed run its first nd[b] drafts */
      const size_t wrote = active[(size_t)b] ? (mixed_t ? (size_t)nd[(size_t)b] * tok_out : out_row) : 0;
      if (mixed_t)
        for (size_t i = wrote; i < out_row; i++) {
          t.outputs++;
          uint32_t bits;
          memcpy(&bits, &o_gpu[(size_t)b * out_row + i], sizeof bits);
          if (bits != kUntouched) {
            t.out_diff++;
            note_first(t, "first: step %d row %d out[%zu] written beyond the row's %d drafts", step, b, i,
                       active[(size_t)b] ? nd[(size_t)b] : 0);
          }
        }
      if (!active[(size_t)b]) continue;
      if (cpu_rc[(size_t)b] != 0) set_error(t, "cpu op failed at step %d row %d", step, b);
      compare_outputs(t, o_gpu.data() + (size_t)b * out_row, o_cpu.data() + (size_t)b * out_row, wrote, step, b,
                      cpu[(size_t)b].h);
    }
    if (spec) {
      for (int b = 0; b < B; b++) {
        const int nb = nd[(size_t)b];
        int ab = active[(size_t)b] && nb > 0 ? ssm_accept_draw(&cfg, kSeed, seqs[(size_t)b], round[(size_t)b]++) : 0;
        if (ab > nb) ab = 1 + (ab - 1) % nb; /* mixed: within this round's drafts */
        a[(size_t)b] = ab;
      }
      CK(cudaMemcpy(d_a, a.data(), (size_t)B * sizeof(int), cudaMemcpyHostToDevice));
      CK(cudaDeviceSynchronize());
      auto commit = [&](cudaStream_t st_) { return ssm_cuda_commit(&g, d_a, d_active, st_); };
      if (run_op(use_graph, g_commit, s, commit)) set_error(t, "cuda commit failed at step %d", step);
      for (int b = 0; b < B; b++)
        if (active[(size_t)b] && a[(size_t)b] > 0 && ssm_commit(&cpu[(size_t)b], a[(size_t)b]) != 0)
          set_error(t, "cpu commit failed at step %d row %d", step, b);
    }
    if (cfg.strategy != SSM_CONVENTIONAL && step == flush_at) {
      /* an explicit flush of the active rows, whatever their h */
      if (run_op(use_graph, g_flush, s, [&](cudaStream_t st_) { return ssm_cuda_flush(&g, d_active, st_); }))
        set_error(t, "cuda flush failed at step %d", step);
      for_rows(active, [&](int b) { ssm_flush(&cpu[(size_t)b]); });
    }
    if (step % 16 == 15 || step == steps - 1) {
      CK(cudaStreamSynchronize(s));
      compare_states(t, g, cpu, step);
    }
  }
  CK(cudaGetLastError());
  for (int b = 0; b < B; b++) t.flushes += (long long)cpu[(size_t)b].nflush;
}

struct snap_holder {
  bench_snap_state s;
  bool built = false;
  ~snap_holder() {
    if (built) bench_snap_free(&s);
  }
};

/* The snapshot baseline against conventional fp32 CPU states. Per row, the accepted history
 * (inputs of the accepted drafts) is kept; each round, a fresh CPU state replays it and then
 * steps through the T drafts, so every draft's output and snapshot has its CPU counterpart
 * whatever was accepted before. */
void run_snapshot(ssm_check_tally &t, const ssm_dims &d, int B, int T, int rounds) {
  const bool gdn = d.kind == SSM_GDN;
  char err[200];
  ssm_config cfg;
  if (ssm_config_parse("conventional state=fp32", &cfg, err, sizeof err) != 0) {
    set_error(t, "config: %s", err);
    return;
  }
  snap_holder shd;
  if (bench_snap_build(&shd.s, &d, B, T, err, sizeof err) != 0) {
    set_error(t, "snapshot build: %s", err);
    return;
  }
  shd.built = true;
  stream_holder sh;
  CK(cudaStreamCreate(&sh.s));
  dev_inputs din;
  din.alloc(d, B, T);
  const size_t out_row = (size_t)T * d.H * d.dv, mat = (size_t)d.H * d.dv * d.dk;
  dev_buf bo, ba;
  CK(cudaMalloc(&bo.p, B * out_row * sizeof(float)));
  CK(cudaMalloc(&ba.p, (size_t)B * sizeof(int)));
  std::vector<float> o_gpu(B * out_row), o_cpu(B * out_row);
  std::vector<std::vector<float>> snaps_cpu((size_t)B, std::vector<float>((size_t)T * mat));
  std::vector<std::vector<host_inputs>> hist((size_t)B);  /* accepted rounds' inputs per row */
  std::vector<std::vector<int>> hist_a((size_t)B);        /* and how many drafts of each */
  std::vector<uint8_t> all((size_t)B, 1);
  std::vector<int> cpu_rc((size_t)B, 0), a((size_t)B);
  std::vector<float> snap_gpu(mat);
  host_inputs in;
  const ssm_cuda_inputs dview = din.view(gdn);
  for (int r = 0; r < rounds && !t.error; r++) {
    make_inputs(in, d, B, T, (uint32_t)r, 0x51u ^ (uint32_t)d.kind);
    din.upload(in);
    CK(cudaDeviceSynchronize());
    if (bench_snap_verify(&shd.s, &dview, static_cast<float *>(bo.p), sh.s) != 0) {
      set_error(t, "snapshot verify failed at round %d", r);
      break;
    }
    CK(cudaStreamSynchronize(sh.s));
    CK(cudaMemcpy(o_gpu.data(), bo.p, o_gpu.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for_rows(all, [&](int b) {
      ssm_state c;
      ssm_ids ids = {kSeed, kLayer, (uint32_t)b};
      char e2[200];
      if (ssm_state_build(&c, &cfg, &d, &ids, e2, sizeof e2) != 0) {
        cpu_rc[(size_t)b] = -1;
        return;
      }
      int rc = 0;
      std::vector<float> scratch((size_t)d.H * d.dv);
      for (size_t hr = 0; hr < hist[(size_t)b].size(); hr++)
        for (int s = 0; s < hist_a[(size_t)b][hr]; s++) {
          ssm_inputs x = cpu_view(hist[(size_t)b][hr], d, T, 0, gdn, s);
          rc |= ssm_step(&c, &x, scratch.data());
        }
      for (int s = 0; s < T; s++) {
        ssm_inputs x = cpu_view(in, d, T, b, gdn, s);
        rc |= ssm_step(&c, &x, o_cpu.data() + (size_t)b * out_row + (size_t)s * d.H * d.dv);
        memcpy(snaps_cpu[(size_t)b].data() + (size_t)s * mat, c.main.blob, mat * sizeof(float));
      }
      cpu_rc[(size_t)b] = rc;
      ssm_state_free(&c);
    });
    for (int b = 0; b < B && !t.error; b++) {
      if (cpu_rc[(size_t)b] != 0) {
        set_error(t, "cpu step failed at round %d row %d", r, b);
        break;
      }
      compare_outputs(t, o_gpu.data() + (size_t)b * out_row, o_cpu.data() + (size_t)b * out_row, out_row, r, b, 0);
      for (int s = 0; s < T; s++) {
        if (bench_snap_download(&shd.s, b, s + 1, snap_gpu.data()) != 0) {
          set_error(t, "snapshot download failed");
          break;
        }
        const unsigned char *gp = reinterpret_cast<const unsigned char *>(snap_gpu.data());
        const unsigned char *cp =
            reinterpret_cast<const unsigned char *>(snaps_cpu[(size_t)b].data() + (size_t)s * mat);
        for (size_t i = 0; i < mat * sizeof(float); i++)
          if (gp[i] != cp[i]) {
            t.ckpt_diff++;
            note_first(t, "first: round %d row %d draft %d snapshot byte %zu gpu %u cpu %u", r, b, s + 1, i, gp[i],
                       cp[i]);
          }
        t.ckpt_bytes += (long long)(mat * sizeof(float));
      }
    }
    /* every acceptance length in turn; the history keeps this row's slice of the accepted drafts */
    for (int b = 0; b < B; b++) {
      a[(size_t)b] = 1 + (b + r) % T;
      host_inputs one;
      const size_t hH = (size_t)T * d.H, hv = hH * d.dv, gk = (size_t)T * d.G * d.dk;
      const size_t b0 = (size_t)b;
      one.alpha.assign(in.alpha.begin() + (long)(b0 * hH), in.alpha.begin() + (long)((b0 + 1) * hH));
      one.beta.assign(in.beta.begin() + (long)(b0 * hH), in.beta.begin() + (long)((b0 + 1) * hH));
      one.v.assign(in.v.begin() + (long)(b0 * hv), in.v.begin() + (long)((b0 + 1) * hv));
      one.k.assign(in.k.begin() + (long)(b0 * gk), in.k.begin() + (long)((b0 + 1) * gk));
      one.q.assign(in.q.begin() + (long)(b0 * gk), in.q.begin() + (long)((b0 + 1) * gk));
      hist[(size_t)b].push_back(std::move(one));
      hist_a[(size_t)b].push_back(a[(size_t)b]);
      t.flushes += a[(size_t)b];
    }
    CK(cudaMemcpy(ba.p, a.data(), (size_t)B * sizeof(int), cudaMemcpyHostToDevice));
    if (bench_snap_commit(&shd.s, static_cast<const int *>(ba.p), sh.s) != 0) set_error(t, "snapshot commit failed");
    CK(cudaStreamSynchronize(sh.s));
  }
  CK(cudaGetLastError());
}

}  // namespace

extern "C" int ssm_check_ok(const ssm_check_tally *t) {
  return !t->error && t->out_diff == 0 && t->ckpt_diff == 0 && t->state_diff == 0;
}

extern "C" int ssm_check_run(const char *cfg_text, const ssm_dims *dims, int B, int steps, int flush_at,
                             int use_graph, ssm_check_tally *t) {
  return ssm_check_run_mixed(cfg_text, dims, B, steps, flush_at, use_graph, 0, t);
}

extern "C" int ssm_check_run_mixed(const char *cfg_text, const ssm_dims *dims, int B, int steps, int flush_at,
                                   int use_graph, int mixed_t, ssm_check_tally *t) {
  memset(t, 0, sizeof *t);
  try {
    run_one(*t, cfg_text, *dims, B, steps, flush_at, use_graph != 0, mixed_t != 0);
  } catch (const cuda_error &) {
    set_error(*t, "%s", cuda_error_text);
  }
  return ssm_check_ok(t) ? 0 : 1;
}

extern "C" int ssm_check_snapshot(const ssm_dims *dims, int B, int T, int rounds, ssm_check_tally *t) {
  memset(t, 0, sizeof *t);
  try {
    run_snapshot(*t, *dims, B, T, rounds);
  } catch (const cuda_error &) {
    set_error(*t, "%s", cuda_error_text);
  }
  return ssm_check_ok(t) ? 0 : 1;
}
