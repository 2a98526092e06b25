/* Programmatic Dependent Launch (PDL, sm_90) for the decode step's kernels (issue 18: a fixture
 * model's step is ~60 small dependent kernels, and the gap between two of them inside a CUDA
 * Graph, not their bytes, sets its time).
 *
 * Without PDL a kernel's grid is launched only after the previous kernel in its stream has
 * finished and flushed its writes. With the launch attribute set, the grid is launched as soon as
 * every block of the previous kernel has called cudaTriggerProgrammaticLaunchCompletion, and its
 * blocks wait in cudaGridDependencySynchronize, which returns once the previous grid has completed
 * and its writes are visible. So a kernel launched by pdl_launch must call pdl_enter() as its
 * first statement, before it reads or writes any global memory: then it computes exactly what it
 * computed without PDL (the same operands, the same order: bits unchanged), and only the launch
 * latency overlaps the previous kernel. tests/analysis/test_pdl_kernels.py checks the rule on the
 * sources: every kernel named in a pdl_launch call begins with pdl_enter().
 *
 * Why the trigger at the top is safe: the next grid's blocks start only once all of this grid's
 * blocks are resident (so they never take this grid's place), and they wait for its completion
 * before touching memory; a kernel two launches later waits for the one in between, which waited
 * for this one. Launched without the attribute (RSSM_PDL=0, or before sm_90), both calls return
 * at once and the launch is the plain one.
 *
 * RSSM_PDL=0 in the environment launches every kernel the plain way (the A/B switch of the
 * measurement in docs/gpu-results.md, "Session 29"); unset or anything else sets the attribute. */
#ifndef RSSM_CUDA_PDL_H
#define RSSM_CUDA_PDL_H

/* CUDA sources only (a public header of src/ssm_cuda, so that src/model_cuda uses it too) */
#ifndef __CUDACC__
#error "src/ssm_cuda/cuda_pdl.h is for CUDA sources (.cu)"
#endif

#include <cuda_runtime.h>

/* The two halves of pdl_enter, for a kernel that loads weights before it waits (below). */
__device__ __forceinline__ void pdl_trigger() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaTriggerProgrammaticLaunchCompletion();
#endif
}
__device__ __forceinline__ void pdl_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();
#endif
}

/* First statement of every kernel that pdl_launch launches. */
__device__ __forceinline__ void pdl_enter() {
  pdl_trigger();
  pdl_wait();
}

/* The one exception: a kernel may begin with pdl_trigger() instead and call pdl_wait() later if,
 * between the two, it reads nothing but a model's weights: arrays uploaded when the model is
 * built and never written while it decodes, so no kernel in flight can be writing them. Those
 * loads then stream while the previous kernel finishes (the tensor-core GEMM, mc_gemm_mma.cu:
 * its weight rows are most of its bytes). Such a kernel is named in WEIGHTS_BEFORE_WAIT of
 * tests/gpu/test_pdl_kernels.py, which checks that it calls pdl_wait(); the bits are those of
 * pdl_enter() first, since the same loads return the same values. */

/* 0 with RSSM_PDL=0, else 1 (read once; cuda_pdl.cu). */
extern "C" int rssm_pdl_enabled(void);

/* kernel<<<grid, block, smem, stream>>>(args...) with the PDL attribute (when enabled). A failed
 * launch is reported as the other launches' are: by cudaGetLastError (launch_ok). */
template <typename... Params, typename... Args>
inline void pdl_launch(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem,
                       cudaStream_t stream, Args... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = rssm_pdl_enabled();
  cfg.attrs = attr;
  cfg.numAttrs = 1;
  (void)cudaLaunchKernelEx(&cfg, kernel, static_cast<Params>(args)...);
}

#endif
