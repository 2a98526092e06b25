/* config.json parsing (see model_config.h). */
#include "src/io/errbuf.h"
#include "src/io/json_strict.h"
#include "src/model/model_config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *block_kind_name(block_kind k) {
  static const char *names[] = {"gdn", "gated_attention", "mamba2", "attention",
                                "swiglu_mlp", "relu2_mlp", "qwen_moe", "nemotron_moe"};
  return ((unsigned)k < sizeof names / sizeof names[0]) ? names[k] : "?";
}

void model_config_free(model_config *c) {
  if (!c) return;
  free(c->blocks);
  c->blocks = NULL;
  c->nblocks = 0;
}

/* Python's json module writes float('inf') as the bare word Infinity, which is not JSON and which
 * cJSON refuses. Outside strings, replace Infinity by 1e999 (strtod overflows it to inf) and NaN
 * by {"__float__":"NaN"}, which json_number reads as NaN and the getters refuse (a null would
 * have passed for an absent key and taken the default). Newer transformers may also write
 * {"__float__": "Infinity"}; see json_number. */
#define NAN_TAG "{\"__float__\":\"NaN\"}"
char *model_json_fix_nonfinite(const char *text, size_t len) {
  /* "Infinity" (8) -> "1e999" (5); "NaN" (3) -> NAN_TAG (19): at most len * 19/3 + 1 bytes */
  size_t cap = len + 6 * len + 2;
  char *out = malloc(cap);
  if (!out) return NULL;
  size_t o = 0;
  int in_str = 0;
  for (size_t i = 0; i < len;) {
    char ch = text[i];
    if (in_str) {
      out[o++] = ch;
      i++;
      if (ch == '\\' && i < len) out[o++] = text[i++];
      else if (ch == '"') in_str = 0;
      continue;
    }
    if (ch == '"') {
      in_str = 1;
      out[o++] = ch;
      i++;
    } else if (len - i >= 8 && memcmp(text + i, "Infinity", 8) == 0) {
      memcpy(out + o, "1e999", 5);
      o += 5;
      i += 8;
    } else if (len - i >= 3 && memcmp(text + i, "NaN", 3) == 0) {
      memcpy(out + o, NAN_TAG, strlen(NAN_TAG));
      o += strlen(NAN_TAG);
      i += 3;
    } else {
      out[o++] = ch;
      i++;
    }
  }
  out[o] = '\0';
  return out;
}

/* --- typed getters: absent -> default; present with the wrong type -> error ------------------- */

typedef struct {
  const char *path;
  char *err;
  size_t errlen;
  int failed;
} ctx;

static const cJSON *item(const cJSON *obj, const char *key) {
  return obj ? cJSON_GetObjectItemCaseSensitive(obj, key) : NULL;
}

/* A number, or {"__float__": "Infinity"}-style tagged float. Returns 0 and sets *out, else -1. */
static int json_number(const cJSON *v, double *out) {
  if (cJSON_IsNumber(v)) {
    *out = v->valuedouble;
    return 0;
  }
  if (cJSON_IsObject(v)) {
    const cJSON *t = item(v, "__float__");
    if (cJSON_IsString(t)) {
      if (strcmp(t->valuestring, "Infinity") == 0) *out = HUGE_VAL;
      else if (strcmp(t->valuestring, "-Infinity") == 0) *out = -HUGE_VAL;
      else if (strcmp(t->valuestring, "NaN") == 0) *out = NAN;
      else return -1;
      return 0;
    }
  }
  return -1;
}

static int64_t get_int(ctx *x, const cJSON *obj, const char *key, int64_t def, int required,
                       int64_t lo, int64_t hi) {
  const cJSON *v = item(obj, key);
  if (!v || cJSON_IsNull(v)) {
    if (required && !x->failed) {
      rssm_fail(x->err, x->errlen, "%s: field %s missing (expected an integer)", x->path, key);
      x->failed = 1;
    }
    return def;
  }
  double d = cJSON_IsNumber(v) ? v->valuedouble : 0.0;
  if (!cJSON_IsNumber(v) || d != floor(d) || d < (double)lo || d > (double)hi) {
    if (!x->failed) {
      if (cJSON_IsNumber(v))
        rssm_fail(x->err, x->errlen, "%s: field %s = %g (expected an integer in [%lld, %lld])",
                  x->path, key, v->valuedouble, (long long)lo, (long long)hi);
      else
        rssm_fail(x->err, x->errlen, "%s: field %s is %s (expected an integer)", x->path, key,
                  cJSON_IsObject(v) ? "not finite" : "not a number");
    }
    x->failed = 1;
    return def;
  }
  return (int64_t)d;
}

