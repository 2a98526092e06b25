/* GPU check (device machine, not CI): the batched GPU forward (src/model_cuda/mc_model.h)
 * against the CPU runtime (model_forward) on the committed transformers fixtures.
 *
 * For each fixture without MoE: C = 4 configurations (conventional fp32 = the reference,
 * replay L=16 ckpt=fp32, conventional state=bf16, replay L=8 ckpt=nvfp4/sr) times K = 3 windows
 * of random tokens, N steps, on the GPU in one batch, and the same 12 (configuration, window)
 * pairs as CPU model_states (same seed, sequence = window). Checks (docs/gpu-runtime.md,
 * "tolerance of the agreement test"):
 *  1. logits of the fp32-state configurations: max|gpu - cpu| / max|cpu| <= 1e-4 per step;
 *  2. nll of those: |dnll| <= 1e-4 (|nll| + 1); kl of replay fp32 against the reference:
 *     |dkl| <= 1e-4 kl + 3 sqrt(2 kl) eps + eps^2, eps = the step's max logit difference of the
 *     reference row;
 *  3. the metrics kernel on the GPU's own logits against mc_ref_row_metrics on the same logits
 *     (every configuration): as gpu_check_mc_kernels;
 *  4. row-count invariance: a second batch with C = 1 and K = 1 (window 1 alone) gives logits
 *     bit-identical to row (0, 1) of the big batch;
 *  5. CUDA Graph: a third batch replaying each step from a graph gives the same logits and
 *     metrics, bit for bit, as the batch launched kernel by kernel;
 *  7. checkpoints: rows saved after t0 steps (t0 = 37, between flushes, and 48, right after
 *     one) and loaded into a fresh batch give the same bytes when saved again, and the next 24
 *     steps' logits equal the original batch's bit for bit (resume of `run --device cuda`);
 *  8. bf16 GEMMs (mc_model_upload_prec): the reference configuration against the CPU fp32 forward
 *     within the first-order bound of bf16 rounding argued at run_bf16;
 *  9. mc_batch_steps (several steps per submission): every step's metrics bit for bit as one
 *     mc_batch_step at a time, in submissions of 7, 1, 13 and MC_STEPS_MAX steps; too many steps
 *     and a submission past the context refused with the batch unmoved;
 *  6. quantised configurations: printed (max |dkl| over the first 16 steps and the means), not
 *     judged per step (a state element within the GEMM noise of a rounding boundary may round
 *     the other way; see the page).
 * Usage: gpu_check_mc_forward FIXTURE_DIR [steps (default 64)]. Exit 0 when all pass. */
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" {
#include "quant/numerics.h"
#include "src/model/metrics.h"
#include "src/model/model.h"
#include "src/ssm/ssm_config.h"
}
#include "src/model_cuda/mc_model.h"
#include "src/model_cuda/mc_ref.h"

static int g_fail = 0;

static uint32_t rnd_u32(uint64_t i, uint32_t salt) {
  uint32_t ctr[4] = {(uint32_t)i, (uint32_t)(i >> 32), salt, 0x66u}, key[2] = {99u, 1u}, out[4];
  rssm_philox4x32_10(ctr, key, out);
  return out[0];
}

/* Check 7: save every row of a batch after t0 steps, load them into a fresh batch, and step both
 * for `more` steps: the re-saved bytes and the logits must be identical. Returns the misses. */
