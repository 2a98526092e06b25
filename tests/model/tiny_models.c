/* Tiny checkpoints and the independent reference forward (see tiny_models.h). */
#include "tests/model/tiny_models.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli/cli_test_util.h"

/* --- sizes ----------------------------------------------------------------------------------- */
/* Qwen: layers [linear, full, linear]; GDN Hk 2, Hv 6 (r = 3), dk 12, dv 8, K 4 */
enum { Q_H = 32, Q_V = 80, Q_L = 3, Q_HK = 2, Q_HV = 6, Q_DK = 12, Q_DV = 8, Q_K = 4 };
enum { Q_NH = 4, Q_NKV = 2, Q_D = 16, Q_RD = 4, Q_I = 48, Q_E = 4, Q_TOPK = 2, Q_IM = 16,
       Q_ISH = 24 };
#define Q_EPS 1e-6
#define Q_THETA 10000.0
/* Nemotron-H: pattern M * M - E */
enum { N_H = 32, N_V = 72, N_L = 5, N_HM = 4, N_P = 8, N_G = 2, N_N = 12, N_K = 4 };
enum { N_NH = 4, N_NKV = 2, N_D = 8, N_I = 40, N_E = 4, N_TOPK = 2, N_IM = 16, N_ISH = 20,
       N_LAT = 16, N_NGROUP = 2, N_TOPKG = 1 };
#define N_EPS 1e-5
#define N_SCALE 2.5
static const char N_PATTERN[] = "M*M-E";
static double dt_lo = 0.0, dt_hi = INFINITY; /* time_step_limit */
static int dt_every_step = 0;                   /* clamp past position 0 too */

void tiny_set_dt_limit(double lo, double hi, int every_step) {
  dt_lo = lo;
  dt_hi = hi;
  dt_every_step = every_step;
}

static const int q_is_attn[Q_L] = {0, 1, 0};

int64_t tiny_vocab(tiny_kind kind) { return kind == TINY_NEMOTRON_H ? N_V : Q_V; }

static float inv_sqrt(int64_t n) { return 1.0f / sqrtf((float)n); }

static void nm(char *buf, const char *pre, int layer, const char *suffix) {
  snprintf(buf, 200, "%slayers.%d.%s", pre, layer, suffix);
}

static const char *qprefix(tiny_kind kind) {
  return kind == TINY_QWEN35_MOE ? "model.language_model." : "model.";
}

/* Is Qwen layer i MoE? qwen3_5_moe: all; qwen3_next: all but mlp_only_layers [0]. */
static int q_moe(tiny_kind kind, int i) {
  if (kind == TINY_QWEN35_MOE) return 1;
  if (kind == TINY_QWEN3_NEXT) return i != 0;
  return 0;
}

