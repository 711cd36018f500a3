/* cpu_cast.c - COPY nodes on the CPU: a copy or a cast between any two dtypes, any
 * strides; and the scalar store the fill and binary kernels use.
 *
 * One load and two stores per dtype, written once per kind of dtype and instantiated for
 * every row of pg_dtype.h's table, rather than one loop per (source, destination) pair:
 * a run is cast a block at a time through a stack buffer of the widest type of the
 * source's kind, int64 for integers and bool, double for floats (exact: every element of
 * every dtype is one of these). The destination then rounds once, and rounds as PyTorch
 * does on x86:
 *   - an integer to a narrower one wraps (two's complement), to bool is x != 0;
 *   - a float to bool is x != 0 (NaN is true); to int64 truncates, and NaN or out of
 *     range gives INT64_MIN (x86's conversion); to int32, int16, int8 and uint8 it goes
 *     through int32 (out of range and NaN: INT32_MIN), then wraps: (int8) 200.0 is -56,
 *     (int16) 1e10 is 0; uint8 goes through int64: (uint8) -200.0 is 56, as torch's .to()
 *     gives;
 *     uint16 goes through int32 and uint32 through int64 (-1.0 is 65535 and 4294967295, 5e9
 *     to uint32 is 705032704: c10's scalar conversion; PyTorch's vectorized loop differs from
 *     its own scalar one out of range), and uint64 takes x86's unsigned conversion: a value
 *     in [0, 2**64) truncates, a negative one in [-2**63, 0) wraps, 2**64 and above give 0,
 *     NaN and the rest 2**63;
 *   - uint64 is loaded as its bits and converts to a float as unsigned (2**64-1 is 1.8e19);
 *   - float16 and bfloat16 round to nearest even from the double (pg_half.h), once;
 *   - the float8 dtypes round as PyTorch's casts (pg_fp8.h: through float32, to nearest
 *     even; float8_e4m3fn saturates at +-448, the fnuz ones give their NaN).
 * Unit-stride float32 <-> half runs (autocast's casts) take the vector converters
 * (cpu_half_convert.c), and a copy to the same dtype moves the bits (NaN payloads too). */
#include <stdint.h>
#include <string.h>

#include "../../core/pg_fp8.h"
#include "../../core/pg_half.h"
#include "cpu_half_convert.h"
#include "cpu_kernels.h"

#define CAST_BLOCK 256

typedef union {
    int64_t i[CAST_BLOCK]; /* an integer or bool source (uint64: its bits) */
    double f[CAST_BLOCK];  /* a float source */
} wide_block;

typedef void (*load_fn)(int64_t n, const char *p, int64_t s, wide_block *w);
typedef void (*store_fn)(int64_t n, char *p, int64_t s, const wide_block *w);

/* float -> int64 the way x86 (and so NumPy and PyTorch) does, without C's undefined
 * behaviour; and -> int32, through which the narrower integers go */
static inline int64_t f2i64(double x)
{
    return (x >= -9223372036854775808.0 && x < 9223372036854775808.0) ? (int64_t)x : INT64_MIN;
}
static inline int32_t f2i32(double x)
{
    return (x > -2147483649.0 && x < 2147483648.0) ? (int32_t)x : INT32_MIN;
}
/* float -> uint64 as PyTorch's does on x86 (above) */
static inline uint64_t f2u64(double x)
{
    if (x >= 0 && x < 18446744073709551616.0)
        return (uint64_t)x;
    if (x < 0 && x >= -9223372036854775808.0)
        return (uint64_t)(int64_t)x;
    return x >= 18446744073709551616.0 ? 0 : 1ull << 63;
}

/* the loop of a load or a store: unit stride vectorizes, any other stride is a plain loop */
#define CAST_RUN(T, BODY)                                                         \
    if (s == (int64_t)sizeof(T)) {                                                         \
        _Pragma("omp simd") for (int64_t k = 0; k < n; k++) { T *e = (T *)(p) + k; BODY; } \
    } else {                                                                               \
        for (int64_t k = 0; k < n; k++) { T *e = (T *)((p) + k * s); BODY; }               \
    }

/* integers and bool: loaded as int64; stored from int64 by wrapping (bool: x != 0) and
 * from double as above */