static int row_roundtrip(const char *dir, const mc_model *g, const ssm_config *cfgs, int C, int K,
                         uint64_t seed, const uint32_t *seqs, const std::vector<int64_t> &tok,
                         int N, int64_t Vv, int t0, int more) {
  char err[1024];
  const int R = C * K;
  mc_batch *a = nullptr, *b = nullptr;
  if (t0 + more > N) more = N - t0;
  if (more < 1) return 0;
  if (mc_batch_build(&a, g, cfgs, C, K, seed, seqs, N + 1, err, sizeof err) != RSSM_OK ||
      mc_batch_build(&b, g, cfgs, C, K, seed, seqs, N + 1, err, sizeof err) != RSSM_OK) {
    printf("    roundtrip: batch: %s\n", err);
    mc_batch_free(a);
    mc_batch_free(b);
    return 1;
  }
  std::vector<int64_t> x((size_t)K), y((size_t)K);
  int miss = 0;
  for (int t = 0; t < t0 && !miss; t++) {
    for (int k = 0; k < K; k++) x[(size_t)k] = tok[(size_t)(k * (N + 1) + t)];
    if (mc_batch_step(a, x.data(), nullptr, nullptr, nullptr, err, sizeof err) != RSSM_OK) miss++;
  }
  for (int r = 0; r < R && !miss; r++) {
    /* rows of different configurations differ in size (ring length, checkpoint formats) */
    const int64_t nb = mc_batch_row_bytes(a, r);
    std::vector<unsigned char> sa((size_t)nb), sb((size_t)nb);
    /* (b's own size for r depends on its position, which the first load sets) */
    if (mc_batch_row_save(a, r, sa.data(), err, sizeof err) != RSSM_OK ||
        mc_batch_row_load(b, r, sa.data(), nb, err, sizeof err) != RSSM_OK ||
        mc_batch_row_save(b, r, sb.data(), err, sizeof err) != RSSM_OK) {
      printf("    roundtrip row %d: %s\n", r, err);
      miss++;
    } else if (memcmp(sa.data(), sb.data(), (size_t)nb) != 0) {
      printf("    roundtrip t0 %d: row %d (config %d) re-saved bytes differ\n", t0, r, r / K);
      miss++;
    }
  }
  std::vector<float> la((size_t)(R * Vv)), lb((size_t)(R * Vv));
  std::vector<int> first((size_t)R, -1);
  for (int t = t0; t < t0 + more && !miss; t++) {
    for (int k = 0; k < K; k++) x[(size_t)k] = tok[(size_t)(k * (N + 1) + t)];
    if (mc_batch_step(a, x.data(), nullptr, la.data(), nullptr, err, sizeof err) != RSSM_OK ||
        mc_batch_step(b, x.data(), nullptr, lb.data(), nullptr, err, sizeof err) != RSSM_OK) {
      printf("    roundtrip step %d: %s\n", t, err);
      miss++;
      break;
    }
    for (int r = 0; r < R; r++)
      if (first[(size_t)r] < 0 &&
          memcmp(&la[(size_t)(r * Vv)], &lb[(size_t)(r * Vv)], (size_t)Vv * sizeof(float)) != 0)
        first[(size_t)r] = t;
  }
  for (int r = 0; r < R; r++)
    if (first[(size_t)r] >= 0) {
      if (miss < 6)
        printf("    roundtrip t0 %d: row %d (config %d) logits differ from step %d\n", t0, r,
               r / K, first[(size_t)r]);
      miss++;
    }
  (void)dir;
  mc_batch_free(a);
  mc_batch_free(b);
  return miss;
}

/* How far the GPU's KL of one row may lie from mc_ref_row_metrics' on the SAME logits. Both
 * compute logp_i = (x_i - max) - lse in fp32 and the same fp64 sum of p_i (expm1(-d_i) + d_i);
 * they differ only because lse comes from expf sums (CUDA's expf is within 2 ulp of glibc's), so
 * the fp32 lse may differ by an ulp and every logp_i then rounds on its own: |e_i| <=
 * ulp(lse) + ulp(logp_i) <= 2^-22 (|lse| + |logp_i|) per row. To first order
 * dKL = sum_i p_i (1 - exp(-d_i)) (e_ref_i - e_cfg_i) + term_i e_ref_i (p_i = exp(logp_ref_i)
 * moves with e_ref_i), plus 2^-22 term_i for expf's own ulps; the bound takes absolute values,
 * doubles them for the second-order terms, and adds 1e-12 for the fp64 summation order and for
 * terms near zero that one side drops (each below p_i x (ulp-sized d_i)^2). */
