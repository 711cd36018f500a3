/* interop.c - NumPy and DLPack: zero-copy in and out of pygpu.
 *
 * from_numpy wraps an ndarray's memory in a storage that holds a reference
 * to the array (so the array lives as long as any view of it); numpy() and
 * the buffer protocol hand out views that hold the tensor. DLPack does the
 * same through capsules, versioned (1.0) or legacy. A device tensor reaches
 * NumPy only through a counted transfer.
 *
 * CUDA tensors go both ways without a host sync: DLPack export with a
 * `stream` makes the consumer's stream wait on an event, DLPack import of a
 * CUDA capsule hands the producer pygpu's stream (it makes that stream wait),
 * and __cuda_array_interface__ names pygpu's stream. The stream handles come
 * from the CUDA plugin's extras table (cuda_extras.h), called directly. */
#define PY_ARRAY_UNIQUE_SYMBOL pygpu_ARRAY_API
#define NPY_NO_DEPRECATED_API NPY_2_0_API_VERSION
#include "cuda_extras.h"
#include "tensor_object.h"

#include <numpy/arrayobject.h>
#include <string.h>

#include "dlpack.h"
#include "../core/pg_backend.h"

int pg_numpy_init(void)
{
    import_array1(-1);
    return 0;
}

/* Every exchange format below names a dtype by its kind and size, as NumPy's array
 * interface does ('i' and 4 bytes: int32), from pg_dtype.h's kind and size columns: one
 * mapping for NumPy, the buffer protocol, __cuda_array_interface__ and DLPack. NumPy's
 * kind character: 'b' bool, 'i' signed, 'u' unsigned, 'f' float; 0 for bfloat16 and the
 * float8 dtypes, which NumPy lacks (ml_dtypes' are user types of the same names, below). */
static char npy_kind(int dt)
{
    switch (pg_dtype_kind_of((pg_dtype)dt)) {
    case PG_KIND_BOOL: return 'b';
    case PG_KIND_SINT: return 'i';
    case PG_KIND_UINT: return 'u';
    case PG_KIND_FLOAT: return 'f';
    case PG_KIND_COMPLEX: return 'c';
    case PG_KIND_FP8: return 0;
    case PG_KIND_SUBU: case PG_KIND_SUBS: case PG_KIND_BITS: case PG_KIND_FP4: return 0;
    default: return dt == PG_BFLOAT16 ? 0 : 'f'; /* float16 is NumPy's 'e' */
    }
}

/* log2 of a dtype's size: 0..4 */
static int size_log2(int dt)
{
    size_t s = pg_dtype_size((pg_dtype)dt);
    return s == 1 ? 0 : s == 2 ? 1 : s == 4 ? 2 : s == 8 ? 3 : 4;
}

/* NumPy's type for a pg dtype, by kind and size; -1 for bfloat16, which NumPy lacks. */
static int npy_type(int dt)
{
    static const short types[][5] = {
        ['b'] = {NPY_BOOL, -1, -1, -1, -1}, ['i'] = {NPY_INT8, NPY_INT16, NPY_INT32, NPY_INT64, -1},
        ['u'] = {NPY_UINT8, NPY_UINT16, NPY_UINT32, NPY_UINT64, -1},
        ['f'] = {-1, NPY_HALF, NPY_FLOAT32, NPY_FLOAT64, -1},
        ['c'] = {-1, -1, -1, NPY_COMPLEX64, NPY_COMPLEX128}};
    char k = npy_kind(dt);
    return k ? types[(int)k][size_log2(dt)] : -1;
}

/* NumPy type number -> pg dtype, or -1 with a TypeError naming the dtype */
static int from_npy_type(PyArray_Descr *d)
{
    if (!PyDataType_ISNOTSWAPPED(d)) {
        PyErr_SetString(PyExc_TypeError, "byte-swapped (non-native endian) arrays are not "
                                         "supported; convert with a.astype(a.dtype.newbyteorder('='))");
        return -1;
    }
    if (d->type_num >= NPY_USERDEF) { /* ml_dtypes' bfloat16 and float8s, by name and size */
        PyObject *name = PyObject_Str((PyObject *)d);
        int found = -1;
        for (int dt = 0; dt < PG_NUM_DTYPES && name && PyUnicode_Check(name); dt++)
            if (!npy_kind(dt) && !pg_dtype_is_shell((pg_dtype)dt) && /* (ml_dtypes' int4 is no torch.int4) */
                (size_t)PyDataType_ELSIZE(d) == pg_dtype_size((pg_dtype)dt) &&
                PyUnicode_CompareWithASCIIString(name, pg_dtype_name((pg_dtype)dt)) == 0)
                found = dt;
        Py_XDECREF(name);
        PyErr_Clear();
        if (found >= 0)
            return found;
    }
    if (d->type_num < NPY_USERDEF) /* by kind and size: int64 is NumPy's long and longlong */
        for (int dt = 0; dt < PG_NUM_DTYPES; dt++)
            if (npy_kind(dt) == d->kind && (size_t)PyDataType_ELSIZE(d) == pg_dtype_size((pg_dtype)dt))
                return dt;
    PyObject *name = PyObject_Str((PyObject *)d);
    char names[400];
    pg_dtype_list(names, sizeof names);
    PyErr_Format(PyExc_TypeError,
                 "unsupported dtype %S: pygpu supports %s; "
                 "convert with a.astype(np.float32) (or another of those) first",
                 name ? name : Py_None, names);
    Py_XDECREF(name);
    return -1;
}

