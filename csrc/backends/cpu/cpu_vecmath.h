/* cpu_vecmath.h - what makes the CPU kernels vector code: run-time ISA dispatch
 * you can force, and glibc's vector math library (libmvec).
 *
 * PG_CPU_DISPATCH marks a hot kernel that has ISA variants. It is written where
 * the function's head would be, and the body follows it:
 *
 *     PG_CPU_DISPATCH(void, add_f32, (int64_t n, float *o, const float *a), (n, o, a))
 *     {
 *         _Pragma("omp simd") for (int64_t i = 0; i < n; i++) o[i] = a[i] + 1;
 *     }
 *
 * (return type, name, parameter list, the same parameters as an argument list).
 * The body becomes an always_inline function, inlined into three static
 * wrappers compiled for AVX-512 (F/DQ/BW/VL), AVX2 (+FMA, F16C) and baseline
 * x86-64, and `name` itself is a static function that picks one from
 * pg_cpu_isa() (cpu_isa.h: the detected level capped by PYGPU_ISA) on every
 * call. So one build runs on any x86-64, uses the widest vectors the CPU has
 * (no -march=native), and every variant can be run and tested on one machine by
 * setting PYGPU_ISA=baseline|avx2. It replaces GCC's target_clones (what
 * PG_CPU_CLONES was), whose ifunc resolver cannot be forced to a lower variant;
 * a kernel written the old way (`static PG_CPU_CLONES void f(...)`) fails to
 * build with a message saying so: move its head into PG_CPU_DISPATCH(...).
 * With other compilers, other architectures or PG_CPU_NO_CLONES the macro is a
 * plain static function head (one baseline body).
 *
 * The project compiles with -std=c11, hence -ffp-contract=off: the AVX2 and
 * AVX-512 variants do not fuse a*b+c into an FMA, so the variants differ only
 * where libmvec's vector functions do (within 4 ulp) and in the order of
 * vectorized sums.
 *
 * glibc's <math.h> declares the libmvec variants only under -ffast-math, which
 * we cannot use (it would fold away the x != x NaN tests the kernels rely on).
 * So the functions the kernels use are declared `omp declare simd` here: inside
 * a `#pragma omp simd` loop (-fopenmp-simd) GCC then calls _ZGVeN16v_expf in the
 * AVX-512 variant, _ZGVdN8v_expf in the AVX2 one, _ZGVbN4v_expf in the baseline
 * (check: objdump -d pygpu/_C*.so | grep -o "_ZGV[a-z]N[0-9]*v_[a-z]*" | sort -u;
 * tests/test_isa_dispatch.py does). libmvec's functions are accurate to 4 ulp,
 * well inside the op table's tolerances. Needs glibc >= 2.35 (tanh, asinh, erf, ... variants).
 * -fno-math-errno lets sqrt become one instruction. */
#ifndef PG_CPU_VECMATH_H
#define PG_CPU_VECMATH_H

#include <math.h>

#include "cpu_isa.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(PG_CPU_NO_CLONES)
#define PG_CPU_TARGET_AVX512 "avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c"
#define PG_CPU_TARGET_AVX2 "avx2,fma,f16c"
#define PG_CPU_DISPATCH(RET, NAME, PARAMS, ARGS)                                               \
    static inline __attribute__((always_inline)) RET NAME##_pg_body PARAMS;                    \
    static __attribute__((target(PG_CPU_TARGET_AVX512), noinline)) RET NAME##_pg_avx512 PARAMS \
    {                                                                                          \
        return NAME##_pg_body ARGS;                                                            \
    }                                                                                          \
    static __attribute__((target(PG_CPU_TARGET_AVX2), noinline)) RET NAME##_pg_avx2 PARAMS     \
    {                                                                                          \
        return NAME##_pg_body ARGS;                                                            \
    }                                                                                          \
    static __attribute__((noinline)) RET NAME##_pg_baseline PARAMS                             \
    {                                                                                          \
        return NAME##_pg_body ARGS;                                                            \
    }                                                                                          \
    static inline RET NAME PARAMS                                                              \
    {                                                                                          \
        pg_isa isa_ = pg_cpu_isa();                                                            \
        if (isa_ >= PG_ISA_AVX512)                                                             \
            return NAME##_pg_avx512 ARGS;                                                      \
        if (isa_ == PG_ISA_AVX2)                                                               \
            return NAME##_pg_avx2 ARGS;                                                        \
        return NAME##_pg_baseline ARGS;                                                        \
    }                                                                                          \
    static inline __attribute__((always_inline)) RET NAME##_pg_body PARAMS
