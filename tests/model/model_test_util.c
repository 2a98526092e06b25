/* Test helpers for tiny checkpoints (see model_test_util.h). */
#include "tests/model/model_test_util.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/cli/cli_test_util.h"

void tt_init(tt_list *l, uint64_t seed) {
  memset(l, 0, sizeof *l);
  l->rng = seed;
}

void tt_free(tt_list *l) {
  for (int i = 0; i < l->n; i++) free(l->t[i].data);
  free(l->t);
  memset(l, 0, sizeof *l);
}

float *tt_add(tt_list *l, const char *name, int ndim, int64_t d0, int64_t d1, int64_t d2,
              float scale, float offset) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 64;
    l->t = realloc(l->t, (size_t)l->cap * sizeof *l->t);
    cr_assert(l->t != NULL);
  }
  tt_tensor *t = &l->t[l->n++];
  memset(t, 0, sizeof *t);
  snprintf(t->name, sizeof t->name, "%s", name);
  t->ndim = ndim;
  int64_t d[3] = {d0, d1, d2};
  t->n = 1;
  for (int i = 0; i < ndim; i++) {
    t->shape[i] = d[i];
    t->n *= d[i];
  }
  t->data = malloc((size_t)(t->n ? t->n : 1) * sizeof(float));
  cr_assert(t->data != NULL);
  for (int64_t i = 0; i < t->n; i++) {
    double r = (double)(rng_next(&l->rng) >> 11) / 9007199254740992.0; /* [0, 1) */
    t->data[i] = offset + scale * (float)(2.0 * r - 1.0);
  }
  return t->data;
}

const tt_tensor *tt_find(const tt_list *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->t[i].name, name) == 0) return &l->t[i];
  return NULL;
}

const float *tt_get(const tt_list *l, const char *name) {
  const tt_tensor *t = tt_find(l, name);
  cr_assert(t != NULL, "test tensor %s missing", name);
  return t->data;
}

void tt_remove(tt_list *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->t[i].name, name) == 0) {
      free(l->t[i].data);
      memmove(&l->t[i], &l->t[i + 1], (size_t)(l->n - i - 1) * sizeof *l->t);
      l->n--;
      return;
    }
}

static uint16_t to_bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u); /* RNE (finite inputs) */
  return (uint16_t)(u >> 16);
}

void tt_set_bf16(tt_list *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->t[i].name, name) == 0) {
      tt_tensor *t = &l->t[i];
      t->bf16 = 1;
      for (int64_t j = 0; j < t->n; j++) {
        uint32_t u = (uint32_t)to_bf16(t->data[j]) << 16;
        memcpy(&t->data[j], &u, 4);
      }
    }
}

cJSON *tt_header(const tt_list *l) {
  cJSON *h = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(h, "__metadata__");
  cJSON_AddStringToObject(meta, "format", "pt");
  int64_t off = 0;
  for (int i = 0; i < l->n; i++) {
    const tt_tensor *t = &l->t[i];
    cJSON *e = cJSON_AddObjectToObject(h, t->name);
    cJSON_AddStringToObject(e, "dtype", t->bf16 ? "BF16" : "F32");
    cJSON *s = cJSON_AddArrayToObject(e, "shape");
    for (int d = 0; d < t->ndim; d++) cJSON_AddItemToArray(s, cJSON_CreateNumber((double)t->shape[d]));
    int64_t bytes = t->n * (t->bf16 ? 2 : 4);
    cJSON *o = cJSON_AddArrayToObject(e, "data_offsets");
    cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
    cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + bytes)));
    off += bytes;
  }
  return h;
}

int tt_write_with_header(const tt_list *l, const cJSON *hdr, const char *path) {
  char *text = cJSON_PrintUnformatted(hdr);
  if (!text) return -1;
  size_t hl = strlen(text);
  FILE *f = fopen(path, "wb");
  if (!f) {
    free(text);
    return -1;
  }
  unsigned char len8[8];
  for (int i = 0; i < 8; i++) len8[i] = (unsigned char)(((uint64_t)hl >> (8 * i)) & 0xff);
  int ok = fwrite(len8, 1, 8, f) == 8 && fwrite(text, 1, hl, f) == hl;
  free(text);
  for (int i = 0; ok && i < l->n; i++) {
    const tt_tensor *t = &l->t[i];
    if (t->bf16) {
      for (int64_t j = 0; ok && j < t->n; j++) {
        uint32_t u;
        memcpy(&u, &t->data[j], 4);
        uint16_t b = (uint16_t)(u >> 16);
        ok = fwrite(&b, 2, 1, f) == 1;
      }
    } else if (t->n) {
      ok = fwrite(t->data, 4, (size_t)t->n, f) == (size_t)t->n;
    }
  }
  if (fclose(f) != 0) ok = 0;
  return ok ? 0 : -1;
}

void tt_shard_name(char *buf, size_t len, int i, int n) {
  snprintf(buf, len, "model-%05d-of-%05d.safetensors", i, n);
}

int tt_write_sharded(const tt_list *l, const char *dir, int nshards) {
  if (nshards < 1 || nshards > l->n) return -1;
  cJSON *idx = cJSON_CreateObject();
  cJSON *meta = cJSON_AddObjectToObject(idx, "metadata");
  cJSON *wm = cJSON_AddObjectToObject(idx, "weight_map");
  int64_t total = 0;
  int rc = 0;
  for (int s = 0; s < nshards && rc == 0; s++) {
    const int lo = s * l->n / nshards, hi = (s + 1) * l->n / nshards;
    tt_list part = *l; /* a view of tensors [lo, hi) */
    part.t = l->t + lo;
    part.n = hi - lo;
    char name[64], path[4096];
    tt_shard_name(name, sizeof name, s + 1, nshards);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    rc = tt_write(&part, path);
    for (int i = lo; i < hi; i++) {
      cJSON_AddStringToObject(wm, l->t[i].name, name);
      total += l->t[i].n * (l->t[i].bf16 ? 2 : 4);
    }
  }
  cJSON_AddNumberToObject(meta, "total_size", (double)total);
  char *text = cJSON_Print(idx);
  cJSON_Delete(idx);
  if (!text) return -1;
  char path[4096];
  snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
  if (rc == 0) rc = write_text(path, text);
  free(text);
  return rc;
}

int tt_write(const tt_list *l, const char *path) {
  cJSON *h = tt_header(l);
  int rc = tt_write_with_header(l, h, path);
  cJSON_Delete(h);
  return rc;
}

int write_text(const char *path, const char *text) {
  return write_bytes(path, text, strlen(text));
}

int write_tokens_i32(const char *path, const int32_t *ids, int64_t n) {
  char dict[128];
  snprintf(dict, sizeof dict, "{'descr': '<i4', 'fortran_order': False, 'shape': (%lld,), }",
           (long long)n);
  return write_npy_raw(path, 1, dict, ids, (size_t)n * 4);
}

double rel_err(const float *a, const double *b, int64_t n) {
  double mx = 0.0, md = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    if (!(d <= md)) md = d; /* NaN propagates as a failure */
    if (fabs(b[i]) > mx) mx = fabs(b[i]);
  }
  return mx > 0 ? md / mx : md;
}
