/* The launch lab (issue 18): what a chain of small dependent kernels costs inside a CUDA Graph,
 * and how much of it Programmatic Dependent Launch (PDL, sm_90) takes back. A fixture model's
 * decode step is ~60 such kernels (19-33 of them cuBLAS GEMMs) at 0.23-0.40 ms; the 40x bar of
 * issue 18 needs ~2 us a kernel. This program answers, before any runtime kernel is changed:
 *   1. a chain of N tiny element-wise kernels in a graph: us per kernel, plain and with PDL
 *      (every kernel waits with cudaGridDependencySynchronize before it touches memory; with and
 *      without the early trigger, cudaTriggerProgrammaticLaunchCompletion, at its top);
 *   2. the fixture models' GEMM shapes (bf16 W and X, fp32 Y, 16 rows) in a graph: cuBLAS
 *      (cublasGemmEx as mc_step_gemm.cu calls it) against one warp per output element row
 *      (`rowdot`: 16 rows in registers, 16-byte loads), plain and with PDL; rowdot is checked
 *      against an fp64 CPU product first;
 *   3. a mixed chain (element-wise kernel, GEMM, element-wise kernel) x N, as a step is;
 *   4. the same element-wise hops as phases of ONE cooperative kernel with a grid-wide barrier
 *      (cooperative_groups grid.sync) between them: what a persistent step kernel would pay per
 *      dependent phase instead of a kernel boundary (session 33's note: a fixture step is ~48-78
 *      kernels at ~3 us each in its graph with PDL).
 * Every chain's result is checked after it is timed (the element-wise chain's words against the
 * same map on the CPU: a kernel that ran ahead of its input shows). Prints one line per case:
 * us per graph launch and per kernel.
 * Usage: gpu_launch_lab [reps] (default 200 graph launches per case, after 20).
 *
 * Why a graph with PDL edges can be faster: without PDL the next kernel's blocks are launched
 * only after the previous grid has finished and flushed; with the attribute the next grid is
 * launched while the previous one runs, and its blocks wait in cudaGridDependencySynchronize,
 * which returns once the previous grid has completed and its writes are visible: the results are
 * the same, the launch latency overlaps the previous kernel. */
