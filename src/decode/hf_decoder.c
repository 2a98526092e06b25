/* Decoder-interface backend for Hugging Face model directories (hf_decoder.h). */
#include "src/decode/hf_decoder.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "src/ssm/ssm_snapshot.h"
#include "src/io/status.h"
#include "src/model/model.h"
#include "src/model/safetensors.h"

typedef struct {
  model_state s;
  int pending; /* spec: drafts verified and not yet committed */
} hf_dec;

/* crc32 over n bytes, in chunks that fit zlib's uInt */
static uLong crc_bytes(uLong crc, const unsigned char *p, int64_t n) {
  while (n > 0) {
    uInt k = n > (int64_t)(1u << 30) ? (1u << 30) : (uInt)n;
    crc = crc32(crc, p, k);
    p += k;
    n -= k;
  }
  return crc;
}

/* crc32 of a whole file; a missing optional file leaves crc as it is */
static int crc_file(uLong *crc, const char *path, int optional, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (optional) return RSSM_OK;
    snprintf(err, errlen, "%s: cannot open", path);
    return RSSM_ERR_INPUT;
  }
  unsigned char buf[65536];
  size_t got;
  while ((got = fread(buf, 1, sizeof buf, f)) > 0) *crc = crc32(*crc, buf, (uInt)got);
  fclose(f);
  return RSSM_OK;
}

/* config.json, then tokenizer.json when there is one (its size is the real vocabulary, so it
 * changes the numbers: resume and merge must see a change), then the safetensors files. A
 * checkpoint without a tokenizer.json keeps the digest it had before the tokenizer counted. */
static int checksum(const char *dir, char *out, size_t outlen, char *err, size_t errlen) {
  uLong crc = crc32(0L, Z_NULL, 0);
  char path[4200];
  snprintf(path, sizeof path, "%s/config.json", dir);
  int rc = crc_file(&crc, path, 0, err, errlen);
  snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  if (rc == RSSM_OK) rc = crc_file(&crc, path, 1, err, errlen);
  if (rc != RSSM_OK) return rc;
  st_archive ar;
  rc = st_open_dir(dir, &ar, err, errlen);
  if (rc != RSSM_OK) return rc;
  for (int i = 0; i < ar.nfiles; i++) crc = crc_bytes(crc, ar.files[i].map, ar.files[i].size);
  st_close(&ar);
  snprintf(out, outlen, "crc32:%08lx", (unsigned long)crc);
  return RSSM_OK;
}

static int dec_step(rssm_decoder *d, int64_t token, float *logits, char *err, size_t errlen) {
  hf_dec *t = d->impl;
  if (t->s.cfg.strategy == SSM_SPEC) {
    snprintf(err, errlen, "model: step on a spec decoder (use verify and commit)");
    return RSSM_ERR_INPUT;
  }
  int rc = model_forward(&t->s, &token, 1, logits, err, errlen);
  if (rc == RSSM_OK && model_commit(&t->s, 1) != 0) {
    snprintf(err, errlen, "model: commit of one token refused");
    return RSSM_ERR_IO;
  }
  return rc;
}

static int dec_verify(rssm_decoder *d, const int64_t *tokens, int n, float *logits, char *err,
                      size_t errlen) {
  hf_dec *t = d->impl;
  if (t->s.cfg.strategy != SSM_SPEC || n != t->s.cfg.T || t->pending) {
    snprintf(err, errlen, "model: verify needs a spec decoder, n = T = %d, and the last round "
             "committed", t->s.cfg.T);
    return RSSM_ERR_INPUT;
  }
  int rc = model_forward(&t->s, tokens, n, logits, err, errlen);
  if (rc == RSSM_OK) t->pending = n;
  return rc;
}

static int dec_commit(rssm_decoder *d, int a, char *err, size_t errlen) {
  hf_dec *t = d->impl;
  if (!t->pending || a < 1 || a > t->pending) {
    snprintf(err, errlen, "model: commit(%d) without a verification of at least %d drafts", a, a);
    return RSSM_ERR_INPUT;
  }
  if (model_commit(&t->s, a) != 0) {
    snprintf(err, errlen, "model: the SSM engine refused commit(%d)", a);
    return RSSM_ERR_INPUT;
  }
  t->pending = 0;
  return RSSM_OK;
}

