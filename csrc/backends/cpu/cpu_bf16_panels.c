/* cpu_bf16_panels.c - the table of weights' pre-packed bfloat16 panels, the optimizer step
 * that writes them and the linear layers that read them (cpu_bf16_panels.h says why).
 *
 * A slot is keyed by the weight's storage, element offset and shape (O, I), and holds the
 * two orientations (cpu_gemm_bf16.h's layout: fwd for x @ W^T, dx for dz @ W) and the
 * write stamp they hold. A slot's key is not a reference: a freed storage's slot can
 * never be valid again (every storage, new or reused memory, starts with a fresh stamp),
 * and it goes when evicted. One mutex guards the table; a product or a step holds a
 * slot (refs) while it reads or writes the panels, so eviction never frees them under it. */
#include "cpu_bf16_panels.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_storage.h"
#include "../../core/pg_tensor.h"
#include "cpu_gemm_bf16.h"
#include "cpu_kernels.h"
#include "cpu_parallel.h"
#include "cpu_part.h"

typedef struct slot {
    const pg_storage *storage; /* key; NULL: free slot */
    int64_t offset, O, I;
    uint64_t stamp; /* the storage version the panels hold; 0: none yet */
    uint32_t *fwd, *dx; /* dx only once a backward wanted dX (a first layer's never does) */
    bool want_dx;
    int64_t bytes;
    int refs;
    uint64_t used; /* last use, for eviction */
} slot;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static slot g_slots[PG_PANELS_SLOTS];
static uint64_t g_tick;
static int64_t g_bytes;
static atomic_int g_enabled = -1; /* -1: not read from the environment yet */
static atomic_llong g_fwd_hits, g_dx_hits, g_packs;

bool pg_cpu_panels_enabled(void)
{
    int e = atomic_load_explicit(&g_enabled, memory_order_relaxed);
    if (e < 0) {
        const char *v = getenv("PYGPU_BF16_PANELS"); /* off unless asked: see the header */
        e = v && v[0] == '1';
        atomic_store(&g_enabled, e);
    }
    return e != 0;
}

static void slot_free(slot *s)
{
    g_bytes -= s->bytes;
    free(s->fwd);
    free(s->dx);
    memset(s, 0, sizeof *s);
}

void pg_cpu_panels_set_enabled(bool on)
{
    pthread_mutex_lock(&g_lock);
    atomic_store(&g_enabled, on ? 1 : 0);
    for (int i = 0; i < PG_PANELS_SLOTS; i++)
        if (g_slots[i].storage && g_slots[i].refs == 0)
            slot_free(&g_slots[i]);
        else if (g_slots[i].storage)
            g_slots[i].stamp = 0; /* in use right now: invalid, freed when evicted */
    pthread_mutex_unlock(&g_lock);
}

void pg_cpu_panels_get_stats(pg_cpu_panels_stats *out)
{
    out->fwd_hits = atomic_load(&g_fwd_hits);
    out->dx_hits = atomic_load(&g_dx_hits);
    out->packs = atomic_load(&g_packs);
    pthread_mutex_lock(&g_lock);
    out->slots = 0;
    for (int i = 0; i < PG_PANELS_SLOTS; i++)
        out->slots += g_slots[i].storage != NULL;
    out->bytes = g_bytes;
    pthread_mutex_unlock(&g_lock);
}

/* A float32 (O, I) weight, rows contiguous: what the panels can stand for */
static bool is_weight(const pg_tensor *w)
{
    return w->storage && w->dtype == PG_FLOAT32 && w->ndim == 2 && w->shape[0] > 0 &&
           w->shape[1] > 0 && w->strides[1] == 1 && w->strides[0] == w->shape[1];
}

static uint64_t stamp_of(const pg_tensor *w)
{
    return (uint64_t)atomic_load_explicit(&w->storage->version, memory_order_relaxed);
}

/* The slot of `w` (g_lock held), or NULL */
static slot *find(const pg_tensor *w)
{
    for (int i = 0; i < PG_PANELS_SLOTS; i++) {
        slot *s = &g_slots[i];
        if (s->storage == w->storage && s->offset == w->offset && s->O == w->shape[0] &&
            s->I == w->shape[1])
            return s;
    }
    return NULL;
}

/* A new slot for `w` (g_lock held, none yet), a free one or the least recently used idle
 * one; NULL when every slot is busy */
static slot *make(const pg_tensor *w)
{
    slot *pick = NULL;
    for (int i = 0; i < PG_PANELS_SLOTS; i++) {
        slot *s = &g_slots[i];
        if (!s->storage) {
            pick = s;
            break;
        }
        if (s->refs == 0 && (!pick || s->used < pick->used))
            pick = s;
    }
    if (!pick)
        return NULL;
    if (pick->storage)
        slot_free(pick);
    pick->storage = w->storage;
    pick->offset = w->offset;
    pick->O = w->shape[0];
    pick->I = w->shape[1];
    pick->used = ++g_tick;
    return pick;
}

