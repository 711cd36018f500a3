/* cpu_half_convert.h - contiguous float32 <-> float16/bfloat16 conversion
 * (cpu_half_convert.c), shared by the cast kernel and the half GEMM. */
#ifndef PG_CPU_HALF_CONVERT_H
#define PG_CPU_HALF_CONVERT_H

#include <stdint.h>

#include "../../core/pg_dtype.h"

void pg_cpu_bf16_to_f32(int64_t n, const uint16_t *src, float *dst);
void pg_cpu_f32_to_bf16(int64_t n, const float *src, uint16_t *dst);
void pg_cpu_f16_to_f32(int64_t n, const uint16_t *src, float *dst);
void pg_cpu_f32_to_f16(int64_t n, const float *src, uint16_t *dst);
/* dtype: PG_FLOAT16 or PG_BFLOAT16 */
void pg_cpu_half_to_f32(int dtype, int64_t n, const uint16_t *src, float *dst);
void pg_cpu_f32_to_half(int dtype, int64_t n, const float *src, uint16_t *dst);

#endif