#else
#define PG_CPU_DISPATCH(RET, NAME, PARAMS, ARGS) static RET NAME PARAMS
#endif

/* The old spelling, now a build error where it is written (see above). */
/* (one string: _Pragma takes no concatenation) */
#define PG_CPU_CLONES _Pragma("GCC error \"PG_CPU_CLONES (target_clones) cannot be forced by PYGPU_ISA: write PG_CPU_DISPATCH(ret, name, (params), (args)) as the head instead, see csrc/backends/cpu/cpu_vecmath.h\"")

#if defined(__x86_64__) && defined(__GLIBC__) && !defined(PG_CPU_NO_MVEC)
#pragma omp declare simd notinbranch
float expf(float);
#pragma omp declare simd notinbranch
double exp(double);
#pragma omp declare simd notinbranch
float logf(float);
#pragma omp declare simd notinbranch
double log(double);
#pragma omp declare simd notinbranch
float tanhf(float);
#pragma omp declare simd notinbranch
double tanh(double);
#pragma omp declare simd notinbranch
double cos(double); /* Box-Muller in cpu_generate.c */
#pragma omp declare simd notinbranch
float powf(float, float); /* pow (cpu_elementwise.c) */
#pragma omp declare simd notinbranch
double pow(double, double);
/* the math functions of the op table (cpu_math_unary.c, cpu_math_binary.c): libmvec has a
 * vector variant of each at every width (cos's double is declared above) */
#pragma omp declare simd notinbranch
float sinf(float);
#pragma omp declare simd notinbranch
double sin(double);
#pragma omp declare simd notinbranch
float cosf(float);
#pragma omp declare simd notinbranch
float tanf(float);
#pragma omp declare simd notinbranch
double tan(double);
#pragma omp declare simd notinbranch
float asinf(float);
#pragma omp declare simd notinbranch
double asin(double);
#pragma omp declare simd notinbranch
float acosf(float);
#pragma omp declare simd notinbranch
double acos(double);
#pragma omp declare simd notinbranch
float atanf(float);
#pragma omp declare simd notinbranch
double atan(double);
#pragma omp declare simd notinbranch
float sinhf(float);
#pragma omp declare simd notinbranch
double sinh(double);
#pragma omp declare simd notinbranch
float coshf(float);
#pragma omp declare simd notinbranch
double cosh(double);
#pragma omp declare simd notinbranch
float asinhf(float);
#pragma omp declare simd notinbranch
double asinh(double);
#pragma omp declare simd notinbranch
float acoshf(float);
#pragma omp declare simd notinbranch
double acosh(double);
#pragma omp declare simd notinbranch
float atanhf(float);
#pragma omp declare simd notinbranch
double atanh(double);
#pragma omp declare simd notinbranch
float log1pf(float);
#pragma omp declare simd notinbranch
double log1p(double);
#pragma omp declare simd notinbranch
float expm1f(float);
#pragma omp declare simd notinbranch
double expm1(double);
#pragma omp declare simd notinbranch
float log2f(float);
#pragma omp declare simd notinbranch
double log2(double);
#pragma omp declare simd notinbranch
float log10f(float);
#pragma omp declare simd notinbranch
double log10(double);
#pragma omp declare simd notinbranch
float exp2f(float);
#pragma omp declare simd notinbranch
double exp2(double);
#pragma omp declare simd notinbranch
float erff(float);
#pragma omp declare simd notinbranch
double erf(double);
#pragma omp declare simd notinbranch
float erfcf(float);
#pragma omp declare simd notinbranch
double erfc(double);
#pragma omp declare simd notinbranch
float atan2f(float, float);
#pragma omp declare simd notinbranch
double atan2(double, double);
#pragma omp declare simd notinbranch
float hypotf(float, float);
#pragma omp declare simd notinbranch
double hypot(double, double);
#endif

#endif