#include <cooperative_groups.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(x)                                                                                     \
  do {                                                                                            \
    cudaError_t e_ = (x);                                                                         \
    if (e_ != cudaSuccess) {                                                                      \
      fprintf(stderr, "launch_lab: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__);   \
      exit(1);                                                                                    \
    }                                                                                             \
  } while (0)

enum pdl_mode { PDL_OFF = 0, PDL_WAIT = 1, PDL_TRIGGER = 2 };

__device__ __forceinline__ void pdl_prologue(int mode) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (mode == PDL_TRIGGER) cudaTriggerProgrammaticLaunchCompletion();
  if (mode != PDL_OFF) cudaGridDependencySynchronize();
#else
  (void)mode;
#endif
}

/* x <- x * 1664525 + 1013904223 mod 2^32 on n words: a map with no fixed point, so that a kernel
 * that read its input before the previous one wrote it leaves a different final value */
__global__ void hop_kernel(uint32_t *x /* [n] */, int n, int mode) {
  pdl_prologue(mode);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * 1664525u + 1013904223u;
}

/* hop_kernel's map applied `hops` times, a grid-wide barrier after each application: the phases
 * of a persistent kernel. Launched cooperatively (every block resident), so the barrier is
 * legal; the result is the chain's. */
__global__ void hops_grid_kernel(uint32_t *x /* [n] */, int n, int hops) {
  cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int h = 0; h < hops; h++) {
    if (i < n) x[i] = x[i] * 1664525u + 1013904223u;
    grid.sync();
  }
}

/* Y[r][j] = sum_c W[j][c] X[r][c] for r < ROWS (16: a fixture step's K), one warp per output
 * index j. Each lane takes 8 consecutive columns at a time with 16-byte loads of W's row and of
 * every X row (X, ROWS x cols bf16, stays in L1), so the ROWS accumulators are registers (the
 * row count is a compile-time constant: session 29's first version looped over a runtime count,
 * its accumulators went to local memory, and it took 32 us a GEMM). cols % 8 == 0 (every fixture
 * shape). Then a butterfly sum per row; lane 0 writes. Summation order: per lane, columns
 * ascending in steps of 256, each 8-column group summed in order; then the xor butterfly. */
template <int ROWS>
__global__ void rowdot_kernel(const __nv_bfloat16 *W /* [rows][cols] */,
                              const __nv_bfloat16 *X /* [ROWS][cols] */,
                              float *Y /* [ROWS][rows] */, int rows, int cols, int mode) {
  pdl_prologue(mode);
  const int warp = (blockIdx.x * blockDim.x + threadIdx.x) >> 5, lane = threadIdx.x & 31;
  if (warp >= rows) return;
  float acc[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; r++) acc[r] = 0.0f;
  const uint4 *w = (const uint4 *)(W + (int64_t)warp * cols); /* [cols / 8] */
  for (int c8 = lane; c8 < cols / 8; c8 += 32) {
    const uint4 wv = __ldg(&w[c8]);
    const __nv_bfloat162 *wp = (const __nv_bfloat162 *)&wv;
#pragma unroll
    for (int r = 0; r < ROWS; r++) {
      const uint4 xv = __ldg((const uint4 *)(X + (int64_t)r * cols) + c8);
      const __nv_bfloat162 *xp = (const __nv_bfloat162 *)&xv;
      float sum = 0.0f;
#pragma unroll
      for (int i = 0; i < 4; i++) {
        const float2 wf = __bfloat1622float2(wp[i]), xf = __bfloat1622float2(xp[i]);
        sum += wf.x * xf.x;
        sum += wf.y * xf.y;
      }
      acc[r] += sum;
    }
  }
#pragma unroll
  for (int r = 0; r < ROWS; r++) {
    float v = acc[r];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) Y[(int64_t)r * rows + warp] = v;
  }
}

/* kernel<<<g, b, 0, s>>>(args...), with the PDL attribute unless mode is PDL_OFF */
template <typename... Params, typename... Args>
static void lab_launch(void (*kernel)(Params...), dim3 g, dim3 b, cudaStream_t s, int mode,
                       Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = g;
  cfg.blockDim = b;
  cfg.stream = s;
  cudaLaunchAttribute at[1];
  at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  at[0].val.programmaticStreamSerializationAllowed = mode != PDL_OFF;
  cfg.attrs = at;
  cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...));
}

static void launch_hop(dim3 g, dim3 b, cudaStream_t s, int mode, uint32_t *x, int n) {
  lab_launch(hop_kernel, g, b, s, mode, x, n, mode);
}

static void launch_rowdot(cudaStream_t s, int mode, const __nv_bfloat16 *W, const __nv_bfloat16 *X,
                          float *Y, int rows, int cols, int R) {
  if (R != 16 || cols % 8) {
    fprintf(stderr, "launch_lab: rowdot takes 16 rows and cols %% 8 == 0 (got %d, %d)\n", R, cols);
    exit(1);
  }
  lab_launch(rowdot_kernel<16>, dim3((unsigned)((rows + 7) / 8)), dim3(256), s, mode, W, X, Y,
             rows, cols, mode);
}

typedef struct {
  int rows, cols;
  const char *name;
} shape;

/* the GEMM shapes of a fixture step (nemotronh-m2-tiny: H = 320, in_proj 320 -> 2*640+2*4*128+8,
 * out 640 -> 320, MLP 320 -> 1920 -> 320, lm_head 320 -> 256; qwen35-gdn-tiny: H = 256) */
static const shape SHAPES[] = {{1800, 320, "m2 in"},  {320, 640, "m2 out"},
                               {1920, 320, "mlp up"}, {320, 1920, "mlp down"},
                               {256, 320, "lm_head"}, {1536, 256, "gdn mlp gu"}};
enum { NSHAPES = sizeof SHAPES / sizeof SHAPES[0] };

