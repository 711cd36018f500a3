/* cpu_isa.c - CPU feature detection with cpuid/xgetbv, capped by PYGPU_ISA.
 * See cpu_isa.h. Detection checks the OS saves the wide registers (XCR0), not
 * only the cpuid bits, as a hypervisor may hide AVX-512 state. */
#include "cpu_isa.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

static unsigned long long xgetbv0(void)
{
    unsigned int lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((unsigned long long)hi << 32) | lo;
}

static pg_isa detect(void)
{
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return PG_ISA_BASELINE;
    int fma = (c >> 12) & 1, osxsave = (c >> 27) & 1, avx = (c >> 28) & 1, f16c = (c >> 29) & 1;
    if (!(osxsave && avx && fma && f16c))
        return PG_ISA_BASELINE;
    unsigned long long xcr0 = xgetbv0();
    if ((xcr0 & 0x6) != 0x6) /* XMM and YMM state */
        return PG_ISA_BASELINE;
    if (__get_cpuid_max(0, NULL) < 7)
        return PG_ISA_BASELINE;
    __cpuid_count(7, 0, a, b, c, d);
    int avx2 = (b >> 5) & 1;
    if (!avx2)
        return PG_ISA_BASELINE;
    int avx512 = ((b >> 16) & 1) /* F */ && ((b >> 17) & 1) /* DQ */ && ((b >> 30) & 1) /* BW */ &&
                 ((b >> 31) & 1) /* VL */ && (xcr0 & 0xe6) == 0xe6 /* opmask, ZMM state */;
    if (!avx512)
        return PG_ISA_AVX2;
    __cpuid_count(7, 1, a, b, c, d);
    return ((a >> 5) & 1) ? PG_ISA_AVX512_BF16 : PG_ISA_AVX512;
}

/* cpuid leaf 7: (subleaf 0, ecx bit 11) AVX512_VNNI; (subleaf 1, eax bit 4) AVX-VNNI */
static bool cpuid7_bit(unsigned sub, int reg, int bit)
{
    unsigned int r[4] = {0, 0, 0, 0};
    if (__get_cpuid_max(0, NULL) < 7)
        return false;
    __cpuid_count(7, sub, r[0], r[1], r[2], r[3]);
    return (r[reg] >> bit) & 1;
}
#else
static pg_isa detect(void) { return PG_ISA_BASELINE; }
static bool cpuid7_bit(unsigned sub, int reg, int bit)
{
    (void)sub, (void)reg, (void)bit;
    return false;
}
#endif

static const char *const names[PG_NUM_ISA] = {"baseline", "avx2", "avx512", "avx512_bf16"};

const char *pg_cpu_isa_name(pg_isa isa)
{
    return (unsigned)isa < PG_NUM_ISA ? names[isa] : "?";
}

/* The level PYGPU_ISA names: -1 if it is unset or empty (no cap), -2 if it names
 * no level (module init refuses to import then, pg_cpu_isa_env_check). */
static int env_cap(void)
{
    const char *cap = getenv("PYGPU_ISA");
    if (!cap || !*cap)
        return -1;
    for (int i = 0; i < PG_NUM_ISA; i++)
        if (strcmp(cap, names[i]) == 0)
            return i;
    return -2;
}

const char *pg_cpu_isa_env_check(void)
{
    return env_cap() == -2 ? getenv("PYGPU_ISA") : NULL;
}

static int detected = -1, active = -1; /* racing first calls compute the same values */

pg_isa pg_cpu_isa_detected(void)
{
    if (detected < 0)
        detected = (int)detect();
    return (pg_isa)detected;
}

pg_isa pg_cpu_isa(void)
{
    if (active < 0) {
        int level = (int)pg_cpu_isa_detected(), cap = env_cap();
        active = cap >= 0 && cap < level ? cap : level;
    }
    return (pg_isa)active;
}

bool pg_cpu_has_avx512_vnni(void)
{
    static int has = -1;
    if (has < 0)
        has = pg_cpu_isa_detected() >= PG_ISA_AVX512 && cpuid7_bit(0, 2, 11);
    return has && pg_cpu_isa() >= PG_ISA_AVX512;
}

bool pg_cpu_has_avx_vnni(void)
{
    static int has = -1;
    if (has < 0)
        has = pg_cpu_isa_detected() >= PG_ISA_AVX2 && cpuid7_bit(1, 0, 4);
    return has && pg_cpu_isa() >= PG_ISA_AVX2;
}