#define CAST_INT(ID, T, FROM_INT, FROM_DOUBLE)                                             \
    static void load_##ID(int64_t n, const char *p, int64_t s, wide_block *w)              \
    {                                                                                      \
        CAST_RUN(const T, w->i[k] = (int64_t)*e)                                        \
    }                                                                                      \
    static void store_i_##ID(int64_t n, char *p, int64_t s, const wide_block *w)           \
    {                                                                                      \
        CAST_RUN(T, *e = (T)FROM_INT(w->i[k]))                                          \
    }                                                                                      \
    static void store_f_##ID(int64_t n, char *p, int64_t s, const wide_block *w)           \
    {                                                                                      \
        CAST_RUN(T, *e = (T)FROM_DOUBLE(w->f[k]))                                       \
    }                                                                                      \
    static void store_u_##ID(int64_t n, char *p, int64_t s, const wide_block *w)           \
    {                                                                                      \
        CAST_RUN(T, *e = (T)FROM_INT(w->i[k])) /* the same bits wrap the same */        \
    }
/* floats: loaded as double; stored from either by C's conversion (rounds once) */
#define CAST_FLOAT(ID, T)                                                                  \
    static void load_##ID(int64_t n, const char *p, int64_t s, wide_block *w)              \
    {                                                                                      \
        CAST_RUN(const T, w->f[k] = (double)*e)                                         \
    }                                                                                      \
    static void store_i_##ID(int64_t n, char *p, int64_t s, const wide_block *w)           \
    {                                                                                      \
        CAST_RUN(T, *e = (T)w->i[k])                                                    \
    }                                                                                      \
    static void store_f_##ID(int64_t n, char *p, int64_t s, const wide_block *w)           \
    {                                                                                      \
        CAST_RUN(T, *e = (T)w->f[k])                                                    \
    }                                                                                      \
    static void store_u_##ID(int64_t n, char *p, int64_t s, const wide_block *w)           \
    {                                                                                      \
        CAST_RUN(T, *e = (T)(uint64_t)w->i[k])                                          \
    }
/* float16 / bfloat16: their bits through pg_half.h, rounding once from the double (an
 * int64 beyond 2**53 is rounded to a double first, as PyTorch's cast through float is) */
#define CAST_BITS(ID, B, TO_D, FROM_D)                                                     \
    static void load_##ID(int64_t n, const char *p, int64_t s, wide_block *w)              \
    {                                                                                      \
        CAST_RUN(const B, w->f[k] = TO_D(*e))                                           \
    }                                                                                      \
    static void store_i_##ID(int64_t n, char *p, int64_t s, const wide_block *w)           \
    {                                                                                      \
        CAST_RUN(B, *e = FROM_D((double)w->i[k]))                                       \
    }                                                                                      \
    static void store_u_##ID(int64_t n, char *p, int64_t s, const wide_block *w)           \
    {                                                                                      \
        CAST_RUN(B, *e = FROM_D((double)(uint64_t)w->i[k]))                             \
    }                                                                                      \
    static void store_f_##ID(int64_t n, char *p, int64_t s, const wide_block *w)           \
    {                                                                                      \
        CAST_RUN(B, *e = FROM_D(w->f[k]))                                               \
    }
#define CAST_HALF(ID, TO_D, FROM_D) CAST_BITS(ID, uint16_t, TO_D, FROM_D)

#define NONZERO(x) ((x) != 0)
#define WRAP(x) (x) /* (T)x: two's complement, GCC's conversion to a narrower integer */
/* which conversion a signed integer takes from a double, by its size: int64's own, else
 * int32's (x86's cvttsd2si); an unsigned one goes through int64 (c10's
 * static_cast_with_inter_type), so (uint8) -2147483649.0 is 255 */
#define F2I_8 f2i64
#define F2I_4 f2i32
#define F2I_2 f2i32
#define F2I_1 f2i32
/* ... and an unsigned one (c10: uint8 and uint32 via int64, uint16 via int32, uint64 above) */
#define F2U_8 f2u64
#define F2U_4 f2i64
#define F2U_2 f2i32
#define F2U_1 f2i64
#define CAST_ROW_KIND_BOOL(ID, T, size) CAST_INT(ID, T, NONZERO, NONZERO)
#define CAST_ROW_KIND_SINT(ID, T, size) CAST_INT(ID, T, WRAP, F2I_##size)
#define CAST_ROW_KIND_UINT(ID, T, size) CAST_INT(ID, T, WRAP, F2U_##size)
#define CAST_ROW_KIND_FLOAT(ID, T, size) CAST_FLOAT(ID, T)
#define CAST_ROW_KIND_HALF(ID, T, size) /* below: their own bits */
#define CAST_ROW_KIND_FP8(ID, T, size) CAST_BITS(ID, uint8_t, pg_fp8_to_double_##ID, pg_fp8_from_double_##ID)
#define CAST_ROW(ID, name, size, T, kind, ...) CAST_ROW_##kind(ID, T, size)
PG_REAL_DTYPES(CAST_ROW) /* the core casts a complex tensor through its real view */
CAST_HALF(FLOAT16, pg_f16_to_double, pg_f16_from_double)
CAST_HALF(BFLOAT16, pg_bf16_to_double, pg_bf16_from_double)

