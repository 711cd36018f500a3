/* pg_half.h - float16 and bfloat16 <-> double, bit by bit.
 *
 * pygpu stores float16 (IEEE binary16: 1 sign, 5 exponent, 10 mantissa bits)
 * and bfloat16 (1, 8, 7: the top half of a float32) as raw uint16_t. These
 * helpers are the only place the bits are interpreted. Narrowing rounds to
 * nearest, ties to even, straight from the double (one rounding, so float64
 * -> float16 matches NumPy's npy_double_to_half and float32 -> float16 its
 * npy_float_to_half); overflow gives +-inf, underflow +-0 or a subnormal,
 * NaN stays NaN (quiet, with the top payload bits kept). Widening is exact.
 * Plain static inline C with no dependencies. The CUDA kernels use the very
 * same code (csrc/backends/cuda/kernels/pg_cuda_half.cuh, for float64/int64 -> half): each
 * function is PG_HD (pg_hd.h), __host__ __device__ under nvcc and NVRTC.
 * memcpy is the bit cast on both sides (nvcc lowers it to a register move). */
#ifndef PG_HALF_H
#define PG_HALF_H

#include <stdint.h>
#include <string.h>

#include "pg_hd.h"

/* `x` rounded to a binary format with `ebits` exponent and `mbits` mantissa
 * bits (ebits + mbits = 15), as its bits. */
PG_HD uint16_t pg_double_to_small_float(double x, int ebits, int mbits)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    const uint32_t sign = (uint32_t)(b >> 63) << (ebits + mbits);
    const int exp = (int)((b >> 52) & 0x7ff);
    const uint64_t man = b & ((1ull << 52) - 1);
    const int bias = (1 << (ebits - 1)) - 1;
    const uint32_t inf = ((1u << ebits) - 1) << mbits;
    if (exp == 0x7ff) /* inf, or NaN made quiet with its top payload bits */
        return (uint16_t)(sign | inf |
                          (man ? (1u << (mbits - 1)) | (uint32_t)(man >> (52 - mbits)) : 0));
    if (exp == 0) /* zero or a double subnormal: far below the smallest target subnormal */
        return (uint16_t)sign;
    const int te = exp - 1023 + bias; /* the target's biased exponent */
    if (te >= (1 << ebits) - 1)
        return (uint16_t)(sign | inf);
    const uint64_t sig = (1ull << 52) | man; /* 53 significant bits */
    /* bits to drop: down to mbits + 1 (normal), more for a target subnormal */
    const int shift = 52 - mbits + (te <= 0 ? 1 - te : 0);
    if (shift > 53) /* below half the smallest subnormal: rounds to zero */
        return (uint16_t)sign;
    uint64_t q = sig >> shift;
    const uint64_t rem = sig & ((1ull << shift) - 1), half = 1ull << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    /* a subnormal's q has no implicit bit; a carry out of the mantissa moves the
     * exponent up (and at the top lands exactly on inf's bits) */
    uint32_t v = te <= 0 ? (uint32_t)q : ((uint32_t)te << mbits) + (uint32_t)(q - (1ull << mbits));
    return (uint16_t)(sign | v);
}

/* The exact value of small-float bits `h` as a double. */
PG_HD double pg_small_float_to_double(uint16_t h, int ebits, int mbits)
{
    const int exp = (h >> mbits) & ((1 << ebits) - 1);
    const uint64_t man = h & ((1u << mbits) - 1);
    const int bias = (1 << (ebits - 1)) - 1;
    uint64_t b = (uint64_t)(h >> (ebits + mbits)) << 63;
    if (exp == (1 << ebits) - 1) {
        b |= 0x7ffull << 52 | man << (52 - mbits);
    } else if (exp != 0) {
        b |= (uint64_t)(exp - bias + 1023) << 52 | man << (52 - mbits);
    } else if (man != 0) { /* subnormal: normalise */
        int e = 1 - bias;
        uint64_t m = man;
        while (!(m & (1u << mbits))) {
            m <<= 1;
            e--;
        }
        b |= (uint64_t)(e + 1023) << 52 | (m & ((1u << mbits) - 1)) << (52 - mbits);
    }
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

PG_HD uint16_t pg_f16_from_double(double x) { return pg_double_to_small_float(x, 5, 10); }
PG_HD uint16_t pg_bf16_from_double(double x) { return pg_double_to_small_float(x, 8, 7); }
PG_HD double pg_f16_to_double(uint16_t h) { return pg_small_float_to_double(h, 5, 10); }
PG_HD double pg_bf16_to_double(uint16_t h) { return pg_small_float_to_double(h, 8, 7); }

#endif