PyObject *pg_numpy_view(PyTensor *cpu)
{
    const pg_tensor *t = &cpu->t;
    PyArray_Descr *descr = NULL;
    if (npy_type(t->dtype) < 0) { /* bfloat16, float8: ml_dtypes' NumPy dtype, or the hook's TypeError */
        PyObject *hook = pg_hook("numpy_extra");
        PyObject *d = hook ? PyObject_CallFunction(hook, "s", pg_dtype_name((pg_dtype)t->dtype)) : NULL;
        if (!d)
            return NULL;
        if (!PyArray_DescrCheck(d)) {
            Py_DECREF(d);
            return PyErr_Format(PyExc_TypeError, "numpy_extra hook must return a NumPy dtype");
        }
        descr = (PyArray_Descr *)d; /* reference stolen by PyArray_NewFromDescr */
    }
    npy_intp dims[PG_MAX_DIMS], strides[PG_MAX_DIMS];
    size_t isz = pg_dtype_size((pg_dtype)t->dtype);
    for (int i = 0; i < t->ndim; i++) {
        dims[i] = (npy_intp)t->shape[i];
        strides[i] = (npy_intp)(t->strides[i] * (int64_t)isz);
    }
    int flags = (t->storage->flags & PG_STORAGE_READONLY) ? 0 : NPY_ARRAY_WRITEABLE;
    PyObject *arr = descr ? PyArray_NewFromDescr(&PyArray_Type, descr, t->ndim, dims, strides,
                                                 pg_tensor_data(t), flags, NULL)
                          : PyArray_New(&PyArray_Type, t->ndim, dims, npy_type(t->dtype), strides,
                                        pg_tensor_data(t), (int)isz, flags, NULL);
    if (!arr)
        return NULL;
    if (PyArray_SetBaseObject((PyArrayObject *)arr, Py_NewRef(cpu)) < 0) {
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* ---- from NumPy ----------------------------------------------------------------------- */

static void release_pyowner(pg_storage *s)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_DECREF((PyObject *)s->owner);
    PyGILState_Release(g);
    free(s);
}

/* Wrap `arr` (kept alive by the storage); shares memory. */
static PyObject *wrap_ndarray(PyArrayObject *arr)
{
    int dt = from_npy_type(PyArray_DESCR(arr));
    if (dt < 0)
        return NULL;
    int ndim = PyArray_NDIM(arr);
    if (ndim > PG_MAX_DIMS)
        return PyErr_Format(PyExc_ValueError, "pygpu supports at most %d dimensions, got %d",
                            PG_MAX_DIMS, ndim);
    int64_t isz = (int64_t)pg_dtype_size((pg_dtype)dt);
    pg_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = ndim;
    char *data = PyArray_BYTES(arr), *lo = data, *hi = data;
    bool empty = PyArray_SIZE(arr) == 0;
    for (int i = 0; i < ndim; i++) {
        npy_intp st = PyArray_STRIDE(arr, i);
        t.shape[i] = PyArray_DIM(arr, i);
        if (st % isz != 0)
            return PyErr_Format(PyExc_ValueError,
                                "the array's strides are not a multiple of its item size (axis "
                                "%d); pass np.ascontiguousarray(a) instead",
                                i);
        t.strides[i] = st / isz;
        if (!empty && t.shape[i] > 1) {
            if (st < 0)
                lo += st * (t.shape[i] - 1);
            else
                hi += st * (t.shape[i] - 1);
        }
    }
    size_t nbytes = empty ? 0 : (size_t)(hi - lo) + (size_t)isz;
    unsigned flags = PyArray_ISWRITEABLE(arr) ? 0 : PG_STORAGE_READONLY;
    pg_status st = pg_storage_wrap((pg_device){PG_DEV_CPU, 0}, lo, nbytes, flags, release_pyowner,
                                   Py_NewRef(arr), &t.storage);
    if (st != PG_OK) {
        Py_DECREF(arr);
        return pg_raise(st);
    }
    t.offset = (data - lo) / isz;
    return pg_wrap(&t);
}

static PyObject *f_from_numpy(PyObject *mod, PyObject *arg)
{
    (void)mod;
    if (!PyArray_Check(arg))
        return PyErr_Format(PyExc_TypeError, "from_numpy expects a numpy.ndarray, got %.80s",
                            Py_TYPE(arg)->tp_name);
    return wrap_ndarray((PyArrayObject *)arg);
}

/* _from_array(arr, dtype_code): a new cpu tensor holding a copy of `arr` converted to dtype */
static PyObject *f_from_array_copy(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *obj;
    int code;
    if (!PyArg_ParseTuple(args, "Oi", &obj, &code))
        return NULL;
    if (!PyArray_Check(obj))
        return PyErr_Format(PyExc_TypeError, "expected an ndarray");
    if (pg_check_dtype_code(code) < 0)
        return NULL;
    PyTensor *src = (PyTensor *)wrap_ndarray((PyArrayObject *)obj);
    if (!src)
        return NULL;
    pg_tensor out;
    pg_status st = PG_CALL(pg_heavy(&src->t), pg_op_astype(&src->t, (pg_dtype)code, &out));
    Py_DECREF(src);
    return pg_wrap_result(st, &out);
}

/* ---- the buffer protocol and __array__ ------------------------------------------------ */

/* Column-major (Fortran) order: the first axis has unit stride. */
static bool is_f_contiguous(const pg_tensor *t)
{
    int64_t expected = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->shape[i] == 0)
            return true;
        if (t->shape[i] != 1 && t->strides[i] != expected)
            return false;
        expected *= t->shape[i];
    }
    return true;
}

