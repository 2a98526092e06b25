/* Duplicate keys and nesting depth of JSON (json_strict.h). */
#include "src/io/json_strict.h"

#include <glib.h>
#include <stdio.h>
#include <string.h>


int json_nesting_depth(const char *text, size_t len) {
  int depth = 0, deepest = 0, in_str = 0;
  for (size_t i = 0; i < len; i++) {
    char ch = text[i];
    if (in_str) {
      if (ch == '\\') i++;
      else if (ch == '"') in_str = 0;
    } else if (ch == '"') {
      in_str = 1;
    } else if (ch == '[' || ch == '{') {
      if (++depth > deepest) deepest = depth;
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      depth--;
    }
  }
  return deepest;
}

/* path + "." + key (or "[i]") into buf */
static void child_path(char *buf, size_t len, const char *path, const cJSON *c, int index) {
  if (c->string)
    snprintf(buf, len, "%s%s%s", path, path[0] ? "." : "", c->string);
  else
    snprintf(buf, len, "%s[%d]", path, index);
}

/* Whether object o has two children of the same name (the name into *dup). Small objects are
 * compared pairwise, large ones (vocabularies of 10^5 tokens) through a hash set. */
static int has_duplicate(const cJSON *o, const char **dup) {
  int n = 0;
  for (const cJSON *c = o->child; c; c = c->next) n++;
  if (n <= 32) {
    for (const cJSON *a = o->child; a; a = a->next)
      for (const cJSON *b = a->next; b; b = b->next)
        if (a->string && b->string && strcmp(a->string, b->string) == 0) {
          *dup = a->string;
          return 1;
        }
    return 0;
  }
  GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
  int found = 0;
  for (const cJSON *c = o->child; c && !found; c = c->next) {
    if (!c->string) continue;
    if (!g_hash_table_add(seen, c->string)) {
      *dup = c->string;
      found = 1;
    }
  }
  g_hash_table_destroy(seen);
  return found;
}

static int walk(const cJSON *v, const char *path, char *out, size_t outlen) {
  if (cJSON_IsObject(v)) {
    const char *dup = NULL;
    if (has_duplicate(v, &dup)) {
      snprintf(out, outlen, "%s%s%s", path, path[0] ? "." : "", dup);
      return 1;
    }
  }
  if (!cJSON_IsObject(v) && !cJSON_IsArray(v)) return 0;
  int i = 0;
  for (const cJSON *c = v->child; c; c = c->next, i++) {
    if (!cJSON_IsObject(c) && !cJSON_IsArray(c)) continue;
    char sub[256];
    child_path(sub, sizeof sub, path, c, i);
    int r = walk(c, sub, out, outlen);
    if (r) return r;
  }
  return 0;
}

int json_find_duplicate_key(const cJSON *v, char *out, size_t outlen) {
  if (outlen) out[0] = '\0';
  return walk(v, "", out, outlen);
}

int json_strict_check(const cJSON *root, const char *text, size_t len, char *why, size_t whylen) {
  if (!root) {
    int depth = json_nesting_depth(text, len);
    if (depth <= CJSON_NESTING_LIMIT) return 0;
    snprintf(why, whylen, "nested %d levels deep (expected at most %d, the JSON parser's limit)",
             depth, CJSON_NESTING_LIMIT);
    return 1;
  }
  char key[300];
  if (!json_find_duplicate_key(root, key, sizeof key)) return 0;
  snprintf(why, whylen, "key %s appears twice (expected each key once: readers disagree on which "
           "value counts)", key);
  return 1;
}
