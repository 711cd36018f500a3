/* pg_pow.h - powers shared by the CPU kernels (csrc/backends/cpu/cpu_elementwise.c) and
 * the CUDA kernels (csrc/backends/cuda/kernels/pg_binary_more.cuh) through PG_HD
 * (pg_hd.h), so that both compute the very same bits where a power is exact.
 *
 * - int64 ** int64 by squaring, wrapping like the other int64 ops; a negative exponent
 *   gives 1 / x**|y| truncated (0 unless x is 1 or -1), as PyTorch's tensor pow.
 * - float ** float with whole-number operands whose result is exact in double (every
 *   product of the squaring stays within 2**53): by squaring too. Such a result is the
 *   correctly rounded power, which glibc's pow gives on the CPU but CUDA's pow (a few
 *   ulp) does not: the first H200 run printed -2.9999999999999996 for (-3.0) ** 1.0.
 *   A negative exponent divides once (1 / x**n, correctly rounded). Anything else
 *   (fractions, NaN, inf, huge results) goes to the platform's pow. */
#ifndef PG_POW_H
#define PG_POW_H

#include <math.h>
#include <stdint.h>

#include "pg_hd.h"

PG_HD int64_t pg_ipow(int64_t x, int64_t y)
{
    if (y < 0)
        return x == 1 ? 1 : x == -1 ? ((y & 1) ? -1 : 1) : 0;
    uint64_t r = 1, b = (uint64_t)x;
    for (; y; y >>= 1, b *= b)
        if (y & 1)
            r *= b;
    return (int64_t)r;
}

/* x ** |y| = *odd * 2***shift exactly, when x and y are whole numbers (|y| <= 64) and the
 * power of x's odd part stays within 2**53 (12 ** 15 = 3 ** 15 * 2 ** 30 qualifies);
 * returns 0 otherwise. The callers scale by the power of two (ldexp: exact) and, for a
 * negative y, divide once in their own type. */
PG_HD int pg_pow_whole(double x, double y, double *odd, int *shift)
{
    const double lim = 9007199254740992.0; /* 2**53: integers up to it are exact */
    if (!(y >= -64.0 && y <= 64.0 && x >= -lim && x <= lim))
        return 0; /* NaN fails here too */
    const int n = (int)y;
    if ((double)n != y || (double)(int64_t)x != x)
        return 0;
    unsigned m = (unsigned)(n < 0 ? -n : n);
    int e = 0;
    double b = x;
    while (b != 0 && (int64_t)b % 2 == 0) {
        b *= 0.5;
        e++;
    }
    double r = 1.0;
    *shift = e * (int)m;
    for (;;) {
        if (m & 1u) {
            r *= b;
            if (!(r >= -lim && r <= lim))
                return 0;
        }
        m >>= 1;
        if (m == 0)
            break;
        b *= b;
        if (!(b <= lim))
            return 0;
    }
    *odd = r;
    return 1;
}

PG_HD double pg_pow_f64(double x, double y)
{
    double r;
    int sh;
    if (pg_pow_whole(x, y, &r, &sh)) {
        if (!(y < 0))
            return ldexp(r, sh); /* exact, or the overflow a correctly rounded pow gives */
        if (sh <= 960)             /* 1 / r scaled stays a normal number: one rounding */
            return ldexp(1.0 / r, -sh);
    }
    return pow(x, y);
}

/* float32: the exact power rounded once to float is the correctly rounded power; a negative
 * exponent divides in float when the odd part is a float (else double rounding could differ) */
PG_HD float pg_pow_f32(float x, float y)
{
    double r;
    int sh;
    if (pg_pow_whole((double)x, (double)y, &r, &sh)) {
        if (!(y < 0))
            return (float)ldexp(r, sh);
        const float rf = (float)r;
        if ((double)rf == r && sh <= 100)
            return ldexpf(1.0f / rf, -sh);
    }
    return powf(x, y);
}

#endif