static int tensor_getbuffer(PyObject *self, Py_buffer *view, int flags)
{
    PyTensor *o = (PyTensor *)self;
    const pg_tensor *t = &o->t;
    if (pg_tensor_device(t).type != PG_DEV_CPU) {
        char d[24];
        PyErr_Format(PyExc_BufferError,
                     "this tensor lives on %s; its memory is not host memory. Copy it with "
                     ".cpu() (a counted transfer) first",
                     pg_device_str(pg_tensor_device(t), d, sizeof d));
        return -1;
    }
    if ((flags & PyBUF_WRITABLE) && (t->storage->flags & PG_STORAGE_READONLY)) {
        PyErr_SetString(PyExc_BufferError, "the tensor is read-only");
        return -1;
    }
    if (!npy_kind(t->dtype)) { /* bfloat16, float8 */
        PyErr_Format(PyExc_BufferError, "%s has no buffer-protocol format (NumPy and struct lack "
                                        "it); convert with .astype(pygpu.float32)",
                     pg_dtype_name((pg_dtype)t->dtype));
        return -1;
    }
    /* a consumer that asks for contiguous memory indexes it without strides */
    bool c_contig = pg_tensor_is_contiguous(t), f_contig = is_f_contiguous(t);
    const char *want = NULL;
    if ((flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !c_contig && !f_contig)
        want = "contiguous";
    else if ((flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !c_contig)
        want = "C-contiguous";
    else if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !f_contig)
        want = "Fortran-contiguous";
    else if (!(flags & PyBUF_STRIDES) && !c_contig)
        want = "C-contiguous (no strides were asked for)";
    if (want) {
        PyErr_Format(PyExc_BufferError, "the consumer asked for a %s buffer and this tensor is "
                                        "not; pass t.contiguous() instead",
                     want);
        return -1;
    }
    if (pg_wait(t) < 0)
        return -1;
    /* shape and strides live in one allocation owned by view->internal */
    Py_ssize_t *mem = PyMem_Malloc(sizeof(Py_ssize_t) * 2 * (t->ndim ? t->ndim : 1));
    if (!mem) {
        PyErr_NoMemory();
        return -1;
    }
    size_t isz = pg_dtype_size((pg_dtype)t->dtype);
    for (int i = 0; i < t->ndim; i++) {
        mem[i] = (Py_ssize_t)t->shape[i];
        mem[t->ndim + i] = (Py_ssize_t)(t->strides[i] * (int64_t)isz);
    }
    /* the struct module's codes by kind and size (bfloat16: none, plain bytes) */
    static const char *const codes[][5] = {
        ['b'] = {"?"}, ['i'] = {"b", "h", "i", "q"}, ['u'] = {"B", "H", "I", "Q"},
        ['f'] = {NULL, "e", "f", "d"}, ['c'] = {NULL, NULL, NULL, "Zf", "Zd"}};
    const char *format = npy_kind(t->dtype) ? codes[(int)npy_kind(t->dtype)][size_log2(t->dtype)] : NULL;
    view->buf = pg_tensor_data(t);
    view->obj = Py_NewRef(self);
    view->len = (Py_ssize_t)(pg_tensor_numel(t) * (int64_t)isz);
    view->readonly = (t->storage->flags & PG_STORAGE_READONLY) != 0;
    view->itemsize = (Py_ssize_t)isz;
    view->format = (flags & PyBUF_FORMAT) ? (char *)format : NULL;
    view->ndim = t->ndim;
    view->shape = (flags & PyBUF_ND) == PyBUF_ND ? mem : NULL;
    view->strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? mem + t->ndim : NULL;
    view->suboffsets = NULL;
    view->internal = mem;
    return 0;
}

static void tensor_releasebuffer(PyObject *self, Py_buffer *view)
{
    (void)self;
    PyMem_Free(view->internal);
}

PyBufferProcs pg_tensor_as_buffer = {tensor_getbuffer, tensor_releasebuffer};

/* __array__(dtype=None, copy=None) */
PyObject *pg_array_dunder(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"dtype", "copy", NULL};
    PyObject *dtype = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|OO", kw, &dtype, &copy))
        return NULL;
    PyTensor *o = (PyTensor *)self;
    bool on_device = pg_tensor_device(&o->t).type != PG_DEV_CPU;
    if (on_device && copy == Py_False)
        return PyErr_Format(PyExc_ValueError, "copy=False is impossible: the tensor is on a "
                                              "device and must be transferred");
    PyTensor *h = (PyTensor *)pg_host_implicit(o, PG_IMPLICIT_ARRAY);
    if (!h)
        return NULL;
    if (npy_type(h->t.dtype) < 0) { /* bfloat16: NumPy gets float32, which holds it exactly */
        if (copy == Py_False) {
            Py_DECREF(h);
            return PyErr_Format(PyExc_ValueError, "copy=False is impossible: NumPy has no "
                                                  "bfloat16, so the values must be converted");
        }
        Py_SETREF(h, (PyTensor *)pg_host_widened(h));
        if (!h)
            return NULL;
        copy = Py_None; /* already a fresh array */
    }
    PyObject *arr = pg_numpy_view(h);
    Py_DECREF(h);
    if (arr && dtype != Py_None)
        Py_SETREF(arr, PyObject_CallMethod(arr, "astype", "O", dtype));
    else if (arr && copy == Py_True && !on_device)
        Py_SETREF(arr, PyObject_CallMethod(arr, "copy", NULL));
    return arr;
}

