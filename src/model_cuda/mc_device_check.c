/* Can this build and machine run the GPU path? (mc_model.h). Compiled with or without CUDA, so
 * that `--device cuda` gives one clear answer either way (docs/gpu-runtime.md: exit status 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/model_cuda/mc_device_check.h"

#ifdef RSSM_HAVE_CUDA
#include <cuda_runtime.h>
#endif

int mc_device_check(char *err, size_t errlen) {
#ifndef RSSM_HAVE_CUDA
  snprintf(err, errlen, "this replayssm was built without CUDA (rebuild with nvcc available and "
           "-DRSSM_CUDA=ON)");
  return 2;
#else
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n < 1) {
    snprintf(err, errlen, "no CUDA device (cudaGetDeviceCount: %s)",
             e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return 2;
  }
  /* TF32 would silently replace the fp32 GEMMs of every configuration, the reference included */
  const char *tf = getenv("NVIDIA_TF32_OVERRIDE");
  if (tf && strcmp(tf, "0") != 0) {
    snprintf(err, errlen, "NVIDIA_TF32_OVERRIDE=%s would allow TF32 in the fp32 GEMMs (unset it "
             "or set it to 0)", tf);
    return 2;
  }
  return 0;
#endif
}
