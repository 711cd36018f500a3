/* cpu_vecmath.h - what makes the CPU kernels vector code: runtime ISA dispatch
 * and glibc's vector math library (libmvec).
 *
 * PG_CPU_CLONES marks a hot kernel for GCC's target_clones: the compiler emits
 * an AVX-512, an AVX2 and a baseline x86-64 body and an ifunc resolver picks one
 * when the module loads, so one build runs on any x86-64 and uses the widest
 * vectors the CPU has (no -march=native). Elsewhere (other compilers, other
 * architectures, PG_CPU_NO_CLONES) it is empty and the baseline body is used.
 *
 * glibc's <math.h> declares the libmvec variants only under -ffast-math, which
 * we cannot use (it would fold away the x != x NaN tests the kernels rely on).
 * So the functions the kernels use are declared `omp declare simd` here: inside
 * a `#pragma omp simd` loop (-fopenmp-simd) GCC then calls _ZGVeN16v_expf in the
 * AVX-512 clone, _ZGVdN8v_expf in the AVX2 one, _ZGVbN4v_expf in the baseline
 * (checked with objdump; the module links -lmvec). libmvec's functions are
 * accurate to 4 ulp, well inside the op table's tolerances. Needs glibc >= 2.35
 * (tanh variants). -fno-math-errno lets sqrt become one instruction. */
#ifndef PG_CPU_VECMATH_H
#define PG_CPU_VECMATH_H

#include <math.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && !defined(PG_CPU_NO_CLONES)
#define PG_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PG_CPU_CLONES
#endif

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
#endif

#endif