/* ---- CUDA: __cuda_array_interface__ ----------------------------------------------------- */

/* NumPy's typestr ("<f4", "|i1"); NULL for bfloat16: the protocol has no such type */
static const char *cai_typestr(int dtype, char buf[8])
{
    char k = npy_kind(dtype);
    size_t size = pg_dtype_size((pg_dtype)dtype);
    if (!k)
        return NULL;
    snprintf(buf, 8, "%c%c%zu", size == 1 ? '|' : '<', k, size); /* "<c16": two digits */
    return buf;
}

/* Version 3 of the protocol. The consumer orders its reads after pygpu's work
 * by waiting on `stream`, the stream this thread queues on, which is first made
 * to wait for the copy and comm streams (a prefetch still filling the tensor),
 * so waiting for it alone is enough. */
PyObject *pg_cuda_array_interface_get(PyObject *self, void *c)
{
    (void)c;
    const pg_tensor *t = &((PyTensor *)self)->t;
    pg_device dev = pg_tensor_device(t);
    if (dev.type != PG_DEV_CUDA) {
        char d[24];
        return PyErr_Format(PyExc_AttributeError,
                            "__cuda_array_interface__ exists on cuda tensors only; this one is on "
                            "%s (use __array__ / __dlpack__, or .to('cuda') first)",
                            pg_device_str(dev, d, sizeof d));
    }
    char ts_buf[8];
    const char *ts = cai_typestr(t->dtype, ts_buf);
    if (!ts) {
        const char *name = pg_dtype_name((pg_dtype)t->dtype);
        return PyErr_Format(PyExc_AttributeError,
                            "a %s tensor has no __cuda_array_interface__ (the protocol has no %s "
                            "type); convert with .astype(pygpu.float32)",
                            name, name);
    }
    const pg_cuda_extras *x = pg_cuda_extras_get();
    if (!x)
        return NULL;
    pg_status st;
    uintptr_t stream = 0;
    Py_BEGIN_ALLOW_THREADS st = x->stream_gather(dev.index);
    if (st == PG_OK)
        st = x->stream_current_handle(dev.index, &stream);
    Py_END_ALLOW_THREADS
    if (st != PG_OK)
        return pg_raise(st);
    PyObject *shape = PyTuple_New(t->ndim), *strides = NULL;
    if (!shape)
        return NULL;
    for (int i = 0; i < t->ndim; i++)
        PyTuple_SET_ITEM(shape, i, PyLong_FromLongLong(t->shape[i]));
    if (pg_tensor_is_contiguous(t))
        strides = Py_NewRef(Py_None);
    else {
        long long item = (long long)pg_dtype_size((pg_dtype)t->dtype);
        strides = PyTuple_New(t->ndim);
        for (int i = 0; strides && i < t->ndim; i++)
            PyTuple_SET_ITEM(strides, i, PyLong_FromLongLong(t->strides[i] * item));
    }
    if (!strides) {
        Py_DECREF(shape);
        return NULL;
    }
    void *data = pg_tensor_numel(t) ? (void *)pg_tensor_data(t) : NULL;
    return Py_BuildValue("{s:N,s:s,s:(NO),s:i,s:N,s:[(s,s)],s:K}", "shape", shape, "typestr", ts,
                         "data", PyLong_FromVoidPtr(data), Py_False, "version", 3, "strides",
                         strides, "descr", "", ts, "stream", (unsigned long long)stream);
}

