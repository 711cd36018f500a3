/* pg_fp8.h - the float8 dtypes' bits <-> double, as PyTorch's casts give them.
 *
 * pygpu stores PyTorch's five float8 dtypes (pg_dtype.h's KIND_FP8 rows) as raw uint8_t, and
 * these helpers are the only place their bits are interpreted. Each format is a row of
 * PG_FP8_FORMATS below (exponent and mantissa bits, bias, and what it does at its ends), not
 * a function of its own:
 *   float8_e4m3fn    4/3, bias 7: no infinity; NaN is S.1111.111; a value beyond 448 and
 *                    +-inf saturate to +-448 (PyTorch's cast; ml_dtypes gives NaN there)
 *   float8_e5m2      5/2, bias 15: IEEE-like, overflow and inf give +-inf, NaN S.11111.11
 *   float8_e4m3fnuz  4/3, bias 8, and float8_e5m2fnuz 5/2, bias 16: no infinity and no
 *                    negative zero; 0x80 is the one NaN, and overflow, inf and NaN all give it
 *   float8_e8m0fnu   an exponent alone (2**(e-127)), no sign, no zero (0 is 2**-127), 0xff
 *                    NaN; the sign of the input is dropped and the exponent rounds to nearest,
 *                    ties to even on its implicit bit, as c10's fp8e8m0fnu_from_fp32_value
 * Narrowing goes through float32 first, as PyTorch's conversion (c10's Float8 types are
 * constructed from a float, so a double is rounded to float32 and then to the format), and
 * then rounds to nearest, ties to even. Widening is exact (every float8 value is a float32).
 * Plain static inline C with no dependencies; PG_HD (pg_hd.h) so a CUDA kernel could share it. */
#ifndef PG_FP8_H
#define PG_FP8_H

#include <stdint.h>
#include <string.h>

#include "pg_hd.h"

/* X(ID, ebits, mbits, bias, max magnitude code, code of a magnitude beyond it (with the
 * sign where the format has one), code of NaN, uz: no negative zero and one unsigned NaN) */
#define PG_FP8_FORMATS(X)                                                                  \
    X(FLOAT8_E4M3FN, 4, 3, 7, 0x7e, 0x7e, 0x7f, 0)                                          \
    X(FLOAT8_E5M2, 5, 2, 15, 0x7b, 0x7c, 0x7f, 0)                                           \
    X(FLOAT8_E4M3FNUZ, 4, 3, 8, 0x7f, 0x80, 0x80, 1)                                        \
    X(FLOAT8_E5M2FNUZ, 5, 2, 16, 0x7f, 0x80, 0x80, 1)

/* a sign-magnitude float8 from a float32's bits */
PG_HD uint8_t pg_fp8_from_f32_bits(uint32_t b, int ebits, int mbits, int bias, uint32_t maxcode,
                                   uint32_t overflow, uint32_t nan, int uz)
{
    (void)ebits; /* the exponent's width shows in bias and maxcode */
    const uint32_t sign = (b >> 31) << 7, exp = (b >> 23) & 0xff, man = b & 0x7fffff;
    if (exp == 0xff && man) /* NaN (the fn formats keep its sign) */
        return (uint8_t)(uz ? nan : sign | nan);
    if (exp == 0xff) /* +-inf: past the largest finite value */
        return (uint8_t)(uz ? overflow : sign | overflow);
    /* the value as sig * 2**(e - 23 - 127) with sig's implicit bit (float32 subnormals: none) */
    const uint32_t sig = exp ? (man | 0x800000u) : man;
    const int e = exp ? (int)exp : 1;
    const int te = e - 127 + bias; /* the target's biased exponent */
    /* bits to drop: down to mbits (normal), more for a target subnormal */
    const int shift = 23 - mbits + (te <= 0 ? 1 - te : 0);
    uint32_t q;
    if (shift > 24) {
        q = 0; /* below half the smallest subnormal */
    } else {
        q = sig >> shift;
        const uint32_t rem = sig & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1)))
            q++;
        if (te > 0) /* the code: biased exponent, then the mantissa; a carry moves it up */
            q = ((uint32_t)te << mbits) + (q - (1u << mbits));
    }
    if (q > maxcode)
        return (uint8_t)(uz ? overflow : sign | overflow);
    if (q == 0 && uz)
        return 0; /* no negative zero */
    return (uint8_t)(sign | q);
}

