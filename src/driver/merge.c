/* merge_shards (merge.h). */
#include "src/driver/merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/driver/run_identity.h"
#include "src/io/status.h"

static int same_run(const run_data *a, const run_data *b, const char **what) {
  /* by content, not by path: shards may run on machines that mount the data elsewhere */
  if (strcmp(a->model_checksum, b->model_checksum)) *what = "model_checksum";
  else if (strcmp(a->tokens_checksum, b->tokens_checksum)) *what = "tokens_checksum";
  else if (a->vocab != b->vocab || a->vocab_rows != b->vocab_rows) *what = "vocab";
  else if (a->seed != b->seed) *what = "seed";
  else if (a->N != b->N) *what = "steps";
  else if (a->sequences != b->sequences) *what = "sequences";
  else if (strcmp(a->reference, b->reference)) *what = "reference";
  else if (a->nconfig != b->nconfig) *what = "configs";
  else {
    for (int c = 0; c < a->nconfig; c++)
      if (strcmp(a->cfg[c].name, b->cfg[c].name) || strcmp(a->cfg[c].spec, b->cfg[c].spec)) {
        *what = "configs";
        return 0;
      }
    return 1;
  }
  return 0;
}

static int parse_shard(const char *s, int *i, int *n) {
  char tail;
  return sscanf(s, "%d/%d%c", i, n, &tail) == 2 && *n >= 1 && *i >= 0 && *i < *n ? 0 : -1;
}

int merge_shards(const run_data *shards, const char *const *paths, int n, run_data *out,
                 char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  int si, sn0 = 0;
  int *order = calloc((size_t)n + 1, sizeof(int));
  if (!order) {
    snprintf(err, errlen, "out of memory");
    return RSSM_ERR_IO;
  }
  for (int j = 0; j < n; j++) order[j] = -1;
  for (int j = 0; j < n; j++) {
    int sn;
    const char *what = NULL;
    if (parse_shard(shards[j].shard, &si, &sn) != 0) {
      snprintf(err, errlen, "%s: attribute shard '%s' (expected I/N)", paths[j], shards[j].shard);
      free(order);
      return RSSM_ERR_INPUT;
    }
    if (j == 0) sn0 = sn;
    if (sn != n || sn != sn0) {
      snprintf(err, errlen, "%s: shard %s of a run in %d shards, but %d files were given (expected "
               "all N shards once)", paths[j], shards[j].shard, sn, n);
      free(order);
      return RSSM_ERR_INPUT;
    }
    if (j > 0 && !same_run(&shards[0], &shards[j], &what)) {
      snprintf(err, errlen, "%s: attribute '%s' differs from %s's (expected shards of one run)",
               paths[j], what, paths[0]);
      free(order);
      return RSSM_ERR_INPUT;
    }
    if (order[si] >= 0) {
      snprintf(err, errlen, "%s: shard %s is also %s (expected each shard once)", paths[j],
               shards[j].shard, paths[order[si]]);
      free(order);
      return RSSM_ERR_INPUT;
    }
    order[si] = j;
  }
  int64_t row = 0;
  for (int i = 0; i < n; i++) {
    const run_data *s = &shards[order[i]];
    if (s->offset != row) {
      snprintf(err, errlen, "%s: sequence_offset %lld (expected %lld after the previous shard)",
               paths[order[i]], (long long)s->offset, (long long)row);
      free(order);
      return RSSM_ERR_INPUT;
    }
    row += s->K;
  }
  const run_data *a = &shards[order[0]];
  if (row != a->sequences) {
    snprintf(err, errlen, "the shards hold %lld sequences, the run has %lld", (long long)row,
             (long long)a->sequences);
    free(order);
    return RSSM_ERR_INPUT;
  }
  if (run_data_alloc(out, row, a->N, a->nconfig) != 0) {
    free(order);
    snprintf(err, errlen, "out of memory for %lld x %lld steps", (long long)row, (long long)a->N);
    return RSSM_ERR_IO;
  }
  memcpy(out->version, a->version, sizeof out->version);
  memcpy(out->commit, a->commit, sizeof out->commit);
  memcpy(out->model, a->model, sizeof out->model);
  memcpy(out->model_checksum, a->model_checksum, sizeof out->model_checksum);
  memcpy(out->tokens_path, a->tokens_path, sizeof out->tokens_path);
  memcpy(out->tokens_checksum, a->tokens_checksum, sizeof out->tokens_checksum);
  memcpy(out->tokenizer, a->tokenizer, sizeof out->tokenizer);
  memcpy(out->reference, a->reference, sizeof out->reference);
  out->experiment = strdup(a->experiment);
  out->seed = a->seed;
  out->vocab = a->vocab;
  out->vocab_rows = a->vocab_rows;
  out->sequences = a->sequences;
  out->offset = 0;
  snprintf(out->shard, sizeof out->shard, "0/1");
  for (int c = 0; c < a->nconfig; c++) {
    memcpy(out->cfg[c].name, a->cfg[c].name, sizeof out->cfg[c].name);
    memcpy(out->cfg[c].spec, a->cfg[c].spec, sizeof out->cfg[c].spec);
  }
  int64_t N = a->N;
  for (int i = 0; i < n; i++) {
    const run_data *s = &shards[order[i]];
    size_t r0 = (size_t)s->offset, kn = (size_t)(s->K * N);
    memcpy(out->tokens + r0 * (size_t)(N + 1), s->tokens, (size_t)(s->K * (N + 1)) * sizeof(int32_t));
    memcpy(out->window_start + r0, s->window_start, (size_t)s->K * sizeof(int64_t));
    memcpy(out->steps_written + r0, s->steps_written, (size_t)s->K * sizeof(int64_t));
    memcpy(out->ref_nll + r0 * (size_t)N, s->ref_nll, kn * sizeof(float));
    for (int c = 0; c < a->nconfig; c++) {
      run_cfg_data *o = &out->cfg[c];
      const run_cfg_data *x = &s->cfg[c];
      memcpy(o->kl + r0 * (size_t)N, x->kl, kn * sizeof(float));
      memcpy(o->nll + r0 * (size_t)N, x->nll, kn * sizeof(float));
      memcpy(o->dp + r0 * (size_t)N, x->dp, kn * sizeof(float));
      memcpy(o->top1 + r0 * (size_t)N, x->top1, kn);
      memcpy(o->first_nonfinite + r0, x->first_nonfinite, (size_t)s->K * sizeof(int64_t));
    }
  }
  free(order);
  if (a->identity) { /* the shards' identity, as one whole run */
    char device[16];
    run_identity_field(a->identity, "device", device, sizeof device);
    out->identity = run_identity_text(out, device);
  }
  if (!out->experiment || (a->identity && !out->identity)) {
    run_data_free(out);
    snprintf(err, errlen, "out of memory");
    return RSSM_ERR_IO;
  }
  return RSSM_OK;
}
