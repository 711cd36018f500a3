/* cuda_extras.c - pygpu._C's _cuda_* methods: the CUDA plugin's extras table
 * (csrc/core/pg_cuda_extras.h: options, device properties, NVTX, streams,
 * events, graphs, NCCL) as Python functions, for pygpu/_cuda_streams.py,
 * pygpu/cuda.py and pygpu/distributed/_nccl.py; and the C side of the interop
 * stream hand-offs (interop.c calls pg_cuda_extras_get directly).
 *
 * This is the only way Python reaches the plugin beyond the backend table: the
 * table was fetched and checked once when the plugin was loaded
 * (csrc/core/pg_plugin.c), every call returns a pg_status and a failure becomes
 * an exception in errors.c, the one status->exception map. Handles (streams,
 * events, graphs, communicators) travel as ints; None is the NULL handle (a
 * device's own stream). Every call gives up the GIL: each makes a CUDA or NCCL
 * call that may block (a synchronize, a communicator joining its peers).
 *
 * Loading the plugin stays in Python (pygpu.cuda._load: it preloads cuBLAS from
 * the nvidia-cublas wheel first), the one C->Python call here. */
#include "cuda_extras.h"

#include "../core/pg_backend.h"
#include "tensor_object.h"

int pg_cuda_load(int require)
{
    if (pg_backend_get(PG_DEV_CUDA) && !require)
        return 0;
    PyObject *mod = PyImport_ImportModule("pygpu.cuda");
    PyObject *r = mod ? PyObject_CallMethod(mod, "_load", "i", require) : NULL;
    Py_XDECREF(mod);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

const pg_cuda_extras *pg_cuda_extras_get(void)
{
    /* not loaded yet: load it as pygpu.cuda does, or raise its "cuda is not
     * available: <why>" */
    if (!pg_backend_get(PG_DEV_CUDA) && pg_cuda_load(1) < 0)
        return NULL;
    const void *t = NULL;
    pg_status st = pg_plugin_extras(PG_DEV_CUDA, &t);
    if (st != PG_OK) {
        pg_raise(st);
        return NULL;
    }
    return t;
}

/* "O&" converter: None -> NULL, an int -> that address */
static int to_ptr(PyObject *o, void *out)
{
    if (o == Py_None) {
        *(void **)out = NULL;
        return 1;
    }
    void *p = PyLong_AsVoidPtr(o);
    if (p == NULL && PyErr_Occurred())
        return 0;
    *(void **)out = p;
    return 1;
}

static PyObject *ptr_or_none(void *p) { return p ? PyLong_FromVoidPtr(p) : Py_NewRef(Py_None); }

/* Fetch the table into `x` or return NULL with DeviceUnavailableError set. */
#define EXTRAS(x)                                  \
    const pg_cuda_extras *x = pg_cuda_extras_get(); \
    if (!x)                                        \
    return NULL
/* Run one table call without the GIL; a failure raises through errors.c. */
#define CALL(call)                                 \
    do {                                           \
        pg_status st_;                             \
        Py_BEGIN_ALLOW_THREADS st_ = (call);       \
        Py_END_ALLOW_THREADS if (st_ != PG_OK) return pg_raise(st_); \
    } while (0)

/* ---- options, properties, NVTX --------------------------------------------------------- */

static PyObject *f_set_option(PyObject *m, PyObject *args)
{
    (void)m;
    const char *name;
    int value;
    if (!PyArg_ParseTuple(args, "si:_cuda_set_option", &name, &value))
        return NULL;
    EXTRAS(x);
    CALL(x->set_option(name, value));
    Py_RETURN_NONE;
}

static PyObject *f_get_option(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name)
        return NULL;
    EXTRAS(x);
    int v = 0;
    CALL(x->get_option(name, &v));
    return PyLong_FromLong(v);
}

static PyObject *f_pci_bus_id(PyObject *m, PyObject *arg)
{
    (void)m;
    int index = PyLong_AsLong(arg);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    EXTRAS(x);
    char buf[64];
    CALL(x->pci_bus_id(index, buf, sizeof buf));
    return PyUnicode_FromString(buf);
}