static void build_qwen(tiny_kind kind, tt_list *l, char *cfg, size_t cap) {
  const char *P = qprefix(kind);
  char n[200];
  const int64_t key_dim = Q_HK * Q_DK, value_dim = Q_HV * Q_DV, conv_dim = 2 * key_dim + value_dim;
  snprintf(n, sizeof n, "%sembed_tokens.weight", P);
  tt_add(l, n, 2, Q_V, Q_H, 0, 1.0f, 0.0f);
  for (int i = 0; i < Q_L; i++) {
    nm(n, P, i, "input_layernorm.weight");
    tt_add(l, n, 1, Q_H, 0, 0, 0.3f, 0.0f);
    nm(n, P, i, "post_attention_layernorm.weight");
    tt_add(l, n, 1, Q_H, 0, 0, 0.3f, 0.0f);
    if (q_is_attn[i]) {
      nm(n, P, i, "self_attn.q_proj.weight");
      tt_add(l, n, 2, 2 * Q_NH * Q_D, Q_H, 0, inv_sqrt(Q_H), 0.0f);
      nm(n, P, i, "self_attn.k_proj.weight");
      tt_add(l, n, 2, Q_NKV * Q_D, Q_H, 0, inv_sqrt(Q_H), 0.0f);
      nm(n, P, i, "self_attn.v_proj.weight");
      tt_add(l, n, 2, Q_NKV * Q_D, Q_H, 0, inv_sqrt(Q_H), 0.0f);
      nm(n, P, i, "self_attn.o_proj.weight");
      tt_add(l, n, 2, Q_H, Q_NH * Q_D, 0, inv_sqrt(Q_NH * Q_D), 0.0f);
      nm(n, P, i, "self_attn.q_norm.weight");
      tt_add(l, n, 1, Q_D, 0, 0, 0.3f, 0.0f);
      nm(n, P, i, "self_attn.k_norm.weight");
      tt_add(l, n, 1, Q_D, 0, 0, 0.3f, 0.0f);
    } else {
      if (kind == TINY_QWEN3_NEXT) {
        nm(n, P, i, "linear_attn.in_proj_qkvz.weight");
        tt_add(l, n, 2, 2 * key_dim + 2 * value_dim, Q_H, 0, inv_sqrt(Q_H), 0.0f);
        nm(n, P, i, "linear_attn.in_proj_ba.weight");
        tt_add(l, n, 2, 2 * Q_HV, Q_H, 0, inv_sqrt(Q_H), 0.0f);
      } else {
        nm(n, P, i, "linear_attn.in_proj_qkv.weight");
        tt_add(l, n, 2, conv_dim, Q_H, 0, inv_sqrt(Q_H), 0.0f);
        nm(n, P, i, "linear_attn.in_proj_z.weight");
        tt_add(l, n, 2, value_dim, Q_H, 0, inv_sqrt(Q_H), 0.0f);
        nm(n, P, i, "linear_attn.in_proj_b.weight");
        tt_add(l, n, 2, Q_HV, Q_H, 0, inv_sqrt(Q_H), 0.0f);
        nm(n, P, i, "linear_attn.in_proj_a.weight");
        tt_add(l, n, 2, Q_HV, Q_H, 0, inv_sqrt(Q_H), 0.0f);
      }
      nm(n, P, i, "linear_attn.conv1d.weight");
      tt_add(l, n, 3, conv_dim, 1, Q_K, 0.5f, 0.0f);
      nm(n, P, i, "linear_attn.dt_bias");
      tt_add(l, n, 1, Q_HV, 0, 0, 0.5f, 0.5f);
      nm(n, P, i, "linear_attn.A_log");
      tt_add(l, n, 1, Q_HV, 0, 0, 1.0f, 0.5f);
      nm(n, P, i, "linear_attn.norm.weight");
      tt_add(l, n, 1, Q_DV, 0, 0, 0.3f, 1.0f);
      nm(n, P, i, "linear_attn.out_proj.weight");
      tt_add(l, n, 2, Q_H, value_dim, 0, inv_sqrt(value_dim), 0.0f);
    }
    if (q_moe(kind, i)) {
      nm(n, P, i, "mlp.gate.weight");
      tt_add(l, n, 2, Q_E, Q_H, 0, 1.0f, 0.0f);
      if (kind == TINY_QWEN35_MOE) {
        nm(n, P, i, "mlp.experts.gate_up_proj");
        tt_add(l, n, 3, Q_E, 2 * Q_IM, Q_H, inv_sqrt(Q_H), 0.0f);
        nm(n, P, i, "mlp.experts.down_proj");
        tt_add(l, n, 3, Q_E, Q_H, Q_IM, inv_sqrt(Q_IM), 0.0f);
      } else {
        for (int e = 0; e < Q_E; e++) {
          char s[100];
          snprintf(s, sizeof s, "mlp.experts.%d.gate_proj.weight", e);
          nm(n, P, i, s);
          tt_add(l, n, 2, Q_IM, Q_H, 0, inv_sqrt(Q_H), 0.0f);
          snprintf(s, sizeof s, "mlp.experts.%d.up_proj.weight", e);
          nm(n, P, i, s);
          tt_add(l, n, 2, Q_IM, Q_H, 0, inv_sqrt(Q_H), 0.0f);
          snprintf(s, sizeof s, "mlp.experts.%d.down_proj.weight", e);
          nm(n, P, i, s);
          tt_add(l, n, 2, Q_H, Q_IM, 0, inv_sqrt(Q_IM), 0.0f);
        }
      }
      nm(n, P, i, "mlp.shared_expert.gate_proj.weight");
      tt_add(l, n, 2, Q_ISH, Q_H, 0, inv_sqrt(Q_H), 0.0f);
      nm(n, P, i, "mlp.shared_expert.up_proj.weight");
      tt_add(l, n, 2, Q_ISH, Q_H, 0, inv_sqrt(Q_H), 0.0f);
      nm(n, P, i, "mlp.shared_expert.down_proj.weight");
      tt_add(l, n, 2, Q_H, Q_ISH, 0, inv_sqrt(Q_ISH), 0.0f);
      nm(n, P, i, "mlp.shared_expert_gate.weight");
      tt_add(l, n, 2, 1, Q_H, 0, inv_sqrt(Q_H), 0.0f);
    } else {
      nm(n, P, i, "mlp.gate_proj.weight");
      tt_add(l, n, 2, Q_I, Q_H, 0, inv_sqrt(Q_H), 0.0f);
      nm(n, P, i, "mlp.up_proj.weight");
      tt_add(l, n, 2, Q_I, Q_H, 0, inv_sqrt(Q_H), 0.0f);
      nm(n, P, i, "mlp.down_proj.weight");
      tt_add(l, n, 2, Q_H, Q_I, 0, inv_sqrt(Q_I), 0.0f);
    }
  }
  snprintf(n, sizeof n, "%snorm.weight", P);
  tt_add(l, n, 1, Q_H, 0, 0, 0.3f, 0.0f);
  int tied = kind == TINY_QWEN35_TEXT;
  if (!tied) tt_add(l, "lm_head.weight", 2, Q_V, Q_H, 0, inv_sqrt(Q_H), 0.0f);
  /* a BF16 tensor exercises the conversion */
  snprintf(n, sizeof n, "%snorm.weight", P);
  tt_set_bf16(l, n);

  char text[4096];
  snprintf(text, sizeof text,
           "\"hidden_size\": %d, \"vocab_size\": %d, \"num_hidden_layers\": %d, "
           "\"rms_norm_eps\": 1e-06, \"layer_types\": [\"linear_attention\", \"full_attention\", "
           "\"linear_attention\"], \"linear_num_key_heads\": %d, \"linear_num_value_heads\": %d, "
           "\"linear_key_head_dim\": %d, \"linear_value_head_dim\": %d, "
           "\"linear_conv_kernel_dim\": %d, \"num_attention_heads\": %d, "
           "\"num_key_value_heads\": %d, \"head_dim\": %d, \"intermediate_size\": %d, "
           "\"rope_parameters\": {\"rope_type\": \"default\", \"rope_theta\": 10000.0, "
           "\"partial_rotary_factor\": 0.25, \"mrope_section\": [1, 1, 0], "
           "\"mrope_interleaved\": true}, \"num_experts\": %d, \"num_experts_per_tok\": %d, "
           "\"moe_intermediate_size\": %d, \"shared_expert_intermediate_size\": %d, "
           "\"hidden_act\": \"silu\"",
           Q_H, Q_V, Q_L, Q_HK, Q_HV, Q_DK, Q_DV, Q_K, Q_NH, Q_NKV, Q_D, Q_I, Q_E, Q_TOPK, Q_IM,
           Q_ISH);
  if (kind == TINY_QWEN35_TEXT)
    snprintf(cfg, cap, "{\"model_type\": \"qwen3_5_text\", \"tie_word_embeddings\": true, %s}",
             text);
  else if (kind == TINY_QWEN35_MOE)
    snprintf(cfg, cap,
             "{\"model_type\": \"qwen3_5_moe\", \"tie_word_embeddings\": false, "
             "\"vision_config\": {\"depth\": 1}, \"text_config\": {\"model_type\": "
             "\"qwen3_5_moe_text\", %s}}", text);
  else
    snprintf(cfg, cap,
             "{\"model_type\": \"qwen3_next\", \"tie_word_embeddings\": false, "
             "\"norm_topk_prob\": true, \"decoder_sparse_step\": 1, \"mlp_only_layers\": [0], %s}",
             text);
}