static double kl_rounding_bound(const float *xr /* [V] */, const mc_row_stats &sk,
                                const float *xc /* [V] */, const mc_row_stats &sc, int64_t V) {
  const double u = 0x1p-22;
  double bound = 0.0;
  for (int64_t i = 0; i < V; i++) {
    const double lr = (double)((xr[i] - sk.max) - sk.lse), lc = (double)((xc[i] - sc.max) - sc.lse);
    const double p = exp(lr), d = lr - lc, term = p * (expm1(-d) + d);
    const double er = u * (fabs((double)sk.lse) + fabs(lr)), ec = u * (fabs((double)sc.lse) + fabs(lc));
    bound += p * fabs(-expm1(-d)) * (er + ec) + fabs(term) * (er + u);
  }
  return 2.0 * bound + 1e-12;
}

/* Check 9, mc_batch_steps: the same batch built again (graph on) and stepped in submissions of
 * 7, 1, 13, 64, ... steps (cycling; the last cut at N) gives every step's metrics bit for bit as
 * the batch stepped one mc_batch_step at a time (met_all [N][R]); a submission past the context
 * and n = MC_STEPS_MAX + 1 are refused with the batch left where it was. Returns the misses. */
static int multi_step_misses(const char *dir, const mc_model *g, const ssm_config *cfgs, int C,
                             int K, uint64_t seed, const uint32_t *seqs,
                             const std::vector<int64_t> &tok, int N,
                             const std::vector<mc_row_metrics> &met_all) {
  char err[1024];
  const int R = C * K;
  mc_batch *b = nullptr;
  if (mc_batch_build(&b, g, cfgs, C, K, seed, seqs, N + 1, err, sizeof err) != RSSM_OK) {
    printf("%s: multi-step batch: %s\n", dir, err);
    return 1;
  }
  mc_batch_use_graph(b, 1);
  const int sizes[] = {7, 1, 13, MC_STEPS_MAX};
  std::vector<int64_t> x((size_t)MC_STEPS_MAX * (size_t)K), y(x.size());
  std::vector<mc_row_metrics> met((size_t)MC_STEPS_MAX * (size_t)R);
  int misses = 0;
  if (mc_batch_steps(b, MC_STEPS_MAX + 1, x.data(), y.data(), met.data(), err, sizeof err) !=
          RSSM_ERR_INPUT ||
      mc_batch_pos(b) != 0)
    misses++;
  for (int t = 0, i = 0; t < N && !misses; i++) {
    const int n = sizes[i % 4] < N - t ? sizes[i % 4] : N - t;
    for (int j = 0; j < n; j++)
      for (int k = 0; k < K; k++) {
        x[(size_t)(j * K + k)] = tok[(size_t)(k * (N + 1) + t + j)];
        y[(size_t)(j * K + k)] = tok[(size_t)(k * (N + 1) + t + j + 1)];
      }
    if (mc_batch_steps(b, n, x.data(), y.data(), met.data(), err, sizeof err) != RSSM_OK) {
      printf("%s: multi-step steps %d..%d: %s\n", dir, t, t + n - 1, err);
      misses++;
      break;
    }
    for (int j = 0; j < n; j++)
      if (memcmp(&met[(size_t)j * (size_t)R], &met_all[(size_t)(t + j) * (size_t)R],
                 (size_t)R * sizeof(mc_row_metrics)) != 0)
        misses++;
    t += n;
  }
  /* the context holds N + 1 positions: two more steps do not fit, and nothing moves */
  if (!misses && (mc_batch_steps(b, 2, x.data(), y.data(), met.data(), err, sizeof err) !=
                      RSSM_ERR_INPUT ||
                  mc_batch_pos(b) != N))
    misses++;
  mc_batch_free(b);
  return misses;
}

