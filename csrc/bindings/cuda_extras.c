/* cuda_extras.c - pygpu._C's _cuda_* methods: the CUDA plugin's extras table
 * (csrc/core/pg_cuda_extras.h: options, device properties, NVTX, streams,
 * events, graphs, NCCL) as Python functions, for pygpu/cuda/streams.py,
 * pygpu/cuda/__init__.py and pygpu/distributed/_nccl.py; and the C side of the interop
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

/* ---- the calls of one shape, generated from a table ------------------------------------- */

/* The extras whose wrapper is only "parse the arguments, make the call without the GIL,
 * convert its one result": one row each, (Python name = extras member, its arguments, what
 * it returns, docstring). An argument is an int, a flag (any truth value), a str or a
 * handle (an int address, None for NULL); a result is none, a handle, a prev (a handle,
 * None for NULL), a truth (a bool), an int, a float (milliseconds) or a uintptr (a raw CUDA
 * stream). The others (NVTX, properties, NCCL ids and collectives) are written out below. */
#define PG_CUDA_EXTRA_CALLS(X0, X1, X2, X3)                                                        \
    X2(set_option, str, int, none, "internal: set_option(name, value) of the CUDA plugin")         \
    X1(get_option, str, int, "internal: get_option(name) of the CUDA plugin")                      \
    X2(stream_create, int, int, handle, "internal: (device, priority) -> stream handle")           \
    X1(stream_destroy, handle, none, "internal: destroy a stream handle")                          \
    X2(stream_handle, int, handle, uintptr, "internal: (device, handle) -> cudaStream_t")          \
    X2(stream_enter, int, handle, prev, "internal: make a stream current -> previous")             \
    X3(stream_exit, int, handle, handle, none, "internal: (device, handle, previous)")             \
    X2(stream_synchronize, int, handle, none, "internal: host wait for a stream")                  \
    X2(stream_query, int, handle, truth, "internal: whether a stream's work is done")              \
    X3(stream_wait_event, int, handle, handle, none, "internal: device-side wait")                 \
    X2(event_create, int, flag, handle, "internal: (device, timing) -> event handle")              \
    X1(event_destroy, handle, none, "internal: destroy an event handle")                           \
    X3(event_record, handle, int, handle, none, "internal: (event, device, stream)")               \
    X1(event_query, handle, truth, "internal: whether an event has completed")                     \
    X1(event_synchronize, handle, none, "internal: host wait for an event")                        \
    X2(event_elapsed_time, handle, handle, float, "internal: ms between two events")               \
    X0(graph_create, handle, "internal: -> graph handle")                                          \
    X1(graph_destroy, handle, none, "internal: destroy a graph handle")                            \
    X3(graph_capture_begin, handle, int, handle, none, "internal: (graph, device, stream)")        \
    X2(graph_capture_end, handle, flag, none, "internal: (graph, keep)")                           \
    X1(graph_replay, handle, none, "internal: replay a graph")                                     \
    X1(graph_reset, handle, none, "internal: drop a graph's capture")                              \
    X1(nccl_load, str, none, "internal: load libnccl from a path")                                 \
    X1(cudnn_load, str, none, "internal: load libcudnn from a path")                               \
    X1(cudnn_offer, str, none, "internal: the libcudnn paths to try on the first convolution")    \
    X1(cufft_load, str, none, "internal: load libcufft from a path")                               \
    X0(cufft_version, int, "internal: cuFFT's version (cufftGetVersion), 0 before it is loaded")   \
    X1(cufft_offer, str, none, "internal: the libcufft paths to try on the first FFT node")        \
    X1(cusolver_load, str, none, "internal: load libcusolver from a path")                         \
    X1(cusolver_offer, str, none, "internal: the libcusolver paths to try on the first LINALG")    \
    X1(nccl_comm_destroy, handle, none, "internal: finalize and destroy")                          \
    X1(nccl_comm_abort, handle, none, "internal: abort a communicator")

