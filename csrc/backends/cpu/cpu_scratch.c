/* cpu_scratch.c - per-thread packing buffers (cpu_scratch.h): one pthread key holds a
 * small array of buffers per thread, freed by the key's destructor at thread exit. */
#include "cpu_scratch.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct scratch_set {
    void *buf[PG_SCRATCH_NUM_SLOTS];
    size_t bytes[PG_SCRATCH_NUM_SLOTS];
} scratch_set;

static pthread_key_t g_key;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_key_ok;

static void set_free(void *p)
{
    scratch_set *s = p;
    for (int i = 0; i < PG_SCRATCH_NUM_SLOTS; i++)
        free(s->buf[i]);
    free(s);
}

static void key_make(void) { g_key_ok = pthread_key_create(&g_key, set_free) == 0; }

void *pg_cpu_scratch(pg_cpu_scratch_slot slot, size_t bytes)
{
    pthread_once(&g_once, key_make);
    if (!g_key_ok || slot < 0 || slot >= PG_SCRATCH_NUM_SLOTS)
        return NULL;
    scratch_set *s = pthread_getspecific(g_key);
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            return NULL;
        if (pthread_setspecific(g_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->buf[slot] && s->bytes[slot] >= bytes)
        return s->buf[slot];
    free(s->buf[slot]);
    s->buf[slot] = aligned_alloc(64, (bytes + 63) / 64 * 64);
    s->bytes[slot] = s->buf[slot] ? bytes : 0;
    return s->buf[slot];
}