static void run_fixture(const char *dir, int N) {
  model m;
  char err[1024];
  if (model_load(dir, &m, err, sizeof err) != RSSM_OK) {
    printf("%s: FAIL loading: %s\n", dir, err);
    g_fail++;
    return;
  }
  const int64_t V = m.cfg.V;
  mc_model *g = nullptr;
  int rc = mc_model_upload(&m, &g, err, sizeof err);
  if (rc != RSSM_OK) { /* a refusal ("not supported on the GPU") fails too */
    printf("%s: FAIL upload: %s\n", dir, err);
    g_fail++;
    model_free(&m);
    return;
  }
  const char *texts[] = {"conventional state=fp32", "replay L=16 ckpt=fp32",
                         "conventional state=bf16", "replay L=8 ckpt=nvfp4/sr"};
  const int C = 4, K = 3, R = C * K;
  const uint64_t seed = 11;
  ssm_config cfgs[4];
  for (int c = 0; c < C; c++)
    if (ssm_config_parse(texts[c], &cfgs[c], err, sizeof err) != 0) {
      printf("config '%s': %s\n", texts[c], err);
      exit(1);
    }
  uint32_t seqs[3] = {0, 1, 2};
  std::vector<int64_t> tok((size_t)(K * (N + 1)));
  for (size_t i = 0; i < tok.size(); i++) tok[i] = (int64_t)(rnd_u32(i, 1) % (uint32_t)V);

  mc_batch *b = nullptr, *b1 = nullptr, *b2 = nullptr;
  if (mc_batch_build(&b, g, cfgs, C, K, seed, seqs, N + 1, err, sizeof err) != RSSM_OK ||
      mc_batch_build(&b1, g, cfgs, 1, 1, seed, seqs + 1, N + 1, err, sizeof err) != RSSM_OK ||
      mc_batch_build(&b2, g, cfgs, C, K, seed, seqs, N + 1, err, sizeof err) != RSSM_OK) {
    printf("%s: FAIL batch: %s\n", dir, err);
    g_fail++;
    mc_batch_free(b);
    mc_batch_free(b1);
    mc_batch_free(b2);
    mc_model_free(g);
    model_free(&m);
    return;
  }
  mc_batch_use_graph(b2, 1);
  std::vector<model_state> st((size_t)R);
  for (int c = 0; c < C; c++)
    for (int k = 0; k < K; k++)
      if (model_state_build(&st[(size_t)(c * K + k)], &m, &cfgs[c], seed, seqs[k], N + 1, err,
                            sizeof err) != RSSM_OK) {
        printf("cpu state: %s\n", err);
        exit(1);
      }
  std::vector<float> lg((size_t)(R * V)), lc((size_t)(R * V)), l1((size_t)V), l2((size_t)(R * V));
  std::vector<mc_row_metrics> met2((size_t)R);
  std::vector<float> lpr((size_t)V), lpc((size_t)V);
  std::vector<mc_row_metrics> met((size_t)R), mr((size_t)R);
  std::vector<mc_row_stats> sr((size_t)R);
  double worst_logit = 0.0, worst_nll = 0.0, worst_kl_ratio = 0.0, q_kl16[4] = {0, 0, 0, 0};
  double mean_kl_g[4] = {0, 0, 0, 0}, mean_kl_c[4] = {0, 0, 0, 0};
  int bad_inv = 0, bad_met = 0, bad_logit = 0, bad_nll = 0, bad_kl = 0, bad_graph = 0;
  std::vector<mc_row_metrics> met_all((size_t)N * (size_t)R); /* [N][R] b's metrics, for check 9 */
  for (int t = 0; t < N; t++) {
    int64_t x[3], y[3];
    for (int k = 0; k < K; k++) x[k] = tok[(size_t)(k * (N + 1) + t)], y[k] = tok[(size_t)(k * (N + 1) + t + 1)];
    if (mc_batch_step(b, x, y, lg.data(), met.data(), err, sizeof err) != RSSM_OK ||
        mc_batch_step(b1, x + 1, y + 1, l1.data(), nullptr, err, sizeof err) != RSSM_OK ||
        mc_batch_step(b2, x, y, l2.data(), met2.data(), err, sizeof err) != RSSM_OK) {
      printf("%s: FAIL step %d: %s\n", dir, t, err);
      g_fail++;
      break;
    }
    for (int r = 0; r < R; r++)
      if (model_forward(&st[(size_t)r], &x[r % K], 1, &lc[(size_t)r * (size_t)V], err, sizeof err) !=
              RSSM_OK ||
          model_commit(&st[(size_t)r], 1) != 0) {
        printf("cpu forward: %s\n", err);
        exit(1);
      }
    memcpy(&met_all[(size_t)t * (size_t)R], met.data(), (size_t)R * sizeof(mc_row_metrics));
    /* 5: graph replay */
    if (memcmp(l2.data(), lg.data(), lg.size() * sizeof(float)) != 0 ||
        memcmp(met2.data(), met.data(), met.size() * sizeof(mc_row_metrics)) != 0)
      bad_graph++;
    /* 4: row-count invariance */
    if (memcmp(l1.data(), &lg[(size_t)(1 * V)], (size_t)V * sizeof(float)) != 0) bad_inv++;
    /* 3: metrics kernel on the same logits */
    mc_ref_row_metrics(lg.data(), y, R, K, V, sr.data(), mr.data());
    for (int r = 0; r < R; r++) {
      const mc_row_metrics &a = met[(size_t)r], &e = mr[(size_t)r];
      const double kl_tol = r < K ? 0.0 : kl_rounding_bound(&lg[(size_t)(r % K) * (size_t)V],
                                                            sr[(size_t)(r % K)],
                                                            &lg[(size_t)r * (size_t)V],
                                                            sr[(size_t)r], V);
      if (a.finite != e.finite || (e.finite && (a.argmax != e.argmax || a.top1 != e.top1 ||
                                                !(fabs((double)a.kl - e.kl) <= kl_tol) ||
                                                !(fabs((double)a.nll - e.nll) <= 1e-6 * (fabs((double)e.nll) + 1))))) {
        if (bad_met < 4) /* say which field missed, so a miss can be told from a tolerance issue */
          printf("    metrics miss step %d row %d: finite %d/%d argmax %d/%d top1 %d/%d kl %.9g/%.9g "
                 "nll %.9g/%.9g\n", t, r, a.finite, e.finite, (int)a.argmax, (int)e.argmax,
                 (int)a.top1, (int)e.top1, (double)a.kl, (double)e.kl, (double)a.nll,
                 (double)e.nll);
        bad_met++;
      }
    }
    /* 1, 2: against the CPU runtime */
    for (int k = 0; k < K; k++) {
      double eps = 0.0, mx = 0.0;
      for (int64_t i = 0; i < V; i++) {
        eps = fmax(eps, fabs((double)lg[(size_t)(k * V + i)] - (double)lc[(size_t)(k * V + i)]));
        mx = fmax(mx, fabs((double)lc[(size_t)(k * V + i)]));
      }
      int64_t amr, amc;
      metrics_log_softmax(&lc[(size_t)(k * V)], V, lpr.data(), &amr);
      for (int c = 0; c < C; c++) {
        const int r = c * K + k;
        double e2 = 0.0;
        for (int64_t i = 0; i < V; i++)
          e2 = fmax(e2, fabs((double)lg[(size_t)(r * V + i)] - (double)lc[(size_t)(r * V + i)]));
        metrics_log_softmax(&lc[(size_t)(r * V)], V, lpc.data(), &amc);
        step_metrics cm;
        metrics_step(lpr.data(), amr, lpc.data(), amc, V, y[k], &cm);
        const double kl_c = c == 0 ? 0.0 : cm.kl, kl_g = met[(size_t)r].kl;
        mean_kl_g[c] += kl_g / (double)(N * K);
        mean_kl_c[c] += kl_c / (double)(N * K);
        if (c <= 1) {
          const double rel = e2 / (mx > 0 ? mx : 1.0);
          worst_logit = fmax(worst_logit, rel);
          if (!(rel <= 1e-4)) bad_logit++;
          const double dn = fabs((double)met[(size_t)r].nll - (double)cm.nll);
          worst_nll = fmax(worst_nll, dn / (fabs((double)cm.nll) + 1));
          if (!(dn <= 1e-4 * (fabs((double)cm.nll) + 1))) bad_nll++;
          if (c == 1) {
            const double lim = 1e-4 * kl_c + 3 * sqrt(2 * kl_c) * eps + eps * eps;
            const double dk = fabs(kl_g - kl_c);
            worst_kl_ratio = fmax(worst_kl_ratio, lim > 0 ? dk / lim : (dk > 0 ? 1e9 : 0));
            if (!(dk <= lim)) bad_kl++;
          }
        } else if (t < 16) {
          q_kl16[c] = fmax(q_kl16[c], fabs(kl_g - kl_c));
        }
      }
    }
  }
  const int bad_rt = row_roundtrip(dir, g, cfgs, C, K, seed, seqs, tok, N, V, 37, 24) +
                     row_roundtrip(dir, g, cfgs, C, K, seed, seqs, tok, N, V, 48, 16);
  const int bad_multi = multi_step_misses(dir, g, cfgs, C, K, seed, seqs, tok, N, met_all);
  const int ok = !bad_inv && !bad_met && !bad_logit && !bad_nll && !bad_kl && !bad_graph && !bad_rt &&
                 !bad_multi;
  if (!ok) g_fail++;
  printf("%-28s %s  logits %.2g (<= 1e-4), nll %.2g, kl/limit %.2g, metrics-kernel misses %d, "
         "row-count invariance misses %d, graph misses %d, checkpoint misses %d, multi-step "
         "misses %d\n", dir, ok ? "ok  " : "FAIL", worst_logit, worst_nll, worst_kl_ratio, bad_met,
         bad_inv, bad_graph, bad_rt, bad_multi);
  for (int c = 2; c < C; c++)
    printf("    %-26s mean kl gpu %.4g cpu %.4g; max |dkl| first 16 steps %.3g (informational)\n",
           texts[c], mean_kl_g[c], mean_kl_c[c], q_kl16[c]);
  for (auto &s : st) model_state_free(&s);
  mc_batch_free(b);
  mc_batch_free(b1);
  mc_batch_free(b2);
  mc_model_free(g);
  model_free(&m);
}