/* an argument: its C declaration, PyArg_ParseTuple format and parse targets */
#define ARG_DECL_int(v) int v
#define ARG_DECL_flag(v) int v
#define ARG_DECL_str(v) const char *v
#define ARG_DECL_handle(v) void *v
#define ARG_FMT_int "i"
#define ARG_FMT_flag "p"
#define ARG_FMT_str "s"
#define ARG_FMT_handle "O&"
#define ARG_PARSE_int(v) , &v
#define ARG_PARSE_flag(v) , &v
#define ARG_PARSE_str(v) , &v
#define ARG_PARSE_handle(v) , to_ptr, &v
/* a result: its C declaration (initialised), the call's out argument, the Python value */
#define OUT_DECL_none(v) (void)0
#define OUT_DECL_handle(v) void *v = NULL
#define OUT_DECL_prev(v) void *v = NULL
#define OUT_DECL_truth(v) int v = 0
#define OUT_DECL_int(v) int v = 0
#define OUT_DECL_float(v) float v = 0
#define OUT_DECL_uintptr(v) uintptr_t v = 0
#define OUT_ARG_none(v)
#define OUT_ARG_handle(v) , &v
#define OUT_ARG_prev(v) , &v
#define OUT_ARG_truth(v) , &v
#define OUT_ARG_int(v) , &v
#define OUT_ARG_float(v) , &v
#define OUT_ARG_uintptr(v) , &v
#define OUT_VALUE_none(v) Py_NewRef(Py_None)
#define OUT_VALUE_handle(v) PyLong_FromVoidPtr(v)
#define OUT_VALUE_prev(v) ptr_or_none(v)
#define OUT_VALUE_truth(v) PyBool_FromLong(v)
#define OUT_VALUE_int(v) PyLong_FromLong(v)
#define OUT_VALUE_float(v) PyFloat_FromDouble(v)
#define OUT_VALUE_uintptr(v) PyLong_FromSize_t((size_t)v)

