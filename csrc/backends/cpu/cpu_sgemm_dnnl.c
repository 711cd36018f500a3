/* cpu_sgemm_dnnl.c - oneDNN's dnnl_sgemm as one panel's float32 product, at the shape classes
 * where it measured faster than single-threaded OpenBLAS (the table below).
 *
 * Why: each pool thread runs its panel of a product on one core (cpu_gemm_schedule.c). On an
 * AVX-512 CPU, OpenBLAS's SkylakeX kernels run the large panels at 85-94% of the FMA peak, as
 * fast as oneDNN's, but the panels of batch-64 and batch-1 layers (few rows, or a short K)
 * 10-25% slower than oneDNN's sgemm (benchmarks/bench_sgemm_paths.py, docs/performance.md
 * "float32 GEMM panels"). oneDNN is the library of the field there, so those classes go to it.
 *
 * The library is the one cpu_dnnl.c loads for the convolutions too (the onednn-cpu-gomp wheel, libdnnl.so.3);
 * where it is absent, or refuses, OpenBLAS runs the panel as before. The first panel of such a
 * class loads it (once; 80-150 ms measured under load). Each call runs on the
 * calling pool thread alone: its OpenMP thread count is set to 1 around the call (oneDNN then
 * runs no parallel region, so no OpenMP team competes with pygpu's pool), and put back after.
 * A process forked after the library loaded keeps OpenBLAS (as the convolutions do: oneDNN's
 * OpenMP state does not survive a fork). Deterministic: one thread, blocking by shape.
 *
 * PYGPU_SGEMM=auto|openblas|dnnl (read once; default auto: the table) forces the path. */
#include "cpu_sgemm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_dnnl.h"
#include "cpu_isa.h"

enum { MODE_AUTO, MODE_OPENBLAS, MODE_DNNL };

/* The shape classes, by the ISA pygpu runs at (PYGPU_ISA caps it): whether a panel of that
 * class goes to oneDNN. Measured per panel, one thread, AMD EPYC family 26 (Zen 5), oneDNN
 * 3.2 against scipy-openblas32 0.3.34 (SkylakeX kernels), OpenBLAS time / oneDNN time: few
 * rows (M <= 128: 64 x 784 x 256 1.18x, 64 x 512 x 256 1.24x, 65 x 192 x 288 1.23x,
 * 64 x 64 x 128 1.15x) and a short K (K <= 128: 512 x 64 x 392 1.10x, 256 x 32 x 256 1.12x)
 * go to oneDNN; larger panels measured within a few % either way (1.02x at 512^3, 0.90x at
 * 10000 x 1120 x 256 with A transposed), and products under 2^19 multiply-adds lost to
 * oneDNN's per-call cost (0.95x at 32 x 64 x 64 and 1 x 512 x 512), so both stay on
 * OpenBLAS. Below AVX-512 nothing moves: PYGPU_ISA=avx2 keeps pygpu's own AVX2 kernel
 * (cpu_sgemm.c), baseline keeps OpenBLAS. */
enum { CLASS_TINY, CLASS_FEW_ROWS, CLASS_SHORT_K, CLASS_LARGE, NUM_CLASSES };
static const bool g_table[PG_NUM_ISA][NUM_CLASSES] = {
    [PG_ISA_AVX512] = {[CLASS_FEW_ROWS] = true, [CLASS_SHORT_K] = true},
    [PG_ISA_AVX512_BF16] = {[CLASS_FEW_ROWS] = true, [CLASS_SHORT_K] = true},
};
enum { FEW_ROWS = 128, SHORT_K = 128 };
static const int64_t TINY_WORK = (int64_t)1 << 19; /* multiply-adds */

static int class_of(int64_t M, int64_t N, int64_t K)
{
    return M * N * K < TINY_WORK ? CLASS_TINY
           : M <= FEW_ROWS       ? CLASS_FEW_ROWS
           : K <= SHORT_K        ? CLASS_SHORT_K
                                 : CLASS_LARGE;
}

static struct {
    pthread_once_t once;
    int mode;
} g = {.once = PTHREAD_ONCE_INIT};

static void read_mode(void)
{
    const char *m = getenv("PYGPU_SGEMM");
    g.mode = m && !strcmp(m, "openblas") ? MODE_OPENBLAS
             : m && !strcmp(m, "dnnl")   ? MODE_DNNL
                                         : MODE_AUTO;
}

/* the library cpu_dnnl.c loads (loading it on the first call), with its OpenMP calls, and not
 * in a child forked after it loaded */
static bool dnnl_ready(void)
{
    return pg_cpu_dnnl_loaded() && !pg_cpu_dnnl_forked() && pg_dnnl.omp_set_num_threads &&
           pg_dnnl.omp_get_max_threads;
}

bool pg_cpu_sgemm_dnnl_wants(int64_t M, int64_t N, int64_t K)
{
    pthread_once(&g.once, read_mode);
    if (g.mode == MODE_OPENBLAS || M < 1 || N < 1 || K < 1)
        return false;
    return g.mode == MODE_DNNL || g_table[pg_cpu_isa()][class_of(M, N, K)];
}

bool pg_cpu_sgemm_dnnl(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha,
                       const float *A, int64_t lda, const float *B, int64_t ldb, float beta,
                       float *C, int64_t ldc)
{
    if (!pg_cpu_sgemm_dnnl_wants(M, N, K) || !dnnl_ready())
        return false;
    int before = pg_dnnl.omp_get_max_threads();
    if (before != 1)
        pg_dnnl.omp_set_num_threads(1);
    int st = pg_dnnl.sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', M, N, K, alpha, A, lda, B,
                           ldb, beta, C, ldc);
    if (before != 1)
        pg_dnnl.omp_set_num_threads(before);
    return st == 0; /* oneDNN checks its arguments before it writes C */
}
