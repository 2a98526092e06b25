/* Test helpers: tiny random checkpoints written from C (safetensors + config.json + tokens), so
 * that the model tests need no Python. A tt_list holds named fp32 tensors (the values the
 * reference sees); each may be stored as F32 or BF16 (then its values are rounded to bf16 first,
 * so that the reference and the file agree). */
#ifndef RSSM_TESTS_MODEL_TEST_UTIL_H
#define RSSM_TESTS_MODEL_TEST_UTIL_H

#include <cjson/cJSON.h>
#include <stdint.h>

typedef struct {
  char name[160];
  int ndim;
  int64_t shape[4];   /* [ndim] */
  int64_t n;          /* elements */
  float *data;        /* [n] */
  int bf16;           /* stored as BF16 */
} tt_tensor;

typedef struct {
  int n, cap;
  tt_tensor *t;       /* [n] */
  uint64_t rng;
} tt_list;

void tt_init(tt_list *l, uint64_t seed);
void tt_free(tt_list *l);
/* Add a tensor of uniform values in [offset - scale, offset + scale]; returns its data. */
float *tt_add(tt_list *l, const char *name, int ndim, int64_t d0, int64_t d1, int64_t d2,
              float scale, float offset);
const tt_tensor *tt_find(const tt_list *l, const char *name);
/* Data of `name`; aborts the test (criterion assert) when missing. */
const float *tt_get(const tt_list *l, const char *name);
void tt_remove(tt_list *l, const char *name);
/* Store `name` as BF16 (rounds its values, RNE). */
void tt_set_bf16(tt_list *l, const char *name);

/* Header object {"name": {dtype, shape, data_offsets}} with the tensors packed in list order. */
cJSON *tt_header(const tt_list *l);
/* Write header (serialised compactly) + the tensors' bytes in list order. Returns 0 or -1. */
int tt_write_with_header(const tt_list *l, const cJSON *hdr, const char *path);
int tt_write(const tt_list *l, const char *path);

/* Sharded as transformers' save_pretrained writes it: the tensors in list order split into
 * nshards files DIR/model-0000i-of-0000n.safetensors and DIR/model.safetensors.index.json
 * ({"metadata": {"total_size"}, "weight_map"}). Returns 0 or -1. */
int tt_write_sharded(const tt_list *l, const char *dir, int nshards);
/* The name of shard i (1-based) of n: "model-0000i-of-0000n.safetensors". */
void tt_shard_name(char *buf, size_t len, int i, int n);

int write_text(const char *path, const char *text);
int write_tokens_i32(const char *path, const int32_t *ids, int64_t n);

/* Relative error max|a - b| / max|b| over n. */
double rel_err(const float *a, const double *b, int64_t n);

#endif
