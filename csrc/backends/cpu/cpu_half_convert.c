/* cpu_half_convert.c - float32 <-> float16/bfloat16 for contiguous runs, fast.
 *
 * The half GEMM packs its operands through these (convert while packing) and
 * the cast kernel uses them for unit-stride float32 <-> half runs, the casts
 * autocast does on every step. Results are bit-identical to pg_half.h's
 * reference (one rounding, to nearest even; NaN quiet with its top payload
 * bits; overflow to inf; subnormals kept, never flushed):
 *   bfloat16: the top half of a float32, so widening is a shift and narrowing
 *             is integer rounding on the bits (plain C that GCC vectorises;
 *             PG_CPU_DISPATCH gives it AVX-512/AVX2/baseline bodies, chosen
 *             by pg_cpu_isa());
 *   float16:  F16C's vcvtph2ps / vcvtps2ph (round to nearest even) where
 *             pg_cpu_isa() >= PG_ISA_AVX2 (that level includes F16C), else
 *             pg_half.h one element at a time.
 * pg_cpu_half_loop_run, at the end, is how the half elementwise kernels
 * (cpu_elementwise.c, cpu_unary.c) reuse the float32 vector loops: blocks of
 * PG_CPU_HALF_BLOCK elements widened on the stack, computed, rounded once. */
#include <stdint.h>
#include <string.h>

#include "../../core/pg_half.h"
#include "cpu_half_convert.h"
#include "cpu_isa.h"
#include "cpu_vecmath.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define PG_HAVE_F16C_KERNELS 1
#endif

PG_CPU_DISPATCH(void, bf16_to_f32, (int64_t n, const uint16_t *src, float *dst), (n, src, dst))
{
    uint32_t *d = (uint32_t *)dst;
#pragma omp simd
    for (int64_t i = 0; i < n; i++)
        d[i] = (uint32_t)src[i] << 16;
}

/* Round every element as if it were a number, noting the largest |bits|; NaN (|bits| above
 * inf's, rare) is then put right in a second pass. A select per element (the NaN test in
 * the first loop) cost 1.65x the time on AVX2 (Zen 1, 32K elements: 15.4 vs 9.3 us). */
PG_CPU_DISPATCH(void, f32_to_bf16, (int64_t n, const float *src, uint16_t *dst), (n, src, dst))
{
    const uint32_t *s = (const uint32_t *)src;
    uint32_t worst = 0;
#pragma omp simd reduction(max : worst)
    for (int64_t i = 0; i < n; i++) {
        uint32_t b = s[i];
        dst[i] = (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
        uint32_t m = b & 0x7fffffffu;
        worst = m > worst ? m : worst;
    }
    if (worst <= 0x7f800000u)
        return;
    for (int64_t i = 0; i < n; i++) /* NaN: keep sign and top payload bits, set the quiet bit */
        if ((s[i] & 0x7fffffffu) > 0x7f800000u)
            dst[i] = (uint16_t)((s[i] >> 16) | 0x40u);
}

void pg_cpu_bf16_to_f32(int64_t n, const uint16_t *src, float *dst) { bf16_to_f32(n, src, dst); }
void pg_cpu_f32_to_bf16(int64_t n, const float *src, uint16_t *dst) { f32_to_bf16(n, src, dst); }

#ifdef PG_HAVE_F16C_KERNELS
__attribute__((target("avx2,f16c"))) static void f16_to_f32_f16c(int64_t n, const uint16_t *src,
                                                                 float *dst)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
    for (; i < n; i++)
        dst[i] = _cvtsh_ss(src[i]);
}

__attribute__((target("avx2,f16c"))) static void f32_to_f16_f16c(int64_t n, const float *src,
                                                                 uint16_t *dst)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
    for (; i < n; i++)
        dst[i] = pg_f16_from_double(src[i]);
}
#endif

