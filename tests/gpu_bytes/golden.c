/* The CPU half of the committed GPU bytes (golden.h): the inputs and the CPU's results. */
#include "tests/gpu_bytes/golden.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "quant/format.h"
#include "quant/quant.h"
#include "src/io/errbuf.h"
#include "src/model_cuda/mc_ref.h"
#include "src/ssm/ssm_config.h"

const char *const golden_quant_formats[GOLDEN_NQUANT] = {
    "fp32",      "bf16",      "bf16/sr",     "fp16",     "fp16/sr",    "fp8",      "fp8/sr",
    "fp8_e5m2",  "fp8_e5m2/sr", "int8",      "int8/sr",  "nvfp4",      "nvfp4/sr", "mxfp8",
    "mxfp8/sr",  "mxfp4",     "mxfp4/sr",    "fp8@16",   "fp8@16/sr",  "int8@8",   "int8@8/sr",
    "nvfp4@8",   "nvfp4@8/sr", "mxfp4@8",    "mxfp4@8/sr"};

const char *const golden_ssm_configs[GOLDEN_NSSM] = {
    "conventional state=fp8/sr", "replay L=4 ckpt=nvfp4/sr", "replay L=4 hp=fp32 lp=nvfp4"};

int golden_add(golden_set *g, const char *name, const void *bytes, size_t n) {
  if (g->n == g->cap) {
    int cap = g->cap ? 2 * g->cap : 64;
    golden_item *it = realloc(g->items, (size_t)cap * sizeof *it);
    if (!it) return -1;
    g->items = it;
    g->cap = cap;
  }
  golden_item *it = &g->items[g->n];
  snprintf(it->name, sizeof it->name, "%s", name);
  it->bytes = malloc(n + 1);
  if (!it->bytes) return -1;
  memcpy(it->bytes, bytes, n);
  it->n = n;
  g->n++;
  return 0;
}

void golden_free(golden_set *g) {
  for (int i = 0; i < g->n; i++) free(g->items[i].bytes);
  free(g->items);
  g->items = NULL;
  g->n = g->cap = 0;
}

void golden_quant_name(const char *fmt, char *out, size_t cap) {
  size_t o = (size_t)snprintf(out, cap, "quant_");
  for (const char *p = fmt; *p && o + 4 < cap; p++) {
    if (*p == '/') out[o++] = '_';
    else if (*p == '@') o += (size_t)snprintf(out + o, cap - o, "_at");
    else out[o++] = *p;
  }
  out[o] = '\0';
}