/* The stream a DLPack import onto cuda:index will read on: handed to the
 * producer's __dlpack__(stream=...), which makes it wait (an event, no host
 * sync). Loads the plugin if need be; a clear error when cuda cannot be used. */
static PyObject *cuda_consumer_stream(int index)
{
    if (pg_cuda_load(1) < 0)
        return NULL;
    const pg_backend *be;
    pg_status st = pg_backend_for((pg_device){PG_DEV_CUDA, index}, &be);
    if (st != PG_OK)
        return pg_raise(st);
    const pg_cuda_extras *x = pg_cuda_extras_get();
    if (!x)
        return NULL;
    uintptr_t h = 0;
    Py_BEGIN_ALLOW_THREADS st = x->stream_current_handle(index, &h);
    Py_END_ALLOW_THREADS
    return st == PG_OK ? PyLong_FromUnsignedLongLong((unsigned long long)h) : pg_raise(st);
}

/* __dlpack__(stream=consumer): the consumer's stream waits on the device for the
 * work pygpu queued so far (1: legacy default stream, 2: per-thread). */
static int cuda_export_wait(int index, unsigned long long consumer)
{
    const pg_cuda_extras *x = pg_cuda_extras_get();
    if (!x)
        return -1;
    pg_status st;
    Py_BEGIN_ALLOW_THREADS st = x->stream_wait_for_current(index, (uintptr_t)consumer);
    Py_END_ALLOW_THREADS
    return st == PG_OK ? 0 : pg_raise_int(st);
}

/* from_dlpack of CUDA memory, once wrapped: the storage counts as written by
 * work queued now on cuda:index, after the producer's event wait, so pygpu's
 * copy stream and host waits order after the producer too. */
static int cuda_import_mark(int index, pg_storage *storage)
{
    const pg_cuda_extras *x = pg_cuda_extras_get();
    if (!x)
        return -1;
    pg_status st;
    Py_BEGIN_ALLOW_THREADS st = x->storage_imported(index, storage);
    Py_END_ALLOW_THREADS
    return st == PG_OK ? 0 : pg_raise_int(st);
}

/* ---- DLPack out ----------------------------------------------------------------------- */

typedef struct {
    DLManagedTensorVersioned v; /* or the legacy struct; both point back to the tensor */
    DLManagedTensor legacy;
    int64_t shape[PG_MAX_DIMS], strides[PG_MAX_DIMS];
} export_block;

static void export_free(void *ctx, export_block *b)
{
    PyGILState_STATE g = PyGILState_Ensure();
    Py_XDECREF((PyObject *)ctx);
    PyGILState_Release(g);
    PyMem_RawFree(b);
}
static void deleter_versioned(DLManagedTensorVersioned *m) { export_free(m->manager_ctx, (export_block *)m); }
static void deleter_legacy(DLManagedTensor *m)
{
    export_block *b = (export_block *)((char *)m - offsetof(export_block, legacy));
    export_free(m->manager_ctx, b);
}

static void capsule_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "dltensor_versioned")) {
        DLManagedTensorVersioned *m = PyCapsule_GetPointer(cap, "dltensor_versioned");
        m->deleter(m);
    } else if (PyCapsule_IsValid(cap, "dltensor")) {
        DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
        m->deleter(m);
    } /* a consumed capsule was renamed "used_..." and is the consumer's to free */
}

/* DLPack's type of a dtype: its kind's code and its bits */
static DLDataType dl_type(int dt)
{
    /* the float8 dtypes: DLPack 1.0's float8 codes are not in this header (kDLOpaqueHandle's
     * neighbours); an export names none and an import matches none */
    static const uint8_t codes[] = {[PG_KIND_BOOL] = kDLBool, [PG_KIND_SINT] = kDLInt,
                                    [PG_KIND_UINT] = kDLUInt, [PG_KIND_FLOAT] = kDLFloat,
                                    [PG_KIND_HALF] = kDLFloat, [PG_KIND_COMPLEX] = kDLComplex,
                                    [PG_KIND_FP8] = 0xff, [PG_KIND_SUBU] = 0xff,
                                    [PG_KIND_SUBS] = 0xff, [PG_KIND_BITS] = 0xff,
                                    [PG_KIND_FP4] = 0xff};
    uint8_t code = dt == PG_BFLOAT16 ? kDLBfloat : codes[pg_dtype_kind_of((pg_dtype)dt)];
    return (DLDataType){code, (uint8_t)(8 * pg_dtype_size((pg_dtype)dt)), 1};
}