/* what a source's load leaves in the block, and so which store reads it */
enum { LOADS_DOUBLE, LOADS_INT, LOADS_UINT64 };
static const struct cast_fns {
    load_fn load;
    store_fn store_i, store_u, store_f;
    unsigned char loads; /* LOADS_* */
} cast_fns[PG_NUM_DTYPES] = {
#define CAST_FNS(ID, name, size, T, kind, ...)                                             \
    [PG_##ID] = {load_##ID, store_i_##ID, store_u_##ID, store_f_##ID,                     \
                 PG_##ID == PG_UINT64 ? LOADS_UINT64                                      \
                 : PG_##kind == PG_KIND_BOOL || PG_##kind == PG_KIND_SINT ||              \
                         PG_##kind == PG_KIND_UINT                                        \
                     ? LOADS_INT                                                          \
                     : LOADS_DOUBLE},
    PG_REAL_DTYPES(CAST_FNS)
#undef CAST_FNS
};

typedef struct {
    int src, dst;
} cast_arg;

/* a copy to the same dtype: the bits, by element size */
#define MOVE_BITS(T)                                                                       \
    do {                                                                                   \
        if (s[0] == (int64_t)sizeof(T) && s[1] == (int64_t)sizeof(T)) {                    \
            memmove(p[0], p[1], (size_t)n * sizeof(T));                                    \
        } else {                                                                           \
            for (int64_t k = 0; k < n; k++)                                                \
                memcpy(p[0] + k * s[0], p[1] + k * s[1], sizeof(T));                       \
        }                                                                                  \
    } while (0)

static void cast_loop(int64_t n, char **p, const int64_t *s, const void *arg)
{
    const cast_arg *a = arg;
    if (a->src == a->dst) {
        switch (pg_dtype_size((pg_dtype)a->src)) {
        case 1: MOVE_BITS(uint8_t); break;
        case 2: MOVE_BITS(uint16_t); break;
        case 4: MOVE_BITS(uint32_t); break;
        default: MOVE_BITS(uint64_t); break;
        }
        return;
    }
    /* unit-stride float32 <-> half (autocast's casts): the vector converters */
    if (a->src == PG_FLOAT32 && s[1] == 4 && s[0] == 2 && pg_dtype_is_half((pg_dtype)a->dst)) {
        pg_cpu_f32_to_half(a->dst, n, (const float *)p[1], (uint16_t *)p[0]);
        return;
    }
    if (a->dst == PG_FLOAT32 && s[0] == 4 && s[1] == 2 && pg_dtype_is_half((pg_dtype)a->src)) {
        pg_cpu_half_to_f32(a->src, n, (const uint16_t *)p[1], (float *)p[0]);
        return;
    }
    const struct cast_fns *from = &cast_fns[a->src], *to = &cast_fns[a->dst];
    store_fn store = from->loads == LOADS_INT      ? to->store_i
                     : from->loads == LOADS_UINT64 ? to->store_u
                                                   : to->store_f;
    wide_block w;
    for (int64_t i0 = 0; i0 < n; i0 += CAST_BLOCK) {
        int64_t m = n - i0 < CAST_BLOCK ? n - i0 : CAST_BLOCK;
        from->load(m, p[1] + i0 * s[1], s[1], &w);
        store(m, p[0] + i0 * s[0], s[0], &w);
    }
}

pg_status pg_cpu_copy(const pg_node *node)
{
    cast_arg a = {node->src[0].dtype, node->dst.dtype};
    const pg_tensor *ops[2] = {&node->dst, &node->src[0]};
    pg_cpu_iterate(2, ops, NULL, cast_loop, &a);
    return PG_OK;
}

void pg_cpu_scalar_store(int dtype, double f, int64_t i, void *out)
{
    wide_block w;
    const struct cast_fns *to = &cast_fns[dtype];
    if (pg_dtype_is_float((pg_dtype)dtype) || pg_dtype_is_fp8((pg_dtype)dtype)) {
        w.f[0] = f;
        to->store_f(1, out, (int64_t)pg_dtype_size((pg_dtype)dtype), &w);
    } else {
        w.i[0] = i;
        to->store_i(1, out, (int64_t)pg_dtype_size((pg_dtype)dtype), &w);
    }
}