/* splitmix64 of (salt, i): the generators' only source of bits */
static uint64_t mix(uint32_t salt, uint64_t i) {
  uint64_t z = i * 0x9e3779b97f4a7c15ULL + ((uint64_t)salt << 32) + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

float golden_uniform(uint32_t salt, uint64_t i, float scale) {
  return (float)(((double)(mix(salt, i) >> 11) * 0x1.0p-53 * 2.0 - 1.0) * scale);
}

void golden_quant_input(float *x, uint64_t *ids, uint32_t *events) {
  const int64_t n = (int64_t)GQ_NMAT * GQ_ROWS * GQ_COLS;
  for (int64_t i = 0; i < n; i++) {
    uint64_t r = mix(1, (uint64_t)i);
    float mant = 1.0f + (float)(r & 0xffff) * 0x1.0p-16f;
    int ex = (int)((r >> 16) % 40) - 30;
    x[i] = ((r >> 40) & 1 ? -mant : mant) * ldexpf(1.0f, ex);
  }
  x[17] = NAN;
  x[GQ_ROWS * GQ_COLS + 41] = -INFINITY;
  for (int m = 0; m < GQ_NMAT; m++) {
    ids[m] = qsr_matrix_id(2, (uint32_t)m, 9);
    events[m] = (uint32_t)m * 2654435761u;
  }
}

ssm_dims golden_ssm_dims(ssm_kind kind) { return (ssm_dims){kind, 2, 8, 16, 1}; }

void golden_ssm_step_inputs(ssm_kind kind, int t, float *alpha, float *beta, float *v, float *k,
                            float *q) {
  const ssm_dims d = golden_ssm_dims(kind);
  const uint64_t base = (uint64_t)t * 4096;
  for (int h = 0; h < d.H; h++) {
    alpha[h] = 0.9f + 0.09f * (0.5f + 0.5f * golden_uniform(10, base + (uint64_t)h, 1.0f));
    beta[h] = 0.5f + 0.5f * golden_uniform(11, base + (uint64_t)h, 0.9f);
  }
  for (int i = 0; i < d.H * d.dv; i++) v[i] = golden_uniform(12, base + (uint64_t)i, 1.0f);
  for (int g = 0; g < d.G; g++) {
    double nk = 0, nq = 0;
    for (int c = 0; c < d.dk; c++) {
      k[g * d.dk + c] = golden_uniform(13, base + (uint64_t)(g * d.dk + c), 1.0f);
      q[g * d.dk + c] = golden_uniform(14, base + (uint64_t)(g * d.dk + c), 1.0f);
      nk += (double)k[g * d.dk + c] * k[g * d.dk + c];
      nq += (double)q[g * d.dk + c] * q[g * d.dk + c];
    }
    if (kind == SSM_GDN) /* GDN's k and q are L2-normalised (q also times dk^-1/2) */
      for (int c = 0; c < d.dk; c++) {
        k[g * d.dk + c] = (float)(k[g * d.dk + c] / sqrt(nk));
        q[g * d.dk + c] = (float)(q[g * d.dk + c] / sqrt(nq) / sqrt((double)d.dk));
      }
  }
}

int golden_quant_format(int i, qformat *f, qlayout *L, char *name, size_t cap, size_t *blob_bytes,
                        char *err, size_t errlen) {
  if (qformat_parse(golden_quant_formats[i], f, err, errlen) != 0) return -1;
  if (qlayout_of(f, GQ_ROWS, GQ_COLS, L) != 0)
    return rssm_fail(err, errlen, "%s: no layout", golden_quant_formats[i]), -1;
  golden_quant_name(golden_quant_formats[i], name, cap);
  *blob_bytes = (size_t)(GQ_NMAT * L->bytes_per_matrix);
  return 0;
}

static int quant_items(golden_set *g, char *err, size_t errlen) {
  static float x[GQ_NMAT * GQ_ROWS * GQ_COLS];
  uint64_t ids[GQ_NMAT];
  uint32_t events[GQ_NMAT];
  golden_quant_input(x, ids, events);
  for (int i = 0; i < GOLDEN_NQUANT; i++) {
    qformat f;
    qlayout L;
    char name[64];
    size_t nb;
    if (golden_quant_format(i, &f, &L, name, sizeof name, &nb, err, errlen) != 0) return -1;
    unsigned char *blob = calloc(nb + 1, 1);
    if (!blob) return -1;
    qsr_params sr = {GOLDEN_SEED, ids, events, QSR_STREAM_HP};
    q_encode_cpu(&f, &L, GQ_NMAT, x, blob, &sr);
    int rc = golden_add(g, name, blob, nb);
    free(blob);
    if (rc) return -1;
  }
  return 0;
}

static int ssm_items(golden_set *g, char *err, size_t errlen) {
  for (int kind = 0; kind < 2; kind++) {
    ssm_kind kd = kind ? SSM_GDN : SSM_MAMBA2;
    ssm_dims d = golden_ssm_dims(kd);
    for (int c = 0; c < GOLDEN_NSSM; c++) {
      ssm_config cfg;
      if (ssm_config_parse(golden_ssm_configs[c], &cfg, err, errlen) != 0) return -1;
      ssm_ids ids = {GOLDEN_SEED, 3, 11};
      ssm_state st;
      if (ssm_state_build(&st, &cfg, &d, &ids, err, errlen) != 0) return -1;
      size_t hv = (size_t)(d.H * d.dv), mb = (size_t)(d.H * st.main.lay.bytes_per_matrix);
      size_t lb = cfg.split ? (size_t)(d.H * st.lp.lay.bytes_per_matrix) : 0;
      size_t nbytes = GS_STEPS * hv * sizeof(float) + mb + lb;
      unsigned char *out = malloc(nbytes);
      float alpha[2], beta[2], v[16], k[16], q[16];
      int rc = out ? 0 : -1;
      for (int t = 0; rc == 0 && t < GS_STEPS; t++) {
        golden_ssm_step_inputs(kd, t, alpha, beta, v, k, q);
        ssm_inputs in = {alpha, kd == SSM_GDN ? beta : NULL, v, k, q};
        rc = ssm_step(&st, &in, (float *)(out + (size_t)t * hv * sizeof(float)));
        if (rc) rssm_fail(err, errlen, "ssm_step refused step %d of %s", t, golden_ssm_configs[c]);
      }
      if (rc == 0) {
        memcpy(out + GS_STEPS * hv * sizeof(float), st.main.blob, mb);
        if (lb) memcpy(out + GS_STEPS * hv * sizeof(float) + mb, st.lp.blob, lb);
        char name[64];
        snprintf(name, sizeof name, "ssm_%s_%d", kind ? "gdn" : "mamba2", c);
        rc = golden_add(g, name, out, nbytes);
      }
      free(out);
      ssm_state_free(&st);
      if (rc) return -1;
    }
  }
  return 0;
}

void golden_mc_fill(golden_mc_inputs *in) {
  for (int i = 0; i < GM_R * GM_LD; i++) in->x[i] = golden_uniform(20, (uint64_t)i, 3.0f);
  for (int i = 0; i < GM_LD; i++) in->w[i] = golden_uniform(21, (uint64_t)i, 1.0f);
  for (int i = 0; i < GM_R * GM_CD; i++) in->cv[i] = golden_uniform(22, (uint64_t)i, 2.0f);
  for (int i = 0; i < GM_R * 2 * GM_HV; i++) in->ba[i] = golden_uniform(23, (uint64_t)i, 2.0f);
  for (int i = 0; i < GM_HV; i++) in->A_log[i] = golden_uniform(24, (uint64_t)i, 1.0f);
  for (int i = 0; i < GM_HV; i++) in->dt_bias[i] = golden_uniform(25, (uint64_t)i, 1.0f);
  for (int i = 0; i < GM_R * GM_LDQ; i++) in->qkv[i] = golden_uniform(26, (uint64_t)i, 2.0f);
  for (int i = 0; i < GM_D; i++) in->q_norm[i] = golden_uniform(27, (uint64_t)i, 0.5f);
  for (int i = 0; i < GM_D; i++) in->k_norm[i] = golden_uniform(28, (uint64_t)i, 0.5f);
  mc_ref_rope_tables(10000.0, GM_RD, GM_CTX, in->rope_cos, in->rope_sin);
  static const int pos[GM_R] = {0, 2, 5};
  memcpy(in->pos, pos, sizeof pos);
}

static int mc_items(golden_set *g) {
  static golden_mc_inputs in;
  golden_mc_fill(&in);
  static float y[GM_R * GM_LD];
  mc_ref_rmsnorm(in.x, y, GM_R, GM_NORM_GROUPS, GM_NORM_GS, GM_LD, in.w, 0, 1, 1e-6f);
  if (golden_add(g, "mc_rmsnorm_shared", y, sizeof y)) return -1;
  mc_ref_rmsnorm(in.x, y, GM_R, GM_NORM_GROUPS, GM_NORM_GS, GM_LD, in.w, 1, 0, 1e-5f);
  if (golden_add(g, "mc_rmsnorm_groups", y, sizeof y)) return -1;

  static float q[GM_R * GM_KD], k[GM_R * GM_KD], v[GM_R * GM_VD], al[GM_R * GM_HV], be[GM_R * GM_HV];
  mc_ref_gdn_prep(in.cv, in.ba, 2 * GM_HV, 0, GM_HV, in.A_log, in.dt_bias, q, k, v, al, be, GM_R,
                  GM_HK, GM_HV, GM_DK, GM_DV);
  if (golden_add(g, "mc_gdn_prep_q", q, sizeof q) || golden_add(g, "mc_gdn_prep_k", k, sizeof k) ||
      golden_add(g, "mc_gdn_prep_v", v, sizeof v))
    return -1;

  static float qo[GM_R * GM_QD], kc[GM_R * GM_CTX * GM_KVD], vc[GM_R * GM_CTX * GM_KVD];
  memset(kc, 0, sizeof kc);
  memset(vc, 0, sizeof vc);
  mc_ref_qk_prepare(in.qkv, GM_LDQ, 1, in.q_norm, in.k_norm, in.rope_cos, in.rope_sin, GM_RD,
                    1e-6f, in.pos, qo, kc, vc, GM_CTX, GM_R, GM_NH, GM_NKV, GM_D);
  if (golden_add(g, "mc_qk_prepare_q", qo, sizeof qo) ||
      golden_add(g, "mc_qk_prepare_k", kc, sizeof kc) ||
      golden_add(g, "mc_qk_prepare_v", vc, sizeof vc))
    return -1;
  return 0;
}

int golden_cpu(golden_set *g, char *err, size_t errlen) {
  if (quant_items(g, err, errlen) != 0 || ssm_items(g, err, errlen) != 0) return -1;
  if (mc_items(g) != 0) return rssm_fail(err, errlen, "out of memory"), -1;
  return 0;
}

int golden_write(const golden_set *g, const char *dir, char *err, size_t errlen) {
  if (mkdir(dir, 0755) != 0 && errno != EEXIST)
    return rssm_fail(err, errlen, "%s: cannot create the folder (%s)", dir, strerror(errno)), -1;
  char path[4096];
  snprintf(path, sizeof path, "%s/MANIFEST", dir);
  FILE *man = fopen(path, "w");
  if (!man) return rssm_fail(err, errlen, "%s: cannot write (%s)", path, strerror(errno)), -1;
  int rc = 0;
  for (int i = 0; rc == 0 && i < g->n; i++) {
    snprintf(path, sizeof path, "%s/%s.bin", dir, g->items[i].name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(g->items[i].bytes, 1, g->items[i].n, f) != g->items[i].n) rc = -1;
    if (f && fclose(f) != 0) rc = -1;
    if (rc) rssm_fail(err, errlen, "%s: cannot write (%s)", path, strerror(errno));
    fprintf(man, "%s %zu\n", g->items[i].name, g->items[i].n);
  }
  if (fclose(man) != 0 && rc == 0) rc = -1;
  return rc;
}
