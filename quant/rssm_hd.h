/* RSSM_HD marks the functions that the CPU and the CUDA code share (quant/numerics.h,
 * src/ssm/ssm_math.h, src/model/moe_route.h,
 * src/model/dt_clamp.h): __host__ __device__ under nvcc, plain static inline
 * in C, so that both compile the same arithmetic from the same text. */
#ifndef RSSM_QUANT_RSSM_HD_H
#define RSSM_QUANT_RSSM_HD_H

#ifdef __CUDACC__
#define RSSM_HD __host__ __device__ static inline
#else
#define RSSM_HD static inline
#endif

#endif
