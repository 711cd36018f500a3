/* cpu_gemm_int8_avxvnni.c - the int8 GEMM's micro-tile for CPUs with AVX-VNNI but no AVX-512
 * (Alder Lake and later client cores, Zen 5 client parts): vpdpbusd on ymm.
 *
 * The VEX-encoded vpdpbusd (AVX-VNNI) does on 8 int32 lanes what AVX512_VNNI's does on 16:
 * 32 u8 x s8 products, four into each lane, exactly (no int16 stage, so 8-bit activations
 * are fine, unlike AVX2's vpmaddubsw). The tile is AVX2's shape, 4 rows x 16 columns (8 ymm
 * accumulators), with one vpdpbusd where AVX2 needs vpmaddubsw + vpmaddwd + vpaddd.
 *
 * Tested where? The tile body is written once (a macro over the dot instruction) and
 * compiled twice: with the VEX form for AVX-VNNI CPUs (what ships: kernel "avx_vnni"), and with
 * the EVEX form of the same instruction on ymm (AVX512_VNNI + VL; kernel "avx_vnni_evex",
 * reached only by name from the tests) so that the tile's code runs and is checked on CPUs
 * with AVX-512 VNNI, such as the Zen 4 this was written on, which lack the VEX form. */
#include <stdint.h>
#include <string.h>

#include "cpu_gemm_int8.h"
#include "cpu_isa.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 11
#include <immintrin.h>

#define YMM_TILE(NAME, TARGET, DOT)                                                           \
    static inline __attribute__((always_inline, target(TARGET))) void NAME##_pass(            \
        int mr, int64_t k4, const uint8_t *const *arow, const int8_t *panel, int w, int c0,    \
        int32_t *tile)                                                                         \
    {                                                                                          \
        __m256i acc[4][2];                                                                     \
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++) acc[r][0] = acc[r][1] =            \
            _mm256_setzero_si256();                                                            \
        const int8_t *b = panel + (int64_t)c0 * 4;                                             \
        for (int64_t k = 0; k < k4; k++, b += (int64_t)w * 4) {                                \
            const __m256i b0 = _mm256_loadu_si256((const __m256i *)b);                         \
            const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));                  \
            _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                                \
            {                                                                                  \
                if (r >= mr)                                                                   \
                    break;                                                                     \
                int32_t word;                                                                  \
                memcpy(&word, arow[r] + 4 * k, 4);                                             \
                const __m256i a = _mm256_set1_epi32(word);                                     \
                acc[r][0] = DOT(acc[r][0], a, b0);                                             \
                acc[r][1] = DOT(acc[r][1], a, b1);                                             \
            }                                                                                  \
        }                                                                                      \
        _Pragma("GCC unroll 4") for (int r = 0; r < 4; r++)                                    \
        {                                                                                      \
            if (r >= mr)                                                                       \
                break;                                                                         \
            _mm256_storeu_si256((__m256i *)(tile + r * PG_QGEMM_PANEL + c0), acc[r][0]);       \
            _mm256_storeu_si256((__m256i *)(tile + r * PG_QGEMM_PANEL + c0 + 8), acc[r][1]);   \
        }                                                                                      \
    }                                                                                          \
    static __attribute__((target(TARGET))) void NAME(int mr, int64_t k4,                       \
                                                     const uint8_t *const *arow,               \
                                                     const int8_t *panel, int w, int32_t *tile) \
    {                                                                                          \
        for (int c0 = 0; c0 < w; c0 += 16) {                                                   \
            switch (mr) {                                                                      \
            case 1: NAME##_pass(1, k4, arow, panel, w, c0, tile); break;                       \
            case 2: NAME##_pass(2, k4, arow, panel, w, c0, tile); break;                       \
            case 3: NAME##_pass(3, k4, arow, panel, w, c0, tile); break;                       \
            default: NAME##_pass(4, k4, arow, panel, w, c0, tile); break;                      \
            }                                                                                  \
        }                                                                                      \
    }

YMM_TILE(tile_avx_vnni, "avx2,avxvnni", _mm256_dpbusd_avx_epi32)
YMM_TILE(tile_avx_vnni_evex, "avx2,avx512f,avx512vl,avx512vnni", _mm256_dpbusd_epi32)

pg_status pg_cpu_qgemm_avx_vnni(const pg_qgemm *g)
{
    if (!pg_cpu_has_avx_vnni())
        return pg_error_set(PG_ERR_RUNTIME, "int8 matmul: this CPU has no AVX-VNNI");
    return pg_cpu_qgemm_drive(g, tile_avx_vnni, 4);
}

pg_status pg_cpu_qgemm_avx_vnni_evex(const pg_qgemm *g)
{
    if (!pg_cpu_has_avx512_vnni())
        return pg_error_set(PG_ERR_RUNTIME, "int8 matmul: this CPU has no AVX512_VNNI");
    return pg_cpu_qgemm_drive(g, tile_avx_vnni_evex, 4);
}

bool pg_cpu_qgemm_avx_vnni_built(void) { return true; }

#else

pg_status pg_cpu_qgemm_avx_vnni(const pg_qgemm *g)
{
    (void)g;
    return pg_error_set(PG_ERR_RUNTIME, "int8 matmul: this build has no AVX-VNNI kernel");
}

pg_status pg_cpu_qgemm_avx_vnni_evex(const pg_qgemm *g) { return pg_cpu_qgemm_avx_vnni(g); }

bool pg_cpu_qgemm_avx_vnni_built(void) { return false; }

#endif
