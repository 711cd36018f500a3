/* cpu_dnnl.h - oneDNN (libdnnl.so.3, the onednn-cpu-gomp wheel) for the CPU backend: the part
 * of its v3 C API pygpu calls, declared here as cuda_cudnn.c declares cuDNN's (oneDNN's
 * headers are Apache-2.0; the values are v3.2's, stable across v3), and the one loader that
 * its users share: cpu_conv_dnnl.c (convolutions) and cpu_sgemm_dnnl.c (small float32 GEMM
 * panels). The library is loaded with dlopen on first use, never at `import pygpu`, from the
 * paths Python offers (pygpu/backends/mkldnn.py); cpu_dnnl.c says how. */
#ifndef PG_CPU_DNNL_H
#define PG_CPU_DNNL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- oneDNN's C API, the subset used (dnnl.h, dnnl_types.h, dnnl_common_types.h of v3.2) */
typedef int dnnl_status;
typedef int64_t dnnl_dims[12];
typedef struct { int arg; void *memory; } dnnl_exec_arg;
typedef struct {
    int major, minor, patch;
    const char *hash;
    unsigned cpu_runtime, gpu_runtime;
} dnnl_version_t;
enum {
    DNNL_SUCCESS = 0, DNNL_ENGINE_CPU = 1, DNNL_STREAM_DEFAULT = 1, DNNL_F32 = 3,
    DNNL_TAG_ANY = 1, DNNL_TAG_A = 2, DNNL_TAG_ABCD = 5, DNNL_TAG_ABCDE = 6,
    DNNL_FORWARD_TRAINING = 64, DNNL_CONVOLUTION_DIRECT = 1, DNNL_SCRATCHPAD_USER = 1,
    DNNL_QUERY_IMPL_INFO_STR = 8, DNNL_QUERY_SRC_MD = 129, DNNL_QUERY_DIFF_SRC_MD = 130,
    DNNL_QUERY_WEIGHTS_MD = 131, DNNL_QUERY_DIFF_WEIGHTS_MD = 132, DNNL_QUERY_DST_MD = 133,
    DNNL_QUERY_DIFF_DST_MD = 134, DNNL_QUERY_SCRATCHPAD_MD = 136,
    DNNL_ARG_SRC = 1, DNNL_ARG_DST = 17, DNNL_ARG_WEIGHTS = 33, DNNL_ARG_BIAS = 41,
    DNNL_ARG_SCRATCHPAD = 80, DNNL_ARG_DIFF_SRC = 129, DNNL_ARG_DIFF_DST = 145,
    DNNL_ARG_DIFF_WEIGHTS = 161, DNNL_ARG_DIFF_BIAS = 169,
    DNNL_ISA_SSE41 = 0x1, DNNL_ISA_AVX2 = 0x7, DNNL_ISA_AVX512_CORE = 0x27,
    DNNL_ISA_AVX512_CORE_BF16 = 0xe7,
};

/* name, return type, parameters: the functions loaded from libdnnl (dnnl_<name>) */
#define DNNL_API_FUNCS(X)                                                                         \
    X(engine_create, dnnl_status, (void **engine, int kind, size_t index))                       \
    X(stream_create, dnnl_status, (void **stream, void *engine, unsigned flags))                 \
    X(stream_destroy, dnnl_status, (void *stream))                                               \
    X(memory_desc_create_with_tag, dnnl_status,                                                  \
      (void **md, int ndims, const int64_t *dims, int data_type, int tag))                      \
    X(memory_desc_destroy, dnnl_status, (void *md))                                              \
    X(memory_desc_equal, int, (const void *a, const void *b))                                    \
    X(memory_desc_get_size, size_t, (const void *md))                                            \
    X(memory_create, dnnl_status, (void **mem, const void *md, void *engine, void *handle))      \
    X(memory_destroy, dnnl_status, (void *mem))                                                  \
    X(primitive_attr_create, dnnl_status, (void **attr))                                         \
    X(primitive_attr_destroy, dnnl_status, (void *attr))                                         \
    X(primitive_attr_set_scratchpad_mode, dnnl_status, (void *attr, int mode))                   \
    X(convolution_forward_primitive_desc_create, dnnl_status,                                    \
      (void **pd, void *engine, int prop, int alg, const void *src, const void *weights,         \
       const void *bias, const void *dst, const int64_t *strides, const int64_t *dilates,        \
       const int64_t *pad_l, const int64_t *pad_r, const void *attr))                            \
    X(convolution_backward_data_primitive_desc_create, dnnl_status,                              \
      (void **pd, void *engine, int alg, const void *diff_src, const void *weights,              \
       const void *diff_dst, const int64_t *strides, const int64_t *dilates,                     \
       const int64_t *pad_l, const int64_t *pad_r, const void *hint, const void *attr))          \
    X(convolution_backward_weights_primitive_desc_create, dnnl_status,                           \
      (void **pd, void *engine, int alg, const void *src, const void *diff_weights,              \
       const void *diff_bias, const void *diff_dst, const int64_t *strides,                      \
       const int64_t *dilates, const int64_t *pad_l, const int64_t *pad_r, const void *hint,     \
       const void *attr))                                                                        \
    X(reorder_primitive_desc_create, dnnl_status,                                                \
      (void **pd, const void *src_md, void *src_engine, const void *dst_md, void *dst_engine,    \
       const void *attr))                                                                        \
    X(primitive_desc_query, dnnl_status, (const void *pd, int what, int index, void *result))    \
    X(primitive_desc_query_md, const void *, (const void *pd, int what, int index))              \
    X(primitive_desc_destroy, dnnl_status, (void *pd))                                           \
    X(primitive_create, dnnl_status, (void **prim, const void *pd))                              \
    X(primitive_destroy, dnnl_status, (void *prim))                                              \
    X(primitive_execute, dnnl_status,                                                            \
      (const void *prim, void *stream, int nargs, const dnnl_exec_arg *args))                    \
    X(stream_wait, dnnl_status, (void *stream))                                                  \
    X(set_max_cpu_isa, dnnl_status, (int isa))                                                   \
    X(version, const dnnl_version_t *, (void))                                                  \
    X(sgemm, dnnl_status,                                                                        \
      (char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,  \
       int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc))

/* the loaded functions (valid once pg_cpu_dnnl_loaded() returned true), the OpenMP runtime's
 * thread count calls (libdnnl's own, found through its dependencies; NULL if absent) and the
 * CPU engine */
typedef struct pg_dnnl_api {
#define DNNL_FIELD(name, ret, params) ret(*name) params;
    DNNL_API_FUNCS(DNNL_FIELD)
#undef DNNL_FIELD
    void (*omp_set_num_threads)(int);
    int (*omp_get_max_threads)(void);
    void *engine;
} pg_dnnl_api;
extern pg_dnnl_api pg_dnnl;

void pg_cpu_dnnl_offer(const char *paths);             /* the paths to try, "\n"-separated */
bool pg_cpu_dnnl_loaded(void);                          /* loads it on the first call */
const char *pg_cpu_dnnl_why(void);                      /* NULL when loaded, else why not */
const char *pg_cpu_dnnl_version(char *buf, size_t len); /* "3.2.0", or NULL */
/* In a child forked after the library loaded: its users keep pygpu's own kernels there
 * (oneDNN's OpenMP threads do not survive a fork; a convolution on oneDNN after one hung). */
bool pg_cpu_dnnl_forked(void);

#endif