static double get_num(ctx *x, const cJSON *obj, const char *key, double def, int required) {
  const cJSON *v = item(obj, key);
  if (!v || cJSON_IsNull(v)) {
    if (required && !x->failed) {
      rssm_fail(x->err, x->errlen, "%s: field %s missing (expected a number)", x->path, key);
      x->failed = 1;
    }
    return def;
  }
  double d;
  if (json_number(v, &d) != 0) {
    if (!x->failed) rssm_fail(x->err, x->errlen, "%s: field %s is not a number", x->path, key);
    x->failed = 1;
    return def;
  }
  if (!isfinite(d)) {
    if (!x->failed)
      rssm_fail(x->err, x->errlen, "%s: field %s = %g (expected a finite number)", x->path, key, d);
    x->failed = 1;
    return def;
  }
  return d;
}

static int get_bool(ctx *x, const cJSON *obj, const char *key, int def) {
  const cJSON *v = item(obj, key);
  if (!v || cJSON_IsNull(v)) return def;
  if (!cJSON_IsBool(v)) {
    if (!x->failed) rssm_fail(x->err, x->errlen, "%s: field %s is not true/false", x->path, key);
    x->failed = 1;
    return def;
  }
  return cJSON_IsTrue(v) ? 1 : 0;
}

/* First key present among aliases (NULL-terminated), or NULL. */
static const char *first_key(const cJSON *obj, const char *const *keys) {
  for (; *keys; keys++)
    if (item(obj, *keys) && !cJSON_IsNull(item(obj, *keys))) return *keys;
  return NULL;
}

/* A string key that, when present, must equal `want` (activations the forward hard-codes). */
static void expect_str(ctx *x, const cJSON *obj, const char *key, const char *want) {
  const cJSON *v = item(obj, key);
  if (!v || cJSON_IsNull(v) || x->failed) return;
  if (!cJSON_IsString(v) || strcmp(v->valuestring, want) != 0) {
    rssm_fail(x->err, x->errlen, "%s: field %s = %s (expected \"%s\")", x->path, key,
              cJSON_IsString(v) ? v->valuestring : "(not a string)", want);
    x->failed = 1;
  }
}

#define LIM (INT64_C(1) << 40) /* any real size is far below; keeps products in 64 bits */

static int add_block(model_config *c, int kind, int layer) {
  model_block *nb = realloc(c->blocks, (size_t)(c->nblocks + 1) * sizeof *nb);
  if (!nb) return -1;
  c->blocks = nb;
  c->blocks[c->nblocks].kind = kind;
  c->blocks[c->nblocks].layer = layer;
  c->nblocks++;
  return 0;
}

/* Layer-type names of every transformers version (old and new). */
static int qwen_mixer_kind(const char *t) {
  /* not "mamba": a Mamba layer is no GDN layer, and running one as the other is the silent
   * misreading strict parsing exists to prevent */
  if (strcmp(t, "linear_attention") == 0 || strcmp(t, "linear") == 0) return BK_GDN;
  if (strcmp(t, "full_attention") == 0 || strcmp(t, "full") == 0 ||
      strcmp(t, "attention") == 0)
    return BK_QATTN;
  return -1;
}

static int nemotron_kind(const char *t) {
  if (strcmp(t, "M") == 0 || strcmp(t, "mamba") == 0 || strcmp(t, "linear_attention") == 0)
    return BK_MAMBA2;
  if (strcmp(t, "*") == 0 || strcmp(t, "attention") == 0 || strcmp(t, "full_attention") == 0)
    return BK_NATTN;
  if (strcmp(t, "-") == 0 || strcmp(t, "mlp") == 0) return BK_RELU2;
  if (strcmp(t, "E") == 0 || strcmp(t, "moe") == 0) return BK_NMOE;
  return -1;
}