static PyObject *f_device_properties(PyObject *m, PyObject *arg)
{
    (void)m;
    int index = PyLong_AsLong(arg);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    EXTRAS(x);
    pg_cuda_properties p;
    CALL(x->device_properties(index, &p));
    p.name[sizeof p.name - 1] = '\0';
    return Py_BuildValue(
        "{s:s,s:i,s:i,s:K,s:i,s:i,s:i,s:i,s:K,s:i,s:i,s:i,s:y#}", "name", p.name, "major", p.major,
        "minor", p.minor, "total_memory", p.total_memory, "multi_processor_count",
        p.multi_processor_count, "max_threads_per_multi_processor",
        p.max_threads_per_multi_processor, "warp_size", p.warp_size, "l2_cache_size",
        p.l2_cache_size, "shared_memory_per_block_optin", p.shared_memory_per_block_optin,
        "pci_bus_id", p.pci_bus_id, "pci_device_id", p.pci_device_id, "pci_domain_id",
        p.pci_domain_id, "uuid", p.uuid, (Py_ssize_t)sizeof p.uuid);
}

static PyObject *f_nvtx_push(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name)
        return NULL;
    EXTRAS(x);
    x->nvtx_push(name); /* a few instructions: no GIL hand-off */
    Py_RETURN_NONE;
}

static PyObject *f_nvtx_pop(PyObject *m, PyObject *noargs)
{
    (void)m;
    (void)noargs;
    EXTRAS(x);
    x->nvtx_pop();
    Py_RETURN_NONE;
}

/* ---- streams --------------------------------------------------------------------------- */

static PyObject *f_stream_create(PyObject *m, PyObject *args)
{
    (void)m;
    int device, priority;
    if (!PyArg_ParseTuple(args, "ii:_cuda_stream_create", &device, &priority))
        return NULL;
    EXTRAS(x);
    void *h = NULL;
    CALL(x->stream_create(device, priority, &h));
    return PyLong_FromVoidPtr(h);
}

static PyObject *f_stream_destroy(PyObject *m, PyObject *args)
{
    (void)m;
    void *h;
    if (!PyArg_ParseTuple(args, "O&:_cuda_stream_destroy", to_ptr, &h))
        return NULL;
    EXTRAS(x);
    CALL(x->stream_destroy(h));
    Py_RETURN_NONE;
}

static PyObject *f_stream_handle(PyObject *m, PyObject *args)
{
    (void)m;
    int device;
    void *h;
    if (!PyArg_ParseTuple(args, "iO&:_cuda_stream_handle", &device, to_ptr, &h))
        return NULL;
    EXTRAS(x);
    uintptr_t out = 0;
    CALL(x->stream_handle(device, h, &out));
    return PyLong_FromSize_t((size_t)out);
}

static PyObject *f_stream_enter(PyObject *m, PyObject *args)
{
    (void)m;
    int device;
    void *h;
    if (!PyArg_ParseTuple(args, "iO&:_cuda_stream_enter", &device, to_ptr, &h))
        return NULL;
    EXTRAS(x);
    void *prev = NULL;
    CALL(x->stream_enter(device, h, &prev));
    return ptr_or_none(prev);
}

static PyObject *f_stream_exit(PyObject *m, PyObject *args)
{
    (void)m;
    int device;
    void *h, *prev;
    if (!PyArg_ParseTuple(args, "iO&O&:_cuda_stream_exit", &device, to_ptr, &h, to_ptr, &prev))
        return NULL;
    EXTRAS(x);
    CALL(x->stream_exit(device, h, prev));
    Py_RETURN_NONE;
}

static PyObject *f_stream_synchronize(PyObject *m, PyObject *args)
{
    (void)m;
    int device;
    void *h;
    if (!PyArg_ParseTuple(args, "iO&:_cuda_stream_synchronize", &device, to_ptr, &h))
        return NULL;
    EXTRAS(x);
    CALL(x->stream_synchronize(device, h));
    Py_RETURN_NONE;
}

static PyObject *f_stream_query(PyObject *m, PyObject *args)
{
    (void)m;
    int device;
    void *h;
    if (!PyArg_ParseTuple(args, "iO&:_cuda_stream_query", &device, to_ptr, &h))
        return NULL;
    EXTRAS(x);
    int done = 0;
    CALL(x->stream_query(device, h, &done));
    return PyBool_FromLong(done);
}

static PyObject *f_stream_wait_event(PyObject *m, PyObject *args)
{
    (void)m;
    int device;
    void *h, *ev;
    if (!PyArg_ParseTuple(args, "iO&O&:_cuda_stream_wait_event", &device, to_ptr, &h, to_ptr, &ev))
        return NULL;
    EXTRAS(x);
    CALL(x->stream_wait_event(device, h, ev));
    Py_RETURN_NONE;
}

/* ---- events ---------------------------------------------------------------------------- */

