/* Whether the current device has the tensor-core instructions the bf16 GEMM kernels use
 * (mma.sync with bf16, ldmatrix, cp.async: sm_80 or later); shared by mc_gemm_mma.cu and
 * mc_gemm_wide.cu, each of which reads it once per process. CUDA sources only. */
#ifndef RSSM_MODEL_CUDA_MC_MMA_DEVICE_CUH
#define RSSM_MODEL_CUDA_MC_MMA_DEVICE_CUH

#include <cuda_runtime.h>

inline bool mc_device_has_mma() {
  int dev = 0, major = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess)
    return false;
  return major >= 8;
}

#endif