static void build_nemotron(tt_list *l, char *cfg, size_t cap) {
  const char *P = "backbone.";
  char n[200];
  const int64_t d_inner = N_HM * N_P, conv_dim = d_inner + 2 * N_G * N_N;
  tt_add(l, "backbone.embeddings.weight", 2, N_V, N_H, 0, 1.0f, 0.0f);
  for (int i = 0; i < N_L; i++) {
    nm(n, P, i, "norm.weight");
    tt_add(l, n, 1, N_H, 0, 0, 0.3f, 1.0f);
    switch (N_PATTERN[i]) {
      case 'M':
        nm(n, P, i, "mixer.in_proj.weight");
        tt_add(l, n, 2, d_inner + conv_dim + N_HM, N_H, 0, inv_sqrt(N_H), 0.0f);
        nm(n, P, i, "mixer.conv1d.weight");
        tt_add(l, n, 3, conv_dim, 1, N_K, 0.5f, 0.0f);
        nm(n, P, i, "mixer.conv1d.bias");
        tt_add(l, n, 1, conv_dim, 0, 0, 0.2f, 0.0f);
        nm(n, P, i, "mixer.A_log");
        tt_add(l, n, 1, N_HM, 0, 0, 1.0f, 0.5f);
        nm(n, P, i, "mixer.D");
        tt_add(l, n, 1, N_HM, 0, 0, 1.0f, 0.0f);
        nm(n, P, i, "mixer.dt_bias");
        tt_add(l, n, 1, N_HM, 0, 0, 1.0f, -0.5f);
        nm(n, P, i, "mixer.norm.weight");
        tt_add(l, n, 1, d_inner, 0, 0, 0.3f, 1.0f);
        nm(n, P, i, "mixer.out_proj.weight");
        tt_add(l, n, 2, N_H, d_inner, 0, inv_sqrt(d_inner), 0.0f);
        break;
      case '*':
        nm(n, P, i, "mixer.q_proj.weight");
        tt_add(l, n, 2, N_NH * N_D, N_H, 0, inv_sqrt(N_H), 0.0f);
        nm(n, P, i, "mixer.k_proj.weight");
        tt_add(l, n, 2, N_NKV * N_D, N_H, 0, inv_sqrt(N_H), 0.0f);
        nm(n, P, i, "mixer.v_proj.weight");
        tt_add(l, n, 2, N_NKV * N_D, N_H, 0, inv_sqrt(N_H), 0.0f);
        nm(n, P, i, "mixer.o_proj.weight");
        tt_add(l, n, 2, N_H, N_NH * N_D, 0, inv_sqrt(N_NH * N_D), 0.0f);
        break;
      case '-':
        nm(n, P, i, "mixer.up_proj.weight");
        tt_add(l, n, 2, N_I, N_H, 0, inv_sqrt(N_H), 0.0f);
        nm(n, P, i, "mixer.down_proj.weight");
        tt_add(l, n, 2, N_H, N_I, 0, inv_sqrt(N_I), 0.0f);
        break;
      case 'E':
        nm(n, P, i, "mixer.gate.weight");
        tt_add(l, n, 2, N_E, N_H, 0, 1.0f, 0.0f);
        nm(n, P, i, "mixer.gate.e_score_correction_bias");
        tt_add(l, n, 1, N_E, 0, 0, 0.3f, 0.0f);
        for (int e = 0; e < N_E; e++) {
          char s[100];
          snprintf(s, sizeof s, "mixer.experts.%d.up_proj.weight", e);
          nm(n, P, i, s);
          tt_add(l, n, 2, N_IM, N_LAT, 0, inv_sqrt(N_LAT), 0.0f);
          snprintf(s, sizeof s, "mixer.experts.%d.down_proj.weight", e);
          nm(n, P, i, s);
          tt_add(l, n, 2, N_LAT, N_IM, 0, inv_sqrt(N_IM), 0.0f);
        }
        nm(n, P, i, "mixer.fc1_latent_proj.weight");
        tt_add(l, n, 2, N_LAT, N_H, 0, inv_sqrt(N_H), 0.0f);
        nm(n, P, i, "mixer.fc2_latent_proj.weight");
        tt_add(l, n, 2, N_H, N_LAT, 0, inv_sqrt(N_LAT), 0.0f);
        nm(n, P, i, "mixer.shared_experts.up_proj.weight");
        tt_add(l, n, 2, N_ISH, N_H, 0, inv_sqrt(N_H), 0.0f);
        nm(n, P, i, "mixer.shared_experts.down_proj.weight");
        tt_add(l, n, 2, N_H, N_ISH, 0, inv_sqrt(N_ISH), 0.0f);
        break;
      default:
        break;
    }
  }
  tt_add(l, "backbone.norm_f.weight", 1, N_H, 0, 0, 0.3f, 1.0f);
  tt_add(l, "lm_head.weight", 2, N_V, N_H, 0, inv_sqrt(N_H), 0.0f);
  tt_set_bf16(l, "backbone.layers.0.mixer.out_proj.weight");
  /* bare Infinity, as Python's json writes float('inf'); num_hidden_layers stale on purpose */
  char limit[96];
  if (isinf(dt_hi)) snprintf(limit, sizeof limit, "[%.17g, Infinity]", dt_lo);
  else snprintf(limit, sizeof limit, "[%.17g, %.17g]", dt_lo, dt_hi);
  snprintf(cfg, cap,
           "{\"model_type\": \"nemotron_h\", \"hidden_size\": %d, \"vocab_size\": %d, "
           "\"num_hidden_layers\": 52, \"hybrid_override_pattern\": \"%s\", "
           "\"layer_norm_epsilon\": 1e-05, \"num_attention_heads\": %d, "
           "\"num_key_value_heads\": %d, \"head_dim\": %d, \"intermediate_size\": %d, "
           "\"mamba_num_heads\": %d, \"mamba_head_dim\": %d, \"n_groups\": %d, "
           "\"ssm_state_size\": %d, \"conv_kernel\": %d, \"use_conv_bias\": true, "
           "\"time_step_limit\": %s, \"time_step_min\": 1e-09, "
           "\"n_routed_experts\": %d, \"num_experts_per_tok\": %d, \"moe_intermediate_size\": %d, "
           "\"moe_shared_expert_intermediate_size\": %d, \"n_shared_experts\": 1, "
           "\"moe_latent_size\": %d, \"n_group\": %d, \"topk_group\": %d, "
           "\"norm_topk_prob\": true, \"routed_scaling_factor\": 2.5, "
           "\"tie_word_embeddings\": false, \"mlp_hidden_act\": \"relu2\"}",
           N_H, N_V, N_PATTERN, N_NH, N_NKV, N_D, N_I, N_HM, N_P, N_G, N_N, N_K, limit, N_E, N_TOPK,
           N_IM, N_ISH, N_LAT, N_NGROUP, N_TOPKG);
}

