# _fma_peak.py - the machine's float32 peak FLOP/s, measured, not read from a datasheet:
# a loop of independent fused multiply-adds (12 accumulator registers, enough to cover the
# FMA latency on two ports), compiled at run time with the system C compiler into a small
# shared object, at the widest vector width the CPU runs (AVX-512, else AVX2 + FMA, else
# scalar), on 1 and on N threads at once. Each thread times itself by its own CPU clock
# (CLOCK_THREAD_CPUTIME_ID), so the figure is FLOPs per CPU-second: a loaded machine takes
# cores away but does not change it (two vCPUs that are one core's hyperthreads do: the N-thread
# figure then reads about half a core each, which is what the N-thread fraction must use).
# Used by targets45.py for the fraction of peak that the convolution and GEMM nodes reach.
import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile
import threading

SOURCE = r"""
#include <immintrin.h>
#include <time.h>

static double thread_cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

#define CHAINS 12
/* twelve named accumulators, so each stays in a register (an array may live on the stack) */
#define BODY(T, SET1, FMA, ADD, LANES)                                                    \
    T a0 = SET1(1.000f), a1 = SET1(1.001f), a2 = SET1(1.002f), a3 = SET1(1.003f);        \
    T a4 = SET1(1.004f), a5 = SET1(1.005f), a6 = SET1(1.006f), a7 = SET1(1.007f);        \
    T a8 = SET1(1.008f), a9 = SET1(1.009f), a10 = SET1(1.010f), a11 = SET1(1.011f);      \
    const T m = SET1(0.99999f), c = SET1(1e-6f);                                          \
    for (long i = 0; i < iters; i++) {                                                    \
        a0 = FMA(a0, m, c); a1 = FMA(a1, m, c); a2 = FMA(a2, m, c); a3 = FMA(a3, m, c);   \
        a4 = FMA(a4, m, c); a5 = FMA(a5, m, c); a6 = FMA(a6, m, c); a7 = FMA(a7, m, c);   \
        a8 = FMA(a8, m, c); a9 = FMA(a9, m, c); a10 = FMA(a10, m, c);                     \
        a11 = FMA(a11, m, c);                                                             \
    }                                                                                     \
    T s = ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7)));              \
    s = ADD(s, ADD(ADD(a8, a9), ADD(a10, a11)));                                          \
    float out[LANES];                                                                     \
    __builtin_memcpy(out, &s, sizeof out);                                                \
    *sink = out[0];                                                                       \
    return 2.0 * CHAINS * LANES * (double)iters;

__attribute__((target("avx512f"))) static double loop512(long iters, float *sink)
{
    BODY(__m512, _mm512_set1_ps, _mm512_fmadd_ps, _mm512_add_ps, 16)
}

__attribute__((target("avx2,fma"))) static double loop256(long iters, float *sink)
{
    BODY(__m256, _mm256_set1_ps, _mm256_fmadd_ps, _mm256_add_ps, 8)
}

static float scalar_fma(float x, float m, float a) { return x * m + a; }
static float scalar_add(float x, float y) { return x + y; }
static float scalar_set1(float x) { return x; }
static double loop1(long iters, float *sink)
{
    BODY(float, scalar_set1, scalar_fma, scalar_add, 1)
}

/* FLOPs done; *cpu_s: this thread's CPU seconds; *lanes: the vector width used */
double fma_peak_run(long iters, double *cpu_s, int *lanes)
{
    float sink;
    double t0 = thread_cpu_s(), flops;
    if (__builtin_cpu_supports("avx512f")) {
        flops = loop512(iters, &sink);
        *lanes = 16;
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        flops = loop256(iters, &sink);
        *lanes = 8;
    } else {
        flops = loop1(iters, &sink);
        *lanes = 1;
    }
    *cpu_s = thread_cpu_s() - t0;
    return sink == 12345.0f ? flops + 1 : flops; /* keeps the loop */
}
"""


def _library():
    tag = hashlib.sha1(SOURCE.encode()).hexdigest()[:12]
    path = os.path.join(tempfile.gettempdir(), f"pygpu_fma_peak_{os.getuid()}_{tag}.so")
    if not os.path.exists(path):
        src = path[:-3] + ".c"
        with open(src, "w") as f:
            f.write(SOURCE)
        cc = os.environ.get("CC", "cc")
        tmp = f"{path}.{os.getpid()}"
        r = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", tmp, src],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(f"could not compile the FMA loop with {cc}: {r.stderr[-2000:]}")
        os.replace(tmp, path)
    lib = ctypes.CDLL(path)
    lib.fma_peak_run.restype = ctypes.c_double
    lib.fma_peak_run.argtypes = [ctypes.c_long, ctypes.POINTER(ctypes.c_double),
                                 ctypes.POINTER(ctypes.c_int)]
    return lib


def peak(threads, iters=20_000_000, repeats=3):
    """(GFLOP/s per CPU-second of each thread summed over `threads` threads running at once,
    vector lanes): the best of `repeats` runs."""
    lib = _library()
    best, lanes = 0.0, 0
    for _ in range(repeats):
        rates = [0.0] * threads
        width = [0] * threads

        def one(i):
            cpu, ln = ctypes.c_double(), ctypes.c_int()
            flops = lib.fma_peak_run(iters, ctypes.byref(cpu), ctypes.byref(ln))  # no GIL
            rates[i] = flops / max(cpu.value, 1e-9)
            width[i] = ln.value
        workers = [threading.Thread(target=one, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        best, lanes = max(best, sum(rates) / 1e9), width[0]
    return best, lanes


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    g, lanes = peak(n)
    print(f"{n} thread(s): {g:.1f} GFLOP/s per CPU-second ({lanes} float32 lanes)")
