/* Correctness check of a small-GEMM-lab variant (bench_gemm_check.h).
 *
 * Inputs (never zero): W = +-[0.05, 1) from gemm_lab_fill on the device (fp32, or that value
 * rounded to bf16), X = +-[0.05, 1) from splitmix64 on the host. Signs are random, so outputs
 * are sums with cancellation; the bounds are therefore relative to A = sum_k |x_k w_k| (the
 * standard form for dot products), not to |y|.
 *
 * Tolerance, from the arithmetic (u = 2^-24; x means X as the GEMM reads it, rounded to bf16 for
 * bf16, so that the rounding of X is part of the definition and the reference sees the same x):
 *  - THE FIXED ORDER (variants 1-3; gemm_lab.h): a term's product is exact inside fmaf and the
 *    term is then perturbed by (1 + delta), |delta| <= u, at each later rounding it goes
 *    through: its own fmaf and the later fmaf of its lane chain (at most ceil(len / 32) CH),
 *    one per level of the 5-level tree, at most nsplit - 1 in the second pass. With d the sum,
 *    |y - y_exact| <= gamma_d A, gamma_d = d u / (1 - d u) (Higham lemma 3.1 / eq. 3.5 with
 *    exact products): gemm_lab_bound_order. E.g. bf16 cols 2560 (320 chunks, 10 per lane):
 *    d = 85, gamma ~ 5.1e-6; fp32 cols 12544: d = 397, ~2.4e-5.
 *  - cuBLAS (variant 0): its order is unknown (and may be split-K); for ANY order a cols-term
 *    dot product with rounded products satisfies |y - y_exact| <= gamma_cols A (Higham eq.
 *    3.5). SGEMM without TF32 rounds as IEEE fp32. bf16 GemmEx runs on tensor cores, whose fp32
 *    accumulation may truncate the aligned addends (Fasi et al. 2021), up to 2u per addition:
 *    gemm_lab_bound_cublas uses 2u for both precisions, gamma with 2u at d = cols + 1.
 *  - the mma variants (4, 5; mc_gemm_mma.h): products exact, the tensor cores' fp32 sums as
 *    cuBLAS's (2u per addition), then kw - 1 additions of the warps' partial sums: gamma with 2u
 *    at d = cols + kw (gemm_lab_bound_mma).
 *  - the fp64 evaluation's own error (cols additions at 2^-53 of A) is added: cols 2^-52 A.
 * Each checked output must satisfy |gpu - y64| <= (bound + cols 2^-52) A. The stream variants
 * must moreover equal gemm_lab_ref_order bit for bit (the same fmaf sequence on both sides), and
 * be row-invariant: at the largest R, each of rows 0, R/2 and R - 1 computed alone (R = 1 on
 * that row of X) and every row of a batch of the same rows in reverse order must give the same
 * bits as in the batch, over all `rows` outputs. The worst ratio is reported: expect ~1e-2 of the
 * bound for every variant (the bound is a worst case; random signs give ~sqrt(d) u). */
#include "src/bench_gemm/bench_gemm_check.h"

#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK_RMAX GEMM_LAB_MAX_R
#define CK_XROWS (2 * GEMM_LAB_MAX_R) /* X holds the padding rows of any tile <= 64 */
#define CK_NS 64                      /* sampled weight rows */

/* splitmix64 to [0, 1) */
static double u01(uint64_t *st) {
  uint64_t z = (*st += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) * (1.0 / 9007199254740992.0);
}

static int cuda_fail(cudaError_t e, const char *what, char *err, size_t errlen) {
  if (e == cudaSuccess) return 0;
  snprintf(err, errlen, "%s: %s", what, cudaGetErrorString(e));
  return -1;
}

/* What depends only on (p, rows, cols): kept between calls (the bench checks 3 variants per
 * GEMM, the device check many row counts), since the references take seconds at the 4B shapes. */
typedef struct {
  int valid;
  gemm_lab_prec p;
  int64_t rows, cols;
  void *dW;         /* device [rows][cols] */
  float *X;         /* host [CK_XROWS][cols] */
  int ns;           /* sampled weight rows */
  int64_t samp[CK_NS];
  void *Ws;         /* host [ns][cols]: the sampled rows (float or bf16 bits) */
  double *y64, *A;  /* host [CK_RMAX][ns] */
  float *ref;       /* host [CK_RMAX][ns]: gemm_lab_ref_order at ref_split */
  int ref_split;    /* 0: ref not computed */
} ck_cache;