void tiny_build(tiny_kind kind, tt_list *l, char *cfg, size_t cap) {
  tt_init(l, 0x1234u + (uint64_t)kind);
  if (kind == TINY_NEMOTRON_H) build_nemotron(l, cfg, cap);
  else build_qwen(kind, l, cfg, cap);
}

int tiny_write(const char *dir, const tt_list *l, const char *cfg) {
  char p[TPATH_MAX];
  if (write_text(tpath(p, dir, "config.json"), cfg) != 0) return -1;
  return tt_write(l, tpath(p, dir, "model.safetensors"));
}

/* === reference forward (double) =============================================================== */

static const float *W(const tt_list *l, const char *pre, int layer, const char *suffix) {
  char n[200];
  if (layer >= 0) nm(n, pre, layer, suffix);
  else snprintf(n, sizeof n, "%s%s", pre, suffix);
  return tt_get(l, n);
}

/* y[r] = sum_c W[r][c] x[c] */
static void mv(const float *Wm, const double *x, double *y, int rows, int cols) {
  for (int r = 0; r < rows; r++) {
    double s = 0;
    for (int c = 0; c < cols; c++) s += (double)Wm[(size_t)r * cols + c] * x[c];
    y[r] = s;
  }
}

static void rms(const double *x, const float *w, int plus_one, double eps, double *y, int n) {
  double ss = 0;
  for (int i = 0; i < n; i++) ss += x[i] * x[i];
  double inv = 1.0 / sqrt(ss / n + eps);
  for (int i = 0; i < n; i++) y[i] = x[i] * inv * (w ? (plus_one ? 1.0 + w[i] : w[i]) : 1.0);
}

static double silu(double x) { return x / (1.0 + exp(-x)); }
static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }
static double softplus(double x) { return x > 20.0 ? x : log1p(exp(x)); }

/* conv state [C][K], oldest first; push x and return silu(conv + bias) into y */
static void conv_step(double *state, const double *x, const float *w, const float *bias, int C,
                      int K, double *y) {
  for (int c = 0; c < C; c++) {
    for (int k = 0; k < K - 1; k++) state[c * K + k] = state[c * K + k + 1];
    state[c * K + K - 1] = x[c];
    double s = bias ? bias[c] : 0.0;
    for (int k = 0; k < K; k++) s += (double)w[c * K + k] * state[c * K + k];
    y[c] = silu(s);
  }
}

typedef struct {
  double *conv;   /* [C][K] */
  double *S;      /* GDN [Hv][dk][dv]; Mamba [Hm][P][N] */
  double *kc, *vc; /* [ctx][nKV][D] */
} ref_layer;

#define REF_CTX 512

