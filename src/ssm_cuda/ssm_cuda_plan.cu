/* Per-row planning and bookkeeping of the SSM state engine on the GPU (ssm_cuda_internal.cuh):
 * plan_kernel decides each row's plan for an operation on the device and writes its inputs into
 * the ring; the *_book kernels and commit_kernel update h, base, pending, events and nflush after
 * it; broadcast_kernel fills the initial checkpoints. */
#include "src/ssm_cuda/ssm_cuda_internal.cuh"

namespace ssmc {
namespace {

constexpr int PLAN_THREADS = 128;
constexpr int BOOK_THREADS = 128;
/* 16-byte copies a plan thread makes of one token's records, about: sets the chunks per token.
 * Session 16's profile timed the plan of a spec round (T = 8) at 176-243 us under ncu, latency-
 * bound at 4.5 % of issue slots, when one block of 4 warps copied a row's 8 tokens with 4-byte
 * loads: each block here copies one chunk of one token, 16 bytes a load. On the H200 (session 17,
 * docs/gpu-results.md) that plan took 28.7-39.5 us at 64-66 % of DRAM peak, and every step at
 * B = 1 became 6-11 us faster. */
constexpr int PLAN_VEC_PER_THREAD = 4;

/* Copies n floats from src to dst, the elements i0, i0 + stride, ... (16-byte words of 4 floats
 * when both ends are 16-byte aligned and n is a multiple of 4, else floats). A copy: the bits are
 * the same whichever way. */
__device__ inline void copy_floats(float *dst /* [n] */, const float *src /* [n] */, int n, int i0, int stride) {
  if ((n & 3) == 0 && ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    float4 *d4 = reinterpret_cast<float4 *>(dst);
    const float4 *s4 = reinterpret_cast<const float4 *>(src);
    for (int e = i0; e < n / 4; e += stride) d4[e] = s4[e];
  } else {
    for (int e = i0; e < n; e += stride) dst[e] = src[e];
  }
}

/* Grid (B, tokens, chunks): tokens = nt for a verification (1 for a step, and for a flush, which
 * copies nothing), chunks from plan_chunks. Decides the row's plan for this operation (the
 * CPU's branch) and writes the row's input tokens as records h+1..h+n into the ring (n = 1 for
 * a step; for a verification the row's own Tb = nd[b] drafts, or all nt when nd is NULL; the
 * inputs keep the stride nt). Block (b, t, z) copies chunk z of token t. A verification of
 * Tb = 0 drafts is idle for that row and, as ssm_verify_n, changes nothing. Every block of a row
 * decides the same plan from the same inputs (h, pending, active, nd are not written here); only
 * the row's first block writes the decision (flag, ndraft, flushed, misuse), so that nothing is
 * written twice. */
__global__ void plan_kernel(dev_state d, int op, const uint8_t *active /* [B] or NULL */,
                            ssm_cuda_inputs in /* [B][nt][...] */, int nt,
                            const int *nd /* [B] or NULL: drafts per row (verify) */) {
  pdl_enter();
  const int b = blockIdx.x;
  const bool writer = blockIdx.y == 0 && blockIdx.z == 0;
  __shared__ int sflag, sn;
  if (threadIdx.x == 0) {
    int act = active ? active[b] != 0 : 1;
    int fl = FLAG_IDLE;
    int n = op == OP_VERIFY ? (nd ? nd[b] : nt) : (op == OP_STEP ? 1 : 0);
    if (act) {
      int h = d.h[b];
      bool misuse = false;
      if (op == OP_STEP) {
        fl = step_flag_of(d, 1, b, &misuse);
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
  const int t = blockIdx.y;
  if (op == OP_FLUSH || sflag == FLAG_IDLE || t >= sn) return;
  const int H = d.H, hv = d.H * d.dv, gk = d.G * d.dk;
  const int h = d.h[b], base = d.base[b];
  const size_t sl = (size_t)b * d.cap + (size_t)slot_of(d, base, h + 1 + t); /* the record's ring slot */
  const size_t tok = (size_t)b * nt + t;                                     /* the input token */
  const int i0 = blockIdx.z * blockDim.x + threadIdx.x, stride = gridDim.z * blockDim.x;
  copy_floats(d.rec_alpha + sl * H, in.alpha + tok * H, H, i0, stride);
  if (d.gdn) copy_floats(d.rec_beta + sl * H, in.beta + tok * H, H, i0, stride);
  copy_floats((d.gdn ? d.rec_v : d.rec_x) + sl * hv, in.v + tok * hv, hv, i0, stride);
  copy_floats(d.rec_k + sl * gk, in.k + tok * gk, gk, i0, stride);
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
  pdl_enter();
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
  pdl_enter();
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B || d.flag[b] != FLAG_FLUSH) return;
  count_store(d, b);
  d.base[b] = (d.base[b] + d.h[b]) % d.cap;
  d.h[b] = 0;
}

__global__ void verify_book_kernel(dev_state d) {
  pdl_enter();
  int b = blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= d.B || d.flag[b] == FLAG_IDLE) return;
  d.pending[b] = d.ndraft[b];
}

__global__ void commit_kernel(dev_state d, const int *a /* [B] */, const uint8_t *active /* [B] or NULL */) {
  pdl_enter();
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

/* Chunks of a token's records, so that a thread makes about PLAN_VEC_PER_THREAD 16-byte copies
 * of the largest array (x or v: H dv floats); a flush copies nothing (one block a row). */
unsigned plan_chunks(const dev_state &d, int op) {
  if (op == OP_FLUSH) return 1u;
  const long long words = ((long long)d.H * d.dv + 3) / 4, per_block = (long long)PLAN_THREADS * PLAN_VEC_PER_THREAD;
  const long long z = (words + per_block - 1) / per_block;
  return (unsigned)(z < 1 ? 1 : (z > 64 ? 64 : z));
}

unsigned book_blocks(int B) { return (unsigned)((B + BOOK_THREADS - 1) / BOOK_THREADS); }

}  // namespace

void launch_plan(const dev_state &d, int op, const uint8_t *active, const ssm_cuda_inputs &in, int nt,
                 const int *nd, cudaStream_t s) {
  const unsigned tokens = op == OP_FLUSH || nt < 1 ? 1u : (unsigned)nt;
  pdl_launch(plan_kernel, dim3((unsigned)d.B, tokens, plan_chunks(d, op)), PLAN_THREADS, 0, s, d, op, active, in, nt,
             nd);
}

void launch_step_book(const dev_state &d, cudaStream_t s) {
  pdl_launch(step_book_kernel, book_blocks(d.B), BOOK_THREADS, 0, s, d);
}

void launch_flush_book(const dev_state &d, cudaStream_t s) {
  pdl_launch(flush_book_kernel, book_blocks(d.B), BOOK_THREADS, 0, s, d);
}

void launch_verify_book(const dev_state &d, cudaStream_t s) {
  pdl_launch(verify_book_kernel, book_blocks(d.B), BOOK_THREADS, 0, s, d);
}

void launch_commit(const dev_state &d, const int *a, const uint8_t *active, cudaStream_t s) {
  pdl_launch(commit_kernel, book_blocks(d.B), BOOK_THREADS, 0, s, d, a, active);
}

void launch_broadcast(uint8_t *blob, const uint8_t *one, size_t nmat, size_t bpm) {
  broadcast_kernel<<<1024, 256>>>(blob, one, nmat, bpm);
}

}  // namespace ssmc