void pg_cpu_f16_to_f32(int64_t n, const uint16_t *src, float *dst)
{
#ifdef PG_HAVE_F16C_KERNELS
    if (pg_cpu_isa() >= PG_ISA_AVX2) {
        f16_to_f32_f16c(n, src, dst);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = (float)pg_f16_to_double(src[i]);
}

void pg_cpu_f32_to_f16(int64_t n, const float *src, uint16_t *dst)
{
#ifdef PG_HAVE_F16C_KERNELS
    if (pg_cpu_isa() >= PG_ISA_AVX2) {
        f32_to_f16_f16c(n, src, dst);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++)
        dst[i] = pg_f16_from_double(src[i]);
}

void pg_cpu_half_to_f32(int dtype, int64_t n, const uint16_t *src, float *dst)
{
    if (dtype == PG_FLOAT16)
        pg_cpu_f16_to_f32(n, src, dst);
    else
        pg_cpu_bf16_to_f32(n, src, dst);
}

void pg_cpu_f32_to_half(int dtype, int64_t n, const float *src, uint16_t *dst)
{
    if (dtype == PG_FLOAT16)
        pg_cpu_f32_to_f16(n, src, dst);
    else
        pg_cpu_f32_to_bf16(n, src, dst);
}

float pg_cpu_half_load(int dtype, const void *p)
{
    uint16_t h;
    memcpy(&h, p, sizeof h);
    if (dtype == PG_BFLOAT16) {
        uint32_t b = (uint32_t)h << 16;
        float x;
        memcpy(&x, &b, sizeof x);
        return x;
    }
    return (float)pg_f16_to_double(h);
}

void pg_cpu_half_store(int dtype, void *p, float x)
{
    uint16_t h;
    pg_cpu_f32_to_half(dtype, 1, &x, &h); /* the vector paths' own rounding, for one */
    memcpy(p, &h, sizeof h);
}

void pg_cpu_half_loop_run(int64_t n, char **p, const int64_t *s, const void *arg)
{
    const pg_cpu_half_loop *h = arg;
    float buf[3][PG_CPU_HALF_BLOCK];
    uint16_t bits[PG_CPU_HALF_BLOCK];
    char *bp[3];
    int64_t bs[3];
    for (int64_t i0 = 0; i0 < n; i0 += PG_CPU_HALF_BLOCK) {
        int64_t w = n - i0 < PG_CPU_HALF_BLOCK ? n - i0 : PG_CPU_HALF_BLOCK;
        for (int k = 1; k < h->nops; k++) {
            const char *src = p[k] + i0 * s[k];
            if (h->f32_in & (1u << k)) { /* a float32 scalar, stride 0 */
                bp[k] = (char *)src;
                bs[k] = 0;
            } else if (s[k] == 0) { /* a broadcast half value: widened once */
                buf[k][0] = pg_cpu_half_load(h->dtype, src);
                bp[k] = (char *)buf[k];
                bs[k] = 0;
            } else {
                const uint16_t *run = (const uint16_t *)src;
                if (s[k] != (int64_t)sizeof(uint16_t)) { /* a strided view: gather first */
                    for (int64_t i = 0; i < w; i++)
                        memcpy(&bits[i], src + i * s[k], sizeof(uint16_t));
                    run = bits;
                }
                pg_cpu_half_to_f32(h->dtype, w, run, buf[k]);
                bp[k] = (char *)buf[k];
                bs[k] = (int64_t)sizeof(float);
            }
        }
        char *out = p[0] + i0 * s[0];
        if (h->out_direct) {
            bp[0] = out;
            bs[0] = s[0];
            h->f32(w, bp, bs, NULL);
            continue;
        }
        bp[0] = (char *)buf[0];
        bs[0] = (int64_t)sizeof(float);
        h->f32(w, bp, bs, NULL);
        if (s[0] == (int64_t)sizeof(uint16_t)) {
            pg_cpu_f32_to_half(h->dtype, w, buf[0], (uint16_t *)out);
        } else { /* a strided output: round the block, then scatter */
            pg_cpu_f32_to_half(h->dtype, w, buf[0], bits);
            for (int64_t i = 0; i < w; i++)
                memcpy(out + i * s[0], &bits[i], sizeof(uint16_t));
        }
    }
}