/* Room for `bytes` more under the cap, evicting idle slots other than `keep` (g_lock held) */
static bool make_room(int64_t bytes, const slot *keep)
{
    while (g_bytes + bytes > PG_PANELS_MAX_BYTES) {
        slot *lru = NULL;
        for (int i = 0; i < PG_PANELS_SLOTS; i++) {
            slot *s = &g_slots[i];
            if (s->storage && s != keep && s->refs == 0 && s->bytes > 0 &&
                (!lru || s->used < lru->used))
                lru = s;
        }
        if (!lru)
            return false;
        slot_free(lru);
    }
    return true;
}

/* The slot of `w` holding valid panels (dx too with need_dx), held (refs), or NULL; with
 * `want`, a missing slot is made (to be filled by the next optimizer step) */
static slot *take_valid(const pg_tensor *w, bool want, bool need_dx)
{
    pthread_mutex_lock(&g_lock);
    slot *s = find(w);
    if (!s && want)
        s = make(w);
    if (s) {
        s->used = ++g_tick;
        s->want_dx |= need_dx;
    }
    if (s && (s->stamp == 0 || s->stamp != stamp_of(w) || (need_dx && !s->dx)))
        s = NULL;
    if (s)
        s->refs++;
    pthread_mutex_unlock(&g_lock);
    return s;
}

static void give_back(slot *s)
{
    pthread_mutex_lock(&g_lock);
    s->refs--;
    pthread_mutex_unlock(&g_lock);
}

/* Zeroed panel memory on 64-byte boundaries: each 16-word store of a pair row is then one
 * cache line (a panel row is 192 bytes), and so is each vector load of the tiles */
static uint32_t *panels_alloc(int64_t bytes)
{
    const size_t n = ((size_t)bytes + 63) / 64 * 64;
    uint32_t *p = aligned_alloc(64, n);
    if (p)
        memset(p, 0, n);
    return p;
}

/* ---- the optimizer's step, fused with the packing -------------------------------------- */

enum { ROWS = 16 }; /* rows updated, then packed while in cache: 16 x I floats */

typedef struct step_job {
    const pg_node *node;
    int64_t O, I, ntasks;
    const float *W; /* the weight's first element */
    uint32_t *fwd, *dx;
} step_job;

/* `t` narrowed to elements [lo, hi) of its flat, contiguous data */
static void narrow(pg_tensor *t, int64_t lo, int64_t hi)
{
    if (!t->storage)
        return;
    t->ndim = 1;
    t->shape[0] = hi - lo;
    t->strides[0] = 1;
    t->offset += lo;
}

static pg_status step_task(void *ctx, int64_t task)
{
    step_job *j = ctx;
    int64_t lo, hi;
    pg_cpu_part_aligned(j->O, j->ntasks, task, ROWS, &lo, &hi);
    for (int64_t r = lo; r < hi; r += ROWS) {
        const int64_t re = hi - r < ROWS ? hi : r + ROWS;
        pg_node sub = *j->node;
        narrow(&sub.dst, r * j->I, re * j->I);
        for (int i = 0; i < sub.nsrc; i++)
            narrow(&sub.src[i], r * j->I, re * j->I);
        for (int i = 0; i < sub.nextra; i++)
            narrow(&sub.extra[i], r * j->I, re * j->I);
        PG_TRY(pg_cpu_execute(&sub));
        pg_cpu_gemm_bf16_prepack_rows(j->W, j->O, j->I, r, re, j->fwd, j->dx);
    }
    return PG_OK;
}

/* Every operand of an update has the weight's elements, contiguous (as run_update's
 * element slices assume); checked here too, since the rows are cut by hand */
static bool flat_operands(const pg_node *n)
{
    const int64_t numel = pg_tensor_numel(&n->dst);
    for (int i = 0; i < n->nsrc; i++)
        if (n->src[i].storage && (pg_tensor_numel(&n->src[i]) != numel ||
                                  !pg_tensor_is_contiguous(&n->src[i])))
            return false;
    for (int i = 0; i < n->nextra; i++)
        if (n->extra[i].storage && (pg_tensor_numel(&n->extra[i]) != numel ||
                                    !pg_tensor_is_contiguous(&n->extra[i])))
            return false;
    return true;
}