/* Check 8, bf16 GEMMs (mc_model_upload_prec(MC_GEMM_BF16), docs/gpu-runtime.md): the reference
 * configuration, K = 3 windows, N steps, against the CPU fp32 forward. Each GEMM then uses bf16
 * weights and inputs (round to nearest even, unit roundoff u = 2^-8) with fp32 accumulation:
 * every product w_ij x_j carries a relative error of at most 2u + u^2, independent in sign from
 * term to term, so an output y_i = sum_j w_ij x_j moves by about u sqrt(2 sum_j (w_ij x_j)^2),
 * i.e. ~u sqrt(2) |y_i| when the terms are of random sign (the fp32 accumulation adds ~k 2^-24,
 * negligible). The RMSNorms rescale each block input, so to first order a block passes a relative
 * error on with gain ~1 and adds its own: over the n = 2 nblocks + 1 GEMMs on a step's path
 * (input and output projection per block, the lm_head) the logits' relative error is typically
 * ~u sqrt(2 n) (printed beside the median) and the check allows 2u n (0.26 at 16 blocks), a
 * factor sqrt(2 n) above, while a wrong layout, leading dimension or missing conversion gives
 * O(1). Also printed: the top-1 agreement. MoE fixtures are skipped (routing near-ties can flip
 * under bf16 and move a step's logits beyond the bound without any defect). */
