/* SSM engine state snapshots (ssm_snapshot.h). The byte layout is private to this file and
 * versioned by the leading tag; both ends run in the same build, so host byte order is used. */
#include "src/ssm/ssm_snapshot.h"

#include <string.h>

#define SNAP_TAG 0x53534d31u /* "SSM1" */

typedef struct {
  const ssm_state *st;
  size_t H, dv, dk, G, cap;
  int gdn, split;
} shape;

static shape shape_of(const ssm_state *st) {
  shape s;
  s.st = st;
  s.H = (size_t)st->dims.H;
  s.dv = (size_t)st->dims.dv;
  s.dk = (size_t)st->dims.dk;
  s.G = (size_t)st->dims.G;
  s.cap = (size_t)st->cap;
  s.gdn = st->dims.kind == SSM_GDN;
  s.split = st->cfg.split;
  return s;
}

/* The saved regions, in order; `len` 0 marks an absent one. Filled for a const or mutable state
 * alike (the caller casts). */
typedef struct {
  void *p;
  size_t len;
} region;

static int regions(ssm_state *st, region *r /* [16] */) {
  shape s = shape_of(st);
  int n = 0;
  r[n++] = (region){&st->base, sizeof st->base};
  r[n++] = (region){&st->h, sizeof st->h};
  r[n++] = (region){&st->pending, sizeof st->pending};
  r[n++] = (region){&st->flushed, sizeof st->flushed};
  r[n++] = (region){&st->nflush, sizeof st->nflush};
  r[n++] = (region){st->event, s.H * sizeof(uint32_t)};
  r[n++] = (region){st->rec_alpha, s.cap * s.H * sizeof(float)};
  r[n++] = (region){st->rec_x, s.cap * s.H * s.dv * sizeof(float)};
  r[n++] = (region){st->rec_k, s.cap * s.G * s.dk * sizeof(float)};
  if (s.gdn) {
    r[n++] = (region){st->rec_beta, s.cap * s.H * sizeof(float)};
    r[n++] = (region){st->rec_v, s.cap * s.H * s.dv * sizeof(float)};
  }
  r[n++] = (region){st->main.blob, s.H * (size_t)st->main.lay.bytes_per_matrix};
  r[n++] = (region){st->main.deq, s.H * s.dv * s.dk * sizeof(float)};
  if (s.split) {
    r[n++] = (region){st->lp.blob, s.H * (size_t)st->lp.lay.bytes_per_matrix};
    r[n++] = (region){st->lp.deq, s.H * s.dv * s.dk * sizeof(float)};
  }
  return n;
}

int64_t ssm_snapshot_bytes(const ssm_state *st) {
  region r[16];
  int n = regions((ssm_state *)st, r);
  int64_t total = 2 * (int64_t)sizeof(uint32_t) + (int64_t)sizeof(uint64_t);
  for (int i = 0; i < n; i++) total += (int64_t)r[i].len;
  return total;
}

void ssm_snapshot_save(const ssm_state *st, unsigned char *buf) {
  region r[16];
  int n = regions((ssm_state *)st, r);
  uint32_t tag = SNAP_TAG, nreg = (uint32_t)n;
  uint64_t total = (uint64_t)ssm_snapshot_bytes(st);
  memcpy(buf, &tag, 4);
  memcpy(buf + 4, &nreg, 4);
  memcpy(buf + 8, &total, 8);
  size_t off = 16;
  for (int i = 0; i < n; i++) {
    memcpy(buf + off, r[i].p, r[i].len);
    off += r[i].len;
  }
}

int ssm_snapshot_load(ssm_state *st, const unsigned char *buf, int64_t len) {
  region r[16];
  int n = regions(st, r);
  if (len != ssm_snapshot_bytes(st)) return -1;
  uint32_t tag, nreg;
  uint64_t total;
  memcpy(&tag, buf, 4);
  memcpy(&nreg, buf + 4, 4);
  memcpy(&total, buf + 8, 8);
  if (tag != SNAP_TAG || nreg != (uint32_t)n || total != (uint64_t)len) return -1;
  size_t off = 16;
  for (int i = 0; i < n; i++) {
    memcpy(r[i].p, buf + off, r[i].len);
    off += r[i].len;
  }
  /* the ring counters must describe a valid ring before anything indexes it */
  if (st->cap < 1 || st->base < 0 || st->base >= st->cap || st->h < 0 || st->h > st->cap ||
      st->pending < 0 || st->pending > st->cap)
    return -1;
  return 0;
}
