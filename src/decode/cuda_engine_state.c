/* The GPU engine's resume state (layout in cuda_engine_internal.h): which pairs went
 * non-finite; with spec configurations the reference steps done, every pair's cursor and round
 * and the ring entries a lagging spec row still needs (steps lo..tref-1, lo the smallest live
 * spec cursor); then every live row's state. */
#ifdef RSSM_HAVE_CUDA

#include <stdio.h>
#include <string.h>

#include "src/decode/cuda_engine_internal.h"
#include "src/io/byte_buf.h"
#include "src/io/status.h"

/* The first ring step still needed: the smallest cursor of a live spec pair, else tref. */
static int64_t ring_lo(const cuda_engine *g) {
  int64_t lo = g->tref;
  for (int64_t k = 0; k < g->K; k++)
    for (int64_t c = 0; c < g->C; c++) {
      const int64_t pi = k * g->C + c;
      if (g->batch_of[c] >= 0 && !g->dead[pi] && g->cursor[pi] < lo) lo = g->cursor[pi];
    }
  return lo;
}

/* Calls f(batch, row, pair-or--1) for every live row in file order. */
#define FOR_LIVE_ROWS(g, BODY)                                           \
  for (int64_t k = 0; k < (g)->K; k++)                                   \
    for (int64_t c = -1; c < (g)->C; c++) {                              \
      if (c >= 0 && (g)->dead[k * (g)->C + c]) continue;                 \
      mc_batch *bt = ce_batch_of((g), c);                                \
      const int row = ce_row_of((g), k, c);                              \
      BODY                                                               \
    }

int64_t ce_state_bytes(const rssm_engine *e) {
  const cuda_engine *g = e->impl;
  int64_t n = g->K * g->C;
  if (g->nspec > 0)
    n += 16 + g->K * g->C * 12 +
         g->K * (g->tref - ring_lo(g)) * mc_ref_ring_entry_bytes(g->ring);
  FOR_LIVE_ROWS(g, { n += 8 + mc_batch_row_bytes(bt, row); })
  return n;
}

int ce_save(const rssm_engine *e, void *buf, char *err, size_t errlen) {
  const cuda_engine *g = e->impl;
  unsigned char *at = buf;
  memcpy(at, g->dead, (size_t)(g->K * g->C));
  at += g->K * g->C;
  if (g->nspec > 0) {
    const int64_t lo = ring_lo(g), eb = mc_ref_ring_entry_bytes(g->ring);
    memcpy(at, &g->tref, 8);
    memcpy(at + 8, &lo, 8);
    at += 16;
    for (int64_t i = 0; i < g->K * g->C; i++) {
      memcpy(at, &g->cursor[i], 8);
      memcpy(at + 8, &g->round[i], 4);
      at += 12;
    }
    for (int64_t k = 0; k < g->K; k++)
      for (int64_t t = lo; t < g->tref; t++) {
        if (mc_ref_ring_save(g->ring, (int)k, t, at) != 0) {
          snprintf(err, errlen, "GPU reference ring: download failed");
          return RSSM_ERR_IO;
        }
        at += eb;
      }
  }
  FOR_LIVE_ROWS(g, {
    const int64_t n = mc_batch_row_bytes(bt, row);
    memcpy(at, &n, 8);
    int rc = mc_batch_row_save(bt, row, at + 8, err, errlen);
    if (rc != RSSM_OK) return rc;
    at += 8 + n;
  })
  return RSSM_OK;
}

static int corrupt(char *err, size_t errlen) {
  snprintf(err, errlen, "corrupt checkpoint (sizes do not match this run)");
  return RSSM_ERR_INPUT;
}

int ce_load(rssm_engine *e, const void *buf, int64_t len, char *err, size_t errlen) {
  cuda_engine *g = e->impl;
  byte_reader b = {buf, len > 0 ? (size_t)len : 0, 0, 0};
  byte_get(&b, g->dead, (size_t)(g->K * g->C));
  if (b.bad) return corrupt(err, errlen);
  if (g->nspec > 0) {
    int64_t lo = -1;
    byte_get(&b, &g->tref, 8);
    byte_get(&b, &lo, 8);
    if (b.bad || g->tref < 0 || g->tref > g->N || lo < 0 || lo > g->tref ||
        g->tref - lo > g->ring_slots)
      return corrupt(err, errlen);
    for (int64_t i = 0; i < g->K * g->C && !b.bad; i++) {
      byte_get(&b, &g->cursor[i], 8);
      byte_get(&b, &g->round[i], 4);
      if (g->cursor[i] < 0 || g->cursor[i] > g->N) b.bad = 1;
    }
    const int64_t eb = mc_ref_ring_entry_bytes(g->ring);
    for (int64_t k = 0; k < g->K && !b.bad; k++)
      for (int64_t t = lo; t < g->tref && !b.bad; t++) {
        const void *at = byte_take(&b, (size_t)eb);
        if (at && mc_ref_ring_load(g->ring, (int)k, t, at) != 0) {
          snprintf(err, errlen, "GPU reference ring: upload failed");
          return RSSM_ERR_IO;
        }
      }
    if (b.bad) return corrupt(err, errlen);
  }
  FOR_LIVE_ROWS(g, {
    int64_t n = -1;
    byte_get(&b, &n, 8);
    if (b.bad || n < 0) return corrupt(err, errlen);
    const void *at = byte_take(&b, (size_t)n);
    if (!at) return corrupt(err, errlen);
    int rc = mc_batch_row_load(bt, row, at, n, err, errlen);
    if (rc != RSSM_OK) return rc;
  })
  if (b.off != b.n) return corrupt(err, errlen);
  return RSSM_OK;
}

#endif