/* attention over positions 0..pos; q [nH][D] */
static void ref_attend(const double *q, const double *kc, const double *vc, int pos, int nH,
                       int nKV, int D, double *o) {
  double sc[REF_CTX];
  for (int h = 0; h < nH; h++) {
    int kh = h / (nH / nKV);
    double mx = -1e300;
    for (int j = 0; j <= pos; j++) {
      double s = 0;
      for (int i = 0; i < D; i++) s += q[h * D + i] * kc[(j * nKV + kh) * D + i];
      sc[j] = s / sqrt((double)D);
      if (sc[j] > mx) mx = sc[j];
    }
    double sum = 0;
    for (int j = 0; j <= pos; j++) {
      sc[j] = exp(sc[j] - mx);
      sum += sc[j];
    }
    for (int i = 0; i < D; i++) {
      double a = 0;
      for (int j = 0; j <= pos; j++) a += sc[j] / sum * vc[(j * nKV + kh) * D + i];
      o[h * D + i] = a;
    }
  }
}

static void ref_rope(double *x, int rd, int pos) {
  int half = rd / 2;
  for (int i = 0; i < half; i++) {
    double ang = pos * pow(Q_THETA, -2.0 * i / rd);
    double a = x[i], b = x[i + half];
    x[i] = a * cos(ang) - b * sin(ang);
    x[i + half] = b * cos(ang) + a * sin(ang);
  }
}

static void ref_qwen_gdn(tiny_kind kind, const tt_list *l, const char *P, int i, ref_layer *st,
                         const double *u, double *out) {
  enum { KD = Q_HK * Q_DK, VD = Q_HV * Q_DV, CD = 2 * KD + VD, R = Q_HV / Q_HK };
  double qkv[CD], z[VD], b[Q_HV], a[Q_HV], y[CD], o[VD];
  if (kind == TINY_QWEN3_NEXT) {
    /* interleaved: per key head g: q (dk) | k (dk) | v (r dv) | z (r dv); ba: b (r) | a (r) */
    enum { per = 2 * Q_DK + 2 * R * Q_DV };
    double full[Q_HK * per], ba[2 * Q_HV];
    mv(W(l, P, i, "linear_attn.in_proj_qkvz.weight"), u, full, Q_HK * per, Q_H);
    mv(W(l, P, i, "linear_attn.in_proj_ba.weight"), u, ba, 2 * Q_HV, Q_H);
    for (int g = 0; g < Q_HK; g++) {
      for (int j = 0; j < Q_DK; j++) {
        qkv[g * Q_DK + j] = full[g * per + j];
        qkv[KD + g * Q_DK + j] = full[g * per + Q_DK + j];
      }
      for (int hv = 0; hv < R; hv++) {
        int h = g * R + hv;
        for (int j = 0; j < Q_DV; j++) {
          qkv[2 * KD + h * Q_DV + j] = full[g * per + 2 * Q_DK + hv * Q_DV + j];
          z[h * Q_DV + j] = full[g * per + 2 * Q_DK + R * Q_DV + hv * Q_DV + j];
        }
        b[h] = ba[g * 2 * R + hv];
        a[h] = ba[g * 2 * R + R + hv];
      }
    }
  } else {
    mv(W(l, P, i, "linear_attn.in_proj_qkv.weight"), u, qkv, CD, Q_H);
    mv(W(l, P, i, "linear_attn.in_proj_z.weight"), u, z, VD, Q_H);
    mv(W(l, P, i, "linear_attn.in_proj_b.weight"), u, b, Q_HV, Q_H);
    mv(W(l, P, i, "linear_attn.in_proj_a.weight"), u, a, Q_HV, Q_H);
  }
  conv_step(st->conv, qkv, W(l, P, i, "linear_attn.conv1d.weight"), NULL, CD, Q_K, y);
  double *q = y, *k = y + KD, *v = y + 2 * KD;
  for (int g = 0; g < Q_HK; g++) {
    double sq = 0, sk = 0;
    for (int j = 0; j < Q_DK; j++) {
      sq += q[g * Q_DK + j] * q[g * Q_DK + j];
      sk += k[g * Q_DK + j] * k[g * Q_DK + j];
    }
    for (int j = 0; j < Q_DK; j++) {
      q[g * Q_DK + j] = q[g * Q_DK + j] / sqrt(sq + 1e-6) / sqrt((double)Q_DK);
      k[g * Q_DK + j] = k[g * Q_DK + j] / sqrt(sk + 1e-6);
    }
  }
  const float *A_log = W(l, P, i, "linear_attn.A_log");
  const float *dt_bias = W(l, P, i, "linear_attn.dt_bias");
  const float *nw = W(l, P, i, "linear_attn.norm.weight");
  for (int h = 0; h < Q_HV; h++) {
    int g = h / R;
    double beta = sigm(b[h]);
    double gg = -exp((double)A_log[h]) * softplus(a[h] + dt_bias[h]);
    double *S = st->S + h * Q_DK * Q_DV; /* HF layout [dk][dv] */
    for (int x = 0; x < Q_DK * Q_DV; x++) S[x] *= exp(gg);
    for (int j = 0; j < Q_DV; j++) {
      double m = 0;
      for (int x = 0; x < Q_DK; x++) m += S[x * Q_DV + j] * k[g * Q_DK + x];
      double delta = (v[h * Q_DV + j] - m) * beta;
      for (int x = 0; x < Q_DK; x++) S[x * Q_DV + j] += k[g * Q_DK + x] * delta;
    }
    for (int j = 0; j < Q_DV; j++) {
      double s = 0;
      for (int x = 0; x < Q_DK; x++) s += S[x * Q_DV + j] * q[g * Q_DK + x];
      o[h * Q_DV + j] = s;
    }
    double t[Q_DV];
    rms(o + h * Q_DV, nw, 0, Q_EPS, t, Q_DV);
    for (int j = 0; j < Q_DV; j++) o[h * Q_DV + j] = t[j] * silu(z[h * Q_DV + j]);
  }
  mv(W(l, P, i, "linear_attn.out_proj.weight"), o, out, Q_H, VD);
}

