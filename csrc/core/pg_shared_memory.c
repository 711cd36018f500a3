/* pg_shared_memory.c - cpu storages in shared memory, passed between processes by handle.
 *
 * PyTorch's share_memory_() and its multiprocessing reductions ("file_descriptor"
 * strategy): a cpu storage's bytes move into an anonymous shared-memory file (memfd),
 * mapped MAP_SHARED; a process that receives the file's descriptor (through a Unix socket,
 * or by inheriting it) maps the same pages, so a write in one process is seen by every
 * other at once (Hogwild training, DataLoader workers handing batches over).
 *
 * Sharing moves the storage in place: every tensor and view over it sees the new pages.
 * The old block is not freed then but when the storage is: something may still point at
 * it (a NumPy array made by .numpy() before the move), and it must not dangle. So a
 * shared storage's release unmaps the file, closes the descriptor, then hands the old
 * block to the release it had before (allocator, inline, pinned or external owner). */
#include "pg_storage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a shared storage's release needs: the mapping, its file, and what it replaced. */
typedef struct {
    int fd;
    size_t map_len;
    void *old_data; /* NULL: the storage was made shared (pg_storage_from_fd) */
    size_t old_capacity;
    pg_storage_release_fn old_release;
    void *old_owner;
} pg_shm;

/* A mapping needs at least one byte; an empty storage maps one. */
static size_t map_length(size_t nbytes) { return nbytes ? nbytes : 1; }

static void release_shared(pg_storage *s)
{
    pg_shm *m = s->owner;
    munmap(s->data, m->map_len);
    close(m->fd);
    if (m->old_release) { /* the block it had before sharing: its own release frees `s` */
        s->data = m->old_data;
        s->capacity = m->old_capacity;
        s->owner = m->old_owner;
        s->release = m->old_release;
        free(m);
        s->release(s);
        return;
    }
    free(m);
    free(s);
}

static pg_status map_fd(int fd, size_t nbytes, void **out)
{
    void *p = mmap(NULL, map_length(nbytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return pg_error_set(errno == ENOMEM ? PG_ERR_NOMEM : PG_ERR_RUNTIME,
                            "cannot map %zu bytes of shared memory: %s", nbytes,
                            strerror(errno));
    *out = p;
    return PG_OK;
}

static pg_status new_shm_file(size_t nbytes, int *fd_out)
{
    int fd = memfd_create("pygpu-shared", MFD_CLOEXEC);
    if (fd < 0)
        return pg_error_set(PG_ERR_RUNTIME, "cannot create a shared-memory file: %s",
                            strerror(errno));
    if (ftruncate(fd, (off_t)map_length(nbytes)) != 0) {
        int e = errno;
        close(fd);
        return pg_error_set(e == ENOSPC || e == ENOMEM ? PG_ERR_NOMEM : PG_ERR_RUNTIME,
                            "cannot size a shared-memory file to %zu bytes: %s", nbytes,
                            strerror(e));
    }
    *fd_out = fd;
    return PG_OK;
}

bool pg_storage_is_shared(const pg_storage *s) { return (s->flags & PG_STORAGE_SHARED) != 0; }

int pg_storage_shared_fd(const pg_storage *s)
{
    return pg_storage_is_shared(s) ? ((const pg_shm *)s->owner)->fd : -1;
}

pg_status pg_storage_share(pg_storage *s)
{
    if (pg_storage_is_shared(s))
        return PG_OK;
    if (s->device.type != PG_DEV_CPU)
        return pg_error_set(PG_ERR_DEVICE, "share_memory_: only cpu storages move into shared "
                                           "memory (a device's tensor is left where it is)");
    PG_TRY(pg_storage_wait_idle(s)); /* no queued copy still reads or writes the old block */
    pg_shm *m = calloc(1, sizeof *m);
    if (!m)
        return pg_error_set(PG_ERR_NOMEM, "out of host memory");
    void *p;
    pg_status st = new_shm_file(s->nbytes, &m->fd);
    if (st == PG_OK && (st = map_fd(m->fd, s->nbytes, &p)) != PG_OK)
        close(m->fd);
    if (st != PG_OK) {
        free(m);
        return st;
    }
    if (s->nbytes)
        memcpy(p, s->data, s->nbytes);
    m->map_len = map_length(s->nbytes);
    m->old_data = s->data;
    m->old_capacity = s->capacity;
    m->old_release = s->release;
    m->old_owner = s->owner;
    s->data = p;
    s->capacity = s->nbytes;
    s->owner = m;
    s->release = release_shared;
    s->flags = (s->flags & ~(unsigned)PG_STORAGE_PINNED) | PG_STORAGE_SHARED;
    return PG_OK;
}

pg_status pg_storage_from_fd(int fd, size_t nbytes, pg_storage **out)
{
    *out = NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0)
        return pg_error_set(PG_ERR_VALUE, "not an open shared-memory file descriptor (%d): %s",
                            fd, strerror(errno));
    if ((size_t)sb.st_size < map_length(nbytes))
        return pg_error_set(PG_ERR_VALUE, "the shared-memory file holds %lld bytes, not the "
                            "%zu the tensor needs", (long long)sb.st_size, nbytes);
    pg_shm *m = calloc(1, sizeof *m);
    if (!m)
        return pg_error_set(PG_ERR_NOMEM, "out of host memory");
    void *p;
    pg_status st = map_fd(fd, nbytes, &p);
    if (st != PG_OK) {
        free(m);
        return st;
    }
    m->fd = fd;
    m->map_len = map_length(nbytes);
    st = pg_storage_wrap((pg_device){PG_DEV_CPU, 0}, p, nbytes, PG_STORAGE_SHARED,
                         release_shared, m, out);
    if (st != PG_OK) {
        munmap(p, m->map_len);
        free(m);
        return st;
    }
    (*out)->flags &= ~(unsigned)PG_STORAGE_EXTERNAL; /* it owns the mapping and the file */
    return PG_OK;
}