static void run_bf16(const char *dir, int N) {
  model m;
  char err[1024];
  if (model_load(dir, &m, err, sizeof err) != RSSM_OK) {
    printf("bf16 %s: FAIL loading: %s\n", dir, err);
    g_fail++;
    return;
  }
  for (int i = 0; i < m.nblocks; i++)
    if (m.blocks[i].kind == BK_QMOE || m.blocks[i].kind == BK_NMOE) {
      printf("bf16 %-23s skipped (MoE)\n", dir);
      model_free(&m);
      return;
    }
  const int64_t V = m.cfg.V;
  const int K = 3;
  mc_model *g = nullptr;
  mc_batch *b = nullptr;
  ssm_config cfg;
  uint32_t seqs[3] = {0, 1, 2};
  if (ssm_config_parse("conventional state=fp32", &cfg, err, sizeof err) != 0 ||
      mc_model_upload_prec(&m, MC_GEMM_BF16, &g, err, sizeof err) != RSSM_OK ||
      mc_batch_build(&b, g, &cfg, 1, K, 5, seqs, N + 1, err, sizeof err) != RSSM_OK) {
    printf("bf16 %s: FAIL setup: %s\n", dir, err);
    g_fail++;
    mc_model_free(g);
    model_free(&m);
    return;
  }
  mc_batch_use_graph(b, 1);
  std::vector<model_state> st((size_t)K);
  for (int k = 0; k < K; k++)
    if (model_state_build(&st[(size_t)k], &m, &cfg, 5, seqs[k], N + 1, err, sizeof err) != RSSM_OK) {
      printf("cpu state: %s\n", err);
      exit(1);
    }
  std::vector<float> lg((size_t)(K * V)), lc((size_t)(K * V));
  std::vector<double> rel;
  int top1_same = 0, steps = 0;
  const double u = 0x1p-8, bound = 2.0 * u * (2.0 * m.nblocks + 1.0);
  for (int t = 0; t < N; t++) {
    int64_t x[3];
    for (int k = 0; k < K; k++) x[k] = (int64_t)(rnd_u32((uint64_t)(k * (N + 1) + t), 8) % (uint32_t)V);
    if (mc_batch_step(b, x, nullptr, lg.data(), nullptr, err, sizeof err) != RSSM_OK) {
      printf("bf16 %s: FAIL step %d: %s\n", dir, t, err);
      g_fail++;
      break;
    }
    for (int k = 0; k < K; k++) {
      if (model_forward(&st[(size_t)k], &x[k], 1, &lc[(size_t)k * (size_t)V], err, sizeof err) !=
              RSSM_OK ||
          model_commit(&st[(size_t)k], 1) != 0) {
        printf("cpu forward: %s\n", err);
        exit(1);
      }
      double e = 0.0, mx = 0.0;
      int64_t ag = 0, ac = 0;
      for (int64_t i = 0; i < V; i++) {
        const double a = lg[(size_t)(k * V + i)], c = lc[(size_t)(k * V + i)];
        e = fmax(e, fabs(a - c));
        mx = fmax(mx, fabs(c));
        if (a > lg[(size_t)(k * V + ag)]) ag = i;
        if (c > lc[(size_t)(k * V + ac)]) ac = i;
      }
      rel.push_back(mx > 0 ? e / mx : (e > 0 ? 1e9 : 0.0));
      top1_same += ag == ac;
      steps++;
    }
  }
  std::vector<double> sorted = rel;
  std::sort(sorted.begin(), sorted.end());
  const double worst = sorted.empty() ? 0.0 : sorted.back();
  const double med = sorted.empty() ? 0.0 : sorted[sorted.size() / 2];
  const int ok = !sorted.empty() && worst <= bound && (int)rel.size() == N * K;
  if (!ok) g_fail++;
  printf("bf16 %-23s %s  logits vs CPU fp32: max %.3g (<= %.3g = 2u n, n = %d GEMMs), median "
         "%.3g (u sqrt(2 n) = %.3g), top-1 agreement %d/%d\n", dir, ok ? "ok  " : "FAIL", worst,
         bound, 2 * m.nblocks + 1, med, u * sqrt(2.0 * (2.0 * m.nblocks + 1.0)), top1_same, steps);
  for (auto &s : st) model_state_free(&s);
  mc_batch_free(b);
  mc_model_free(g);
  model_free(&m);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: gpu_check_mc_forward FIXTURE_DIR [steps]\n");
    return 2;
  }
  char err[512];
  if (mc_device_check(err, sizeof err) != 0) {
    fprintf(stderr, "gpu_check_mc_forward: %s\n", err);
    return 2;
  }
  const int N = argc > 2 ? atoi(argv[2]) : 64;
  const char *fixtures[] = {"qwen3_5_text", "qwen3_5_vl", "qwen3_next", "nemotron_h",
                            "qwen3_5_moe", "nemotron_h_moe"};
  for (const char *f : fixtures) {
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", argv[1], f);
    run_fixture(dir, N < 1 ? 1 : N);
  }
  for (const char *f : fixtures) { /* 8: bf16 GEMMs */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", argv[1], f);
    run_bf16(dir, N < 1 ? 1 : N);
  }
  printf("%s: %d failing fixture(s)\n", g_fail ? "FAIL" : "ok", g_fail);
  return g_fail ? 1 : 0;
}
