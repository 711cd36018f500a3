/* cpu_unary.c - unary elementwise ops on the CPU: neg, abs, exp, log, sqrt,
 * tanh, sigmoid, relu, not.
 *
 * Each op is one contiguous kernel, `#pragma omp simd` over unit-stride
 * arrays, compiled for AVX-512 / AVX2 / baseline with runtime dispatch
 * (PG_CPU_DISPATCH); exp, log and tanh become calls to glibc's libmvec vector
 * functions (cpu_vecmath.h), sigmoid is 1 / (1 + exp(-x)) on top of them.
 * Strided runs (transposes, step slices, the pool's column splits) are
 * gathered into a stack buffer, computed by the same vector kernel and
 * scattered back, so views get vector transcendentals too. relu keeps NaN
 * (x < 0 ? 0 : x), like NumPy's maximum(x, 0). float16 and bfloat16 run the
 * float32 kernel on blocks widened on the stack and round once at the store
 * (pg_cpu_half_loop_run, cpu_half_convert.c). */
#include <stdint.h>

#include "cpu_half_convert.h"
#include "cpu_kernels.h"
#include "cpu_vecmath.h"

typedef uint8_t pg_bool_t;

#define GATHER 256 /* elements per gather/scatter block of a strided run */

#define UN_LOOP(NAME, T, EXPR)                                                            \
    PG_CPU_DISPATCH(void, NAME##_run, (int64_t n, T *o, const T *a), (n, o, a))                     \
    {                                                                                     \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                               \
        {                                                                                 \
            T x = a[i];                                                                   \
            o[i] = (T)(EXPR);                                                             \
        }                                                                                 \
    }                                                                                     \
    static void NAME(int64_t n, char **p, const int64_t *s, const void *arg)              \
    {                                                                                     \
        (void)arg;                                                                        \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                     \
            NAME##_run(n, (T *)p[0], (const T *)p[1]);                                    \
            return;                                                                       \
        }                                                                                 \
        T in[GATHER], out[GATHER];                                                        \
        for (int64_t i0 = 0; i0 < n; i0 += GATHER) {                                      \
            int64_t w = n - i0 < GATHER ? n - i0 : GATHER;                                \
            for (int64_t i = 0; i < w; i++)                                               \
                in[i] = *(const T *)(p[1] + (i0 + i) * s[1]);                             \
            NAME##_run(w, out, in);                                                       \
            for (int64_t i = 0; i < w; i++)                                               \
                *(T *)(p[0] + (i0 + i) * s[0]) = out[i];                                  \
        }                                                                                 \
    }

UN_LOOP(neg_i64, int64_t, (int64_t)(0ull - (uint64_t)x)) /* wraps like NumPy, no UB */
UN_LOOP(abs_i64, int64_t, x < 0 ? (int64_t)(0ull - (uint64_t)x) : x)
UN_LOOP(relu_i64, int64_t, x < 0 ? 0 : x)
UN_LOOP(not_b, pg_bool_t, !x)
UN_LOOP(abs_b, pg_bool_t, x)
#define UN_FLOAT(T, SUF, F)                                        \
    UN_LOOP(neg_##SUF, T, -x)                                      \
    UN_LOOP(abs_##SUF, T, fabs##F(x))                              \
    UN_LOOP(exp_##SUF, T, exp##F(x))                               \
    UN_LOOP(log_##SUF, T, log##F(x))                               \
    UN_LOOP(sqrt_##SUF, T, sqrt##F(x))                             \
    UN_LOOP(tanh_##SUF, T, tanh##F(x))                             \
    UN_LOOP(sigmoid_##SUF, T, (T)1 / ((T)1 + exp##F(-x)))          \
    UN_LOOP(relu_##SUF, T, x < 0 ? (T)0 : x)
UN_FLOAT(float, f32, f)
UN_FLOAT(double, f64, )

static const pg_cpu_loop_fn un_table[PG_NUM_UNARY][4] = {
    [PG_UN_NEG] = {NULL, neg_i64, neg_f32, neg_f64},
    [PG_UN_ABS] = {abs_b, abs_i64, abs_f32, abs_f64},
    [PG_UN_EXP] = {NULL, NULL, exp_f32, exp_f64},
    [PG_UN_LOG] = {NULL, NULL, log_f32, log_f64},
    [PG_UN_SQRT] = {NULL, NULL, sqrt_f32, sqrt_f64},
    [PG_UN_TANH] = {NULL, NULL, tanh_f32, tanh_f64},
    [PG_UN_SIGMOID] = {NULL, NULL, sigmoid_f32, sigmoid_f64},
    [PG_UN_RELU] = {NULL, relu_i64, relu_f32, relu_f64},
    [PG_UN_NOT] = {not_b, NULL, NULL, NULL},
};

pg_status pg_cpu_unary(const pg_node *node)
{
    int dt = node->src[0].dtype;
    const pg_tensor *ops[2] = {&node->dst, &node->src[0]};
    if (pg_dtype_is_half((pg_dtype)dt)) {
        pg_cpu_half_loop h = {un_table[node->subop][PG_FLOAT32], dt, 2, false, 0};
        if (!h.f32)
            return pg_error_set(PG_ERR_DTYPE, "%s: no CPU kernel for dtype %s", node->name,
                                pg_dtype_name((pg_dtype)dt));
        pg_cpu_iterate(2, ops, NULL, pg_cpu_half_loop_run, &h);
        return PG_OK;
    }
    pg_cpu_loop_fn fn = un_table[node->subop][dt];
    if (!fn)
        return pg_error_set(PG_ERR_DTYPE, "%s: no CPU kernel for dtype %s", node->name,
                            pg_dtype_name((pg_dtype)dt));
    pg_cpu_iterate(2, ops, NULL, fn, NULL);
    return PG_OK;
}
