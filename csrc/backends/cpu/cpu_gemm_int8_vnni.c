/* cpu_gemm_int8_vnni.c - the int8 GEMM's micro-tile for CPUs with AVX512_VNNI (vpdpbusd).
 *
 * vpdpbusd multiplies 64 u8 bytes of one register by the 64 s8 bytes of another and adds
 * each group of four products to its int32 lane, exactly (no int16 stage, so no
 * saturation: full 8-bit activations work): 16 columns x 4 k per instruction, 64
 * multiply-adds, 4x float32 FMA's rate on the same vector width. The packed weight's panel
 * (pg_gemm.h) holds, per group of 4 k, 4 bytes per column: one zmm load is 16 columns'
 * words. The tile keeps up to 6 rows x 64 columns in 24 zmm accumulators over the whole K:
 * per k group, 4 loads of the panel, one broadcast word per row, 24 vpdpbusd.
 *
 * Executed where? Compiled with a target attribute and chosen at run time only when the CPU
 * has AVX512_VNNI and PYGPU_ISA allows avx512 (cpu_isa.h). With PYGPU_INT8_SIMDE=1
 * (setup.py) this file is built on SIMDe's portable intrinsics instead (libsimde-dev), and
 * the same tile runs, slowly, on any CPU: how CI checks it where no VNNI CPU is at hand. */
#include <stdint.h>
#include <string.h>

#include "cpu_gemm_int8.h"
#include "cpu_isa.h"

#if defined(PG_INT8_SIMDE)
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define VNNI_TARGET
#define PG_VNNI_KERNEL 1
#define PG_VNNI_EMULATED 1
#elif defined(__x86_64__) && defined(__GNUC__) && (__GNUC__ >= 9 || defined(__clang__))
#include <immintrin.h>
#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni")))
#define PG_VNNI_KERNEL 1
#define PG_VNNI_EMULATED 0
#endif

#ifdef PG_VNNI_KERNEL

enum { MR = 6 };

/* mr rows x nv 16-column vectors (both constants where it is called) */
static inline __attribute__((always_inline)) VNNI_TARGET void
vnni_tile(int mr, int nv, int64_t k4, const uint8_t *const *arow, const int8_t *panel, int w,
          int32_t *tile)
{
    __m512i acc[MR][4];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            acc[r][v] = _mm512_setzero_si512();
    const int8_t *b = panel;
    const int64_t step = (int64_t)w * 4;
    for (int64_t k = 0; k < k4; k++, b += step) {
        __m512i bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (v < nv)
                bv[v] = _mm512_loadu_si512((const void *)(b + 64 * v));
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            if (r >= mr)
                break;
            int32_t word;
            memcpy(&word, arow[r] + 4 * k, 4);
            const __m512i a = _mm512_set1_epi32(word);
#pragma GCC unroll 4
            for (int v = 0; v < 4; v++)
                if (v < nv)
                    acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], a, bv[v]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        if (r >= mr)
            break;
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (v < nv)
                _mm512_storeu_si512((void *)(tile + r * PG_QGEMM_PANEL + 16 * v), acc[r][v]);
    }
}

#define NV_CASES(MRC)                                                                    \
    switch (nv) {                                                                        \
    case 1: vnni_tile(MRC, 1, k4, arow, panel, w, tile); break;                          \
    case 2: vnni_tile(MRC, 2, k4, arow, panel, w, tile); break;                          \
    case 3: vnni_tile(MRC, 3, k4, arow, panel, w, tile); break;                          \
    default: vnni_tile(MRC, 4, k4, arow, panel, w, tile); break;                         \
    }

static VNNI_TARGET void tile_vnni(int mr, int64_t k4, const uint8_t *const *arow,
                                  const int8_t *panel, int w, int32_t *tile)
{
    const int nv = w / 16;
    switch (mr) {
    case 1: NV_CASES(1) break;
    case 2: NV_CASES(2) break;
    case 3: NV_CASES(3) break;
    case 4: NV_CASES(4) break;
    case 5: NV_CASES(5) break;
    default: NV_CASES(6) break;
    }
}

bool pg_cpu_qgemm_vnni_emulated(void) { return PG_VNNI_EMULATED; }

bool pg_cpu_qgemm_vnni_runs(void) { return PG_VNNI_EMULATED || pg_cpu_has_avx512_vnni(); }

pg_status pg_cpu_qgemm_vnni(const pg_qgemm *g)
{
    if (!pg_cpu_qgemm_vnni_runs())
        return pg_error_set(PG_ERR_RUNTIME, "int8 matmul: this CPU has no AVX512_VNNI");
    return pg_cpu_qgemm_drive(g, tile_vnni, MR);
}

#else

bool pg_cpu_qgemm_vnni_emulated(void) { return false; }
bool pg_cpu_qgemm_vnni_runs(void) { return false; }

pg_status pg_cpu_qgemm_vnni(const pg_qgemm *g)
{
    (void)g;
    return pg_error_set(PG_ERR_RUNTIME, "int8 matmul: this build has no AVX512_VNNI kernel");
}

#endif
