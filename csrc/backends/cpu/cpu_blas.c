/* cpu_blas.c - pygpu's OpenBLAS at one thread per call (see cpu_parallel.c's comment).
 *
 * The GEMM scheduler (cpu_gemm_schedule.c) runs one single-threaded BLAS call per
 * panel on a device's pool, so OpenBLAS must not thread itself. Kept in a file of
 * its own, below both the pool (cpu_parallel.c, which sets it when it makes the cpu
 * pool) and the scheduler, so that neither reaches back into the other. */
#include <cblas.h>
#include <pthread.h>

#include "cpu_blas.h"

static void blas_one_thread_once(void) { scipy_openblas_set_num_threads(1); }

/* OpenBLAS runs one thread per call from now on. */
void pg_cpu_blas_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, blas_one_thread_once);
}

/* Back to one thread if someone raised OpenBLAS's count since: threadpoolctl's
 * threadpool_limits(n) (scikit-learn, benchmarks) sets every OpenBLAS in the
 * process, pygpu's copy included, and each panel call on a pool thread would
 * then start n more threads on the same cores. A read of a global when nothing
 * changed; called by the GEMM scheduler before it cuts a product. */
void pg_cpu_blas_keep_one_thread(void)
{
    if (scipy_openblas_get_num_threads() != 1)
        scipy_openblas_set_num_threads(1);
}