static int parse_qwen(ctx *x, const cJSON *root, const cJSON *tc, model_config *c) {
  c->H = get_int(x, tc, "hidden_size", 0, 1, 1, LIM);
  c->V = get_int(x, tc, "vocab_size", 0, 1, 1, LIM);
  c->nlayers = get_int(x, tc, "num_hidden_layers", 0, 1, 1, 1 << 16);
  c->eps = get_num(x, tc, "rms_norm_eps", 1e-6, 0);
  c->norm_plus_one = 1;
  /* released qwen3_5 keeps tie_word_embeddings at the top level; text configs inside */
  int tie = get_bool(x, tc, "tie_word_embeddings", 0);
  if (c->text_wrapped && item(root, "tie_word_embeddings"))
    tie = get_bool(x, root, "tie_word_embeddings", tie);
  c->tie_embeddings = tie;
  c->gdn_hk = get_int(x, tc, "linear_num_key_heads", 16, 0, 1, LIM);
  c->gdn_hv = get_int(x, tc, "linear_num_value_heads", 32, 0, 1, LIM);
  c->gdn_dk = get_int(x, tc, "linear_key_head_dim", 128, 0, 1, LIM);
  c->gdn_dv = get_int(x, tc, "linear_value_head_dim", 128, 0, 1, LIM);
  c->gdn_kernel = get_int(x, tc, "linear_conv_kernel_dim", 4, 0, 1, 64);
  /* absent keys take transformers' defaults (Qwen3.5 and Qwen3-Next config classes) */
  c->n_heads = get_int(x, tc, "num_attention_heads", 16, 0, 1, LIM);
  c->n_kv_heads = get_int(x, tc, "num_key_value_heads", c->family == MF_QWEN3_NEXT ? 2 : 4, 0,
                          1, LIM);
  c->head_dim = get_int(x, tc, "head_dim", 256, 0, 1, LIM);
  const cJSON *rp = item(tc, "rope_parameters");
  if (!rp) rp = item(tc, "rope_scaling");
  double theta = get_num(x, tc, "rope_theta", 10000.0, 0);
  double partial = get_num(x, tc, "partial_rotary_factor", 0.25, 0);
  if (cJSON_IsObject(rp)) {
    theta = get_num(x, rp, "rope_theta", theta, 0);
    partial = get_num(x, rp, "partial_rotary_factor", partial, 0);
    const cJSON *rt = item(rp, "rope_type");
    if (cJSON_IsString(rt) && strcmp(rt->valuestring, "default") != 0 && !x->failed) {
      rssm_fail(x->err, x->errlen, "%s: rope_parameters.rope_type = '%s' (expected 'default')",
                x->path, rt->valuestring);
      x->failed = 1;
    }
  }
  c->rope_theta = theta;
  if (!(partial > 0.0 && partial <= 1.0) && !x->failed) {
    rssm_fail(x->err, x->errlen, "%s: partial_rotary_factor = %g (expected in (0, 1])", x->path,
              partial);
    x->failed = 1;
  }
  /* HF: int(head_dim * partial_rotary_factor); only for a factor in range (an infinite one,
   * refused above, must not reach the conversion: found by fuzz_model_config) */
  c->rotary_dim = partial > 0.0 && partial <= 1.0 ? (int64_t)((double)c->head_dim * partial) : 0;
  if (c->rotary_dim % 2 != 0 && !x->failed) {
    rssm_fail(x->err, x->errlen,
              "%s: rotary dim %lld = head_dim * partial_rotary_factor is odd "
              "(expected even)",
              x->path, (long long)c->rotary_dim);
    x->failed = 1;
  }
  if (!(theta > 0.0) && !x->failed) {
    rssm_fail(x->err, x->errlen, "%s: rope_theta = %g (expected > 0)", x->path, theta);
    x->failed = 1;
  }
  c->inter = get_int(x, tc, "intermediate_size", 0, 0, 0, LIM);
  expect_str(x, tc, "hidden_act", "silu"); /* the MLP and the GDN conv activation */
  c->n_experts = get_int(x, tc, "num_experts", 0, 0, 0, 1 << 20);
  c->topk = get_int(x, tc, "num_experts_per_tok", 0, 0, 0, 1 << 20);
  c->moe_inter = get_int(x, tc, "moe_intermediate_size", 0, 0, 0, LIM);
  c->shared_inter = get_int(x, tc, "shared_expert_intermediate_size", 0, 0, 0, LIM);
  int is_moe_type = strstr(c->model_type, "moe") != NULL;
  /* Qwen3.5-MoE always renormalises (no norm_topk_prob key); Qwen3-Next only if asked */
  c->norm_topk = c->family == MF_QWEN3_NEXT ? get_bool(x, tc, "norm_topk_prob", 1) : 1;
  c->routed_scaling = 1.0;
  int64_t sparse_step = get_int(x, tc, "decoder_sparse_step", 1, 0, 1, 1 << 16);
  if (x->failed) return RSSM_ERR_INPUT;
  if (c->gdn_hv % c->gdn_hk != 0) {
    rssm_fail(x->err, x->errlen,
              "%s: linear_num_value_heads %lld is not a multiple of "
              "linear_num_key_heads %lld",
              x->path, (long long)c->gdn_hv, (long long)c->gdn_hk);
    return RSSM_ERR_INPUT;
  }
  if (c->n_heads % c->n_kv_heads != 0) {
    rssm_fail(x->err, x->errlen,
              "%s: num_attention_heads %lld is not a multiple of "
              "num_key_value_heads %lld",
              x->path, (long long)c->n_heads, (long long)c->n_kv_heads);
    return RSSM_ERR_INPUT;
  }

  /* layer types: the list, else every full_attention_interval-th layer is attention */
  const cJSON *lt = item(tc, "layer_types");
  int64_t interval = get_int(x, tc, "full_attention_interval", 4, 0, 1, 1 << 16);
  if (x->failed) return RSSM_ERR_INPUT;
  if (lt && !cJSON_IsNull(lt)) {
    if (!cJSON_IsArray(lt) || cJSON_GetArraySize(lt) != c->nlayers) {
      rssm_fail(x->err, x->errlen,
                "%s: layer_types has %d entries (expected num_hidden_layers = "
                "%lld)",
                x->path, cJSON_IsArray(lt) ? cJSON_GetArraySize(lt) : -1, (long long)c->nlayers);
      return RSSM_ERR_INPUT;
    }
  }
  /* mlp_only_layers (Qwen3-Next) */
  const cJSON *mol = item(tc, "mlp_only_layers");
  for (int64_t i = 0; i < c->nlayers; i++) {
    int mixer;
    if (lt && cJSON_IsArray(lt)) {
      const cJSON *e = cJSON_GetArrayItem(lt, (int)i);
      mixer = cJSON_IsString(e) ? qwen_mixer_kind(e->valuestring) : -1;
      if (mixer < 0) {
        rssm_fail(x->err, x->errlen,
                  "%s: layer_types[%lld] = %s (expected linear_attention or "
                  "full_attention)",
                  x->path, (long long)i, cJSON_IsString(e) ? e->valuestring : "(not a string)");
        return RSSM_ERR_INPUT;
      }
    } else {
      mixer = ((i + 1) % interval) ? BK_GDN : BK_QATTN;
    }
    int mlp_only = 0;
    if (cJSON_IsArray(mol))
      for (const cJSON *e = mol->child; e; e = e->next)
        if (cJSON_IsNumber(e) && e->valuedouble == (double)i) mlp_only = 1;
    int moe;
    if (c->family == MF_QWEN3_NEXT)
      moe = !mlp_only && c->n_experts > 0 && (i + 1) % sparse_step == 0;
    else
      moe = is_moe_type;
    if (add_block(c, mixer, (int)i) || add_block(c, moe ? BK_QMOE : BK_SWIGLU, (int)i)) {
      rssm_fail(x->err, x->errlen, "%s: out of memory", x->path);
      return RSSM_ERR_IO;
    }
  }
  return RSSM_OK;
}

