/* Per-row planning and bookkeeping of the SSM state engine on the GPU (ssm_cuda_internal.cuh):
 * plan_kernel decides each row's plan for an operation on the device and writes its inputs into
 * the ring; the *_book kernels and commit_kernel update h, base, pending, events and nflush after
 * it; broadcast_kernel fills the initial checkpoints. */
#include "src/ssm_cuda/ssm_cuda_internal.cuh"

namespace ssmc {
namespace {

constexpr int PLAN_THREADS = 128;
constexpr int BOOK_THREADS = 128;
/* Lab knob (docs/ssm-cuda.md): 1 = one plan block per (row, input token) instead of one per row.
 * Session 16's profile timed a spec round's plan (T = 8) at 176-243 us under ncu, latency-bound at
 * 4.5 % of issue slots with one block of 4 warps copying a row's 8 tokens; per-token blocks put 8x
 * the copies in flight. The copies are the same, so the bits are; not yet run on a GPU, so the
 * measured one-block-per-row plan stays the default until gpu_check_ssm and the bench say. */
#ifndef RSSM_PLAN_TOKEN_BLOCKS
#define RSSM_PLAN_TOKEN_BLOCKS 0
#endif

/* Grid (B) or, with RSSM_PLAN_TOKEN_BLOCKS, (B, nt). Decides the row's plan for this operation
 * (the CPU's branch) and writes the row's input tokens as records h+1..h+n into the ring (n = 1
 * for a step; for a verification the row's own Tb = nd[b] drafts, or all nt when nd is NULL; the
 * inputs keep the stride nt). A verification of Tb = 0 drafts is idle for that row and, as
 * ssm_verify_n, changes nothing. Every block of a row decides the same plan from the same
 * inputs (h, pending, active, nd are not written here); only the row's first block writes the
 * decision (flag, ndraft, flushed, misuse), so that nothing is written twice. */
__global__ void plan_kernel(dev_state d, int op, const uint8_t *active /* [B] or NULL */,
                            ssm_cuda_inputs in /* [B][nt][...] */, int nt,
                            const int *nd /* [B] or NULL: drafts per row (verify) */) {
  const int b = blockIdx.x;
  const bool writer = blockIdx.y == 0;
  __shared__ int sflag, sn;
  if (threadIdx.x == 0) {
    int act = active ? active[b] != 0 : 1;
    int fl = FLAG_IDLE;
    int n = op == OP_VERIFY ? (nd ? nd[b] : nt) : (op == OP_STEP ? 1 : 0);
    if (act) {
      int h = d.h[b];
      bool misuse = false;
      if (op == OP_STEP) {
        if (d.spec || d.pending[b] != 0) misuse = true;
        else fl = d.conventional ? FLAG_FLUSH : (h + 1 == d.L ? FLAG_FLUSH : FLAG_NONFLUSH);
      } else if (op == OP_VERIFY) {
        if (!d.spec || d.pending[b] != 0 || n < 0 || n > d.T) misuse = true;
        else if (n > 0) fl = h + n > d.L ? FLAG_FLUSH : FLAG_NONFLUSH;
        /* n == 0: idle, and `flushed` is kept (ssm_verify_n returns before touching anything) */
      } else {
        fl = (!d.conventional && h > 0) ? FLAG_FLUSH : FLAG_IDLE;
      }
      /* the CPU clears `flushed` at the start of every accepted call (ssm_flush: always) */
      if (writer && misuse) d.misuse[b]++;
      if (writer && (fl != FLAG_IDLE || op == OP_FLUSH)) d.flushed[b] = 0;
    }
    if (writer) {
      d.flag[b] = fl;
      if (op == OP_VERIFY && fl != FLAG_IDLE) d.ndraft[b] = n;
    }
    sflag = fl;
    sn = n;
  }
  __syncthreads();
  if (op == OP_FLUSH || sflag == FLAG_IDLE) return;
  const int H = d.H, hv = d.H * d.dv, gk = d.G * d.dk;
  const int h = d.h[b], base = d.base[b];
  for (int t = blockIdx.y; t < sn; t += gridDim.y) {
    const size_t sl = (size_t)b * d.cap + (size_t)slot_of(d, base, h + 1 + t);
    const size_t tok = (size_t)b * nt + t;
    for (int e = threadIdx.x; e < H; e += blockDim.x) {
      d.rec_alpha[sl * H + e] = in.alpha[tok * H + e];
      if (d.gdn) d.rec_beta[sl * H + e] = in.beta[tok * H + e];
    }
    float *xdst = d.gdn ? d.rec_v : d.rec_x;
    for (int e = threadIdx.x; e < hv; e += blockDim.x) xdst[sl * hv + e] = in.v[tok * hv + e];
    for (int e = threadIdx.x; e < gk; e += blockDim.x) d.rec_k[sl * gk + e] = in.k[tok * gk + e];
  }
}

/* A stored checkpoint counts one quantisation event per head (ssm_store). */
__device__ inline void count_store(const dev_state &d, int b) {
  for (int hd = 0; hd < d.H; hd++) d.event[(size_t)b * d.H + hd]++;
  d.nflush[b]++;
  d.flushed[b] = 1;
}

/* After a step: non-flush rows keep the new record (h = j); flush rows count the store and, for
 * replay, drop the folded records (base += j, h = 0); conventional keeps h = 0. */
__global__ void step_book_kernel(dev_state d) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B) return;
  int fl = d.flag[b];
  if (fl == FLAG_NONFLUSH) {
    d.h[b] = d.h[b] + 1;
  } else if (fl == FLAG_FLUSH) {
    count_store(d, b);
    if (!d.conventional) {
      d.base[b] = (d.base[b] + d.h[b] + 1) % d.cap;
      d.h[b] = 0;
    }
  }
}