typedef struct {
  cudaStream_t s;
  cublasHandle_t blas;
  uint32_t *x;             /* [n] element-wise chain buffer */
  int n;
  __nv_bfloat16 *W[NSHAPES]; /* [rows][cols] per shape */
  __nv_bfloat16 *X;        /* [16][2048] */
  float *Y;                /* [16][2048] */
} lab;

static void gemm_cublas(lab *L, int k) {
  const float one = 1.0f, zero = 0.0f;
  const shape *sh = &SHAPES[k];
  if (cublasGemmEx(L->blas, CUBLAS_OP_T, CUBLAS_OP_N, sh->rows, 16, sh->cols, &one, L->W[k],
                   CUDA_R_16BF, sh->cols, L->X, CUDA_R_16BF, sh->cols, &zero, L->Y, CUDA_R_32F,
                   sh->rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "launch_lab: cublasGemmEx failed\n");
    exit(1);
  }
}

enum chain_kind { CH_HOPS, CH_CUBLAS, CH_ROWDOT, CH_MIX_CUBLAS, CH_MIX_ROWDOT };

/* record one step's chain of nk kernels on L->s */
static void record(lab *L, int kind, int nk, int mode) {
  dim3 g((unsigned)((L->n + 255) / 256)), b(256);
  for (int i = 0; i < nk; i++) {
    int k = i % NSHAPES;
    switch (kind) {
      case CH_HOPS: launch_hop(g, b, L->s, mode, L->x, L->n); break;
      case CH_CUBLAS: gemm_cublas(L, k); break;
      case CH_ROWDOT:
        launch_rowdot(L->s, mode, L->W[k], L->X, L->Y, SHAPES[k].rows, SHAPES[k].cols, 16);
        break;
      case CH_MIX_CUBLAS:
        launch_hop(g, b, L->s, mode, L->x, L->n);
        gemm_cublas(L, k);
        launch_hop(g, b, L->s, mode, L->x, L->n);
        break;
      case CH_MIX_ROWDOT:
        launch_hop(g, b, L->s, mode, L->x, L->n);
        launch_rowdot(L->s, mode, L->W[k], L->X, L->Y, SHAPES[k].rows, SHAPES[k].cols, 16);
        launch_hop(g, b, L->s, mode, L->x, L->n);
        break;
    }
  }
}

static int kernels_per_item(int kind) { return kind >= CH_MIX_CUBLAS ? 3 : 1; }

/* the element-wise chain's value after `hops` hops from x0, on the CPU */
static uint32_t hop_cpu(uint32_t x0, long hops) {
  uint32_t v = x0;
  for (long h = 0; h < hops; h++) v = v * 1664525u + 1013904223u;
  return v;
}

static int check_hops(lab *L, const uint32_t *x0, long hops) {
  uint32_t *got = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)L->n);
  CK(cudaMemcpy(got, L->x, sizeof(uint32_t) * (size_t)L->n, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int i = 0; i < L->n; i++)
    if (got[i] != hop_cpu(x0[i], hops)) bad++;
  free(got);
  return bad;
}

static double time_case(lab *L, int kind, int nk, int mode, int reps, const uint32_t *x0,
                        int *bad) {
  CK(cudaMemcpy(L->x, x0, sizeof(uint32_t) * (size_t)L->n, cudaMemcpyHostToDevice));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CK(cudaStreamBeginCapture(L->s, cudaStreamCaptureModeGlobal));
  record(L, kind, nk, mode);
  CK(cudaStreamEndCapture(L->s, &graph));
  CK(cudaGraphInstantiate(&exec, graph, 0));
  const int warm = 20;
  for (int i = 0; i < warm; i++) CK(cudaGraphLaunch(exec, L->s));
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventRecord(a, L->s));
  for (int i = 0; i < reps; i++) CK(cudaGraphLaunch(exec, L->s));
  CK(cudaEventRecord(b, L->s));
  CK(cudaEventSynchronize(b));
  float ms = 0;
  CK(cudaEventElapsedTime(&ms, a, b));
  long hops_per_launch = kind == CH_HOPS ? nk : (kind >= CH_MIX_CUBLAS ? 2L * nk : 0);
  *bad = hops_per_launch ? check_hops(L, x0, hops_per_launch * (warm + reps)) : 0;
  CK(cudaEventDestroy(a));
  CK(cudaEventDestroy(b));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  return 1e3 * ms / reps;
}