static void ref_qwen_attn(const tt_list *l, const char *P, int i, ref_layer *st, int pos,
                          const double *u, double *out) {
  double qg[2 * Q_NH * Q_D], q[Q_NH * Q_D], gate[Q_NH * Q_D], o[Q_NH * Q_D];
  double *kc = st->kc + pos * Q_NKV * Q_D, *vc = st->vc + pos * Q_NKV * Q_D;
  mv(W(l, P, i, "self_attn.q_proj.weight"), u, qg, 2 * Q_NH * Q_D, Q_H);
  mv(W(l, P, i, "self_attn.k_proj.weight"), u, kc, Q_NKV * Q_D, Q_H);
  mv(W(l, P, i, "self_attn.v_proj.weight"), u, vc, Q_NKV * Q_D, Q_H);
  const float *qn = W(l, P, i, "self_attn.q_norm.weight");
  const float *kn = W(l, P, i, "self_attn.k_norm.weight");
  for (int h = 0; h < Q_NH; h++) { /* view [nH, 2D], chunk(2, -1) */
    rms(qg + h * 2 * Q_D, qn, 1, Q_EPS, q + h * Q_D, Q_D);
    for (int j = 0; j < Q_D; j++) gate[h * Q_D + j] = qg[h * 2 * Q_D + Q_D + j];
    ref_rope(q + h * Q_D, Q_RD, pos);
  }
  for (int h = 0; h < Q_NKV; h++) {
    double t[Q_D];
    rms(kc + h * Q_D, kn, 1, Q_EPS, t, Q_D);
    memcpy(kc + h * Q_D, t, sizeof t);
    ref_rope(kc + h * Q_D, Q_RD, pos);
  }
  ref_attend(q, st->kc, st->vc, pos, Q_NH, Q_NKV, Q_D, o);
  for (int j = 0; j < Q_NH * Q_D; j++) o[j] *= sigm(gate[j]);
  mv(W(l, P, i, "self_attn.o_proj.weight"), o, out, Q_H, Q_NH * Q_D);
}

static void ref_swiglu(const float *wg, const float *wu, const float *wd, int I, int Din,
                       int Dout, const double *x, double *out) {
  double g[256], up[256];
  mv(wg, x, g, I, Din);
  mv(wu, x, up, I, Din);
  for (int j = 0; j < I; j++) up[j] = silu(g[j]) * up[j];
  mv(wd, up, out, Dout, I);
}

static void ref_relu2(const float *wu, const float *wd, int I, int Din, int Dout,
                      const double *x, double *out) {
  double up[256];
  mv(wu, x, up, I, Din);
  for (int j = 0; j < I; j++) up[j] = up[j] > 0 ? up[j] * up[j] : 0.0;
  mv(wd, up, out, Dout, I);
}

static void ref_qwen_moe(tiny_kind kind, const tt_list *l, const char *P, int i, const double *u,
                         double *out) {
  double r[Q_E], p[Q_E], sum = 0, mx = -1e300;
  mv(W(l, P, i, "mlp.gate.weight"), u, r, Q_E, Q_H);
  for (int e = 0; e < Q_E; e++) mx = r[e] > mx ? r[e] : mx;
  for (int e = 0; e < Q_E; e++) sum += (p[e] = exp(r[e] - mx));
  for (int e = 0; e < Q_E; e++) p[e] /= sum;
  int sel[Q_E] = {0};
  double wsum = 0;
  for (int j = 0; j < Q_TOPK; j++) {
    int best = -1;
    for (int e = 0; e < Q_E; e++)
      if (!sel[e] && (best < 0 || p[e] > p[best])) best = e;
    sel[best] = 1;
    wsum += p[best];
  }
  for (int x = 0; x < Q_H; x++) out[x] = 0;
  for (int e = 0; e < Q_E; e++) {
    if (!sel[e]) continue;
    double eo[Q_H];
    char s1[100], s2[100], s3[100];
    if (kind == TINY_QWEN35_MOE) {
      const float *gu = W(l, P, i, "mlp.experts.gate_up_proj") + (size_t)e * 2 * Q_IM * Q_H;
      const float *dn = W(l, P, i, "mlp.experts.down_proj") + (size_t)e * Q_H * Q_IM;
      ref_swiglu(gu, gu + Q_IM * Q_H, dn, Q_IM, Q_H, Q_H, u, eo);
    } else {
      snprintf(s1, sizeof s1, "mlp.experts.%d.gate_proj.weight", e);
      snprintf(s2, sizeof s2, "mlp.experts.%d.up_proj.weight", e);
      snprintf(s3, sizeof s3, "mlp.experts.%d.down_proj.weight", e);
      ref_swiglu(W(l, P, i, s1), W(l, P, i, s2), W(l, P, i, s3), Q_IM, Q_H, Q_H, u, eo);
    }
    for (int x = 0; x < Q_H; x++) out[x] += p[e] / wsum * eo[x];
  }
  double sh[Q_H], sg = 0;
  ref_swiglu(W(l, P, i, "mlp.shared_expert.gate_proj.weight"),
             W(l, P, i, "mlp.shared_expert.up_proj.weight"),
             W(l, P, i, "mlp.shared_expert.down_proj.weight"), Q_ISH, Q_H, Q_H, u, sh);
  mv(W(l, P, i, "mlp.shared_expert_gate.weight"), u, &sg, 1, Q_H);
  for (int x = 0; x < Q_H; x++) out[x] += sigm(sg) * sh[x];
}

