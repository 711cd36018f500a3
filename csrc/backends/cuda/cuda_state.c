/* cuda_state.c - the CUDA plugin's one global, pg_cuda: the core's API, the
 * options, the per-device state, and the backend table's address.
 *
 * It sits at the bottom of the plugin's layers (cuda_internal.h lists them)
 * and calls nothing: every other file reads pg_cuda, none of them is read by
 * this one. Two fields are filled from above at pg_plugin_init
 * (cuda_plugin.c): `core`, and `backend`, the table's own address, which the
 * queue layer puts into the pg_events it records (a lower layer naming the
 * table without calling up to the file that defines it). */
#include "cuda_internal.h"

pg_cuda_state pg_cuda = {.core = NULL};

static pthread_once_t pg_cuda_once = PTHREAD_ONCE_INIT;

static void pg_cuda_state_init_once(void)
{
    for (int i = 0; i < PG_MAX_DEVICES_PER_TYPE; i++) {
        pg_cuda.dev[i].index = i;
        pthread_mutex_init(&pg_cuda.dev[i].lock, NULL);
        pthread_mutex_init(&pg_cuda.dev[i].blas_lock, NULL);
        pthread_mutex_init(&pg_cuda.dev[i].bounce_lock, NULL);
    }
    atomic_store(&pg_cuda.int8_requant_in_gemm, 1);
    atomic_store(&pg_cuda.cudnn_enabled, 1);
    atomic_store(&pg_cuda.flash_sdp, 1);
}

void pg_cuda_state_init(void) { pthread_once(&pg_cuda_once, pg_cuda_state_init_once); }