static int dl_device(const pg_tensor *t, DLDevice *d)
{
    pg_device dev = pg_tensor_device(t);
    if (dev.type == PG_DEV_CPU) {
        *d = (DLDevice){kDLCPU, 0};
        return 0;
    }
    if (dev.type == PG_DEV_CUDA) {
        *d = (DLDevice){kDLCUDA, dev.index};
        return 0;
    }
    char s[24];
    PyErr_Format(PyExc_BufferError,
                 "a %s tensor cannot be exported through DLPack (the simulated accelerator's "
                 "memory has no DLPack device type); move it with .cpu() first",
                 pg_device_str(dev, s, sizeof s));
    return -1;
}

PyObject *pg_dlpack_dunder(PyObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kw[] = {"stream", "max_version", "dl_device", "copy", NULL};
    PyObject *stream = Py_None, *max_version = Py_None, *dl_dev = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$OOOO", kw, &stream, &max_version, &dl_dev, &copy))
        return NULL;
    PyTensor *o = (PyTensor *)self;
    const pg_tensor *t = &o->t;
    DLDevice dev;
    if (dl_device(t, &dev) < 0)
        return NULL;
    if (copy == Py_True)
        return PyErr_Format(PyExc_BufferError, "copy=True is not supported; call .clone() first");
    /* DLPack: stream=None asks for no particular order (wait on the host), -1
     * says the consumer syncs itself, another int names the consumer's stream */
    bool device_wait = false;
    if (dev.device_type == kDLCUDA && stream != Py_None) {
        long long sv = PyLong_AsLongLong(stream);
        if (sv == -1 && PyErr_Occurred())
            return PyErr_Format(PyExc_TypeError, "__dlpack__: stream must be an int or None");
        if (sv == 0)
            return PyErr_Format(PyExc_ValueError,
                                "__dlpack__: stream=0 is not allowed for CUDA by the DLPack "
                                "standard (use 1 for the legacy default stream, 2 for per-thread)");
        if (sv != -1) {
            if (cuda_export_wait(dev.device_id, (unsigned long long)sv) < 0)
                return NULL;
        }
        device_wait = true;
    }
    if (!device_wait && pg_wait(t) < 0) /* the consumer may read right away */
        return NULL;
    if (device_wait && t->storage->error) { /* a failed producer: say so now */
        if (pg_wait(t) < 0)
            return NULL;
    }
    bool versioned = false;
    if (max_version != Py_None) {
        long major = PyLong_AsLong(PyTuple_Check(max_version) && PyTuple_GET_SIZE(max_version) > 0
                                       ? PyTuple_GET_ITEM(max_version, 0)
                                       : max_version);
        if (major == -1 && PyErr_Occurred())
            return NULL;
        versioned = major >= 1;
    }
    if (dl_type(t->dtype).code == 0xff)
        return PyErr_Format(PyExc_BufferError, "%s has no DLPack type pygpu exports; convert "
                                               "with .to(pygpu.float32) or view it as uint8 first",
                            pg_dtype_name((pg_dtype)t->dtype));
    export_block *b = PyMem_RawCalloc(1, sizeof *b);
    if (!b)
        return PyErr_NoMemory();
    memcpy(b->shape, t->shape, sizeof b->shape);
    memcpy(b->strides, t->strides, sizeof b->strides);
    DLTensor dl = {
        .data = t->storage->data,
        .device = dev,
        .ndim = t->ndim,
        .dtype = dl_type(t->dtype),
        .shape = b->shape,
        .strides = b->strides,
        .byte_offset = (uint64_t)(t->offset * (int64_t)pg_dtype_size((pg_dtype)t->dtype)),
    };
    if (versioned) {
        b->v.version = (DLPackVersion){DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
        b->v.manager_ctx = Py_NewRef(self);
        b->v.deleter = deleter_versioned;
        b->v.flags = (t->storage->flags & PG_STORAGE_READONLY) ? DLPACK_FLAG_BITMASK_READ_ONLY : 0;
        b->v.dl_tensor = dl;
    } else {
        b->legacy.manager_ctx = Py_NewRef(self);
        b->legacy.deleter = deleter_legacy;
        b->legacy.dl_tensor = dl;
    }
    PyObject *cap = versioned ? PyCapsule_New(&b->v, "dltensor_versioned", capsule_destructor)
                              : PyCapsule_New(&b->legacy, "dltensor", capsule_destructor);
    if (!cap) {
        Py_DECREF(self);
        PyMem_RawFree(b);
    }
    return cap;
}

PyObject *pg_dlpack_device_dunder(PyObject *self, PyObject *noargs)
{
    (void)noargs;
    DLDevice d;
    if (dl_device(&((PyTensor *)self)->t, &d) < 0)
        return NULL;
    return Py_BuildValue("(ii)", d.device_type, d.device_id);
}

/* ---- DLPack in ------------------------------------------------------------------------ */

typedef struct {
    void *managed;
    bool versioned;
} import_owner;

/* The last reference went: hand the memory back to its producer, but only after
 * pygpu's work on it. Kernels queued on a cuda stream hold no reference (the cuda
 * backend orders them by stream, not by holds), so one may still read or write the
 * buffer: wait for its pending writes and reads first, without the GIL, or the
 * producer (PyTorch's caching allocator) could reuse the memory under that kernel.
 * Host memory needs no wait here: sim's tasks and cuda's copies hold a reference
 * until they ran (and a sim worker releasing it must not wait on its own task). A
 * failed wait is the data's failure, not this release's: the deleter runs anyway. */
static void release_dlpack(pg_storage *s)
{
    import_owner *own = s->owner;
    if (s->device.type == PG_DEV_CUDA && pg_storage_has_pending(s)) {
        void *gil = pg_blocking_begin();
        (void)pg_storage_wait_idle(s);
        pg_blocking_end(gil);
    }
    PyGILState_STATE g = PyGILState_Ensure();
    if (own->versioned) {
        DLManagedTensorVersioned *m = own->managed;
        if (m->deleter)
            m->deleter(m);
    } else {
        DLManagedTensor *m = own->managed;
        if (m->deleter)
            m->deleter(m);
    }
    PyGILState_Release(g);
    free(own);
    free(s);
}

static PyObject *f_from_dlpack(PyObject *mod, PyObject *obj)
{
    (void)mod;
    if (PyTensor_Check(obj))
        return Py_NewRef(obj);
    PyObject *cap = NULL;
    if (PyCapsule_CheckExact(obj)) {
        cap = Py_NewRef(obj);
    } else {
        PyObject *meth = PyObject_GetAttrString(obj, "__dlpack__");
        if (!meth) {
            PyErr_Clear();
            return PyErr_Format(PyExc_TypeError,
                                "from_dlpack expects an object with __dlpack__ (a NumPy array, a "
                                "PyTorch tensor...), got %.80s",
                                Py_TYPE(obj)->tp_name);
        }
        /* a CUDA producer gets the stream pygpu will read on: it makes that stream
         * wait for its own work (an event), so no host sync is needed */
        PyObject *stream = NULL;
        PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
        if (!dev)
            PyErr_Clear(); /* an old producer: no device, no stream */
        else {
            int type = -1, id = 0;
            if (PyArg_ParseTuple(dev, "ii", &type, &id) && (type == kDLCUDA || type == kDLCUDAManaged))
                stream = cuda_consumer_stream(id);
            else if (PyErr_Occurred())
                PyErr_Clear();
            Py_DECREF(dev);
            if ((type == kDLCUDA || type == kDLCUDAManaged) && !stream) {
                Py_DECREF(meth);
                return NULL; /* cuda unavailable here: the error says why */
            }
        }
        PyObject *kw = stream ? Py_BuildValue("{s(ii)sN}", "max_version", 1, 0, "stream", stream)
                              : Py_BuildValue("{s(ii)}", "max_version", 1, 0);
        PyObject *noargs = PyTuple_New(0);
        cap = kw && noargs ? PyObject_Call(meth, noargs, kw) : NULL;
        if (!cap && PyErr_ExceptionMatches(PyExc_TypeError)) { /* a producer from before 1.0 */
            PyErr_Clear();
            PyObject *kw_old = PyDict_New();
            if (kw_old && PyDict_GetItemString(kw, "stream"))
                PyDict_SetItemString(kw_old, "stream", PyDict_GetItemString(kw, "stream"));
            cap = kw_old ? PyObject_Call(meth, noargs, kw_old) : NULL;
            Py_XDECREF(kw_old);
        }
        Py_XDECREF(kw);
        Py_XDECREF(noargs);
        Py_DECREF(meth);
        if (!cap)
            return NULL;
    }
    bool versioned = PyCapsule_IsValid(cap, "dltensor_versioned");
    if (!versioned && !PyCapsule_IsValid(cap, "dltensor")) {
        Py_DECREF(cap);
        return PyErr_Format(PyExc_ValueError, "not a DLPack capsule, or one already consumed");
    }
    void *managed = PyCapsule_GetPointer(cap, versioned ? "dltensor_versioned" : "dltensor");
    DLTensor *dl = versioned ? &((DLManagedTensorVersioned *)managed)->dl_tensor
                             : &((DLManagedTensor *)managed)->dl_tensor;
    uint64_t flags = versioned ? ((DLManagedTensorVersioned *)managed)->flags : 0;
    int dt = -1;
    for (int i = 0; i < PG_NUM_DTYPES; i++)
        if (dl_type(i).code == dl->dtype.code && dl_type(i).bits == dl->dtype.bits && dl->dtype.lanes == 1)
            dt = i;
    const char *why = NULL;
    char why_dtype[400] = "unsupported DLPack dtype: pygpu supports ";
    bool on_cuda = dl->device.device_type == kDLCUDA || dl->device.device_type == kDLCUDAManaged;
    if (dl->device.device_type != kDLCPU && dl->device.device_type != kDLCUDAHost && !on_cuda)
        why = "only host (CPU) and CUDA memory can be imported";
    else if (dt < 0)
    {
        size_t k = strlen(why_dtype);
        pg_dtype_list(why_dtype + k, sizeof why_dtype - k);
        why = why_dtype;
    }
    else if (dl->ndim < 0 || dl->ndim > PG_MAX_DIMS)
        why = "too many dimensions";
    if (why) { /* the message reads the capsule's tensor, so it is formatted before the release */
        PyErr_Format(PyExc_TypeError, "from_dlpack: %s (device type %d, dtype code %d bits %d)",
                     why, dl->device.device_type, dl->dtype.code, dl->dtype.bits);
        Py_DECREF(cap);
        return NULL;
    }
    pg_tensor t;
    memset(&t, 0, sizeof t);
    t.dtype = dt;
    t.ndim = dl->ndim;
    int64_t isz = (int64_t)pg_dtype_size((pg_dtype)dt);
    for (int i = 0; i < dl->ndim; i++)
        t.shape[i] = dl->shape[i];
    if (dl->strides)
        memcpy(t.strides, dl->strides, sizeof(int64_t) * dl->ndim);
    else
        pg_contiguous_strides(t.ndim, t.shape, t.strides);
    char *data = (char *)dl->data + dl->byte_offset, *lo = data, *hi = data;
    bool empty = pg_tensor_numel(&t) == 0;
    for (int i = 0; i < t.ndim && !empty; i++) {
        if (t.shape[i] > 1) {
            if (t.strides[i] < 0)
                lo += t.strides[i] * isz * (t.shape[i] - 1);
            else
                hi += t.strides[i] * isz * (t.shape[i] - 1);
        }
    }
    pg_device where = {PG_DEV_CPU, 0};
    if (on_cuda) { /* the cuda backend must be loaded and have that device */
        where = (pg_device){PG_DEV_CUDA, dl->device.device_id};
        if (pg_cuda_load(1) < 0) { /* loads it, or says why not */
            Py_DECREF(cap);
            return NULL;
        }
        const pg_backend *be;
        pg_status bst = pg_backend_for(where, &be);
        if (bst != PG_OK) {
            Py_DECREF(cap);
            return pg_raise(bst);
        }
    }
    import_owner *own = malloc(sizeof *own);
    if (!own) {
        Py_DECREF(cap);
        return PyErr_NoMemory();
    }
    own->managed = managed;
    own->versioned = versioned;
    unsigned sflags = (flags & DLPACK_FLAG_BITMASK_READ_ONLY) ? PG_STORAGE_READONLY : 0;
    size_t nbytes = empty ? 0 : (size_t)(hi - lo) + (size_t)isz;
    pg_status st = pg_storage_wrap(where, lo, nbytes, sflags, release_dlpack, own, &t.storage);
    if (st != PG_OK) {
        free(own);
        Py_DECREF(cap);
        return pg_raise(st);
    }
    t.offset = (data - lo) / isz;
    /* we own it now: rename so the capsule's destructor leaves it alone */
    PyCapsule_SetName(cap, versioned ? "used_dltensor_versioned" : "used_dltensor");
    Py_DECREF(cap);
    PyObject *out = pg_wrap(&t);
    if (out && on_cuda) {
        /* the producer ordered its work before this thread's cuda stream only:
         * mark the storage as written there, so the copy stream and host waits
         * order after the producer too */
        if (cuda_import_mark(where.index, t.storage) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    }
    return out;
}

PyMethodDef pg_interop_functions[] = {
    {"from_numpy", f_from_numpy, METH_O, "from_numpy(a): a cpu tensor sharing a's memory (keeps a alive)"},
    {"_from_array_copy", f_from_array_copy, METH_VARARGS, "internal: cpu copy of an ndarray in a dtype"},
    {"from_dlpack", f_from_dlpack, METH_O, "from_dlpack(obj): a tensor sharing obj's memory through DLPack"},
    {NULL, NULL, 0, NULL},
};
