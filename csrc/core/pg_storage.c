/* pg_storage.c - allocation, reference counting and waiting on storages.
 *
 * Small host storages put the header and the bytes in one malloc (one call
 * per tensor keeps small ops cheap); large host storages and device storages
 * come from the caching allocator of their device (pg_allocator.h). */
#include "pg_storage.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "pg_allocator.h"
#include "pg_async_error.h"
#include "pg_backend.h"
#include "pg_fork.h"
#include "pg_pinned.h"
#include "pg_stats.h"

#define HOST_ALIGN 64

/* One lock for every storage's event record: held for a few loads and
 * stores (and, in sim, one enqueue), never across a wait. */
static pthread_mutex_t g_events_lock = PTHREAD_MUTEX_INITIALIZER;

/* pg_storage.refs: references in the low half, queued tasks' holds in the high half */
#define HOLD_SHIFT 32
#define REF_ONE ((uint64_t)1)
#define HOLD_ONE ((uint64_t)1 << HOLD_SHIFT)
#define REF_MASK (HOLD_ONE - 1)

/* Ask for transparent huge pages on large buffers, as NumPy does: with THP in
 * "madvise" mode, a 64 MiB buffer otherwise takes 16k page faults to touch. */
void pg_host_advise_hugepages(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t page = 4096;
    if (n < ((size_t)4 << 20))
        return;
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(page - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

static void release_host_inline(pg_storage *s)
{
    pg_stats_free(s->device, s->capacity);
    pg_stats_reserved(s->device, -(int64_t)s->capacity);
    free(s);
}

/* A large host block goes back to the cpu cache when the last reference goes:
 * queued work (a sim copy from it) holds a reference, so none still uses it. */
static void release_host_cached(pg_storage *s)
{
    pg_allocator_free(s->device, s->data, s->capacity);
    free(s);
}

/* A pinned storage's capacity is the pinned cache's rounded size. */
static void release_pinned(pg_storage *s)
{
    const pg_backend *be = s->owner;
    pg_stats_free(s->device, s->capacity);
    pg_stats_reserved(s->device, -(int64_t)s->capacity);
    if (be != NULL && s->data != NULL)
        pg_pinned_free(be, s->data, s->capacity);
    free(s);
}

static void release_device(pg_storage *s)
{
    if (!atomic_exchange(&s->detached, true)) /* else the block went back already */
        pg_allocator_free(s->device, s->data, s->capacity);
    free(s);
}

/* Only queued tasks still reference `s` (refs == holds): give its device block
 * back now, with the events of that work, for stream-ordered reuse. The tasks
 * were all queued and stamped their events before the last other reference went
 * (whoever queues work holds a reference while doing so), so the record is final. */
static void detach_block(pg_storage *s, bool worker)
{
    pg_event ev[PG_STORAGE_EVENTS];
    if (worker) {
        /* A queue's worker, finishing a task: an enqueuer may hold the events lock while
         * it waits for that very worker to make room in the queue. Never wait for the
         * lock here; skipping only means the block comes back at the last release. */
        if (pthread_mutex_trylock(&g_events_lock) != 0)
            return;
    } else {
        pthread_mutex_lock(&g_events_lock);
    }
    ev[0] = s->last_write;
    for (int r = 0; r < PG_READ_SLOTS; r++)
        ev[1 + r] = s->last_read[r];
    pthread_mutex_unlock(&g_events_lock);
    if (!atomic_exchange(&s->detached, true))
        pg_allocator_free_pending(s->device, s->data, s->capacity, ev);
}

static pg_status new_host(size_t nbytes, unsigned flags, pg_storage **out)
{
    pg_device cpu = {PG_DEV_CPU, 0};
    if (flags & PG_STORAGE_PINNED) {
        /* pinned memory comes from the accelerator runtime that can use it */
        const pg_backend *be = pg_backend_get(PG_DEV_CUDA);
        if (!be || !be->host_alloc_pinned || be->device_count(be) == 0)
            be = pg_backend_get(PG_DEV_SIM);
        pg_storage *s = calloc(1, sizeof *s);
        if (!s)
            return pg_error_set(PG_ERR_NOMEM, "out of host memory");
        if (be && be->host_alloc_pinned) {
            /* through the pinned cache: a non-blocking d2h per batch reuses buffers */
            pg_status st = pg_pinned_alloc(be, nbytes, &s->data, &s->capacity);
            if (st != PG_OK) {
                free(s);
                return st;
            }
        } else {
            be = NULL;
            s->capacity = nbytes;
        }
        s->owner = (void *)be;
        s->release = release_pinned;
        pg_stats_alloc(cpu, s->capacity, false);
        pg_stats_reserved(cpu, (int64_t)s->capacity);
        *out = s;
        return PG_OK;
    }
    if (nbytes >= PG_HOST_CACHE_MIN) {
        pg_storage *s = calloc(1, sizeof *s);
        if (!s)
            return pg_error_set(PG_ERR_NOMEM, "out of host memory");
        pg_status st =
            pg_allocator_alloc(pg_backend_get(PG_DEV_CPU), cpu, nbytes, &s->data, &s->capacity, NULL);
        if (st != PG_OK) {
            free(s);
            return st;
        }
        s->release = release_host_cached;
        *out = s;
        return PG_OK;
    }
    size_t header = (sizeof(pg_storage) + HOST_ALIGN - 1) / HOST_ALIGN * HOST_ALIGN;
    if (nbytes > SIZE_MAX - header - HOST_ALIGN)
        return pg_error_set(PG_ERR_NOMEM, "cannot allocate %zu bytes on the host", nbytes);
    char *raw = malloc(header + nbytes + HOST_ALIGN);
    if (!raw)
        return pg_error_set(PG_ERR_NOMEM,
                            "out of host memory: cannot allocate %zu bytes (%.1f MiB)", nbytes,
                            (double)nbytes / 1048576.0);
    pg_storage *s = (pg_storage *)raw;
    memset(s, 0, sizeof *s);
    /* malloc aligns to 16; push the data to the next 64-byte boundary */
    uintptr_t d = (uintptr_t)(raw + header);
    s->data = (void *)((d + HOST_ALIGN - 1) & ~(uintptr_t)(HOST_ALIGN - 1));
    s->release = release_host_inline;
    s->capacity = nbytes;
    pg_stats_alloc(cpu, nbytes, false);
    pg_stats_reserved(cpu, (int64_t)nbytes);
    *out = s;
    return PG_OK;
}

static atomic_uint_fast64_t g_write_stamp;

void pg_storage_note_write(pg_storage *s)
{
    uint_fast64_t v = atomic_fetch_add_explicit(&g_write_stamp, 1, memory_order_relaxed) + 1;
    atomic_store_explicit(&s->version, v, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->writes, 1, memory_order_relaxed);
}

pg_status pg_storage_new(pg_device dev, size_t nbytes, unsigned flags, pg_storage **out)
{
    pg_storage *s = NULL;
    if (dev.type == PG_DEV_CPU) {
        PG_TRY(new_host(nbytes, flags, &s));
    } else {
        const pg_backend *be;
        PG_TRY(pg_backend_for(dev, &be));
        s = calloc(1, sizeof *s);
        if (!s)
            return pg_error_set(PG_ERR_NOMEM, "out of host memory");
        pg_event pending[PG_STORAGE_EVENTS];
        pg_status st = pg_allocator_alloc(be, dev, nbytes, &s->data, &s->capacity, pending);
        if (st != PG_OK) {
            free(s);
            return st;
        }
        s->release = release_device;
        /* a block queued work still uses: that work is this storage's pending work
         * (the reads in the freed storage's slot order, oldest first) */
        s->last_write = pending[0];
        for (int r = 0; r < PG_READ_SLOTS; r++)
            s->last_read[r] = pending[1 + r];
        for (int i = 0; i < PG_STORAGE_EVENTS; i++)
            if (pending[i].backend)
                atomic_store(&s->queued, true);
    }
    atomic_init(&s->refs, REF_ONE);
    atomic_init(&s->error, NULL);
    atomic_init(&s->detached, false);
    if (!pg_storage_has_pending(s))
        atomic_init(&s->queued, false);
    s->device = dev;
    s->nbytes = nbytes;
    s->flags |= flags;
    pg_storage_note_write(s);
    *out = s;
    return PG_OK;
}

pg_status pg_storage_wrap(pg_device dev, void *data, size_t nbytes, unsigned flags,
                          pg_storage_release_fn release, void *owner, pg_storage **out)
{
    pg_storage *s = calloc(1, sizeof *s);
    if (!s)
        return pg_error_set(PG_ERR_NOMEM, "out of host memory");
    atomic_init(&s->refs, REF_ONE);
    atomic_init(&s->error, NULL);
    atomic_init(&s->queued, false);
    atomic_init(&s->detached, false);
    s->device = dev;
    s->data = data;
    s->nbytes = nbytes;
    s->capacity = nbytes;
    s->flags = flags | PG_STORAGE_EXTERNAL;
    s->release = release;
    s->owner = owner;
    pg_storage_note_write(s);
    *out = s;
    return PG_OK;
}

void pg_storage_retain(pg_storage *s)
{
    atomic_fetch_add_explicit(&s->refs, REF_ONE, memory_order_relaxed);
}

static void release_impl(pg_storage *s, bool worker);

static _Atomic(pg_storage_probe_fn) g_release_probe;

void pg_storage_set_release_probe(pg_storage_probe_fn fn) { atomic_store(&g_release_probe, fn); }

void pg_storage_release(pg_storage *s) { release_impl(s, false); }

static void release_impl(pg_storage *s, bool worker)
{
    if (!s)
        return;
    /* Dropping the last reference that is not a queued task's: detach the block first,
     * while this reference still keeps `s` alive (after the decrement a worker may
     * free it). One reading of `refs` gives both counts at one instant: when all the
     * references but this one are holds, nothing but queued tasks will refer to `s`.
     * Only a thread that has a reference can add one or queue a task, so nobody can
     * make that false afterwards; two last users racing may both miss it, and then the
     * tasks' own releases catch it. (The counts read one after the other could be of
     * two instants: a task finishing in between, one hold and one reference fewer,
     * made another tensor's reference look like a task's.) */
    if (s->release == release_device) {
        uint64_t v = atomic_load_explicit(&s->refs, memory_order_acquire);
        pg_storage_probe_fn probe = atomic_load_explicit(&g_release_probe, memory_order_relaxed);
        if (probe)
            probe(s);
        uint64_t holds = v >> HOLD_SHIFT, refs = v & REF_MASK;
        if (holds > 0 && refs - 1 == holds && !atomic_load(&s->detached))
            detach_block(s, worker);
    }
    if ((atomic_fetch_sub_explicit(&s->refs, REF_ONE, memory_order_acq_rel) & REF_MASK) != 1)
        return;
    free(atomic_load(&s->error));
    s->release(s); /* frees `s` too */
}

void pg_storage_hold(pg_storage *s)
{
    atomic_fetch_add_explicit(&s->refs, REF_ONE | HOLD_ONE, memory_order_acq_rel);
}

void pg_storage_unhold(pg_storage *s)
{
    /* the task's hold becomes a plain reference, which the release then drops */
    atomic_fetch_sub_explicit(&s->refs, HOLD_ONE, memory_order_acq_rel);
    release_impl(s, true); /* on a queue's worker (pg_stream.c) */
}

long pg_storage_users(pg_storage *s)
{
    uint64_t v = atomic_load_explicit(&s->refs, memory_order_acquire);
    return (long)(v & REF_MASK) - (long)(v >> HOLD_SHIFT);
}

long pg_storage_holds(pg_storage *s)
{
    return (long)(atomic_load_explicit(&s->refs, memory_order_acquire) >> HOLD_SHIFT);
}

/* Messages are set by workers, read by waiters and cleared by a later
 * overwrite, on different threads: a reader copies under this lock so that a
 * clear never frees a message being formatted. */
static pthread_mutex_t g_error_lock = PTHREAD_MUTEX_INITIALIZER;


void pg_storage_after_fork(void)
{
    pthread_mutex_init(&g_events_lock, NULL);
    pthread_mutex_init(&g_error_lock, NULL);
}

void pg_storage_events_lock(void) { pthread_mutex_lock(&g_events_lock); }
void pg_storage_events_unlock(void) { pthread_mutex_unlock(&g_events_lock); }

/* Drop read slot i, moving the newer ones down (the used slots stay first). */
static void drop_read_slot(pg_storage *s, int i)
{
    for (; i + 1 < PG_READ_SLOTS; i++)
        s->last_read[i] = s->last_read[i + 1];
    s->last_read[PG_READ_SLOTS - 1] = (pg_event){0};
}

void pg_storage_mark_locked(pg_storage *s, pg_event ev, int role, bool write)
{
    (void)role;
    if (write) {
        s->last_write = ev;
    } else {
        /* the queue's own slot goes (its new read implies it: one queue runs in
         * order); when every slot holds another queue, the oldest goes */
        int used = 0;
        while (used < PG_READ_SLOTS && s->last_read[used].backend != NULL)
            used++;
        int drop = used == PG_READ_SLOTS ? 0 : -1;
        for (int i = 0; i < used; i++)
            if (s->last_read[i].backend == ev.backend && s->last_read[i].queue == ev.queue)
                drop = i;
        if (drop >= 0) {
            drop_read_slot(s, drop);
            used--;
        }
        s->last_read[used] = ev; /* the newest, last */
    }
    atomic_store_explicit(&s->queued, true, memory_order_release);
}

void pg_storage_mark(pg_storage *s, pg_event ev, int role, bool write)
{
    pthread_mutex_lock(&g_events_lock);
    pg_storage_mark_locked(s, ev, role, write);
    pthread_mutex_unlock(&g_events_lock);
}

void pg_storage_pending(pg_storage *s, pg_event out[PG_STORAGE_EVENTS])
{
    pthread_mutex_lock(&g_events_lock);
    out[0] = s->last_write;
    for (int r = 0; r < PG_READ_SLOTS; r++)
        out[1 + r] = s->last_read[r];
    pthread_mutex_unlock(&g_events_lock);
}

pg_status pg_storage_wait_others(pg_storage *s, bool idle, const pg_backend *be, void *queue)
{
    if (!pg_storage_has_pending(s))
        return PG_OK;
    pg_event ev[PG_STORAGE_EVENTS];
    pg_storage_pending(s, ev);
    uint64_t t0 = 0;
    pg_status st = PG_OK;
    for (int i = 0; i < (idle ? PG_STORAGE_EVENTS : 1) && st == PG_OK; i++) {
        const pg_backend *owner = ev[i].backend;
        if (owner == NULL || !owner->wait_event)
            continue;
        if (be != NULL && owner == be && (queue == NULL || ev[i].queue == queue))
            continue; /* the caller's own queue orders it */
        if (t0 == 0)
            t0 = pg_now_ns();
        st = owner->wait_event(owner, ev[i]);
        if (st != PG_OK && i == 0) /* the failure may have produced these bytes */
            pg_storage_set_error(s, pg_error_message());
    }
    if (t0 != 0) /* one wait, however many queues it asked */
        pg_stats_sync(s->device, pg_now_ns() - t0);
    return st;
}

static pg_status wait_impl(pg_storage *s, bool idle)
{
    PG_TRY(pg_storage_wait_others(s, idle, NULL, NULL));
    if (idle || !atomic_load(&s->error))
        return PG_OK; /* idle: the caller is about to overwrite; the old failure is its data's */
    pthread_mutex_lock(&g_error_lock);
    char *err = atomic_load(&s->error);
    pg_status st = err ? pg_error_set(PG_ERR_ASYNC, "%s", err) : PG_OK;
    pthread_mutex_unlock(&g_error_lock);
    if (st != PG_OK) /* delivered: a later synchronize of the device must not raise it again */
        pg_async_error_forget(pg_error_message());
    return st;
}

pg_status pg_storage_wait(pg_storage *s) { return wait_impl(s, false); }
pg_status pg_storage_wait_idle(pg_storage *s) { return wait_impl(s, true); }

void pg_storage_set_error(pg_storage *s, const char *msg)
{
    char *copy = strdup(msg);
    char *expected = NULL;
    pthread_mutex_lock(&g_error_lock);
    if (!copy || !atomic_compare_exchange_strong(&s->error, &expected, copy))
        free(copy);
    pthread_mutex_unlock(&g_error_lock);
}

bool pg_storage_error_copy(pg_storage *s, char *buf, size_t len)
{
    if (!atomic_load(&s->error))
        return false;
    pthread_mutex_lock(&g_error_lock);
    char *err = atomic_load(&s->error);
    if (err)
        snprintf(buf, len, "%s", err);
    pthread_mutex_unlock(&g_error_lock);
    return err != NULL;
}

void pg_storage_clear_error(pg_storage *s)
{
    if (!atomic_load(&s->error))
        return;
    pthread_mutex_lock(&g_error_lock);
    free(atomic_exchange(&s->error, NULL));
    pthread_mutex_unlock(&g_error_lock);
}