static PyObject *f_event_create(PyObject *m, PyObject *args)
{
    (void)m;
    int device, timing;
    if (!PyArg_ParseTuple(args, "ip:_cuda_event_create", &device, &timing))
        return NULL;
    EXTRAS(x);
    void *ev = NULL;
    CALL(x->event_create(device, timing, &ev));
    return PyLong_FromVoidPtr(ev);
}

static PyObject *f_event_destroy(PyObject *m, PyObject *args)
{
    (void)m;
    void *ev;
    if (!PyArg_ParseTuple(args, "O&:_cuda_event_destroy", to_ptr, &ev))
        return NULL;
    EXTRAS(x);
    CALL(x->event_destroy(ev));
    Py_RETURN_NONE;
}

static PyObject *f_event_record(PyObject *m, PyObject *args)
{
    (void)m;
    void *ev, *h;
    int device;
    if (!PyArg_ParseTuple(args, "O&iO&:_cuda_event_record", to_ptr, &ev, &device, to_ptr, &h))
        return NULL;
    EXTRAS(x);
    CALL(x->event_record(ev, device, h));
    Py_RETURN_NONE;
}

static PyObject *f_event_query(PyObject *m, PyObject *args)
{
    (void)m;
    void *ev;
    if (!PyArg_ParseTuple(args, "O&:_cuda_event_query", to_ptr, &ev))
        return NULL;
    EXTRAS(x);
    int done = 0;
    CALL(x->event_query(ev, &done));
    return PyBool_FromLong(done);
}

static PyObject *f_event_synchronize(PyObject *m, PyObject *args)
{
    (void)m;
    void *ev;
    if (!PyArg_ParseTuple(args, "O&:_cuda_event_synchronize", to_ptr, &ev))
        return NULL;
    EXTRAS(x);
    CALL(x->event_synchronize(ev));
    Py_RETURN_NONE;
}

static PyObject *f_event_elapsed_time(PyObject *m, PyObject *args)
{
    (void)m;
    void *a, *b;
    if (!PyArg_ParseTuple(args, "O&O&:_cuda_event_elapsed_time", to_ptr, &a, to_ptr, &b))
        return NULL;
    EXTRAS(x);
    float ms = 0;
    CALL(x->event_elapsed_time(a, b, &ms));
    return PyFloat_FromDouble(ms);
}

/* ---- graphs ---------------------------------------------------------------------------- */

static PyObject *f_graph_create(PyObject *m, PyObject *noargs)
{
    (void)m;
    (void)noargs;
    EXTRAS(x);
    void *g = NULL;
    CALL(x->graph_create(&g));
    return PyLong_FromVoidPtr(g);
}

/* graph_destroy, graph_replay, graph_reset: one handle in, nothing out */
#define GRAPH_UNARY(fname, member)                                   \
    static PyObject *fname(PyObject *m, PyObject *args)              \
    {                                                                \
        (void)m;                                                     \
        void *g;                                                     \
        if (!PyArg_ParseTuple(args, "O&", to_ptr, &g))               \
            return NULL;                                             \
        EXTRAS(x);                                                   \
        CALL(x->member(g));                                          \
        Py_RETURN_NONE;                                              \
    }
GRAPH_UNARY(f_graph_destroy, graph_destroy)
GRAPH_UNARY(f_graph_replay, graph_replay)
GRAPH_UNARY(f_graph_reset, graph_reset)

static PyObject *f_graph_capture_begin(PyObject *m, PyObject *args)
{
    (void)m;
    void *g, *h;
    int device;
    if (!PyArg_ParseTuple(args, "O&iO&:_cuda_graph_capture_begin", to_ptr, &g, &device, to_ptr, &h))
        return NULL;
    EXTRAS(x);
    CALL(x->graph_capture_begin(g, device, h));
    Py_RETURN_NONE;
}

static PyObject *f_graph_capture_end(PyObject *m, PyObject *args)
{
    (void)m;
    void *g;
    int keep;
    if (!PyArg_ParseTuple(args, "O&p:_cuda_graph_capture_end", to_ptr, &g, &keep))
        return NULL;
    EXTRAS(x);
    CALL(x->graph_capture_end(g, keep));
    Py_RETURN_NONE;
}

static PyObject *f_graph_ops(PyObject *m, PyObject *args)
{
    (void)m;
    void *g;
    if (!PyArg_ParseTuple(args, "O&:_cuda_graph_ops", to_ptr, &g))
        return NULL;
    EXTRAS(x);
    return PyLong_FromLong(x->graph_ops(g));
}

/* ---- NCCL ------------------------------------------------------------------------------ */