static ck_cache cache;

static void cache_free(void) {
  if (cache.dW) cudaFree(cache.dW);
  free(cache.X), free(cache.Ws), free(cache.y64), free(cache.A), free(cache.ref);
  memset(&cache, 0, sizeof cache);
}

void gemm_check_release(void) { cache_free(); }

static int cache_fill(gemm_lab_prec p, int64_t rows, int64_t cols, char *err, size_t errlen) {
  if (cache.valid && cache.p == p && cache.rows == rows && cache.cols == cols) return 0;
  cache_free();
  cache.p = p, cache.rows = rows, cache.cols = cols;
  const size_t es = (size_t)gemm_lab_wbytes(p);
  cache.ns = rows < CK_NS ? (int)rows : CK_NS;
  for (int j = 0; j < cache.ns; j++) /* spread over the rows, the first and the last included */
    cache.samp[j] = cache.ns == 1 ? 0 : (int64_t)j * (rows - 1) / (cache.ns - 1);
  cache.X = malloc((size_t)CK_XROWS * cols * sizeof(float));
  cache.Ws = malloc((size_t)cache.ns * cols * es);
  cache.y64 = malloc((size_t)CK_RMAX * cache.ns * sizeof(double));
  cache.A = malloc((size_t)CK_RMAX * cache.ns * sizeof(double));
  cache.ref = malloc((size_t)CK_RMAX * cache.ns * sizeof(float));
  if (!cache.X || !cache.Ws || !cache.y64 || !cache.A || !cache.ref) {
    snprintf(err, errlen, "out of host memory for the check");
    cache_free();
    return -1;
  }
  uint64_t st = 0x18e33ULL + (uint64_t)rows * 1000003ULL + (uint64_t)cols * 7ULL + (uint64_t)p;
  for (int64_t i = 0; i < (int64_t)CK_XROWS * cols; i++) {
    const float v = (float)(0.05 + 0.95 * u01(&st));
    cache.X[i] = u01(&st) < 0.5 ? -v : v;
  }
  if (cuda_fail(cudaMalloc(&cache.dW, (size_t)rows * cols * es + 16), "cudaMalloc W", err, errlen)) {
    cache.dW = NULL;
    cache_free();
    return -1;
  }
  if (gemm_lab_fill(p, cache.dW, rows * cols, (uint32_t)(rows * 31 + cols), NULL) != 0 ||
      cuda_fail(cudaDeviceSynchronize(), "fill W", err, errlen)) {
    if (!err[0]) snprintf(err, errlen, "fill W: launch failed");
    cache_free();
    return -1;
  }
  for (int j = 0; j < cache.ns; j++)
    if (cuda_fail(cudaMemcpy((char *)cache.Ws + (size_t)j * cols * es,
                             (const char *)cache.dW + (size_t)cache.samp[j] * cols * es, cols * es,
                             cudaMemcpyDeviceToHost),
                  "download W", err, errlen)) {
      cache_free();
      return -1;
    }
  gemm_lab_ref64(p, cache.Ws, cache.X, cache.y64, cache.A, CK_RMAX, cache.ns, cols);
  cache.valid = 1;
  return 0;
}

/* The device buffers of one call. */
typedef struct {
  float *X, *Xrev, *Y, *Y2, *scratch; /* [XROWS][cols] x 2, [XROWS][rows] x 2, [nsplit][RMAX][rows] */
  uint16_t *xb;                       /* [XROWS][cols] */
  float *hY, *hY2;                    /* host [XROWS][rows] */
} ck_bufs;

static void bufs_free(ck_bufs *b) {
  cudaFree(b->X), cudaFree(b->Xrev), cudaFree(b->Y), cudaFree(b->Y2), cudaFree(b->scratch), cudaFree(b->xb);
  free(b->hY), free(b->hY2);
}

