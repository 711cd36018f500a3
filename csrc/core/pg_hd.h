/* pg_hd.h - PG_HD, the marker of a header function that is compiled both for the
 * C core (gcc: static inline) and for the CUDA kernels (nvcc or NVRTC, both of which
 * define __CUDACC__: __host__ __device__, forced inline), so that the CPU and the GPU
 * run the very same code for bit-exact results (pg_half.h's rounding, pg_philox.h's
 * random numbers). Plain C; no includes. */
#ifndef PG_HD_H
#define PG_HD_H

#ifdef __CUDACC__
#define PG_HD __host__ __device__ __forceinline__
#else
#define PG_HD static inline
#endif

#endif
