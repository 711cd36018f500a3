/* emu_internal.h - what the stand-in runtime, cuBLAS, cuBLASLt and NCCL share. */
#ifndef PG_EMU_INTERNAL_H
#define PG_EMU_INTERNAL_H
#include <functional>
#include <stdint.h>
#include <string.h>

#include "emu_kernel.h"

/* Runs f in order on stream s, or appends it to the graph s is capturing. */
void pg_emu_enqueue(cudaStream_t s, std::function<void()> f);
int pg_emu_device_count();

/* x as the tensor cores read a float32 under TF32: rounded to nearest even at 10 mantissa
 * bits (the cuBLAS and cuBLASLt stand-ins' TF32 products) */
static inline float pg_emu_tf32(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) != 0x7f800000u)
        u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
    memcpy(&x, &u, 4);
    return x;
}
#endif