static int bufs_alloc(ck_bufs *b, int64_t rows, int64_t cols, int nsplit, char *err, size_t errlen) {
  memset(b, 0, sizeof *b);
  const size_t nx = (size_t)CK_XROWS * cols, ny = (size_t)CK_XROWS * rows;
  const size_t ns = gemm_lab_scratch_floats(CK_RMAX, rows, nsplit);
  b->hY = malloc(ny * sizeof(float));
  b->hY2 = malloc(ny * sizeof(float));
  if (!b->hY || !b->hY2) {
    snprintf(err, errlen, "out of host memory for the check");
    return -1;
  }
  if (cuda_fail(cudaMalloc((void **)&b->X, nx * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&b->Xrev, nx * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&b->xb, nx * 2 + 16), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&b->Y, ny * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&b->Y2, ny * 4), "cudaMalloc", err, errlen) ||
      cuda_fail(cudaMalloc((void **)&b->scratch, (ns ? ns : 1) * 4), "cudaMalloc", err, errlen))
    return -1;
  /* X as is; Xrev: rows 0..RMAX-1 reversed (row r = X row RMAX - 1 - r), the rest as X */
  if (cuda_fail(cudaMemcpy(b->X, cache.X, nx * 4, cudaMemcpyHostToDevice), "upload X", err, errlen) ||
      cuda_fail(cudaMemcpy(b->Xrev, cache.X, nx * 4, cudaMemcpyHostToDevice), "upload X", err, errlen))
    return -1;
  return 0;
}

/* Runs the variant on R rows of x into y (poisoned first: a kernel that writes nothing fails)
 * and downloads its first R rows into h. Returns 0, -2 (refused) or -1. */
static int run_one(gemm_lab_ctx *c, int variant, const float *x, float *y, float *h, ck_bufs *b, int R,
                   int tile, int nsplit, char *err, size_t errlen) {
  const int64_t rows = cache.rows, cols = cache.cols, Ra = gemm_lab_rows_alloc(variant, R, tile);
  cudaMemset(y, 0xff, (size_t)Ra * rows * 4);
  const int rc = gemm_lab_run(c, variant, cache.p, cache.dW, x, b->xb, b->scratch, y, R, rows, cols, tile, nsplit);
  if (rc == -2) return -2;
  if (rc != 0) {
    snprintf(err, errlen, "gemm_lab_run: launch or cuBLAS error (%s)", cudaGetErrorString(cudaGetLastError()));
    return -1;
  }
  return cuda_fail(cudaMemcpy(h, y, (size_t)R * rows * 4, cudaMemcpyDeviceToHost), "kernel", err, errlen);
}

/* Folds R rows of h [R][rows] into res: fp64 within bound, and (order) the CPU order's bits. */
static void judge(const float *h, int R, double bound, int order, gemm_check_result *res) {
  const double extra = (double)cache.cols * ldexp(1.0, -52);
  for (int r = 0; r < R; r++)
    for (int j = 0; j < cache.ns; j++) {
      const float g = h[(int64_t)r * cache.rows + cache.samp[j]];
      const double a = cache.A[r * cache.ns + j], e = fabs((double)g - cache.y64[r * cache.ns + j]);
      const double lim = (bound + extra) * a;
      if (!(e <= lim)) res->ok = 0; /* NaN fails too */
      if (!(e / lim <= res->worst_ratio)) res->worst_ratio = e / lim;
      if (!(e / a <= res->worst_rel)) res->worst_rel = e / a;
      res->checked++;
      if (order && memcmp(&g, &cache.ref[r * cache.ns + j], sizeof g) != 0) {
        res->cpu_diff++;
        res->ok = 0;
      }
    }
}

uint64_t gemm_check_fnv1a(uint64_t h, const void *bytes, size_t n) {
  const unsigned char *p = (const unsigned char *)bytes;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
  return h;
}

/* Row invariance at R rows (the batch's outputs in b->hY): each of rows 0, R/2, R-1 alone, then
 * the reversed batch. Returns 0 or -1. */