static void ref_qwen(tiny_kind kind, const tt_list *l, const int32_t *tok, int n,
                     double *logits) {
  const char *P = qprefix(kind);
  enum { CD = 2 * Q_HK * Q_DK + Q_HV * Q_DV };
  ref_layer st[Q_L];
  for (int i = 0; i < Q_L; i++) {
    st[i].conv = calloc(CD * Q_K, sizeof(double));
    st[i].S = calloc(Q_HV * Q_DK * Q_DV, sizeof(double));
    st[i].kc = calloc((size_t)REF_CTX * Q_NKV * Q_D, sizeof(double));
    st[i].vc = calloc((size_t)REF_CTX * Q_NKV * Q_D, sizeof(double));
  }
  cr_assert(n <= REF_CTX);
  const float *emb = W(l, P, -1, "embed_tokens.weight");
  const float *head = kind == TINY_QWEN35_TEXT ? emb : tt_get(l, "lm_head.weight");
  for (int t = 0; t < n; t++) {
    double h[Q_H], u[Q_H], y[Q_H];
    for (int x = 0; x < Q_H; x++) h[x] = emb[tok[t] * Q_H + x];
    for (int i = 0; i < Q_L; i++) {
      rms(h, W(l, P, i, "input_layernorm.weight"), 1, Q_EPS, u, Q_H);
      if (q_is_attn[i]) ref_qwen_attn(l, P, i, &st[i], t, u, y);
      else ref_qwen_gdn(kind, l, P, i, &st[i], u, y);
      for (int x = 0; x < Q_H; x++) h[x] += y[x];
      rms(h, W(l, P, i, "post_attention_layernorm.weight"), 1, Q_EPS, u, Q_H);
      if (q_moe(kind, i)) ref_qwen_moe(kind, l, P, i, u, y);
      else
        ref_swiglu(W(l, P, i, "mlp.gate_proj.weight"), W(l, P, i, "mlp.up_proj.weight"),
                   W(l, P, i, "mlp.down_proj.weight"), Q_I, Q_H, Q_H, u, y);
      for (int x = 0; x < Q_H; x++) h[x] += y[x];
    }
    rms(h, W(l, P, -1, "norm.weight"), 1, Q_EPS, u, Q_H);
    mv(head, u, logits + (size_t)t * Q_V, Q_V, Q_H);
  }
  for (int i = 0; i < Q_L; i++) {
    free(st[i].conv);
    free(st[i].S);
    free(st[i].kc);
    free(st[i].vc);
  }
}

/* Position pos of layer i; the limit clamps dt at position 0 only (the reference's prompt; its
 * single-token decode does not clamp: docs/contract.md, "Mamba-2 dt limit"). */
static void ref_mamba(const tt_list *l, int i, ref_layer *st, int pos, const double *u,
                      double *out) {
  const char *P = "backbone.";
  enum { DI = N_HM * N_P, CD = DI + 2 * N_G * N_N, ROWS = DI + CD + N_HM };
  double zx[ROWS], c[CD], y[DI], t[DI];
  mv(W(l, P, i, "mixer.in_proj.weight"), u, zx, ROWS, N_H);
  conv_step(st->conv, zx + DI, W(l, P, i, "mixer.conv1d.weight"),
            W(l, P, i, "mixer.conv1d.bias"), CD, N_K, c);
  const double *x = c, *B = c + DI, *C = c + DI + N_G * N_N, *dt = zx + DI + CD;
  const float *A_log = W(l, P, i, "mixer.A_log"), *Dp = W(l, P, i, "mixer.D");
  const float *dtb = W(l, P, i, "mixer.dt_bias");
  for (int h = 0; h < N_HM; h++) {
    int g = h / (N_HM / N_G);
    double delta = softplus(dt[h] + dtb[h]);
    if (pos == 0 || dt_every_step) delta = fmin(fmax(delta, dt_lo), dt_hi); /* time_step_limit */
    double dA = exp(delta * -exp((double)A_log[h]));
    for (int p = 0; p < N_P; p++) {
      double *S = st->S + (h * N_P + p) * N_N; /* [Hm][P][N] */
      double acc = 0;
      for (int s = 0; s < N_N; s++) {
        S[s] = S[s] * dA + delta * B[g * N_N + s] * x[h * N_P + p];
        acc += S[s] * C[g * N_N + s];
      }
      y[h * N_P + p] = acc + Dp[h] * x[h * N_P + p];
    }
  }
  for (int j = 0; j < DI; j++) y[j] *= silu(zx[j]);
  const float *nw = W(l, P, i, "mixer.norm.weight");
  const int gs = DI / N_G;
  for (int g = 0; g < N_G; g++) rms(y + g * gs, nw + g * gs, 0, N_EPS, t + g * gs, gs);
  mv(W(l, P, i, "mixer.out_proj.weight"), t, out, N_H, DI);
}

static void ref_nattn(const tt_list *l, int i, ref_layer *st, int pos, const double *u,
                      double *out) {
  const char *P = "backbone.";
  double q[N_NH * N_D], o[N_NH * N_D];
  mv(W(l, P, i, "mixer.q_proj.weight"), u, q, N_NH * N_D, N_H);
  mv(W(l, P, i, "mixer.k_proj.weight"), u, st->kc + pos * N_NKV * N_D, N_NKV * N_D, N_H);
  mv(W(l, P, i, "mixer.v_proj.weight"), u, st->vc + pos * N_NKV * N_D, N_NKV * N_D, N_H);
  ref_attend(q, st->kc, st->vc, pos, N_NH, N_NKV, N_D, o);
  mv(W(l, P, i, "mixer.o_proj.weight"), o, out, N_H, N_NH * N_D);
}

