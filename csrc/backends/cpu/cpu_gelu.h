/* cpu_gelu.h - the exact GELU and its derivative on one element, for the vector loops of
 * the gelu row (cpu_math_unary.c) and the gelu_backward row (cpu_math_binary.c).
 *
 * float32: 1 + erf(z), z = x / sqrt 2, as PyTorch's CPU kernels approximate erf
 * (ATen's Vectorized<float>::erf: Abramowitz & Stegun 7.1.26, |error in erf| <= 1.5e-7),
 *     t = 1 / (1 + p |z|),  r = t (a1 + t (a2 + t (a3 + t (a4 + t a5)))),  e = exp(-z^2),
 *     1 + erf(z) = r e (z < 0) or 2 - r e (z >= 0),
 * written as 1 + erf directly, so that it does not cancel for negative x the way
 * 1 + (-(1 - r e)) does (PyTorch's float32 GELU loses up to 28% relative below x = -5;
 * this form stays within 4.3e-7 absolute and 0.2% relative of the exact GELU, tests in
 * tests/test_pytorch_nn.py). One libmvec expf and one division a vector, where glibc's erff
 * costs more (issue 45: the ViT's 12 GELUs a step ran at 0.51x torch's CPU time). The
 * derivative Phi(x) + x phi(x) reuses e: exp(-z^2) = exp(-x^2 / 2).
 * float64 keeps libm's erf (PyTorch's double erf is accurate to 1 ulp too). */
#ifndef PG_CPU_GELU_H
#define PG_CPU_GELU_H

#include <math.h>

#include "cpu_vecmath.h"

#define PG_GELU_INLINE static inline __attribute__((always_inline))

/* 1 + erf(z) and exp(-z^2), float32 (above) */
PG_GELU_INLINE float pg_one_plus_erf_f32(float z, float *e_out)
{
    float a = fabsf(z);
    float t = 1.0f / (0.3275911f * a + 1.0f);
    float r = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t +
               0.254829592f) * t;
    /* below -87 exp(v) is not a normal float: 0 there, and expf is called on -87 at most,
     * since a vector with one lane that underflows takes libmvec's scalar path (10x slower) */
    float v = -a * a;
    float e = v < -87.0f ? 0.0f : expf(v < -87.0f ? -87.0f : v);
    *e_out = e;
    float re = r * e;
    return z < 0.0f ? re : 2.0f - re;
}

/* GELU(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) */
PG_GELU_INLINE float pg_gelu_f32(float x)
{
    float e;
    return x * 0.5f * pg_one_plus_erf_f32(x * 0.70710678118654752440f, &e);
}

PG_GELU_INLINE double pg_gelu_f64(double x)
{
    return x * 0.5 * (1.0 + erf(x * 0.70710678118654752440));
}

/* GELU'(x) = Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi) */
PG_GELU_INLINE float pg_gelu_grad_f32(float x)
{
    float e;
    float cdf = 0.5f * pg_one_plus_erf_f32(x * 0.70710678118654752440f, &e);
    return cdf + x * e * 0.39894228040143267794f;
}

PG_GELU_INLINE double pg_gelu_grad_f64(double x)
{
    return 0.5 * (1.0 + erf(x * 0.70710678118654752440)) +
           x * exp(-0.5 * x * x) * 0.39894228040143267794;
}

#endif