static int invariance(gemm_lab_ctx *c, int variant, ck_bufs *b, int R, int tile, int nsplit,
                      gemm_check_result *res, char *err, size_t errlen) {
  const int64_t rows = cache.rows, cols = cache.cols;
  const int pick[3] = {0, R / 2, R - 1};
  for (int k = 0; k < 3; k++) {
    if (k > 0 && pick[k] == pick[k - 1]) continue;
    if (run_one(c, variant, b->X + (int64_t)pick[k] * cols, b->Y2, b->hY2, b, 1, tile, nsplit, err, errlen))
      return -1;
    for (int64_t n = 0; n < rows; n++)
      if (memcmp(&b->hY2[n], &b->hY[(int64_t)pick[k] * rows + n], sizeof(float)) != 0) res->inv_diff++;
  }
  for (int r = 0; r < R; r++)
    if (cuda_fail(cudaMemcpy(b->Xrev + (int64_t)r * cols, cache.X + (int64_t)(R - 1 - r) * cols, cols * 4,
                             cudaMemcpyHostToDevice),
                  "upload X", err, errlen))
      return -1;
  if (run_one(c, variant, b->Xrev, b->Y2, b->hY2, b, R, tile, nsplit, err, errlen)) return -1;
  for (int r = 0; r < R; r++)
    for (int64_t n = 0; n < rows; n++)
      if (memcmp(&b->hY2[(int64_t)(R - 1 - r) * rows + n], &b->hY[(int64_t)r * rows + n], sizeof(float)) != 0)
        res->inv_diff++;
  return 0;
}

int gemm_check_variant(int variant, gemm_lab_prec p, int64_t rows, int64_t cols, const int *Rs, int nR,
                       int tile, int nsplit, gemm_check_result *res, char *err, size_t errlen) {
  memset(res, 0, sizeof *res);
  res->cpu_diff = gemm_lab_is_order(variant) ? 0 : -1;
  res->bits = GEMM_CHECK_FNV_BASIS;
  if (variant == GEMM_LAB_SPLITK && nsplit <= 0) {
    int dev = 0, sms = 1;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    nsplit = gemm_lab_splits(rows, cols, p, sms);
  }
  if (variant != GEMM_LAB_SPLITK) nsplit = 1;
  res->nsplit = nsplit;
  if (variant == GEMM_LAB_WIDE) { /* its own count (the kernel's rule for this device) */
    int dev = 0, sms = 1;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    res->nsplit = gemm_lab_wide_splits(variant, rows, cols, sms);
  }
  if (cache_fill(p, rows, cols, err, errlen) != 0) return -1;
  const int order = gemm_lab_is_order(variant);
  if (order && cache.ref_split != nsplit) {
    gemm_lab_ref_order(p, cache.Ws, cache.X, cache.ref, CK_RMAX, cache.ns, cols, nsplit);
    cache.ref_split = nsplit;
  }
  const int kw = gemm_lab_mma_warps(variant);
  const double bound = order                      ? gemm_lab_bound_order(p, cols, nsplit)
                       : kw                         ? gemm_lab_bound_mma(cols, kw)
                       : variant == GEMM_LAB_WIDE ? gemm_lab_bound_mma(cols, res->nsplit)
                                                    : gemm_lab_bound_cublas(cols);
  static gemm_lab_ctx *c = NULL; /* one handle for every call (creating one costs ~0.1 s); the
                                    process's end frees it */
  if (!c && !(c = gemm_lab_create(NULL))) {
    snprintf(err, errlen, "cuBLAS handle or workspace: creation failed");
    return -1;
  }
  ck_bufs b;
  int rc = -1, Rm = 0;
  if (bufs_alloc(&b, rows, cols, nsplit, err, errlen) != 0) goto done;
  res->ok = 1;
  for (int i = 0; i < nR; i++) {
    const int R = Rs[i];
    if (R < 1 || R > CK_RMAX) continue;
    const int lrc = run_one(c, variant, b.X, b.Y, b.hY, &b, R, tile, nsplit, err, errlen);
    if (lrc == -2) {
      res->ran = 0;
      res->ok = 0;
      rc = 0;
      goto done;
    }
    if (lrc) goto done;
    res->ran = 1;
    judge(b.hY, R, bound, order, res);
    res->bits = gemm_check_fnv1a(res->bits, b.hY, (size_t)R * (size_t)rows * sizeof(float));
    if (R > Rm) Rm = R;
  }
  if (Rm > 0) { /* the batch of Rm rows again (hY holds the last R's), then its invariance */
    if (run_one(c, variant, b.X, b.Y, b.hY, &b, Rm, tile, nsplit, err, errlen) ||
        invariance(c, variant, &b, Rm, tile, nsplit, res, err, errlen))
      goto done;
    if (order && res->inv_diff) res->ok = 0;
  }
  rc = 0;
done:
  bufs_free(&b);
  return rc;
}
