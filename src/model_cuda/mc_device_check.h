/* Whether this build and machine can run the GPU runtime (docs/gpu-runtime.md). A header of its
 * own so that command files can ask without seeing the model types. */
#ifndef RSSM_MODEL_CUDA_MC_DEVICE_CHECK_H
#define RSSM_MODEL_CUDA_MC_DEVICE_CHECK_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 0 when a CUDA device is usable by this build; otherwise 2 with one line in err: "built without
 * CUDA", "no CUDA device (...)", or NVIDIA_TF32_OVERRIDE set to something other than 0 (it would
 * make the fp32 GEMMs TF32 behind the runtime's back). */
int mc_device_check(char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
