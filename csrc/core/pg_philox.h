/* pg_philox.h - counter-based random numbers (Philox4x32-10, Salmon et al. 2011).
 *
 * Counter-based so that element i of a random tensor depends only on
 * (seed, offset + i): the cpu, sim and cuda backends produce the same numbers
 * in any order and any thread layout, and a generator's state is just
 * (seed, offset), advanced by the number of elements drawn (as in PyTorch).
 * Header-only; compiles as C and as CUDA device code. */
#ifndef PG_PHILOX_H
#define PG_PHILOX_H

#include <math.h>
#include <stdint.h>

#include "pg_hd.h"

typedef struct { uint32_t v[4]; } pg_philox_out;

PG_HD uint32_t pg_mulhilo32(uint32_t a, uint32_t b, uint32_t *hi)
{
    uint64_t p = (uint64_t)a * (uint64_t)b;
    *hi = (uint32_t)(p >> 32);
    return (uint32_t)p;
}

PG_HD pg_philox_out pg_philox4x32_10(uint64_t counter, uint64_t seed)
{
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = 0, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int r = 0; r < 10; r++) {
        uint32_t hi0, hi1;
        uint32_t lo0 = pg_mulhilo32(0xD2511F53u, c0, &hi0);
        uint32_t lo1 = pg_mulhilo32(0xCD9E8D57u, c2, &hi1);
        uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    pg_philox_out o = {{c0, c1, c2, c3}};
    return o;
}

/* Uniform in [0, 1) with 53 random bits. */
PG_HD double pg_philox_uniform(uint64_t seed, uint64_t index)
{
    pg_philox_out o = pg_philox4x32_10(index, seed);
    uint64_t bits = ((uint64_t)o.v[0] << 21) ^ (uint64_t)o.v[1];
    return (double)(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/* Standard normal by Box-Muller on two independent words of the same draw. */
PG_HD double pg_philox_normal(uint64_t seed, uint64_t index)
{
    pg_philox_out o = pg_philox4x32_10(index, seed);
    double u1 = ((double)o.v[0] + 1.0) * (1.0 / 4294967297.0); /* (0, 1) */
    double u2 = (double)o.v[2] * (1.0 / 4294967296.0);         /* [0, 1) */
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586476925 * u2);
}

#endif