/* Case 4: `phases` hops as one cooperative launch (outside a graph: a launch's own cost is
 * printed beside the per-phase figure, from the same kernel at 1 phase). Returns 1 when the
 * result is wrong or the grid cannot be resident at once, else 0. */
static int time_grid_sync(lab *L, int phases, int reps, const uint32_t *x0) {
  const dim3 g((unsigned)((L->n + 255) / 256)), b(256);
  int dev = 0, sms = 0, per_sm = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, hops_grid_kernel, 256, 0));
  if ((long)per_sm * sms < (long)g.x) {
    printf("case hops grid.sync: FAIL (%u blocks, only %d resident)\n", g.x, per_sm * sms);
    return 1;
  }
  double us[2];
  const int counts[2] = {1, phases};
  int bad = 0;
  for (int c = 0; c < 2; c++) {
    CK(cudaMemcpy(L->x, x0, sizeof(uint32_t) * (size_t)L->n, cudaMemcpyHostToDevice));
    int hops = counts[c];
    void *args[] = {&L->x, &L->n, &hops};
    const int warm = 20;
    for (int i = 0; i < warm; i++)
      CK(cudaLaunchCooperativeKernel((void *)hops_grid_kernel, g, b, args, 0, L->s));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    CK(cudaEventRecord(e0, L->s));
    for (int i = 0; i < reps; i++)
      CK(cudaLaunchCooperativeKernel((void *)hops_grid_kernel, g, b, args, 0, L->s));
    CK(cudaEventRecord(e1, L->s));
    CK(cudaEventSynchronize(e1));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    us[c] = 1e3 * ms / reps;
    bad += check_hops(L, x0, (long)hops * (warm + reps)) != 0;
    CK(cudaEventDestroy(e0));
    CK(cudaEventDestroy(e1));
  }
  printf("case %-15s %-11s %3d phases: %8.2f us a launch (1 phase: %.2f), %6.3f us a phase%s\n",
         "hops", "grid.sync", phases, us[1], us[0], (us[1] - us[0]) / (phases - 1),
         bad ? "  WRONG RESULT" : "");
  return bad != 0;
}

/* rowdot against an fp64 product, |err| <= cols * 2^-23 * sum|w x| (fp32 accumulation of `cols`
 * exact bf16 x bf16 products: each of the <= cols/32 + 5 additions a lane and the shuffle tree
 * rounds once, relative 2^-24, so cols * 2^-23 is a loose bound) */