#define EXTRA_BODY(name, OUT, FMT, PARSE, ...)                                               \
    {                                                                                              \
        (void)m;                                                                                   \
        if (!PyArg_ParseTuple(args, FMT ":_cuda_" #name PARSE))                                    \
            return NULL;                                                                           \
        EXTRAS(x);                                                                                 \
        OUT_DECL_##OUT(out);                                                                       \
        CALL(x->name(__VA_ARGS__ OUT_ARG_##OUT(out)));                                             \
        return OUT_VALUE_##OUT(out);                                                               \
    }
#define W0(name, OUT, doc)                                                                         \
    static PyObject *f_##name(PyObject *m, PyObject *args)                                         \
    {                                                                                              \
        (void)m;                                                                                   \
        if (!PyArg_ParseTuple(args, ":_cuda_" #name))                                              \
            return NULL;                                                                           \
        EXTRAS(x);                                                                                 \
        OUT_DECL_##OUT(out);                                                                       \
        CALL(x->name(&out));                                                                       \
        return OUT_VALUE_##OUT(out);                                                               \
    }
#define W1(name, A, OUT, doc)                                                                      \
    static PyObject *f_##name(PyObject *m, PyObject *args)                                         \
    {                                                                                              \
        ARG_DECL_##A(a);                                                                           \
        EXTRA_BODY(name, OUT, ARG_FMT_##A, ARG_PARSE_##A(a), a)                                    \
    }
#define W2(name, A, B, OUT, doc)                                                                   \
    static PyObject *f_##name(PyObject *m, PyObject *args)                                         \
    {                                                                                              \
        ARG_DECL_##A(a);                                                                           \
        ARG_DECL_##B(b);                                                                           \
        EXTRA_BODY(name, OUT, ARG_FMT_##A ARG_FMT_##B, ARG_PARSE_##A(a) ARG_PARSE_##B(b), a, b)    \
    }
#define W3(name, A, B, C, OUT, doc)                                                                \
    static PyObject *f_##name(PyObject *m, PyObject *args)                                         \
    {                                                                                              \
        ARG_DECL_##A(a);                                                                           \
        ARG_DECL_##B(b);                                                                           \
        ARG_DECL_##C(c);                                                                           \
        EXTRA_BODY(name, OUT, ARG_FMT_##A ARG_FMT_##B ARG_FMT_##C,                                 \
                   ARG_PARSE_##A(a) ARG_PARSE_##B(b) ARG_PARSE_##C(c), a, b, c)                    \
    }
PG_CUDA_EXTRA_CALLS(W0, W1, W2, W3)

/* ---- properties, NVTX ----------------------------------------------------------------- */

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

/* ---- graphs ---------------------------------------------------------------------------- */

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

static PyObject *f_cudnn_version(PyObject *m, PyObject *noargs)
{
    (void)m;
    (void)noargs;
    EXTRAS(x);
    return PyLong_FromSize_t(x->cudnn_version());
}

static PyObject *f_cusolver_version(PyObject *m, PyObject *noargs)
{
    (void)m;
    (void)noargs;
    EXTRAS(x);
    return PyLong_FromLong(x->cusolver_version());
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

/* run(comm, device, [(kind, send ptr, recv ptr, count, nccl dtype, arg, peer), ...]):
 * NCCL calls, several as one group (pg_cuda_extras.h, pg_nccl_call) */
static PyObject *f_nccl_run(PyObject *m, PyObject *args)
{
    (void)m;
    void *c;
    int device;
    PyObject *list;
    if (!PyArg_ParseTuple(args, "O&iO!:_cuda_nccl_run", to_ptr, &c, &device, &PyList_Type, &list))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n > 4096)
        return PyErr_Format(PyExc_ValueError, "NCCL: at most 4096 calls in one group, got %zd", n);
    pg_nccl_call *calls = PyMem_Calloc(n ? (size_t)n : 1, sizeof *calls);
    if (calls == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        void *send, *recv;
        Py_ssize_t count;
        pg_nccl_call *k = &calls[i];
        if (!PyArg_ParseTuple(PyList_GET_ITEM(list, i), "iO&O&niii:an NCCL call", &k->kind, to_ptr,
                              &send, to_ptr, &recv, &count, &k->dtype, &k->arg, &k->peer)) {
            PyMem_Free(calls);
            return NULL;
        }
        if (count < 0 || k->kind < 0 || k->kind >= PG_NCCL_KINDS) {
            PyMem_Free(calls);
            return PyErr_Format(PyExc_ValueError, "NCCL call %zd: kind %d, count %zd", i, k->kind,
                                count);
        }
        k->send = send;
        k->recv = recv;
        k->count = (size_t)count;
    }
    pg_status st = PG_OK;
    const pg_cuda_extras *x = pg_cuda_extras_get();
    if (x == NULL) {
        PyMem_Free(calls);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    st = x->nccl_run(c, device, calls, (int)n);
    Py_END_ALLOW_THREADS
    PyMem_Free(calls);
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
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

#define DEF0(name, OUT, doc) {"_cuda_" #name, f_##name, METH_VARARGS, doc},
#define DEF1(name, A, OUT, doc) DEF0(name, OUT, doc)
#define DEF2(name, A, B, OUT, doc) DEF0(name, OUT, doc)
#define DEF3(name, A, B, C, OUT, doc) DEF0(name, OUT, doc)
PyMethodDef pg_cuda_extras_functions[] = {
    PG_CUDA_EXTRA_CALLS(DEF0, DEF1, DEF2, DEF3)
    {"_cuda_pci_bus_id", f_pci_bus_id, METH_O, "internal: PCI bus id of cuda:index (DeviceUnavailableError: unknown, and why)"},
    {"_cuda_device_properties", f_device_properties, METH_O, "internal: cudaGetDeviceProperties as a dict"},
    {"_cuda_nvtx_push", f_nvtx_push, METH_O, "internal: open an NVTX range"},
    {"_cuda_nvtx_pop", f_nvtx_pop, METH_NOARGS, "internal: close an NVTX range"},
    {"_cuda_graph_ops", f_graph_ops, METH_VARARGS, "internal: ops a graph holds"},
    {"_cuda_nccl_version", f_nccl_version, METH_NOARGS, "internal: the loaded NCCL's version"},
    {"_cuda_cudnn_version", f_cudnn_version, METH_NOARGS, "internal: the loaded cuDNN's version (0: none)"},
    {"_cuda_cusolver_version", f_cusolver_version, METH_NOARGS,
     "internal: the loaded cuSOLVER's version (0: none)"},
    {"_cuda_nccl_unique_id", f_nccl_unique_id, METH_NOARGS, "internal: a new ncclUniqueId (bytes)"},
    {"_cuda_nccl_comm_init", f_nccl_comm_init, METH_VARARGS, "internal: (nranks, id, rank, device) -> comm"},
    {"_cuda_nccl_run", f_nccl_run, METH_VARARGS, "internal: (comm, device, [(kind, send, recv, n, dtype, arg, peer)])"},
    {"_cuda_extras_probe", f_extras_probe, METH_O, "internal: ask the plugin for extras table version N"},
    {NULL, NULL, 0, NULL},
};