static int parse_nemotron(ctx *x, const cJSON *root, model_config *c) {
  c->H = get_int(x, root, "hidden_size", 0, 1, 1, LIM);
  c->V = get_int(x, root, "vocab_size", 0, 1, 1, LIM);
  static const char *const eps_keys[] = {"layer_norm_epsilon", "rms_norm_eps", NULL};
  const char *ek = first_key(root, eps_keys);
  c->eps = ek ? get_num(x, root, ek, 1e-5, 0) : 1e-5;
  c->norm_plus_one = 0;
  c->tie_embeddings = get_bool(x, root, "tie_word_embeddings", 0);
  /* absent keys take NemotronHConfig's defaults */
  c->n_heads = get_int(x, root, "num_attention_heads", 32, 0, 1, LIM);
  c->n_kv_heads = get_int(x, root, "num_key_value_heads", 8, 0, 1, LIM);
  static const char *const hd_keys[] = {"head_dim", "attention_head_dim", NULL};
  const char *hk = first_key(root, hd_keys);
  c->head_dim = hk ? get_int(x, root, hk, 128, 0, 1, LIM) : 128;
  c->inter = get_int(x, root, "intermediate_size", 0, 0, 0, LIM);
  c->m_heads = get_int(x, root, "mamba_num_heads", 128, 0, 1, LIM);
  c->m_head_dim = get_int(x, root, "mamba_head_dim", 64, 0, 1, LIM);
  static const char *const g_keys[] = {"n_groups", "mamba_n_groups", NULL};
  const char *gk = first_key(root, g_keys);
  c->m_groups = gk ? get_int(x, root, gk, 8, 0, 1, LIM) : 8;
  c->m_state = get_int(x, root, "ssm_state_size", 128, 0, 1, LIM);
  static const char *const k_keys[] = {"conv_kernel", "mamba_d_conv", NULL};
  const char *kk = first_key(root, k_keys);
  c->m_kernel = kk ? get_int(x, root, kk, 4, 0, 1, 64) : 4;
  static const char *const cb_keys[] = {"use_conv_bias", "mamba_conv_bias", NULL};
  const char *cbk = first_key(root, cb_keys);
  c->m_conv_bias = cbk ? get_bool(x, root, cbk, 1) : 1;
  expect_str(x, root, "mlp_hidden_act", "relu2");
  expect_str(x, root, "mamba_hidden_act", "silu");
  if (get_bool(x, root, "use_bias", 0) || get_bool(x, root, "mamba_proj_bias", 0) ||
      get_bool(x, root, "mlp_bias", 0) || get_bool(x, root, "attention_bias", 0)) {
    if (!x->failed)
      rssm_fail(x->err, x->errlen,
                "%s: use_bias/mamba_proj_bias/mlp_bias/attention_bias = true "
                "(expected false: projection biases are not supported)",
                x->path);
    x->failed = 1;
  }
  c->dt_limit_lo = 0.0;
  c->dt_limit_hi = HUGE_VAL;
  static const char *const lim_keys[] = {"time_step_limit", "mamba_dt_limit", NULL};
  const char *lk = first_key(root, lim_keys);
  if (lk) {
    const cJSON *l = item(root, lk);
    if (!cJSON_IsArray(l) || cJSON_GetArraySize(l) != 2 ||
        json_number(cJSON_GetArrayItem(l, 0), &c->dt_limit_lo) != 0 ||
        json_number(cJSON_GetArrayItem(l, 1), &c->dt_limit_hi) != 0 || isnan(c->dt_limit_lo) ||
        isnan(c->dt_limit_hi)) {
      if (!x->failed)
        rssm_fail(x->err, x->errlen, "%s: field %s is not a pair of numbers [lo, hi] (NaN refused)", x->path, lk);
      x->failed = 1;
    }
  }
  c->n_experts = get_int(x, root, "n_routed_experts", 0, 0, 0, 1 << 20);
  c->topk = get_int(x, root, "num_experts_per_tok", 0, 0, 0, 1 << 20);
  c->moe_inter = get_int(x, root, "moe_intermediate_size", 0, 0, 0, LIM);
  int64_t n_shared = get_int(x, root, "n_shared_experts", 1, 0, 0, 1 << 10);
  c->shared_inter =
      n_shared * get_int(x, root, "moe_shared_expert_intermediate_size", 0, 0, 0, LIM);
  c->latent = get_int(x, root, "moe_latent_size", 0, 0, 0, LIM);
  c->norm_topk = get_bool(x, root, "norm_topk_prob", 1);
  c->routed_scaling = get_num(x, root, "routed_scaling_factor", 1.0, 0);
  c->n_group = get_int(x, root, "n_group", 1, 0, 1, 1 << 20);
  c->topk_group = get_int(x, root, "topk_group", 1, 0, 1, 1 << 20);
  if (x->failed) return RSSM_ERR_INPUT;

  const cJSON *pat = item(root, "hybrid_override_pattern");
  const cJSON *lbt = item(root, "layers_block_type");
  if (!lbt || cJSON_IsNull(lbt)) lbt = item(root, "layer_types");
  if (lbt && cJSON_IsArray(lbt)) {
    int n = cJSON_GetArraySize(lbt);
    for (int i = 0; i < n; i++) {
      const cJSON *e = cJSON_GetArrayItem(lbt, i);
      int k = cJSON_IsString(e) ? nemotron_kind(e->valuestring) : -1;
      if (k < 0) {
        rssm_fail(x->err, x->errlen,
                  "%s: layers_block_type[%d] = %s (expected mamba/"
                  "linear_attention, attention/full_attention, mlp or moe)",
                  x->path, i, cJSON_IsString(e) ? e->valuestring : "(not a string)");
        return RSSM_ERR_INPUT;
      }
      if (add_block(c, k, i)) return RSSM_ERR_IO;
    }
  } else if (cJSON_IsString(pat)) {
    const char *p = pat->valuestring;
    for (int i = 0; p[i]; i++) {
      char one[2] = {p[i], 0};
      int k = nemotron_kind(one);
      if (k < 0) {
        rssm_fail(x->err, x->errlen,
                  "%s: hybrid_override_pattern[%d] = '%c' (expected M, *, - or "
                  "E)",
                  x->path, i, p[i]);
        return RSSM_ERR_INPUT;
      }
      if (add_block(c, k, i)) return RSSM_ERR_IO;
    }
  } else {
    rssm_fail(x->err, x->errlen,
              "%s: neither layers_block_type (a list) nor "
              "hybrid_override_pattern (a string) is present",
              x->path);
    return RSSM_ERR_INPUT;
  }
  c->nlayers = c->nblocks;
  if (c->nblocks == 0) {
    rssm_fail(x->err, x->errlen, "%s: the layer pattern is empty (expected at least one layer)",
              x->path);
    return RSSM_ERR_INPUT;
  }
  if (c->m_heads % c->m_groups != 0) {
    rssm_fail(x->err, x->errlen, "%s: mamba_num_heads %lld is not a multiple of n_groups %lld",
              x->path, (long long)c->m_heads, (long long)c->m_groups);
    return RSSM_ERR_INPUT;
  }
  if (c->n_heads % c->n_kv_heads != 0) {
    rssm_fail(x->err, x->errlen,
              "%s: num_attention_heads %lld is not a multiple of "
              "num_key_value_heads %lld",
              x->path, (long long)c->n_heads, (long long)c->n_kv_heads);
    return RSSM_ERR_INPUT;
  }
  if (c->n_experts > 0 && c->n_experts % c->n_group != 0) {
    rssm_fail(x->err, x->errlen, "%s: n_routed_experts %lld is not a multiple of n_group %lld",
              x->path, (long long)c->n_experts, (long long)c->n_group);
    return RSSM_ERR_INPUT;
  }
  return RSSM_OK;
}