/* After a flush of the committed records (ssm_flush, or the first half of a verification). */
__global__ void flush_book_kernel(dev_state d) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B || d.flag[b] != FLAG_FLUSH) return;
  count_store(d, b);
  d.base[b] = (d.base[b] + d.h[b]) % d.cap;
  d.h[b] = 0;
}

__global__ void verify_book_kernel(dev_state d) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B || d.flag[b] == FLAG_IDLE) return;
  d.pending[b] = d.ndraft[b];
}

__global__ void commit_kernel(dev_state d, const int *a /* [B] */, const uint8_t *active /* [B] or NULL */) {
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B || (active && !active[b])) return;
  int ab = a[b], p = d.pending[b];
  /* a row whose verification had no drafts commits a = 0: nothing */
  if (d.spec && p == 0 && ab == 0) return;
  if (!d.spec || p == 0 || ab < 1 || ab > p) {
    d.misuse[b]++;
    return;
  }
  /* rejected drafts stay in their slots and are overwritten by the next round */
  d.h[b] = d.h[b] + ab;
  d.pending[b] = 0;
}

/* Copies one encoded zero matrix into every [B][H] slot of a blob (the initial state). */
__global__ void broadcast_kernel(uint8_t *blob /* [nmat][bpm] */, const uint8_t *one /* [bpm] */, size_t nmat,
                                 size_t bpm) {
  size_t total = nmat * bpm;
  for (size_t e = blockIdx.x * (size_t)blockDim.x + threadIdx.x; e < total; e += (size_t)gridDim.x * blockDim.x)
    blob[e] = one[e % bpm];
}

unsigned book_blocks(int B) { return (unsigned)((B + BOOK_THREADS - 1) / BOOK_THREADS); }

}  // namespace

void launch_plan(const dev_state &d, int op, const uint8_t *active, const ssm_cuda_inputs &in, int nt,
                 const int *nd, cudaStream_t s) {
  const unsigned tokens = RSSM_PLAN_TOKEN_BLOCKS && op != OP_FLUSH && nt > 1 ? (unsigned)nt : 1u;
  plan_kernel<<<dim3((unsigned)d.B, tokens), PLAN_THREADS, 0, s>>>(d, op, active, in, nt, nd);
}

void launch_step_book(const dev_state &d, cudaStream_t s) {
  step_book_kernel<<<book_blocks(d.B), BOOK_THREADS, 0, s>>>(d);
}

void launch_flush_book(const dev_state &d, cudaStream_t s) {
  flush_book_kernel<<<book_blocks(d.B), BOOK_THREADS, 0, s>>>(d);
}

void launch_verify_book(const dev_state &d, cudaStream_t s) {
  verify_book_kernel<<<book_blocks(d.B), BOOK_THREADS, 0, s>>>(d);
}

void launch_commit(const dev_state &d, const int *a, const uint8_t *active, cudaStream_t s) {
  commit_kernel<<<book_blocks(d.B), BOOK_THREADS, 0, s>>>(d, a, active);
}

void launch_broadcast(uint8_t *blob, const uint8_t *one, size_t nmat, size_t bpm) {
  broadcast_kernel<<<1024, 256>>>(blob, one, nmat, bpm);
}

}  // namespace ssmc
