/* Experiment identities (run_identity.h). */
#include "src/driver/run_identity.h"

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *run_identity_text(const run_data *d, const char *device) {
  size_t cap = 1024 + (size_t)d->nconfig * (SSM_NAME_MAX + 280);
  char *t = malloc(cap);
  if (!t) return NULL;
  size_t n = (size_t)snprintf(t, cap,
                              "build = %s %s\ndevice = %s\nmodel = %s\ntokens = %s\nreference = %s\n",
                              d->version, d->commit, device, d->model_checksum, d->tokens_checksum,
                              d->reference);
  for (int c = 0; c < d->nconfig && n < cap; c++)
    n += (size_t)snprintf(t + n, cap - n, "config %s = %s\n", d->cfg[c].name, d->cfg[c].spec);
  if (n < cap)
    snprintf(t + n, cap - n, "seed = %llu\nsteps = %lld\nsequences = %lld\nshard = %s\n",
             (unsigned long long)d->seed, (long long)d->N, (long long)d->sequences, d->shard);
  return t;
}

/* The line of text whose key (before " = ") is key: its value and length, or NULL. */
static const char *find_value(const char *text, const char *key, size_t keylen, size_t *len) {
  for (const char *l = text; l && *l;) {
    const char *eq = strstr(l, " = "), *nl = strchr(l, '\n');
    if (!nl) nl = l + strlen(l);
    if (eq && eq < nl && (size_t)(eq - l) == keylen && memcmp(l, key, keylen) == 0) {
      *len = (size_t)(nl - eq - 3);
      return eq + 3;
    }
    l = *nl ? nl + 1 : nl;
  }
  return NULL;
}

void run_identity_field(const char *text, const char *key, char *out, size_t outlen) {
  size_t len = 0;
  const char *v = find_value(text, key, strlen(key), &len);
  snprintf(out, outlen, "%.*s", v ? (int)len : 0, v ? v : "");
}

void run_identity_digest(const char *text, char hex[65]) {
  gchar *s = g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
  snprintf(hex, 65, "%s", s ? s : "");
  g_free(s);
}

/* Appends to out the fields of a that b lacks or holds otherwise ("FIELD: A_NAME has X, B_NAME
 * Y"); with missing_only, only the fields b lacks. Returns how many. */
static int diff_one_way(const char *a, const char *b, const char *a_name, const char *b_name,
                        int missing_only, char *out, size_t outlen) {
  int n = 0;
  for (const char *l = a; *l;) {
    const char *eq = strstr(l, " = "), *nl = strchr(l, '\n');
    if (!nl) nl = l + strlen(l);
    if (eq && eq < nl) {
      size_t klen = (size_t)(eq - l), alen = (size_t)(nl - eq - 3), blen = 0;
      const char *bv = find_value(b, l, klen, &blen);
      int differs = bv ? !missing_only && (alen != blen || memcmp(eq + 3, bv, alen) != 0) : 1;
      if (differs) {
        size_t used = strlen(out);
        const char *a_is = missing_only ? b_name : a_name, *b_is = missing_only ? a_name : b_name;
        if (missing_only)
          snprintf(out + used, outlen - used, "%s%.*s: %s has none, %s %.*s", used ? "; " : "",
                   (int)klen, l, a_is, b_is, (int)alen, eq + 3);
        else
          snprintf(out + used, outlen - used, "%s%.*s: %s has %.*s, %s %.*s", used ? "; " : "",
                   (int)klen, l, a_is, (int)alen, eq + 3, b_is, bv ? (int)blen : 4,
                   bv ? bv : "none");
        n++;
      }
    }
    l = *nl ? nl + 1 : nl;
  }
  return n;
}

int run_identity_diff(const char *have, const char *want, const char *what, char *out,
                      size_t outlen) {
  out[0] = '\0';
  int n = diff_one_way(have, want, what, "this run", 0, out, outlen);
  return n + diff_one_way(want, have, "this run", what, 1, out, outlen);
}
