/* runtime.c - devices, synchronization, memory, counters, the guard, the RNG seed,
 * the sim link model and loading the CUDA plugin: the functions behind
 * pygpu.sim, pygpu.cuda, pygpu.stats() and friends. */
#include "tensor_object.h"

#include <math.h>

#include "../backends/cpu/cpu_busy.h"
#include "../backends/cpu/cpu_isa.h"
#include "../backends/cpu/cpu_parallel.h"
#include "../backends/sim/sim_backend.h"
#include "../backends/sim/sim_timeline.h"
#include "../core/pg_allocator.h"
#include "../core/pg_backend.h"
#include "../core/pg_pinned.h"
#include "../core/pg_pool.h"

const char *pg_implicit_name(int reason);

static char g_cuda_reason[512] = "pygpu was built without the CUDA backend";

static int get_device_arg(PyObject *args, pg_device *d)
{
    return PyArg_ParseTuple(args, "ii", &d->type, &d->index) ? pg_check_device(*d) : -1;
}

static PyObject *f_setup(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *dtypes, *hooks;
    if (!PyArg_ParseTuple(args, "OO", &dtypes, &hooks) || pg_registry_setup(dtypes, hooks) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *f_device_count(PyObject *mod, PyObject *arg)
{
    (void)mod;
    long type = PyLong_AsLong(arg);
    if (type == -1 && PyErr_Occurred())
        return NULL;
    const pg_backend *be = pg_backend_get((int)type);
    return PyLong_FromLong(be ? be->device_count(be) : 0);
}

static PyObject *f_device_name(PyObject *mod, PyObject *args)
{
    (void)mod;
    pg_device d;
    const pg_backend *be;
    char buf[256];
    if (get_device_arg(args, &d) < 0)
        return NULL;
    pg_status st = pg_backend_for(d, &be);
    if (st == PG_OK)
        st = be->device_name(be, d.index, buf, sizeof buf);
    return st == PG_OK ? PyUnicode_FromString(buf) : pg_raise(st);
}

static PyObject *f_total_memory(PyObject *mod, PyObject *args)
{
    (void)mod;
    pg_device d;
    const pg_backend *be;
    if (get_device_arg(args, &d) < 0)
        return NULL;
    pg_status st = pg_backend_for(d, &be);
    if (st != PG_OK)
        return pg_raise(st);
    return PyLong_FromSize_t(be->total_memory ? be->total_memory(be, d.index) : 0);
}

static PyObject *f_synchronize(PyObject *mod, PyObject *args)
{
    (void)mod;
    pg_device d;
    if (get_device_arg(args, &d) < 0)
        return NULL;
    pg_status st;
    Py_BEGIN_ALLOW_THREADS st = pg_device_synchronize(d);
    Py_END_ALLOW_THREADS
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* (free, total) bytes of a device: the backend's own figure where it has one
 * (cudaMemGetInfo), else its total less what pygpu's allocator has reserved. */
static PyObject *f_mem_get_info(PyObject *mod, PyObject *args)
{
    (void)mod;
    pg_device d;
    if (get_device_arg(args, &d) < 0)
        return NULL;
    const pg_backend *be;
    pg_status bst = pg_backend_for(d, &be);
    if (bst != PG_OK)
        return pg_raise(bst);
    size_t free_b = 0, total_b = 0;
    if (be->mem_get_info) {
        pg_status st;
        Py_BEGIN_ALLOW_THREADS st = be->mem_get_info(be, d.index, &free_b, &total_b);
        Py_END_ALLOW_THREADS
        if (st != PG_OK)
            return pg_raise(st);
    } else {
        total_b = be->total_memory ? be->total_memory(be, d.index) : 0;
        pg_stats_snapshot *s = PyMem_RawMalloc(sizeof *s);
        if (!s)
            return PyErr_NoMemory();
        pg_stats_snapshot_take(s);
        size_t reserved = (size_t)s->dev[pg_device_slot(d)].mem_reserved;
        PyMem_RawFree(s);
        free_b = total_b > reserved ? total_b - reserved : 0;
    }
    return Py_BuildValue("(nn)", (Py_ssize_t)free_b, (Py_ssize_t)total_b);
}

static PyObject *f_memory_stats(PyObject *mod, PyObject *args)
{
    (void)mod;
    pg_device d;
    if (get_device_arg(args, &d) < 0)
        return NULL;
    pg_stats_snapshot *s = PyMem_RawMalloc(sizeof *s);
    if (!s)
        return PyErr_NoMemory();
    pg_stats_snapshot_take(s);
    pg_device_stats *ds = &s->dev[pg_device_slot(d)];
    pg_pinned_stats ps; /* process-wide: pinned host memory belongs to no device */
    pg_pinned_stats_get(&ps);
    PyObject *r = Py_BuildValue(
        "{sKsKsKsnsKsKsKsKsKsKsK}", "allocated", ds->mem_current, "peak", ds->mem_peak, "reserved",
        ds->mem_reserved, "cached", (Py_ssize_t)pg_allocator_cached(d), "allocs", ds->allocs,
        "frees", ds->frees, "cache_hits", ds->cache_hits, "pinned_reserved",
        (unsigned long long)ps.reserved, "pinned_cached", (unsigned long long)ps.cached,
        "pinned_allocs", (unsigned long long)ps.allocs, "pinned_cache_hits",
        (unsigned long long)ps.cache_hits);
    PyMem_RawFree(s);
    return r;
}

static PyObject *f_reset_peak(PyObject *mod, PyObject *args)
{
    (void)mod;
    pg_device d;
    if (get_device_arg(args, &d) < 0)
        return NULL;
    pg_stats_reset_peak(d);
    Py_RETURN_NONE;
}

static PyObject *f_empty_cache(PyObject *mod, PyObject *args)
{
    (void)mod;
    pg_device d;
    if (get_device_arg(args, &d) < 0)
        return NULL;
    Py_BEGIN_ALLOW_THREADS pg_allocator_empty_cache(d);
    pg_pinned_empty_cache(); /* process-wide, like the pinned memory itself */
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* The most bytes a device's caching allocator keeps cached (None: no cap). */
static PyObject *f_cache_limit(PyObject *mod, PyObject *args)
{
    (void)mod;
    pg_device d;
    if (get_device_arg(args, &d) < 0)
        return NULL;
    size_t n = pg_allocator_limit(d);
    if (n == SIZE_MAX)
        Py_RETURN_NONE;
    return PyLong_FromSize_t(n);
}

static PyObject *f_set_cache_limit(PyObject *mod, PyObject *args)
{
    (void)mod;
    pg_device d;
    PyObject *limit;
    if (!PyArg_ParseTuple(args, "iiO", &d.type, &d.index, &limit) || pg_check_device(d) < 0)
        return NULL;
    size_t n = SIZE_MAX;
    if (limit != Py_None) {
        n = PyLong_AsSize_t(limit);
        if (n == (size_t)-1 && PyErr_Occurred())
            return NULL;
    }
    Py_BEGIN_ALLOW_THREADS pg_allocator_set_limit(d, n);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *device_stats_dict(const pg_device_stats *d)
{
    return Py_BuildValue("{sKsKsKsKsKsKsKsKsKsKsK}", "ops", d->ops, "syncs", d->syncs, "sync_ns",
                         d->sync_ns, "kernel_ops", d->kernel_ops, "kernel_ns", d->kernel_ns,
                         "allocs", d->allocs, "frees", d->frees, "cache_hits",
                         d->cache_hits, "mem_current", d->mem_current, "mem_peak", d->mem_peak,
                         "mem_reserved", d->mem_reserved);
}

/* The raw counters: {'pairs': [(src, dst, count, bytes, ns, pinned, async)], 'implicit':
 * {trigger: (count, bytes)}, 'wait': {trigger or "explicit": ns}, 'devices': {name: {...}}};
 * pygpu/_stats.py dresses them. */
static PyObject *f_stats(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    pg_stats_snapshot *s = PyMem_RawMalloc(sizeof *s);
    if (!s)
        return PyErr_NoMemory();
    pg_stats_snapshot_take(s);
    PyObject *pairs = PyList_New(0), *implicit = PyDict_New(), *devices = PyDict_New();
    PyObject *wait = PyDict_New();
    PyObject *r = NULL;
    if (!pairs || !implicit || !devices || !wait)
        goto done;
    char a[24], b[24];
    for (int i = 0; i < PG_NUM_SLOTS; i++) {
        for (int j = 0; j < PG_NUM_SLOTS; j++) {
            pg_xfer_stats *x = &s->pair[i][j];
            if (!x->count)
                continue;
            PyObject *t = Py_BuildValue("(ssKKKKK)", pg_device_str(pg_device_from_slot(i), a, sizeof a),
                                        pg_device_str(pg_device_from_slot(j), b, sizeof b), x->count,
                                        x->bytes, x->ns, x->pinned_count, x->async_count);
            if (!t || PyList_Append(pairs, t) < 0) {
                Py_XDECREF(t);
                goto done;
            }
            Py_DECREF(t);
        }
        pg_device_stats *d = &s->dev[i];
        pg_device dev = pg_device_from_slot(i);
        const pg_backend *be = pg_backend_get(dev.type);
        bool present = be && dev.index < be->device_count(be);
        if (present || d->ops || d->allocs || d->syncs) {
            PyObject *v = device_stats_dict(d);
            if (!v || PyDict_SetItemString(devices, pg_device_str(dev, a, sizeof a), v) < 0) {
                Py_XDECREF(v);
                goto done;
            }
            Py_DECREF(v);
        }
    }
    for (int k = 1; k < PG_NUM_IMPLICIT; k++) {
        PyObject *v = Py_BuildValue("(KK)", s->implicit_count[k], s->implicit_bytes[k]);
        if (!v || PyDict_SetItemString(implicit, pg_implicit_name(k), v) < 0) {
            Py_XDECREF(v);
            goto done;
        }
        Py_DECREF(v);
    }
    for (int k = 0; k < PG_NUM_IMPLICIT; k++) {
        PyObject *v = PyLong_FromUnsignedLongLong(s->wait_ns[k]);
        if (!v || PyDict_SetItemString(wait, pg_implicit_name(k), v) < 0) {
            Py_XDECREF(v);
            goto done;
        }
        Py_DECREF(v);
    }
    r = Py_BuildValue("{sOsOsOsO}", "pairs", pairs, "implicit", implicit, "devices", devices,
                      "wait", wait);
done:
    Py_XDECREF(wait);
    Py_XDECREF(pairs);
    Py_XDECREF(implicit);
    Py_XDECREF(devices);
    PyMem_RawFree(s);
    return r;
}

static PyObject *f_reset_stats(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    pg_stats_reset();
    Py_RETURN_NONE;
}

static PyObject *f_set_guard(PyObject *mod, PyObject *arg)
{
    (void)mod;
    long level = PyLong_AsLong(arg);
    if (level < 0 || level > 2) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "guard level must be 0, 1 or 2");
        return NULL;
    }
    pg_guard_level = (int)level;
    Py_RETURN_NONE;
}

static PyObject *f_get_guard(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    return PyLong_FromLong(pg_guard_level);
}

/* _seed(seed, type=-1, index=0): all devices when type is -1 */
static PyObject *f_seed(PyObject *mod, PyObject *args)
{
    (void)mod;
    unsigned long long seed;
    int type = -1, index = 0;
    if (!PyArg_ParseTuple(args, "K|ii", &seed, &type, &index))
        return NULL;
    if (type == -1) {
        pg_rng_seed_all(seed);
    } else {
        if (pg_check_device((pg_device){type, index}) < 0)
            return NULL;
        pg_rng_seed((pg_device){type, index}, seed);
    }
    Py_RETURN_NONE;
}

/* _rng_state(type, index) -> (seed, offset): the device generator's state */
static PyObject *f_rng_state(PyObject *mod, PyObject *args)
{
    (void)mod;
    int type, index;
    if (!PyArg_ParseTuple(args, "ii", &type, &index))
        return NULL;
    if (pg_check_device((pg_device){type, index}) < 0)
        return NULL;
    uint64_t seed, offset;
    pg_rng_get((pg_device){type, index}, &seed, &offset);
    return Py_BuildValue("(KK)", (unsigned long long)seed, (unsigned long long)offset);
}

/* _rng_set_state(type, index, seed, offset): set_rng_state */
static PyObject *f_rng_set_state(PyObject *mod, PyObject *args)
{
    (void)mod;
    int type, index;
    unsigned long long seed, offset;
    if (!PyArg_ParseTuple(args, "iiKK", &type, &index, &seed, &offset))
        return NULL;
    if (pg_check_device((pg_device){type, index}) < 0)
        return NULL;
    pg_rng_set((pg_device){type, index}, seed, offset);
    Py_RETURN_NONE;
}

static PyObject *f_sim_configure(PyObject *mod, PyObject *args)
{
    (void)mod;
    double lat, h2d, d2h;
    if (!PyArg_ParseTuple(args, "ddd", &lat, &h2d, &d2h))
        return NULL;
    const char *names[3] = {"latency_us", "h2d_gbps", "d2h_gbps"};
    double values[3] = {lat, h2d, d2h};
    for (int i = 0; i < 3; i++) /* NaN would hang the next transfer; inf would mean "off" */
        if (!isfinite(values[i]) || values[i] < 0)
            return PyErr_Format(PyExc_ValueError,
                                "sim.configure: %s must be a finite number >= 0, got %R (0 or None "
                                "means no limit)",
                                names[i], PyTuple_GET_ITEM(args, i));
    pg_sim_configure_link(lat, h2d, d2h);
    Py_RETURN_NONE;
}

static PyObject *f_sim_link(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    double lat, h2d, d2h;
    pg_sim_link(&lat, &h2d, &d2h);
    return Py_BuildValue("(ddd)", lat, h2d, d2h);
}

static PyObject *f_sim_inject_fault(PyObject *mod, PyObject *args)
{
    (void)mod;
    int index;
    const char *op;
    if (!PyArg_ParseTuple(args, "is", &index, &op))
        return NULL;
    pg_status st = pg_sim_inject_fault(index, op);
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _sim_timeline(index, True) starts a recording; (index, False) stops it and returns
 * its spans as tuples (queue role, name, thread, queued s, start s, end s, seq, bytes,
 * ((queue bit, seq), ...), cpu s); pygpu.sim.timeline makes them objects. */
static PyObject *f_sim_timeline(PyObject *mod, PyObject *args)
{
    (void)mod;
    int index, on;
    if (!PyArg_ParseTuple(args, "ip", &index, &on))
        return NULL;
    if (index < 0 || index >= PG_MAX_DEVICES_PER_TYPE)
        return PyErr_Format(PyExc_ValueError, "sim timeline: no sim device %d", index);
    if (on) {
        pg_sim_timeline_start(index);
        Py_RETURN_NONE;
    }
    pg_sim_span *spans;
    size_t n;
    if (!pg_sim_timeline_stop(index, &spans, &n))
        return PyErr_NoMemory();
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        const pg_sim_span *s = &spans[i];
        PyObject *after = PyTuple_New(s->nafter);
        for (int k = 0; after && k < s->nafter; k++) {
            PyObject *dep = Py_BuildValue("(kK)", (unsigned long)s->after_queue[k],
                                          (unsigned long long)s->after_seq[k]);
            if (!dep)
                Py_CLEAR(after);
            else
                PyTuple_SET_ITEM(after, k, dep);
        }
        PyObject *item = !after ? NULL :
            Py_BuildValue("(issdddKKNd)", s->role, s->name, s->thread, (double)s->queued_ns * 1e-9,
                          (double)s->start_ns * 1e-9, (double)s->end_ns * 1e-9,
                          (unsigned long long)s->seq, (unsigned long long)s->bytes, after,
                          (double)s->cpu_ns * 1e-9);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    free(spans);
    return list;
}

static PyObject *f_set_num_threads(PyObject *mod, PyObject *arg)
{
    (void)mod;
    if (!PyLong_Check(arg))
        return PyErr_Format(PyExc_TypeError, "set_num_threads: expected an int, got %s",
                            Py_TYPE(arg)->tp_name);
    long n = PyLong_AsLong(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 1 || n > 1024)
        return PyErr_Format(PyExc_ValueError,
                            "set_num_threads: need 1 to 1024 threads, got %ld (this host has %d "
                            "cores)",
                            n, pg_host_cores());
    pg_status st;
    Py_BEGIN_ALLOW_THREADS st = pg_cpu_set_threads((int)n); /* waits for a job in progress */
    Py_END_ALLOW_THREADS
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

static PyObject *f_get_num_threads(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    return PyLong_FromLong(pg_cpu_get_threads());
}

static PyObject *f_node_busy_reset(PyObject *mod, PyObject *unused)
{
    (void)mod;
    (void)unused;
    pg_cpu_busy_reset();
    Py_RETURN_NONE;
}

static PyObject *f_set_flush_denormal(PyObject *mod, PyObject *arg)
{
    (void)mod;
    if (!PyBool_Check(arg))
        return PyErr_Format(PyExc_RuntimeError, "flush_denormal expects a bool, but got %s",
                            Py_TYPE(arg)->tp_name);
    return PyBool_FromLong(pg_set_flush_denormal(arg == Py_True));
}

static PyObject *f_init_num_threads(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    pg_fpu_sync();
    Py_RETURN_NONE;
}

static PyObject *f_sim_threads(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    return PyLong_FromLong(pg_sim_threads());
}

static PyObject *f_load_cuda(PyObject *mod, PyObject *arg)
{
    (void)mod;
    if (pg_backend_get(PG_DEV_CUDA))
        Py_RETURN_TRUE;
    if (arg == Py_None)
        Py_RETURN_FALSE;
    const char *path = PyUnicode_AsUTF8(arg);
    if (!path)
        return NULL;
    pg_status st;
    Py_BEGIN_ALLOW_THREADS st = pg_backend_load_plugin(PG_DEV_CUDA, path, g_cuda_reason, sizeof g_cuda_reason);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(st == PG_OK);
}

static PyObject *f_cuda_reason(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    const pg_backend *be = pg_backend_get(PG_DEV_CUDA);
    if (!be)
        return PyUnicode_FromString(g_cuda_reason);
    if (be->device_count(be) > 0)
        Py_RETURN_NONE;
    const char *why = be->unavailable_reason ? be->unavailable_reason(be) : NULL;
    return PyUnicode_FromString(why ? why : "no CUDA GPU: the driver reports no device");
}

/* The device types, by code: ("cpu", "sim", "cuda"). pygpu/_device.py reads them here. */
static PyObject *f_device_types(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    PyObject *t = PyTuple_New(PG_NUM_DEVICE_TYPES);
    for (int i = 0; t && i < PG_NUM_DEVICE_TYPES; i++) {
        PyObject *name = PyUnicode_FromString(pg_device_type_name(i));
        if (!name) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, name);
    }
    return t;
}

static PyObject *f_cpu_isa(PyObject *mod, PyObject *detected)
{
    (void)mod;
    int d = PyObject_IsTrue(detected);
    if (d < 0)
        return NULL;
    return PyUnicode_FromString(pg_cpu_isa_name(d ? pg_cpu_isa_detected() : pg_cpu_isa()));
}

static PyObject *f_shutdown(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    Py_BEGIN_ALLOW_THREADS pg_sim_shutdown();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyMethodDef pg_runtime_functions[] = {
    {"_setup", f_setup, METH_VARARGS, "internal: register dtype objects and Python hooks"},
    {"_device_count", f_device_count, METH_O, "internal: devices of a type"},
    {"_device_name", f_device_name, METH_VARARGS, "internal"},
    {"_total_memory", f_total_memory, METH_VARARGS, "internal"},
    {"_synchronize", f_synchronize, METH_VARARGS, "internal: wait for a device"},
    {"_memory_stats", f_memory_stats, METH_VARARGS, "internal"},
    {"_mem_get_info", f_mem_get_info, METH_VARARGS, "internal: (free, total) bytes of a device"},
    {"_reset_peak", f_reset_peak, METH_VARARGS, "internal"},
    {"_empty_cache", f_empty_cache, METH_VARARGS, "internal"},
    {"_cache_limit", f_cache_limit, METH_VARARGS, "internal"},
    {"_set_cache_limit", f_set_cache_limit, METH_VARARGS, "internal"},
    {"_stats", f_stats, METH_NOARGS, "internal: raw counters"},
    {"reset_stats", f_reset_stats, METH_NOARGS, "zero the transfer, op and sync counters"},
    {"_set_guard", f_set_guard, METH_O, "internal"},
    {"_get_guard", f_get_guard, METH_NOARGS, "internal"},
    {"_seed", f_seed, METH_VARARGS, "internal"},
    {"_rng_state", f_rng_state, METH_VARARGS, "internal: _rng_state(type, index) -> (seed, offset)"},
    {"_rng_set_state", f_rng_set_state, METH_VARARGS,
     "internal: _rng_set_state(type, index, seed, offset)"},
    {"_sim_configure", f_sim_configure, METH_VARARGS, "internal"},
    {"_sim_link", f_sim_link, METH_NOARGS, "internal"},
    {"_sim_inject_fault", f_sim_inject_fault, METH_VARARGS, "internal"},
    {"_sim_timeline", f_sim_timeline, METH_VARARGS, "internal: pygpu.sim.timeline's recording"},
    {"set_num_threads", f_set_num_threads, METH_O,
     "set_num_threads(n): threads the cpu device runs large ops on (default: one per core)"},
    {"get_num_threads", f_get_num_threads, METH_NOARGS,
     "get_num_threads(): threads the cpu device runs large ops on"},
    {"_node_busy_reset", f_node_busy_reset, METH_NOARGS,
     "_node_busy_reset(): PYGPU_NODE_BUSY's table drops its counts so far (a profile's warm-up)"},
    {"set_flush_denormal", f_set_flush_denormal, METH_O,
     "set_flush_denormal(mode) -> bool: flush denormal floats to zero (x86's FTZ and DAZ) on "
     "every thread pygpu computes on, pool workers included; False where the CPU has no such "
     "mode"},
    {"init_num_threads", f_init_num_threads, METH_NOARGS,
     "init_num_threads(): give the calling thread the process's CPU settings (the compute "
     "pool is shared, so set_num_threads already holds; the flush-denormal mode is "
     "per-thread and is applied here)"},
    {"_sim_threads", f_sim_threads, METH_NOARGS, "internal: compute threads per sim device"},
    {"_load_cuda", f_load_cuda, METH_O, "internal: dlopen the CUDA plugin"},
    {"_cuda_reason", f_cuda_reason, METH_NOARGS, "internal: why cuda is unavailable, or None"},
    {"_device_types", f_device_types, METH_NOARGS, "internal: the device type names, by code"},
    {"_cpu_isa", f_cpu_isa, METH_O, "internal: the CPU kernels' ISA level (arg: detected?)"},
    {"_shutdown", f_shutdown, METH_NOARGS, "internal: stop the sim workers (atexit)"},
    {NULL, NULL, 0, NULL},
};
