/* cpu_unary.c - the CPU kernels of the op table's unary ops (pg_ops.def's
 * PG_UNARY rows): one UN_LOOP line per (op, element type) and the op's row of
 * un_table. A bool result (isnan, isfinite: the `out` column) is UN_LOOP_TO.
 * Also the CLAMP node (clamp_ with two number bounds: one pass, not maximum_ then
 * minimum_), a unary op with two parameters, and hardtanh's gradient as the same node
 * (p.clamp.grad: dy masked by the output, one pass).
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
#include "cpu_loops.h"
#include "cpu_vecmath.h"

UN_LOOP(not_b, pg_bool_t, !x)
UN_LOOP(same_b, pg_bool_t, x) /* abs and sign of a bool */
UN_LOOP_TO(isnan_b, pg_bool_t, pg_bool_t, ((void)x, 0))
UN_LOOP_TO(isfinite_b, pg_bool_t, pg_bool_t, ((void)x, 1))
static const pg_cpu_loop_fn un_b[PG_NUM_UNARY] = {
    [PG_UN_ABS] = same_b, [PG_UN_NOT] = not_b, [PG_UN_SIGN] = same_b,
    [PG_UN_ISNAN] = isnan_b, [PG_UN_ISFINITE] = isfinite_b};

/* round: nearbyint rounds halves to even in the default rounding mode, as PyTorch */
#define UN_FLOAT(T, SUF, F)                                        \
    UN_LOOP(neg_##SUF, T, -x)                                      \
    UN_LOOP(abs_##SUF, T, fabs##F(x))                              \
    UN_LOOP(exp_##SUF, T, exp##F(x))                               \
    UN_LOOP(log_##SUF, T, log##F(x))                               \
    UN_LOOP(sqrt_##SUF, T, sqrt##F(x))                             \
    UN_LOOP(tanh_##SUF, T, tanh##F(x))                             \
    UN_LOOP(sigmoid_##SUF, T, (T)1 / ((T)1 + exp##F(-x)))          \
    UN_LOOP(relu_##SUF, T, x < 0 ? (T)0 : x)                       \
    UN_LOOP(sign_##SUF, T, (T)((x > 0) - (x < 0))) /* NaN: 0 */   \
    UN_LOOP(floor_##SUF, T, floor##F(x))                           \
    UN_LOOP(ceil_##SUF, T, ceil##F(x))                             \
    UN_LOOP(round_##SUF, T, nearbyint##F(x))                       \
    UN_LOOP(trunc_##SUF, T, trunc##F(x))                           \
    UN_LOOP(reciprocal_##SUF, T, (T)1 / x)                         \
    UN_LOOP(rsqrt_##SUF, T, (T)1 / sqrt##F(x))                     \
    UN_LOOP_TO(isnan_##SUF, T, pg_bool_t, x != x)                  \
    UN_LOOP_TO(isfinite_##SUF, T, pg_bool_t, x - x == 0) /* inf - inf and NaN are NaN */ \
    static const pg_cpu_loop_fn un_##SUF[PG_NUM_UNARY] = {                               \
        [PG_UN_NEG] = neg_##SUF, [PG_UN_ABS] = abs_##SUF, [PG_UN_EXP] = exp_##SUF,       \
        [PG_UN_LOG] = log_##SUF, [PG_UN_SQRT] = sqrt_##SUF, [PG_UN_TANH] = tanh_##SUF,   \
        [PG_UN_SIGMOID] = sigmoid_##SUF, [PG_UN_RELU] = relu_##SUF,                       \
        [PG_UN_SIGN] = sign_##SUF, [PG_UN_FLOOR] = floor_##SUF, [PG_UN_CEIL] = ceil_##SUF, \
        [PG_UN_ROUND] = round_##SUF, [PG_UN_TRUNC] = trunc_##SUF,                         \
        [PG_UN_RECIPROCAL] = reciprocal_##SUF, [PG_UN_RSQRT] = rsqrt_##SUF,               \
        [PG_UN_ISNAN] = isnan_##SUF, [PG_UN_ISFINITE] = isfinite_##SUF};
UN_FLOAT(float, f32, f)
UN_FLOAT(double, f64, )

/* The integer dtypes, one body per row of PG_INT_DTYPES: negation and abs wrap in the
 * calc type U (abs of int8's -128 is -128, as PyTorch's); rounding gives the integer back;
 * an integer is never NaN and always finite. The FLOAT rows (exp, ...) compute integers
 * in float32 and never come here. */
#define UN_INT(ID, name, size, T, kind, U, ...)                                           \
    UN_LOOP(neg_##ID, T, (T)(0u - (U)x))                                                  \
    UN_LOOP(abs_##ID, T, PG_INT_NEG(kind, x) ? (T)(0u - (U)x) : x)                        \
    UN_LOOP(relu_##ID, T, PG_INT_NEG(kind, x) ? (T)0 : x)                                 \
    UN_LOOP(sign_##ID, T, (T)((x > 0) - PG_INT_NEG(kind, x)))                             \
    UN_LOOP(same_##ID, T, x) /* floor, ceil, round, trunc of an integer */                \
    UN_LOOP_TO(isnan_##ID, T, pg_bool_t, ((void)x, 0))                                    \
    UN_LOOP_TO(isfinite_##ID, T, pg_bool_t, ((void)x, 1))                                 \
    static const pg_cpu_loop_fn un_##ID[PG_NUM_UNARY] = {                                 \
        [PG_UN_NEG] = neg_##ID, [PG_UN_ABS] = abs_##ID, [PG_UN_RELU] = relu_##ID,         \
        [PG_UN_SIGN] = sign_##ID, [PG_UN_FLOOR] = same_##ID, [PG_UN_CEIL] = same_##ID,    \
        [PG_UN_ROUND] = same_##ID, [PG_UN_TRUNC] = same_##ID, [PG_UN_ISNAN] = isnan_##ID, \
        [PG_UN_ISFINITE] = isfinite_##ID};
PG_INT_DTYPES(UN_INT)

/* [dtype][subop]; NULL where the op table's `in` column sends no such dtype (float16 and
 * bfloat16 run the float32 row, pg_cpu_half_loop_run) */
#define UN_INT_ENTRY(ID, ...) [PG_##ID] = un_##ID,
static const pg_cpu_loop_fn *const un_table[PG_NUM_DTYPES] = {
    [PG_BOOL] = un_b, [PG_FLOAT32] = un_f32, [PG_FLOAT64] = un_f64, PG_INT_DTYPES(UN_INT_ENTRY)};

/* clamp_ with number bounds, one pass: x < lo -> lo, then > hi -> hi, so NaN stays NaN
 * and lo > hi gives hi, as PyTorch's min(max(x, lo), hi). The bounds are rounded to the
 * element type first (a binary node's scalar is applied the same way). */
#define CLAMP_LOOP(SUF, T)                                                                \
    PG_CPU_DISPATCH(void, clamp_run_##SUF, (int64_t n, T *o, const T *a, T lo, T hi),     \
                    (n, o, a, lo, hi))                                                    \
    {                                                                                     \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                               \
        {                                                                                 \
            T x = a[i] < lo ? lo : a[i];                                                  \
            o[i] = x > hi ? hi : x;                                                       \
        }                                                                                 \
    }                                                                                     \
    static void clamp_##SUF(int64_t n, char **p, const int64_t *s, const void *arg)      \
    {                                                                                     \
        const double *b = arg;                                                            \
        T lo = (T)b[0], hi = (T)b[1];                                                     \
        if (s[0] == sizeof(T) && s[1] == sizeof(T)) {                                     \
            clamp_run_##SUF(n, (T *)p[0], (const T *)p[1], lo, hi);                       \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            T x = *(const T *)(p[1] + i * s[1]);                                          \
            x = x < lo ? lo : x;                                                          \
            *(T *)(p[0] + i * s[0]) = x > hi ? hi : x;                                    \
        }                                                                                 \
    }
CLAMP_LOOP(f32, float)
CLAMP_LOOP(f64, double)

/* hardtanh's gradient (CLAMP with p.clamp.grad): dy where the output y is strictly between
 * the bounds, else 0 (a NaN too: PyTorch's vectorized kernel's answer; its scalar tail of
 * fewer than a vector's elements passes dy there instead). One pass over dy and y. */
#define CLAMP_GRAD_LOOP(SUF, T)                                                           \
    PG_CPU_DISPATCH(void, clamp_grad_run_##SUF,                                           \
                    (int64_t n, T *o, const T *g, const T *y, T lo, T hi),                \
                    (n, o, g, y, lo, hi))                                                 \
    {                                                                                     \
        _Pragma("omp simd") for (int64_t i = 0; i < n; i++)                               \
            o[i] = (y[i] > lo) & (y[i] < hi) ? g[i] : (T)0;                                \
    }                                                                                     \
    static void clamp_grad_##SUF(int64_t n, char **p, const int64_t *s, const void *arg) \
    {                                                                                     \
        const double *b = arg;                                                            \
        T lo = (T)b[0], hi = (T)b[1];                                                     \
        if (s[0] == sizeof(T) && s[1] == sizeof(T) && s[2] == sizeof(T)) {                \
            clamp_grad_run_##SUF(n, (T *)p[0], (const T *)p[1], (const T *)p[2], lo, hi); \
            return;                                                                       \
        }                                                                                 \
        for (int64_t i = 0; i < n; i++) {                                                 \
            T y = *(const T *)(p[2] + i * s[2]);                                          \
            *(T *)(p[0] + i * s[0]) =                                                     \
                (y > lo) & (y < hi) ? *(const T *)(p[1] + i * s[1]) : (T)0;               \
        }                                                                                 \
    }
CLAMP_GRAD_LOOP(f32, float)
CLAMP_GRAD_LOOP(f64, double)

pg_status pg_cpu_clamp(const pg_node *node)
{
    int dt = node->src[0].dtype;
    if (dt != PG_FLOAT32 && dt != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: no CPU kernel for dtype %s", node->name,
                            pg_dtype_name((pg_dtype)dt));
    const double bounds[2] = {node->p.clamp.lo, node->p.clamp.hi};
    if (node->p.clamp.grad) {
        const pg_tensor *ops[3] = {&node->dst, &node->src[0], &node->src[1]};
        pg_cpu_iterate(3, ops, NULL, dt == PG_FLOAT32 ? clamp_grad_f32 : clamp_grad_f64, bounds);
        return PG_OK;
    }
    const pg_tensor *ops[2] = {&node->dst, &node->src[0]};
    pg_cpu_iterate(2, ops, NULL, dt == PG_FLOAT32 ? clamp_f32 : clamp_f64, bounds);
    return PG_OK;
}

/* this file's kernel of (op, dtype), else the math functions' (cpu_math_unary.c) */
static pg_cpu_loop_fn unary_kernel(int op, int dt)
{
    if (un_table[dt] && un_table[dt][op])
        return un_table[dt][op];
    return pg_cpu_math_unary[dt] ? pg_cpu_math_unary[dt][op] : NULL;
}

pg_status pg_cpu_unary(const pg_node *node)
{
    int dt = node->src[0].dtype;
    const pg_tensor *ops[2] = {&node->dst, &node->src[0]};
    if (pg_dtype_is_half((pg_dtype)dt)) {
        pg_cpu_half_loop h = {unary_kernel(node->subop, PG_FLOAT32), dt, 2,
                              pg_unary_out(node->subop) == PG_OUT_BOOL, 0};
        if (!h.f32)
            return pg_error_set(PG_ERR_DTYPE, "%s: no CPU kernel for dtype %s", node->name,
                                pg_dtype_name((pg_dtype)dt));
        pg_cpu_iterate(2, ops, NULL, pg_cpu_half_loop_run, &h);
        return PG_OK;
    }
    pg_cpu_loop_fn fn = unary_kernel(node->subop, dt);
    if (!fn)
        return pg_error_set(PG_ERR_DTYPE, "%s: no CPU kernel for dtype %s", node->name,
                            pg_dtype_name((pg_dtype)dt));
    pg_cpu_iterate(2, ops, NULL, fn, NULL);
    return PG_OK;
}
