/* Open-addressing hash maps of the byte-level BPE (bpe_internal.h): byte strings -> uint32 (the
 * vocabulary by raw bytes, the pre-token cache) and uint64 -> uint64 (the merges). Linear
 * probing, power-of-two capacities, grown at half full, so lookups stay short; nothing is ever
 * deleted except by clearing a whole map. And the growable id array (bpe_ids) that the encoder
 * (bpe_encode.c) and the merge loop (bpe_merge.c) both append to, kept here, below both, so that
 * neither calls back into the other. */
#include <stdlib.h>
#include <string.h>

#include "src/tokens/bpe_internal.h"

uint64_t bpe_fnv1a64(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t h = UINT64_C(0xcbf29ce484222325);
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * UINT64_C(0x100000001b3);
  return h;
}

/* Finalise a hash so that the low bits (the slot index) depend on every input bit. */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  x *= UINT64_C(0xc4ceb9fe1a85ec53);
  x ^= x >> 33;
  return x;
}

void bpe_strmap_free(bpe_strmap *m) {
  free(m->slots);
  free(m->keys);
  memset(m, 0, sizeof *m);
}

void bpe_strmap_clear(bpe_strmap *m) {
  for (int64_t i = 0; i < m->cap; i++) m->slots[i].len = UINT32_MAX;
  m->used = 0;
  m->keys_n = 0;
}

static int64_t str_find(const bpe_strmap *m, uint64_t h, const void *key, size_t len) {
  int64_t mask = m->cap - 1;
  for (int64_t i = (int64_t)(h & (uint64_t)mask);; i = (i + 1) & mask) {
    const struct bpe_slot *s = &m->slots[i];
    if (s->len == UINT32_MAX) return i;
    if (s->hash == h && s->len == len && memcmp(m->keys + s->off, key, len) == 0) return i;
  }
}

static int str_grow(bpe_strmap *m) {
  int64_t cap = m->cap ? m->cap * 2 : 1024;
  struct bpe_slot *old = m->slots;
  int64_t oldcap = m->cap;
  m->slots = malloc((size_t)cap * sizeof *m->slots);
  if (!m->slots) {
    m->slots = old;
    return -1;
  }
  m->cap = cap;
  for (int64_t i = 0; i < cap; i++) m->slots[i].len = UINT32_MAX;
  for (int64_t i = 0; i < oldcap; i++) {
    if (old[i].len == UINT32_MAX) continue;
    int64_t mask = cap - 1, j = (int64_t)(old[i].hash & (uint64_t)mask);
    while (m->slots[j].len != UINT32_MAX) j = (j + 1) & mask;
    m->slots[j] = old[i];
  }
  free(old);
  return 0;
}

int bpe_strmap_get(const bpe_strmap *m, const void *key, size_t len, uint32_t *value) {
  if (m->cap == 0 || len >= UINT32_MAX) return 0;
  uint64_t h = mix64(bpe_fnv1a64(key, len));
  const struct bpe_slot *s = &m->slots[str_find(m, h, key, len)];
  if (s->len == UINT32_MAX) return 0;
  *value = s->value;
  return 1;
}

int bpe_strmap_put(bpe_strmap *m, const void *key, size_t len, uint32_t value) {
  if (len >= UINT32_MAX) return -1;
  if ((m->used + 1) * 2 > m->cap && str_grow(m) != 0) return -1;
  uint64_t h = mix64(bpe_fnv1a64(key, len));
  struct bpe_slot *s = &m->slots[str_find(m, h, key, len)];
  if (s->len != UINT32_MAX) {
    s->value = value;
    return 0;
  }
  if (m->keys_n + (int64_t)len > m->keys_cap) {
    int64_t cap = m->keys_cap ? m->keys_cap : 1 << 16;
    while (cap < m->keys_n + (int64_t)len) cap *= 2;
    char *k = realloc(m->keys, (size_t)cap);
    if (!k) return -1;
    m->keys = k;
    m->keys_cap = cap;
  }
  if (len) memcpy(m->keys + m->keys_n, key, len);
  s->hash = h;
  s->off = m->keys_n;
  s->len = (uint32_t)len;
  s->value = value;
  m->keys_n += (int64_t)len;
  m->used++;
  return 0;
}

void bpe_u64map_free(bpe_u64map *m) {
  free(m->keys);
  free(m->vals);
  memset(m, 0, sizeof *m);
}

static int64_t u64_find(const bpe_u64map *m, uint64_t key) {
  int64_t mask = m->cap - 1;
  for (int64_t i = (int64_t)(mix64(key) & (uint64_t)mask);; i = (i + 1) & mask)
    if (m->keys[i] == key || m->keys[i] == BPE_U64_EMPTY) return i;
}

int bpe_u64map_get(const bpe_u64map *m, uint64_t key, uint64_t *value) {
  if (m->cap == 0) return 0;
  int64_t i = u64_find(m, key);
  if (m->keys[i] == BPE_U64_EMPTY) return 0;
  *value = m->vals[i];
  return 1;
}

int bpe_u64map_put(bpe_u64map *m, uint64_t key, uint64_t value) {
  if (key == BPE_U64_EMPTY) return -1;
  if ((m->used + 1) * 2 > m->cap) {
    bpe_u64map g = {0};
    g.cap = m->cap ? m->cap * 2 : 1024;
    g.keys = malloc((size_t)g.cap * sizeof(uint64_t));
    g.vals = malloc((size_t)g.cap * sizeof(uint64_t));
    if (!g.keys || !g.vals) {
      bpe_u64map_free(&g);
      return -1;
    }
    for (int64_t i = 0; i < g.cap; i++) g.keys[i] = BPE_U64_EMPTY;
    for (int64_t i = 0; i < m->cap; i++) {
      if (m->keys[i] == BPE_U64_EMPTY) continue;
      int64_t j = u64_find(&g, m->keys[i]);
      g.keys[j] = m->keys[i];
      g.vals[j] = m->vals[i];
    }
    g.used = m->used;
    bpe_u64map_free(m);
    *m = g;
  }
  int64_t i = u64_find(m, key);
  if (m->keys[i] == BPE_U64_EMPTY) m->used++;
  m->keys[i] = key;
  m->vals[i] = value;
  return 0;
}

void bpe_ids_free(bpe_ids *v) {
  free(v->ids);
  memset(v, 0, sizeof *v);
}

int bpe_ids_push(bpe_ids *v, uint32_t id) {
  if (v->n == v->cap) {
    int64_t cap = v->cap ? v->cap * 2 : 1 << 12;
    uint32_t *p = realloc(v->ids, (size_t)cap * sizeof *p);
    if (!p) return -1;
    v->ids = p;
    v->cap = cap;
  }
  v->ids[v->n++] = id;
  return 0;
}