int model_config_load(const char *dir, model_config *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  int n = snprintf(c->path, sizeof c->path, "%s/config.json", dir);
  if (n < 0 || (size_t)n >= sizeof c->path) {
    rssm_fail(err, errlen, "%s: path too long", dir);
    return RSSM_ERR_INPUT;
  }
  FILE *f = fopen(c->path, "rb");
  if (!f) {
    rssm_fail(err, errlen, "%s: cannot open (%s)", c->path, strerror(errno));
    return RSSM_ERR_INPUT;
  }
  char *text = NULL;
  size_t len = 0, cap = 0, got;
  char buf[65536];
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
    if (len + got > ((size_t)1 << 26)) {
      fclose(f);
      free(text);
      rssm_fail(err, errlen, "%s: larger than 64 MiB (expected a small JSON file)", c->path);
      return RSSM_ERR_INPUT;
    }
    if (len + got > cap) {
      cap = 2 * (len + got);
      char *nt = realloc(text, cap);
      if (!nt) {
        fclose(f);
        free(text);
        rssm_fail(err, errlen, "%s: out of memory", c->path);
        return RSSM_ERR_IO;
      }
      text = nt;
    }
    memcpy(text + len, buf, got);
    len += got;
  }
  int rerr = ferror(f);
  fclose(f);
  if (rerr) {
    free(text);
    rssm_fail(err, errlen, "%s: read failed", c->path);
    return RSSM_ERR_IO;
  }
  char *fixed = model_json_fix_nonfinite(text ? text : "", len);
  free(text);
  if (!fixed) {
    rssm_fail(err, errlen, "%s: out of memory", c->path);
    return RSSM_ERR_IO;
  }
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts(fixed, &end, 1);
  char why[512];
  if (json_strict_check(root, fixed, strlen(fixed), why, sizeof why)) {
    rssm_fail(err, errlen, "%s: %s", c->path, why);
    cJSON_Delete(root);
    free(fixed);
    return RSSM_ERR_INPUT;
  }
  if (!root || !cJSON_IsObject(root)) {
    long at = (end && !root) ? (long)(end - fixed) : 0;
    rssm_fail(err, errlen, "%s: not a JSON object (parse error near byte %ld)", c->path, at);
    cJSON_Delete(root);
    free(fixed);
    return RSSM_ERR_INPUT;
  }
  free(fixed);
  ctx x = {c->path, err, errlen, 0};
  const cJSON *mt = item(root, "model_type");
  int rc;
  if (!cJSON_IsString(mt)) {
    rssm_fail(err, errlen, "%s: field model_type missing or not a string", c->path);
    rc = RSSM_ERR_INPUT;
  } else {
    snprintf(c->model_type, sizeof c->model_type, "%s", mt->valuestring);
    const char *t = mt->valuestring;
    if (strcmp(t, "qwen3_5") == 0 || strcmp(t, "qwen3_5_moe") == 0) {
      c->family = MF_QWEN3_5;
      c->text_wrapped = 1;
      const cJSON *tc = item(root, "text_config");
      if (!cJSON_IsObject(tc)) {
        rssm_fail(err, errlen, "%s: model_type %s needs an object text_config", c->path, t);
        rc = RSSM_ERR_INPUT;
      } else {
        rc = parse_qwen(&x, root, tc, c);
      }
    } else if (strcmp(t, "qwen3_5_text") == 0 || strcmp(t, "qwen3_5_moe_text") == 0) {
      c->family = MF_QWEN3_5;
      rc = parse_qwen(&x, root, root, c);
    } else if (strcmp(t, "qwen3_next") == 0) {
      c->family = MF_QWEN3_NEXT;
      rc = parse_qwen(&x, root, root, c);
    } else if (strcmp(t, "nemotron_h") == 0) {
      c->family = MF_NEMOTRON_H;
      rc = parse_nemotron(&x, root, c);
    } else {
      rssm_fail(err, errlen,
                "%s: unknown model_type '%s' (expected qwen3_5, qwen3_5_moe, qwen3_5_text, "
                "qwen3_5_moe_text, qwen3_next or nemotron_h)",
                c->path, t);
      rc = RSSM_ERR_INPUT;
    }
  }
  if (rc == RSSM_OK && x.failed) rc = RSSM_ERR_INPUT;
  if (rc == RSSM_OK && !(c->eps > 0.0)) {
    rssm_fail(err, errlen, "%s: norm epsilon %g (expected > 0)", c->path, c->eps);
    rc = RSSM_ERR_INPUT;
  }
  cJSON_Delete(root);
  /* vocab_size counts the rows of embed and lm_head; the tokenizer says how many are real */
  c->V_rows = c->V;
  if (rc == RSSM_OK) rc = model_real_vocab(dir, c->V_rows, &c->V, err, errlen);
  if (rc != RSSM_OK) model_config_free(c);
  return rc;
}