static int check_rowdot(lab *L, const uint16_t *const Wh[NSHAPES], const uint16_t *Xh) {
  int bad = 0;
  float *Y = (float *)malloc(sizeof(float) * 16 * 2048);
  for (int k = 0; k < NSHAPES; k++) {
    const shape *sh = &SHAPES[k];
    launch_rowdot(L->s, PDL_OFF, L->W[k], L->X, L->Y, sh->rows, sh->cols, 16);
    CK(cudaStreamSynchronize(L->s));
    CK(cudaMemcpy(Y, L->Y, sizeof(float) * 16 * (size_t)sh->rows, cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int r = 0; r < 16; r++)
      for (int j = 0; j < sh->rows; j++) {
        double ref = 0, mag = 0;
        for (int c = 0; c < sh->cols; c++) {
          uint32_t wb = (uint32_t)Wh[k][(int64_t)j * sh->cols + c] << 16;
          uint32_t xb = (uint32_t)Xh[(int64_t)r * sh->cols + c] << 16;
          float wf, xf;
          memcpy(&wf, &wb, 4);
          memcpy(&xf, &xb, 4);
          ref += (double)wf * xf;
          mag += fabs((double)wf * xf);
        }
        double err = fabs(Y[(int64_t)r * sh->rows + j] - ref), bound = sh->cols * ldexp(1, -23) * mag;
        if (err > bound) bad++;
        if (mag > 0 && err / bound > worst) worst = err / bound;
      }
    printf("check rowdot %-11s %4d x %4d: worst error %.3f of its bound\n", sh->name, sh->rows,
           sh->cols, worst);
  }
  free(Y);
  return bad;
}

static uint16_t bf16_bits(float f) { /* round to nearest even (finite inputs) */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 200;
  if (reps < 1) reps = 200;
  lab L;
  memset(&L, 0, sizeof L);
  L.n = 16 * 1024; /* a 64 KB activation buffer, 64 blocks of 256: a glue kernel's size */
  CK(cudaStreamCreateWithFlags(&L.s, cudaStreamNonBlocking));
  if (cublasCreate(&L.blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(L.blas, L.s) != CUBLAS_STATUS_SUCCESS) {
    fprintf(stderr, "launch_lab: cuBLAS init failed\n");
    return 1;
  }
  void *ws;
  CK(cudaMalloc(&ws, 32u << 20));
  cublasSetWorkspace(L.blas, ws, 32u << 20);
  CK(cudaMalloc(&L.x, sizeof(uint32_t) * (size_t)L.n));
  CK(cudaMalloc(&L.X, 2 * 16 * 2048));
  CK(cudaMalloc(&L.Y, 4 * 16 * 2048));
  srand(12345);
  uint16_t *Wh[NSHAPES], *Xh = (uint16_t *)malloc(2 * 16 * 2048);
  for (int i = 0; i < 16 * 2048; i++) Xh[i] = bf16_bits((float)rand() / RAND_MAX - 0.5f);
  CK(cudaMemcpy(L.X, Xh, 2 * 16 * 2048, cudaMemcpyHostToDevice));
  for (int k = 0; k < NSHAPES; k++) {
    size_t n = (size_t)SHAPES[k].rows * SHAPES[k].cols;
    Wh[k] = (uint16_t *)malloc(2 * n);
    for (size_t i = 0; i < n; i++) Wh[k][i] = bf16_bits(0.1f * ((float)rand() / RAND_MAX - 0.5f));
    CK(cudaMalloc(&L.W[k], 2 * n));
    CK(cudaMemcpy(L.W[k], Wh[k], 2 * n, cudaMemcpyHostToDevice));
  }
  uint32_t *x0 = (uint32_t *)malloc(sizeof(uint32_t) * (size_t)L.n);
  for (int i = 0; i < L.n; i++) x0[i] = (uint32_t)rand() * 2654435761u;
  int fails = check_rowdot(&L, (const uint16_t *const *)Wh, Xh);

  const char *kind_name[] = {"hops", "cublas", "rowdot", "hop+cublas+hop", "hop+rowdot+hop"};
  const char *mode_name[] = {"plain", "pdl-wait", "pdl-trigger"};
  const int items[] = {60, 20, 20, 20, 20};
  for (int kind = CH_HOPS; kind <= CH_MIX_ROWDOT; kind++)
    for (int mode = PDL_OFF; mode <= PDL_TRIGGER; mode++) {
      if (kind == CH_CUBLAS && mode != PDL_OFF) continue; /* cuBLAS launches its own way */
      int bad = 0;
      double us = time_case(&L, kind, items[kind], mode, reps, x0, &bad);
      int nk = items[kind] * kernels_per_item(kind);
      printf("case %-15s %-11s %3d kernels: %8.2f us a graph, %6.3f us a kernel%s\n",
             kind_name[kind], mode_name[mode], nk, us, us / nk, bad ? "  WRONG RESULT" : "");
      fails += bad != 0;
    }
  fails += time_grid_sync(&L, items[CH_HOPS], reps, x0);
  printf("%s: %d failing check(s)\n", fails ? "FAIL" : "ok", fails);
  return fails != 0;
}
