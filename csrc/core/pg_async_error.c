/* pg_async_error.c - per-device pending asynchronous failures (see pg_async_error.h). */
#include "pg_async_error.h"
#include "pg_fork.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char *g_pending[PG_NUM_SLOTS]; /* malloc'd message or NULL, per device slot */

void pg_async_error_after_fork(void) { pthread_mutex_init(&g_lock, NULL); }

void pg_async_error_record(pg_device dev, const char *msg)
{
    int slot = pg_device_slot(dev);
    pthread_mutex_lock(&g_lock);
    if (!g_pending[slot])
        g_pending[slot] = strdup(msg); /* out of memory: the storage still carries it */
    pthread_mutex_unlock(&g_lock);
}

int pg_async_error_take(pg_device dev, char *buf, size_t len)
{
    int slot = pg_device_slot(dev);
    pthread_mutex_lock(&g_lock);
    char *msg = g_pending[slot];
    g_pending[slot] = NULL;
    pthread_mutex_unlock(&g_lock);
    if (!msg)
        return 0;
    snprintf(buf, len, "%s", msg);
    free(msg);
    return 1;
}

/* Whether `delivered` reports `pending`. Messages are cut at the error buffer's length
 * and a skipped op's quotes the root cause after its own preamble, so the root's
 * first 160 characters are looked for, not all of it. */
static int reports(const char *delivered, const char *pending)
{
    char needle[161];
    snprintf(needle, sizeof needle, "%s", pending);
    return strstr(delivered, needle) != NULL;
}

void pg_async_error_forget(const char *delivered)
{
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < PG_NUM_SLOTS; i++) {
        if (g_pending[i] && reports(delivered, g_pending[i])) {
            free(g_pending[i]);
            g_pending[i] = NULL;
        }
    }
    pthread_mutex_unlock(&g_lock);
}