/* the exact value of a sign-magnitude float8 */
PG_HD double pg_fp8_to_double_fmt(uint8_t c, int ebits, int mbits, int bias, uint32_t maxcode,
                                  uint32_t overflow, uint32_t nan, int uz)
{
    (void)ebits;
    const uint32_t mag = c & 0x7fu;
    const uint64_t sign = (uint64_t)(c >> 7) << 63;
    uint64_t bits;
    double v;
    if (uz ? c == nan : mag > overflow) { /* NaN: fnuz's 0x80; e4m3fn's 0x7f; e5m2's 0x7d-0x7f */
        bits = 0x7ff8000000000000ull | (uz ? 0 : sign);
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    if (!uz && mag > maxcode) { /* e5m2's infinity (e4m3fn's overflow code is its max) */
        bits = 0x7ff0000000000000ull | sign;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    const int exp = (int)(mag >> mbits);
    const uint32_t man = mag & ((1u << mbits) - 1);
    /* exp == 0: man * 2**(1 - bias - mbits); else (2**mbits + man) * 2**(exp - bias - mbits) */
    const int scale = (exp ? exp : 1) - bias - mbits; /* within -18..13 */
    bits = (uint64_t)(1023 + scale) << 52;
    double p;
    memcpy(&p, &bits, sizeof p);
    v = (double)(exp ? (man | (1u << mbits)) : man) * p;
    return (c >> 7) ? -v : v;
}

/* float8_e8m0fnu: an exponent from a float32's bits (sign dropped), rounded to nearest with
 * ties to even on the implicit bit (a float32 subnormal has none) */
PG_HD uint8_t pg_fp8_e8m0_from_f32_bits(uint32_t b)
{
    uint32_t exp = (b >> 23) & 0xff;
    if (exp == 0xff)
        return 0xff;
    const uint32_t guard = (b >> 22) & 1, rest = b & 0x3fffff;
    if (guard && (rest || exp > 0))
        exp++; /* 0xfe rounding up lands on 0xff, the NaN, as PyTorch's */
    return (uint8_t)exp;
}
PG_HD double pg_fp8_e8m0_to_double(uint8_t c)
{
    double v;
    uint64_t bits = c == 0xff ? 0x7ff8000000000000ull : (uint64_t)(c - 127 + 1023) << 52;
    memcpy(&v, &bits, sizeof v);
    return v; /* c == 0 is 2**-127, a normal double */
}

/* double -> float32's bits, rounding once (C's conversion), as PyTorch's Float8(float) sees it */
PG_HD uint32_t pg_fp8_f32_bits(double x)
{
    float f = (float)x;
    uint32_t b;
    memcpy(&b, &f, sizeof b);
    return b;
}

/* pg_fp8_from_double_<ID>(double) and pg_fp8_to_double_<ID>(uint8_t), one pair per row */
#define PG_FP8_PAIR(ID, ...)                                                               \
    PG_HD uint8_t pg_fp8_from_double_##ID(double x)                                        \
    {                                                                                      \
        return pg_fp8_from_f32_bits(pg_fp8_f32_bits(x), __VA_ARGS__);                      \
    }                                                                                      \
    PG_HD double pg_fp8_to_double_##ID(uint8_t c) { return pg_fp8_to_double_fmt(c, __VA_ARGS__); }
PG_FP8_FORMATS(PG_FP8_PAIR)
#undef PG_FP8_PAIR
PG_HD uint8_t pg_fp8_from_double_FLOAT8_E8M0FNU(double x)
{
    return pg_fp8_e8m0_from_f32_bits(pg_fp8_f32_bits(x));
}
PG_HD double pg_fp8_to_double_FLOAT8_E8M0FNU(uint8_t c) { return pg_fp8_e8m0_to_double(c); }

#endif
