/* storage.c - a tensor's storage as Python sees it: its identity and size (pickling keeps
 * views of one storage views of one storage), the whole storage as a tensor, and moving it
 * into shared memory and back out of a received descriptor (pygpu/_storage.py,
 * pygpu/multiprocessing: share_memory_, is_shared, the reductions). */
#include "tensor_object.h"

#include <string.h>

static pg_tensor *arg_tensor(PyObject *o, const char *op)
{
    if (!PyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a Tensor, got %.80s", op,
                     Py_TYPE(o)->tp_name);
        return NULL;
    }
    return &((PyTensor *)o)->t;
}

/* _storage_info(t) -> (key, nbytes, shared): key names the storage while it lives */
static PyObject *f_storage_info(PyObject *mod, PyObject *t)
{
    (void)mod;
    pg_tensor *pt = arg_tensor(t, "_storage_info");
    if (!pt)
        return NULL;
    return Py_BuildValue("(KnO)", (unsigned long long)(uintptr_t)pt->storage,
                         (Py_ssize_t)pt->storage->nbytes,
                         pg_storage_is_shared(pt->storage) ? Py_True : Py_False);
}

/* _storage_base(t): the whole storage as a 1-d tensor of t's dtype (offset 0, stride 1) */
static PyObject *f_storage_base(PyObject *mod, PyObject *t)
{
    (void)mod;
    pg_tensor *pt = arg_tensor(t, "_storage_base");
    if (!pt)
        return NULL;
    pg_tensor out;
    memset(&out, 0, sizeof out);
    pg_storage_retain(pt->storage);
    out.storage = pt->storage;
    out.dtype = pt->dtype;
    out.ndim = 1;
    out.shape[0] = (int64_t)(pt->storage->nbytes / pg_dtype_size((pg_dtype)pt->dtype));
    out.strides[0] = 1;
    out.offset = 0;
    return pg_wrap(&out);
}

/* _share_memory(t): t's cpu storage moves into shared memory, in place */
static PyObject *f_share_memory(PyObject *mod, PyObject *t)
{
    (void)mod;
    pg_tensor *pt = arg_tensor(t, "share_memory_");
    if (!pt)
        return NULL;
    pg_status st;
    Py_BEGIN_ALLOW_THREADS st = pg_storage_share(pt->storage);
    Py_END_ALLOW_THREADS
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

/* _shared_fd(t) -> the descriptor of t's shared storage (shared first if it is not) */
static PyObject *f_shared_fd(PyObject *mod, PyObject *t)
{
    PyObject *r = f_share_memory(mod, t);
    if (!r)
        return NULL;
    Py_DECREF(r);
    return PyLong_FromLong(pg_storage_shared_fd(((PyTensor *)t)->t.storage));
}

/* _from_shared_fd(fd, nbytes, dtype): a 1-d tensor of dtype over the shared-memory file fd
 * (at least nbytes long), which it then owns; on failure fd is left to the caller */
static PyObject *f_from_shared_fd(PyObject *mod, PyObject *args)
{
    (void)mod;
    int fd, code;
    Py_ssize_t nbytes;
    PyObject *dtype_o;
    if (!PyArg_ParseTuple(args, "inO:_from_shared_fd", &fd, &nbytes, &dtype_o))
        return NULL;
    if (pg_parse_dtype(dtype_o, &code) < 0)
        return NULL;
    size_t item = pg_dtype_size((pg_dtype)code);
    if (nbytes < 0 || (size_t)nbytes % item)
        return PyErr_Format(PyExc_ValueError, "_from_shared_fd: %zd bytes is not a whole "
                            "number of %zu-byte elements", nbytes, item);
    pg_storage *s;
    pg_status st = pg_storage_from_fd(fd, (size_t)nbytes, &s);
    if (st != PG_OK)
        return pg_raise(st);
    pg_tensor out;
    memset(&out, 0, sizeof out);
    out.storage = s;
    out.dtype = (pg_dtype)code;
    out.ndim = 1;
    out.shape[0] = (int64_t)((size_t)nbytes / item);
    out.strides[0] = 1;
    return pg_wrap(&out);
}

PyMethodDef pg_storage_functions[] = {
    {"_storage_info", f_storage_info, METH_O, "internal: (key, nbytes, shared) of a tensor's storage"},
    {"_storage_base", f_storage_base, METH_O, "internal: the whole storage as a 1-d tensor"},
    {"_share_memory", f_share_memory, METH_O, "internal: move a cpu storage into shared memory"},
    {"_shared_fd", f_shared_fd, METH_O, "internal: the shared-memory file descriptor of a storage"},
    {"_from_shared_fd", f_from_shared_fd, METH_VARARGS, "internal: a tensor over a received shared-memory file"},
    {NULL, NULL, 0, NULL},
};