static PyObject *f_nccl_load(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *path = PyUnicode_AsUTF8(arg);
    if (!path)
        return NULL;
    EXTRAS(x);
    CALL(x->nccl_load(path));
    Py_RETURN_NONE;
}

static PyObject *f_cudnn_load(PyObject *m, PyObject *arg)
{
    (void)m;
    const char *path = PyUnicode_AsUTF8(arg);
    if (!path)
        return NULL;
    EXTRAS(x);
    CALL(x->cudnn_load(path));
    Py_RETURN_NONE;
}

static PyObject *f_cudnn_version(PyObject *m, PyObject *noargs)
{
    (void)m;
    (void)noargs;
    EXTRAS(x);
    return PyLong_FromSize_t(x->cudnn_version());
}

static PyObject *f_nccl_version(PyObject *m, PyObject *noargs)
{
    (void)m;
    (void)noargs;
    EXTRAS(x);
    return PyLong_FromLong(x->nccl_version());
}

static PyObject *f_nccl_unique_id(PyObject *m, PyObject *noargs)
{
    (void)m;
    (void)noargs;
    EXTRAS(x);
    char id[PG_CUDA_NCCL_ID_BYTES];
    CALL(x->nccl_unique_id(id, sizeof id));
    return PyBytes_FromStringAndSize(id, sizeof id);
}

static PyObject *f_nccl_comm_init(PyObject *m, PyObject *args)
{
    (void)m;
    int nranks, rank, device;
    const char *id;
    Py_ssize_t id_len;
    if (!PyArg_ParseTuple(args, "iy#ii:_cuda_nccl_comm_init", &nranks, &id, &id_len, &rank,
                          &device))
        return NULL;
    EXTRAS(x);
    void *comm = NULL;
    CALL(x->nccl_comm_init(nranks, id, (size_t)id_len, rank, device, &comm));
    return PyLong_FromVoidPtr(comm);
}

static PyObject *f_nccl_comm_destroy(PyObject *m, PyObject *args)
{
    (void)m;
    void *c;
    if (!PyArg_ParseTuple(args, "O&:_cuda_nccl_comm_destroy", to_ptr, &c))
        return NULL;
    EXTRAS(x);
    CALL(x->nccl_comm_destroy(c));
    Py_RETURN_NONE;
}

static PyObject *f_nccl_comm_abort(PyObject *m, PyObject *args)
{
    (void)m;
    void *c;
    if (!PyArg_ParseTuple(args, "O&:_cuda_nccl_comm_abort", to_ptr, &c))
        return NULL;
    EXTRAS(x);
    CALL(x->nccl_comm_abort(c));
    Py_RETURN_NONE;
}

/* all_reduce(comm, device, ptr, count, nccl dtype, op) and broadcast(..., root) */
static PyObject *nccl_collective(PyObject *args, int broadcast)
{
    void *c, *ptr;
    int device, dtype, arg;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "O&iO&nii", to_ptr, &c, &device, to_ptr, &ptr, &count, &dtype, &arg))
        return NULL;
    if (count < 0)
        return PyErr_Format(PyExc_ValueError, "NCCL: count must be >= 0, got %zd", count);
    EXTRAS(x);
    if (broadcast)
        CALL(x->nccl_broadcast(c, device, ptr, (size_t)count, dtype, arg));
    else
        CALL(x->nccl_all_reduce(c, device, ptr, (size_t)count, dtype, arg));
    Py_RETURN_NONE;
}

static PyObject *f_nccl_all_reduce(PyObject *m, PyObject *args)
{
    (void)m;
    return nccl_collective(args, 0);
}

static PyObject *f_nccl_broadcast(PyObject *m, PyObject *args)
{
    (void)m;
    return nccl_collective(args, 1);
}

/* ---- the table itself ------------------------------------------------------------------ */

/* Ask the loaded plugin for extras table `version` again (tests: another
 * version must be refused with a message naming both). */
static PyObject *f_extras_probe(PyObject *m, PyObject *arg)
{
    (void)m;
    int version = PyLong_AsLong(arg);
    if (version == -1 && PyErr_Occurred())
        return NULL;
    const void *t = NULL;
    pg_status st = pg_plugin_extras_probe(PG_DEV_CUDA, version, &t);
    if (st != PG_OK)
        return pg_raise(st);
    return PyLong_FromLong(((const pg_cuda_extras *)t)->version);
}