static void ref_nmoe(const tt_list *l, int i, const double *u, double *out) {
  const char *P = "backbone.";
  double r[N_E], s[N_E], sc[N_E];
  mv(W(l, P, i, "mixer.gate.weight"), u, r, N_E, N_H);
  const float *bias = W(l, P, i, "mixer.gate.e_score_correction_bias");
  for (int e = 0; e < N_E; e++) {
    s[e] = sigm(r[e]);
    sc[e] = s[e] + bias[e];
  }
  /* group score = sum of the top-2 sc of the group; keep the best topk_group groups */
  const int per = N_E / N_NGROUP;
  double gsc[N_NGROUP];
  for (int g = 0; g < N_NGROUP; g++) {
    double a = -1e300, b = -1e300;
    for (int e = g * per; e < (g + 1) * per; e++) {
      if (sc[e] > a) {
        b = a;
        a = sc[e];
      } else if (sc[e] > b) {
        b = sc[e];
      }
    }
    gsc[g] = a + b;
  }
  int keepg[N_NGROUP] = {0};
  for (int j = 0; j < N_TOPKG; j++) {
    int best = -1;
    for (int g = 0; g < N_NGROUP; g++)
      if (!keepg[g] && (best < 0 || gsc[g] > gsc[best])) best = g;
    keepg[best] = 1;
  }
  int sel[N_E] = {0};
  double wsum = 0;
  for (int j = 0; j < N_TOPK; j++) {
    int best = -1;
    for (int e = 0; e < N_E; e++)
      if (keepg[e / per] && !sel[e] && (best < 0 || sc[e] > sc[best])) best = e;
    sel[best] = 1;
    wsum += s[best];
  }
  double xl[N_LAT], acc[N_LAT] = {0};
  mv(W(l, P, i, "mixer.fc1_latent_proj.weight"), u, xl, N_LAT, N_H);
  for (int e = 0; e < N_E; e++) {
    if (!sel[e]) continue;
    char s1[100], s2[100];
    snprintf(s1, sizeof s1, "mixer.experts.%d.up_proj.weight", e);
    snprintf(s2, sizeof s2, "mixer.experts.%d.down_proj.weight", e);
    double eo[N_LAT];
    ref_relu2(W(l, P, i, s1), W(l, P, i, s2), N_IM, N_LAT, N_LAT, xl, eo);
    double w = s[e] / (wsum + 1e-20) * N_SCALE;
    for (int x = 0; x < N_LAT; x++) acc[x] += w * eo[x];
  }
  mv(W(l, P, i, "mixer.fc2_latent_proj.weight"), acc, out, N_H, N_LAT);
  double sh[N_H];
  ref_relu2(W(l, P, i, "mixer.shared_experts.up_proj.weight"),
            W(l, P, i, "mixer.shared_experts.down_proj.weight"), N_ISH, N_H, N_H, u, sh);
  for (int x = 0; x < N_H; x++) out[x] += sh[x];
}

static void ref_nemotron(const tt_list *l, const int32_t *tok, int n, double *logits) {
  const char *P = "backbone.";
  enum { CD = N_HM * N_P + 2 * N_G * N_N };
  ref_layer st[N_L];
  for (int i = 0; i < N_L; i++) {
    st[i].conv = calloc(CD * N_K, sizeof(double));
    st[i].S = calloc(N_HM * N_P * N_N, sizeof(double));
    st[i].kc = calloc((size_t)REF_CTX * N_NKV * N_D, sizeof(double));
    st[i].vc = calloc((size_t)REF_CTX * N_NKV * N_D, sizeof(double));
  }
  cr_assert(n <= REF_CTX);
  const float *emb = tt_get(l, "backbone.embeddings.weight");
  for (int t = 0; t < n; t++) {
    double h[N_H], u[N_H], y[N_H];
    for (int x = 0; x < N_H; x++) h[x] = emb[tok[t] * N_H + x];
    for (int i = 0; i < N_L; i++) {
      rms(h, W(l, P, i, "norm.weight"), 0, N_EPS, u, N_H);
      switch (N_PATTERN[i]) {
        case 'M': ref_mamba(l, i, &st[i], t, u, y); break;
        case '*': ref_nattn(l, i, &st[i], t, u, y); break;
        case '-':
          ref_relu2(W(l, P, i, "mixer.up_proj.weight"), W(l, P, i, "mixer.down_proj.weight"), N_I,
                    N_H, N_H, u, y);
          break;
        default: ref_nmoe(l, i, u, y); break;
      }
      for (int x = 0; x < N_H; x++) h[x] += y[x];
    }
    rms(h, tt_get(l, "backbone.norm_f.weight"), 0, N_EPS, u, N_H);
    mv(tt_get(l, "lm_head.weight"), u, logits + (size_t)t * N_V, N_V, N_H);
  }
  for (int i = 0; i < N_L; i++) {
    free(st[i].conv);
    free(st[i].S);
    free(st[i].kc);
    free(st[i].vc);
  }
}

void tiny_reference(tiny_kind kind, const tt_list *l, const int32_t *tok, int n,
                    double *logits) {
  if (kind == TINY_NEMOTRON_H) ref_nemotron(l, tok, n, logits);
  else ref_qwen(kind, l, tok, n, logits);
}
