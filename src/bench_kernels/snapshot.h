/* The per-draft snapshot baseline of speculative verification (the vLLM scheme of the paper's
 * section 3.2 and Appendix A): one read of the committed fp32 state, then for each of the T
 * drafts a conventional step (GDN: u from the running state), its output, and a full snapshot of
 * the state after it: 1 read + T writes of the state per round. A commit of a drafts makes
 * snapshot a the committed state by moving a per-row slot index, as vLLM selects the accepted
 * snapshot. Used by `replayssm bench kernels` (docs/bench-kernels.md) as the baseline that
 * output-only verification is compared with.
 *
 * Per row and draft, the arithmetic is exactly a conventional fp32 step of the CPU engine
 * (src/ssm: ssm_materialise with one record, ssm_output_from_state): the same ssm_math.h items in
 * the same warp-32 order, so outputs and snapshots are bit-identical to it (ssm_check_snapshot). */
#ifndef RSSM_BENCH_KERNELS_SNAPSHOT_H
#define RSSM_BENCH_KERNELS_SNAPSHOT_H

#include <stddef.h>

#include "src/ssm/ssm_engine.h"
#include "src/ssm_cuda/ssm_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  ssm_dims dims;
  int B, T;
  float *snap; /* device [B][T+1][H][dv][dk] fp32 states; slot[b] holds row b's committed one */
  int *slot;   /* device [B] */
} bench_snap_state;

/* Allocates B rows of T + 1 zero states (S_0 = 0 in slot 0). Returns 0, or -1 with a reason
 * (dk > 256, T < 1, out of device memory). */
int bench_snap_build(bench_snap_state *s, const ssm_dims *dims, int B, int T, char *err,
                     size_t errlen);
void bench_snap_free(bench_snap_state *s);

/* One verification of T drafts per row: reads slot[b], writes draft s's state into slot
 * (slot[b] + 1 + s) % (T + 1) and its output into o. drafts: device [B][T][...] (ssm_cuda.h
 * layout), o: device [B][T][H][dv]. Returns 0, or -1 on a launch error or missing inputs. */
int bench_snap_verify(bench_snap_state *s, const ssm_cuda_inputs *drafts, float *o, void *stream);

/* slot[b] moves to draft a[b]'s snapshot (a: device [B], 1 <= a[b] <= T). */
int bench_snap_commit(bench_snap_state *s, const int *a, void *stream);

/* Copies row b's committed state to host [H][dv][dk] (synchronous). Returns 0 or -1. */
int bench_snap_download(const bench_snap_state *s, int b, int slot_offset, float *host);

#ifdef __cplusplus
}
#endif
#endif
