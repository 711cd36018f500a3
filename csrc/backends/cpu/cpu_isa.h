/* cpu_isa.h - which vector instruction set the CPU kernels may use, decided once.
 *
 * Every CPU kernel with ISA variants (AVX-512, AVX2, baseline x86-64) asks
 * pg_cpu_isa() which one to run, so one build runs on any x86-64 and uses the
 * widest vectors the CPU has (no -march=native in what ships). The environment
 * variable PYGPU_ISA caps the level ("baseline", "avx2", "avx512", "avx512_bf16"):
 * every variant can then be tested on one machine that has the highest one, and
 * a level the CPU lacks is never chosen, whatever the variable says. */
#ifndef PG_CPU_ISA_H
#define PG_CPU_ISA_H

#include <stdbool.h>

typedef enum pg_isa {
    PG_ISA_BASELINE = 0,    /* x86-64 SSE2 (or any non-x86 machine) */
    PG_ISA_AVX2 = 1,        /* AVX2 + FMA + F16C */
    PG_ISA_AVX512 = 2,      /* AVX-512 F/BW/DQ/VL */
    PG_ISA_AVX512_BF16 = 3, /* the above plus AVX512_BF16 (vdpbf16ps) */
    PG_NUM_ISA
} pg_isa;

/* What the CPU (and the OS's saved register state) supports. */
pg_isa pg_cpu_isa_detected(void);
/* What kernels use: the detected level, capped by PYGPU_ISA (read once). */
pg_isa pg_cpu_isa(void);
/* "baseline", "avx2", "avx512", "avx512_bf16" */
const char *pg_cpu_isa_name(pg_isa isa);
/* NULL if PYGPU_ISA is unset, empty or names a level; else its value (the
 * module refuses to import then, so a typo in a CI lane cannot go unnoticed). */
const char *pg_cpu_isa_env_check(void);
/* Extensions that sit beside the levels (the int8 GEMM, cpu_gemm_int8*.c): AVX512_VNNI
 * (vpdpbusd on zmm), usable when the active level is avx512 or above; AVX-VNNI (the VEX
 * vpdpbusd on ymm of CPUs without AVX-512), usable when the active level is avx2 or above.
 * Both as detected: PYGPU_ISA caps them with their level. */
bool pg_cpu_has_avx512_vnni(void);
bool pg_cpu_has_avx_vnni(void);

#endif
