/* The real vocabulary of a checkpoint (model_config.h, model_real_vocab): released checkpoints pad
 * the embedding and lm_head to a round vocab_size (Qwen: 151936 rows for 151669 ids); the rows
 * past the tokenizer's ids are never a token and SPEC section 5 leaves them out of the softmax.
 * The tokenizer.json next to config.json says how many ids are real. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "src/io/atomic_file.h"
#include "src/io/errbuf.h"
#include "src/io/json_strict.h"
#include "src/io/status.h"
#include "src/model/model_config.h"

/* Tokenizer files of released models are up to ~35 MB (Gemma); 256 MiB bounds a hostile one. */
#define VOCAB_FILE_MAX (INT64_C(1) << 28)
/* Ids are below 2^31 in every tokenizer (the tokens library's id type is u32, ours int32). */
#define VOCAB_ID_MAX ((double)INT32_MAX)

/* The largest id seen so far and the field that holds it (for the too-large message). */
typedef struct {
  int64_t max_id; /* -1: none yet */
  char where[160];
} vocab_max;

/* 1 when id is a new largest (the caller then names its field in v->where). */
static int new_max(vocab_max *v, int64_t id) {
  if (id <= v->max_id) return 0;
  v->max_id = id;
  return 1;
}

/* An id: an integral JSON number in [0, 2^31). */
static int as_id(const cJSON *j, int64_t *id) {
  if (!cJSON_IsNumber(j)) return -1;
  double d = j->valuedouble;
  if (!(d >= 0.0 && d <= VOCAB_ID_MAX) || d != (double)(int64_t)d) return -1;
  *id = (int64_t)d;
  return 0;
}

/* model.vocab: an object token -> id (BPE, WordPiece, WordLevel) or Unigram's list of
 * [piece, score] pairs, whose ids are their positions. */
static int scan_vocab(const char *path, const cJSON *vocab, vocab_max *v, char *err,
                      size_t errlen) {
  if (cJSON_IsObject(vocab)) {
    const cJSON *e;
    cJSON_ArrayForEach(e, vocab) {
      int64_t id;
      if (as_id(e, &id) != 0)
        return rssm_fail(err, errlen, "%s: field model.vocab[\"%.60s\"]: not an id (expected an "
                         "integer in [0, 2^31))", path, e->string), RSSM_ERR_INPUT;
      if (new_max(v, id)) snprintf(v->where, sizeof v->where, "model.vocab[\"%.60s\"]", e->string);
    }
    return RSSM_OK;
  }
  if (cJSON_IsArray(vocab)) {
    int n = cJSON_GetArraySize(vocab);
    for (int i = 0; i < n; i++) {
      const cJSON *e = cJSON_GetArrayItem(vocab, i);
      if (!cJSON_IsArray(e) || !cJSON_IsString(cJSON_GetArrayItem(e, 0)))
        return rssm_fail(err, errlen, "%s: field model.vocab[%d]: not a [piece, score] pair "
                         "(expected Unigram's list)", path, i), RSSM_ERR_INPUT;
    }
    if (n > 0 && new_max(v, (int64_t)n - 1))
      snprintf(v->where, sizeof v->where, "model.vocab[%d]", n - 1);
    return RSSM_OK;
  }
  return rssm_fail(err, errlen, "%s: field model.vocab: missing or neither an object nor a list "
                   "(expected the tokenizer's vocabulary)", path), RSSM_ERR_INPUT;
}

/* added_tokens: absent, null or a list of objects with an id (they may reuse vocabulary ids). */
static int scan_added(const char *path, const cJSON *added, vocab_max *v, char *err,
                      size_t errlen) {
  if (!added || cJSON_IsNull(added)) return RSSM_OK;
  if (!cJSON_IsArray(added))
    return rssm_fail(err, errlen, "%s: field added_tokens: not a list (expected a list of token "
                     "objects)", path), RSSM_ERR_INPUT;
  int n = cJSON_GetArraySize(added);
  for (int i = 0; i < n; i++) {
    const cJSON *a = cJSON_GetArrayItem(added, i);
    int64_t id;
    if (!cJSON_IsObject(a) || as_id(cJSON_GetObjectItemCaseSensitive(a, "id"), &id) != 0)
      return rssm_fail(err, errlen, "%s: field added_tokens[%d].id: missing or not an id "
                       "(expected an integer in [0, 2^31))", path, i), RSSM_ERR_INPUT;
    if (new_max(v, id)) snprintf(v->where, sizeof v->where, "added_tokens[%d].id", i);
  }
  return RSSM_OK;
}

/* The parsed tokenizer's vocabulary size into *real, checked against rows. */
static int vocab_of(const char *path, const cJSON *root, int64_t rows, int64_t *real, char *err,
                    size_t errlen) {
  vocab_max v = {-1, ""};
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
  if (!cJSON_IsObject(model))
    return rssm_fail(err, errlen, "%s: field model: missing or not an object (expected the "
                     "tokenizer's model with its vocab)", path), RSSM_ERR_INPUT;
  int rc = scan_vocab(path, cJSON_GetObjectItemCaseSensitive(model, "vocab"), &v, err, errlen);
  if (rc == RSSM_OK)
    rc = scan_added(path, cJSON_GetObjectItemCaseSensitive(root, "added_tokens"), &v, err, errlen);
  if (rc != RSSM_OK) return rc;
  if (v.max_id < 0)
    return rssm_fail(err, errlen, "%s: field model.vocab: empty and no added_tokens (expected at "
                     "least one id)", path), RSSM_ERR_INPUT;
  /* 64-bit: max_id < 2^31 and rows < 2^40, so neither the sum nor the comparison can wrap */
  const int64_t n = v.max_id + 1;
  if (n > rows)
    return rssm_fail(err, errlen, "%s: field %s: id %" PRId64 " gives a vocabulary of %" PRId64
                     " ids, more than config.json's vocab_size %" PRId64 " (expected at most "
                     "vocab_size: tokenizer and checkpoint disagree)", path, v.where, v.max_id, n,
                     rows), RSSM_ERR_INPUT;
  *real = n;
  return RSSM_OK;
}

int model_real_vocab(const char *dir, int64_t rows, int64_t *real, char *err, size_t errlen) {
  *real = rows;
  char path[4200];
  int pn = snprintf(path, sizeof path, "%s/tokenizer.json", dir);
  if (pn < 0 || (size_t)pn >= sizeof path)
    return rssm_fail(err, errlen, "%s: path too long", dir), RSSM_ERR_INPUT;
  struct stat sb;
  if (stat(path, &sb) != 0 && errno == ENOENT) return RSSM_OK; /* no tokenizer: no padding */
  unsigned char *text = NULL;
  int64_t len = 0;
  int rc = read_whole_file(path, VOCAB_FILE_MAX, &text, &len, err, errlen);
  if (rc != RSSM_OK) return rc;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithOpts((const char *)text, &end, 1);
  char why[512];
  if (json_strict_check(root, (const char *)text, (size_t)len, why, sizeof why)) {
    rssm_fail(err, errlen, "%s: %s", path, why);
    rc = RSSM_ERR_INPUT;
  } else if (!cJSON_IsObject(root)) {
    long at = (end && !root) ? (long)(end - (const char *)text) : 0;
    rssm_fail(err, errlen, "%s: not a JSON object (parse error near byte %ld; expected a "
              "Hugging Face tokenizer.json)", path, at);
    rc = RSSM_ERR_INPUT;
  } else {
    rc = vocab_of(path, root, rows, real, err, errlen);
  }
  cJSON_Delete(root);
  free(text);
  if (rc != RSSM_OK) *real = rows;
  return rc;
}