/* pending, the model part (variable: K/V up to pos), then each engine's snapshot */
static int64_t engines_bytes(const hf_dec *t) {
  int64_t n = 0;
  model_state *s = (model_state *)&t->s; /* model_state_ssm hands out a mutable pointer */
  for (int i = 0; i < model_state_ssm_count(s); i++) n += ssm_snapshot_bytes(model_state_ssm(s, i));
  return n;
}

static int64_t dec_state_bytes(const rssm_decoder *d) {
  const hf_dec *t = d->impl;
  return (int64_t)sizeof t->pending + model_state_bytes(&t->s) + engines_bytes(t);
}

static int dec_save(const rssm_decoder *d, void *buf, char *err, size_t errlen) {
  const hf_dec *t = d->impl;
  if (t->pending) {
    snprintf(err, errlen, "model: save between verify and commit (expected a committed state)");
    return RSSM_ERR_INPUT;
  }
  unsigned char *p = buf; /* [dec_state_bytes] */
  memcpy(p, &t->pending, sizeof t->pending);
  p += sizeof t->pending;
  model_state_save(&t->s, p);
  p += model_state_bytes(&t->s);
  model_state *s = (model_state *)&t->s;
  for (int i = 0; i < model_state_ssm_count(s); i++) {
    ssm_snapshot_save(model_state_ssm(s, i), p);
    p += ssm_snapshot_bytes(model_state_ssm(s, i));
  }
  return RSSM_OK;
}

static int dec_load(rssm_decoder *d, const void *buf, int64_t len, char *err, size_t errlen) {
  hf_dec *t = d->impl;
  const int64_t eng = engines_bytes(t);
  const int64_t head = (int64_t)sizeof t->pending;
  if (len < head + eng) {
    snprintf(err, errlen, "model: saved state of %" PRId64 " bytes (expected at least %" PRId64
             ")", len, head + eng);
    return RSSM_ERR_INPUT;
  }
  const unsigned char *p = buf; /* [len] */
  int pending;
  memcpy(&pending, p, sizeof pending);
  if (pending != 0) {
    snprintf(err, errlen, "model: saved state has %d uncommitted drafts (expected 0)", pending);
    return RSSM_ERR_INPUT;
  }
  p += head;
  int rc = model_state_load(&t->s, p, len - head - eng, err, errlen);
  if (rc != RSSM_OK) return rc;
  p += len - head - eng;
  for (int i = 0; i < model_state_ssm_count(&t->s); i++) {
    int64_t n = ssm_snapshot_bytes(model_state_ssm(&t->s, i));
    if (ssm_snapshot_load(model_state_ssm(&t->s, i), p, n) != 0) {
      snprintf(err, errlen, "model: saved SSM state of SSM layer %d does not fit this "
               "configuration", i);
      return RSSM_ERR_INPUT;
    }
    p += n;
  }
  t->pending = 0;
  return RSSM_OK;
}

static void dec_free(rssm_decoder *d) {
  if (!d) return;
  hf_dec *t = d->impl;
  if (t) model_state_free(&t->s);
  free(t);
  free(d);
}

static const rssm_decoder_ops hf_decoder_ops = {dec_step, dec_verify, dec_commit,
                                                dec_state_bytes, dec_save, dec_load, dec_free};

static int hf_open(const rssm_model *m, const rssm_decoder_params *p, rssm_decoder **out,
                   char *err, size_t errlen) {
  *out = NULL;
  hf_dec *t = calloc(1, sizeof *t);
  rssm_decoder *d = calloc(1, sizeof *d);
  if (!t || !d) {
    free(t);
    free(d);
    snprintf(err, errlen, "model: out of memory");
    return RSSM_ERR_IO;
  }
  int rc = model_state_build(&t->s, (const model *)m->impl, p->cfg, p->seed, p->sequence,
                             p->max_ctx, err, errlen);
  if (rc != RSSM_OK) {
    free(t);
    free(d);
    return rc;
  }
  d->ops = &hf_decoder_ops;
  d->vocab = ((const model *)m->impl)->cfg.V;
  d->T = p->cfg->strategy == SSM_SPEC ? p->cfg->T : 0;
  d->impl = t;
  *out = d;
  return RSSM_OK;
}