static pg_status run_step(pg_pool *pool, const pg_node *node, bool *done)
{
    const pg_tensor *w = &node->dst;
    if (!is_weight(w) || !flat_operands(node))
        return PG_OK;
    const uint64_t stamp = stamp_of(w); /* this step's own (noted at launch) */
    pthread_mutex_lock(&g_lock);
    slot *s = find(w);
    /* the panels' memory, on the first step after a backward asked for it */
    if (s && !s->fwd) {
        const int64_t bytes = (int64_t)pg_cpu_gemm_bf16_packed_words(s->I, s->O) * 4;
        if (make_room(bytes, s) && (s->fwd = panels_alloc(bytes))) {
            s->bytes += bytes;
            g_bytes += bytes;
        }
    }
    if (s && s->fwd && s->want_dx && !s->dx) {
        const int64_t bytes = (int64_t)pg_cpu_gemm_bf16_packed_words(s->O, s->I) * 4;
        if (make_room(bytes, s) && (s->dx = panels_alloc(bytes))) {
            s->bytes += bytes;
            g_bytes += bytes;
        }
    }
    if (s && s->fwd) {
        s->stamp = 0; /* being written */
        s->refs++;
        s->used = ++g_tick;
    } else {
        s = NULL;
    }
    pthread_mutex_unlock(&g_lock);
    if (!s)
        return PG_OK; /* no panels wanted (or no memory for them): the plain step */
    step_job j = {.node = node, .O = w->shape[0], .I = w->shape[1], .ntasks = 1,
                  .W = (const float *)pg_tensor_data(w), .fwd = s->fwd, .dx = s->dx};
    int64_t nt = (j.O + ROWS - 1) / ROWS, threads = pg_pool_threads(pool);
    j.ntasks = nt < threads ? nt : threads;
    pg_status st = pg_pool_run(pool, j.ntasks, step_task, &j);
    pthread_mutex_lock(&g_lock);
    s->stamp = st == PG_OK && atomic_load(&g_enabled) ? stamp : 0;
    s->refs--;
    pthread_mutex_unlock(&g_lock);
    if (st == PG_OK)
        atomic_fetch_add(&g_packs, 1);
    *done = true;
    return st;
}

/* ---- the linear layers ------------------------------------------------------------------ */

/* what each node kind does with the panels: its PG_NODE row's panels column (pg_ops.def) */
enum { NO_PANELS, PANELS_FWD, PANELS_BWD, PANELS_STEP };
static const unsigned char panel_use[PG_NUM_OPS] = {
#define PG_NODE(ID, params, cpu, split, panels, ...) [PG_OP_##ID] = panels,
#include "../../core/pg_ops.def"
};

/* A multi-tensor step (MULTI) over steps that write panels: each entry stepped whole, as its
 * own node would be (with its panels where it has a slot), inside the one node. */
static pg_status run_multi_step(pg_pool *pool, const pg_node *node)
{
    const pg_node_list *l = node->list;
    for (int e = 0; e < l->count; e++) {
        const pg_tensor *t = &l->t[(size_t)e * (size_t)l->width];
        pg_node entry; /* the entry's operands as listed: the weight's own shape keys its slot */
        pg_cpu_multi_entry(node, e, 0, pg_tensor_numel(&t[l->nsrc]), &entry);
        memcpy(entry.src, t, sizeof(pg_tensor) * (size_t)l->nsrc);
        entry.dst = t[l->nsrc];
        memcpy(entry.extra, t + l->nsrc + 1, sizeof(pg_tensor) * (size_t)l->nextra);
        bool packed = false;
        PG_TRY(run_step(pool, &entry, &packed));
        if (!packed)
            PG_TRY(pg_cpu_run(pool, &entry));
    }
    return PG_OK;
}

pg_status pg_cpu_panels_launch(pg_pool *pool, const pg_node *node, bool *done)
{
    *done = false;
    const int use = (unsigned)node->op < (unsigned)PG_NUM_OPS ? panel_use[node->op] : NO_PANELS;
    if (node->op == PG_OP_MULTI && pg_cpu_panels_enabled() && pg_cpu_gemm_bf16_runs() &&
        panel_use[node->subop] == PANELS_STEP) {
        *done = true;
        return run_multi_step(pool, node);
    }
    if (use == NO_PANELS)
        return PG_OK;
    if (!pg_cpu_panels_enabled() || !pg_cpu_gemm_bf16_runs())
        return PG_OK;
    if (use == PANELS_STEP)
        return run_step(pool, node, done);
    /* autocast's bf16 layers with a float32 weight: forward (x, W, b), backward (dy, x, W, y) */
    const bool fwd = use == PANELS_FWD;
    const pg_tensor *w = fwd ? &node->src[1] : &node->src[2];
    if (node->src[0].dtype != PG_BFLOAT16 || !is_weight(w))
        return PG_OK;
    /* a backward marks W as trained (its slot, filled by the next step), dX or not */
    slot *s = take_valid(w, !fwd, !fwd && node->extra[0].storage);
    if (s && !fwd && !node->extra[0].storage) { /* no dX wanted: dW never reads W */
        give_back(s);
        return PG_OK;
    }
    if (!s)
        return PG_OK;
    pg_status st = fwd ? pg_cpu_linear_fwd_packed(pool, node, s->fwd)
                       : pg_cpu_linear_bwd_packed(pool, node, s->dx);
    give_back(s);
    atomic_fetch_add(fwd ? &g_fwd_hits : &g_dx_hits, 1);
    *done = true;
    return st;
}