PyMethodDef pg_cuda_extras_functions[] = {
    {"_cuda_set_option", f_set_option, METH_VARARGS, "internal: set_option(name, value) of the CUDA plugin"},
    {"_cuda_get_option", f_get_option, METH_O, "internal: get_option(name) of the CUDA plugin"},
    {"_cuda_pci_bus_id", f_pci_bus_id, METH_O, "internal: PCI bus id of cuda:index (DeviceUnavailableError: unknown, and why)"},
    {"_cuda_device_properties", f_device_properties, METH_O, "internal: cudaGetDeviceProperties as a dict"},
    {"_cuda_nvtx_push", f_nvtx_push, METH_O, "internal: open an NVTX range"},
    {"_cuda_nvtx_pop", f_nvtx_pop, METH_NOARGS, "internal: close an NVTX range"},
    {"_cuda_stream_create", f_stream_create, METH_VARARGS, "internal: (device, priority) -> stream handle"},
    {"_cuda_stream_destroy", f_stream_destroy, METH_VARARGS, "internal: destroy a stream handle"},
    {"_cuda_stream_handle", f_stream_handle, METH_VARARGS, "internal: (device, handle) -> cudaStream_t"},
    {"_cuda_stream_enter", f_stream_enter, METH_VARARGS, "internal: make a stream current -> previous"},
    {"_cuda_stream_exit", f_stream_exit, METH_VARARGS, "internal: (device, handle, previous)"},
    {"_cuda_stream_synchronize", f_stream_synchronize, METH_VARARGS, "internal: host wait for a stream"},
    {"_cuda_stream_query", f_stream_query, METH_VARARGS, "internal: whether a stream's work is done"},
    {"_cuda_stream_wait_event", f_stream_wait_event, METH_VARARGS, "internal: device-side wait"},
    {"_cuda_event_create", f_event_create, METH_VARARGS, "internal: (device, timing) -> event handle"},
    {"_cuda_event_destroy", f_event_destroy, METH_VARARGS, "internal: destroy an event handle"},
    {"_cuda_event_record", f_event_record, METH_VARARGS, "internal: (event, device, stream)"},
    {"_cuda_event_query", f_event_query, METH_VARARGS, "internal: whether an event has completed"},
    {"_cuda_event_synchronize", f_event_synchronize, METH_VARARGS, "internal: host wait for an event"},
    {"_cuda_event_elapsed_time", f_event_elapsed_time, METH_VARARGS, "internal: ms between two events"},
    {"_cuda_graph_create", f_graph_create, METH_NOARGS, "internal: -> graph handle"},
    {"_cuda_graph_destroy", f_graph_destroy, METH_VARARGS, "internal: destroy a graph handle"},
    {"_cuda_graph_capture_begin", f_graph_capture_begin, METH_VARARGS, "internal: (graph, device, stream)"},
    {"_cuda_graph_capture_end", f_graph_capture_end, METH_VARARGS, "internal: (graph, keep)"},
    {"_cuda_graph_replay", f_graph_replay, METH_VARARGS, "internal: replay a graph"},
    {"_cuda_graph_reset", f_graph_reset, METH_VARARGS, "internal: drop a graph's capture"},
    {"_cuda_graph_ops", f_graph_ops, METH_VARARGS, "internal: ops a graph holds"},
    {"_cuda_nccl_load", f_nccl_load, METH_O, "internal: load libnccl from a path"},
    {"_cuda_nccl_version", f_nccl_version, METH_NOARGS, "internal: the loaded NCCL's version"},
    {"_cuda_cudnn_load", f_cudnn_load, METH_O, "internal: load libcudnn from a path"},
    {"_cuda_cudnn_version", f_cudnn_version, METH_NOARGS, "internal: the loaded cuDNN's version (0: none)"},
    {"_cuda_nccl_unique_id", f_nccl_unique_id, METH_NOARGS, "internal: a new ncclUniqueId (bytes)"},
    {"_cuda_nccl_comm_init", f_nccl_comm_init, METH_VARARGS, "internal: (nranks, id, rank, device) -> comm"},
    {"_cuda_nccl_comm_destroy", f_nccl_comm_destroy, METH_VARARGS, "internal: finalize and destroy"},
    {"_cuda_nccl_comm_abort", f_nccl_comm_abort, METH_VARARGS, "internal: abort a communicator"},
    {"_cuda_nccl_all_reduce", f_nccl_all_reduce, METH_VARARGS, "internal: (comm, device, ptr, n, dtype, op)"},
    {"_cuda_nccl_broadcast", f_nccl_broadcast, METH_VARARGS, "internal: (comm, device, ptr, n, dtype, root)"},
    {"_cuda_extras_probe", f_extras_probe, METH_O, "internal: ask the plugin for extras table version N"},
    {NULL, NULL, 0, NULL},
};