static void hf_close(rssm_model *m) {
  if (!m) return;
  model *w = m->impl;
  if (w) model_free(w);
  free(w);
  free(m);
}

/* model_forward_many over the decoders' states (n = 1 each), then commit(1) for each. */
#define STEP_MANY_STACK 64

static int hf_step_many(const rssm_model *m, rssm_decoder *const *d, int n,
                        const int64_t *tokens, float *const *logits, int *failed, char *err,
                        size_t errlen) {
  *failed = -1;
  if (n < 1) return RSSM_OK;
  model_state *stack[STEP_MANY_STACK];
  model_state **ss = n <= STEP_MANY_STACK ? stack : malloc((size_t)n * sizeof *ss);
  if (!ss) {
    snprintf(err, errlen, "model: out of memory");
    return RSSM_ERR_IO;
  }
  int rc = RSSM_OK;
  for (int i = 0; i < n && rc == RSSM_OK; i++) {
    hf_dec *t = d[i]->impl;
    ss[i] = &t->s;
    if (d[i]->ops != &hf_decoder_ops || t->s.m != (const model *)m->impl ||
        t->s.cfg.strategy == SSM_SPEC) {
      *failed = i;
      snprintf(err, errlen, "model: step_many needs non-spec decoders of this model");
      rc = RSSM_ERR_INPUT;
    }
  }
  if (rc == RSSM_OK) rc = model_forward_many(ss, n, tokens, 1, logits, failed, err, errlen);
  for (int i = 0; i < n && rc == RSSM_OK; i++)
    if (model_commit(ss[i], 1) != 0) {
      *failed = i;
      snprintf(err, errlen, "model: commit of one token refused");
      rc = RSSM_ERR_IO;
    }
  if (ss != stack) free(ss);
  return rc;
}

static void hf_set_threads(rssm_model *m, int threads) {
  (void)m; /* the model runtime's thread count is one setting for the process */
  model_set_threads(threads);
}

static const rssm_model_ops hf_model_ops = {hf_open, hf_close, hf_step_many, hf_set_threads};

int hf_model_open(const char *dir, rssm_model **out, char *err, size_t errlen) {
  *out = NULL;
  model *w = calloc(1, sizeof *w);
  rssm_model *m = calloc(1, sizeof *m);
  if (!w || !m) {
    free(w);
    free(m);
    snprintf(err, errlen, "model: out of memory");
    return RSSM_ERR_IO;
  }
  int rc = model_load(dir, w, err, errlen);
  if (rc == RSSM_OK) rc = checksum(dir, m->checksum, sizeof m->checksum, err, errlen);
  if (rc != RSSM_OK) {
    model_free(w);
    free(w);
    free(m);
    return rc;
  }
  model_warn_unused(w, stderr);
  m->ops = &hf_model_ops;
  m->vocab = w->cfg.V; /* the real vocabulary: the forward makes only these logits */
  m->vocab_rows = w->cfg.V_rows;
  m->impl = w;
  int nm = 0, ng = 0, na = 0, nf = 0;
  for (int i = 0; i < w->nblocks; i++) {
    int k = w->blocks[i].kind;
    if (k == BK_MAMBA2) nm++;
    else if (k == BK_GDN) ng++;
    else if (k == BK_QATTN || k == BK_NATTN) na++;
    else nf++;
  }
  m->gdn_layers = ng;
  char pad[64] = "";
  if (w->cfg.V_rows > w->cfg.V)
    snprintf(pad, sizeof pad, " (of %" PRId64 " output rows)", w->cfg.V_rows);
  snprintf(m->description, sizeof m->description,
           "%s (%s): H=%" PRId64 " V=%" PRId64 "%s, %" PRId64 " layers: %d GDN, %d Mamba-2, %d "
           "attention, %d MLP/MoE blocks; %.1fM parameters in fp32",
           dir, w->cfg.model_type, w->cfg.H, w->cfg.V, pad, w->cfg.nlayers, ng, nm, na, nf,
           (double)w->n_params / 1e6);
  *out = m;
  return RSSM_OK;
}

const model *hf_model_of(const rssm_model *m) {
  return m && m->ops == &hf_model_ops ? (const model *)m->impl : NULL;
}
