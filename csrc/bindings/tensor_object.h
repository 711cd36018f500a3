/* tensor_object.h - the Python Tensor type and the helpers the binding files share.
 *
 * A Tensor object embeds a pg_tensor (a view holding one storage reference),
 * nothing else: no Python references, so it needs no garbage collector and
 * creating one costs a single allocation. Dtype and device objects are
 * Python classes (pygpu/_dtype.py, pygpu/_device.py) registered at import;
 * the C side caches them by code and device slot. Autograd's and autocast's
 * C sides, which sit above the Tensor type, have their own headers
 * (autograd.h, autocast.h): this one declares nothing of theirs. */
#ifndef PG_BINDINGS_TENSOR_OBJECT_H
#define PG_BINDINGS_TENSOR_OBJECT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../core/pg_ops.h"
#include "../core/pg_stats.h"
#include "errors.h"

/* Autograd state (pygpu/autograd) lives in the object, not in pg_tensor: the C
 * core knows nothing of gradients. `grad` and `grad_fn` are plain references;
 * the autograd layer never makes a tensor reachable from its own grad_fn (it
 * saves outputs as detached aliases), so no cycle needs the garbage collector. */
typedef struct {
    PyObject_HEAD
    pg_tensor t;
    PyObject *grad;    /* a Tensor or NULL */
    PyObject *grad_fn; /* the autograd node that made this tensor, or NULL (a leaf) */
    PyObject *base;    /* a view made under grad mode: the tensor it views (the root of a chain
                        * of views), PyTorch's _base, which an in-place write through the view
                        * gives a new history (pygpu/autograd/views.py); else NULL. The base
                        * never refers to its views, and autograd's nodes hold detached aliases
                        * (pygpu/autograd/engine.py), so no cycle passes through it. */
    int requires_grad;
    int is_param;      /* made by pygpu.nn.Parameter */
    int buffer_kind;   /* made by pygpu.nn.Buffer: 1 persistent, 2 not persistent, 0 neither */
    int grad_dtype;    /* the dtype .grad must have (PyTorch's grad_dtype): 0 the tensor's own
                        * (the default, so a zeroed object has it), 1 any (None), 2 + code that
                        * dtype. Its checks and words: pygpu/_tensor/autograd_fields.py */
} PyTensor;

extern PyTypeObject PyTensor_Type;

/* inference_mode (pygpu/autograd/grad_mode.py), per thread as PyTorch's: a storage first
 * wrapped while it is on is an inference tensor's (PG_STORAGE_INFERENCE). */
extern _Thread_local int pg_inference_mode;
#define PyTensor_Check(o) PyObject_TypeCheck((o), &PyTensor_Type)

/* Ops on this many elements or more release the GIL (when they run on the caller's thread). */
#define PG_NOGIL_NUMEL 16384

/* Run `expr` (a pg_status expression) without the GIL when `heavy`. */
#define PG_CALL(heavy, expr)                   \
    ({                                         \
        pg_status st_;                         \
        if (heavy) {                           \
            Py_BEGIN_ALLOW_THREADS st_ = (expr); \
            Py_END_ALLOW_THREADS               \
        } else {                               \
            st_ = (expr);                      \
        }                                      \
        st_;                                   \
    })

static inline bool pg_heavy(const pg_tensor *t)
{
    return t->storage->device.type == PG_DEV_CPU && pg_tensor_numel(t) >= PG_NOGIL_NUMEL;
}

/* A new Tensor object that takes over `t`'s reference (even on failure). */
/* A Python int (not a bool) as an int scalar for an op on a tensor of dtype dt: -2**63 ..
 * 2**63 - 1 as is, and beside a uint64 tensor 2**63 .. 2**64 - 1 too, as its bits with the
 * number in f, as PyTorch takes them (uint64 == 2**64 - 1). 0, or -1 with Python's
 * OverflowError set. */
int pg_int_scalar(PyObject *o, pg_dtype dt, pg_scalar *s);
PyObject *pg_wrap(pg_tensor *t);
/* Wrap the result of an op: on error raise, else wrap. */
PyObject *pg_wrap_result(pg_status st, pg_tensor *t);

/* registry of Python-side objects and hooks, filled by _C._setup() */
int pg_registry_setup(PyObject *dtypes, PyObject *hooks);
PyObject *pg_dtype_object(int code);   /* borrowed */
PyObject *pg_device_object(pg_device d); /* new reference */
PyObject *pg_hook(const char *name);   /* borrowed; NULL with an exception if missing */
int pg_parse_dtype(PyObject *o, int *code);   /* 0 ok, -1 error */
/* Fill the type's slots from the files above tensor_object.c; PyType_Ready (module init). */
int pg_tensor_type_ready(void);
/* pygpu.Size (size_object.c): Tensor.shape's type, a tuple that prints as torch.Size */
extern PyTypeObject PySize_Type;
int pg_size_type_ready(void);
PyObject *pg_size_new(int ndim, const int64_t *shape);
PyObject *pg_size_from_tuple(PyObject *t);
/* One element as a Python number (an implicit transfer from a device). */
PyObject *pg_item(PyTensor *self);
/* The C-only part of pg_parse_dtype / pg_parse_device: 1 parsed, 0 not a form
 * handled in C (ask the Python hook, which also words every error). */
int pg_parse_dtype_fast(PyObject *o, int *code);
int pg_parse_device_fast(PyObject *o, pg_device *d);
/* The one check of a (type, index) pair that arrives from Python, before it
 * indexes any per-device table: -1 with a ValueError naming the valid range. */
int pg_check_device(pg_device d);
/* The same for a dtype code: -1 with a ValueError. */
int pg_check_dtype_code(long code);
int pg_parse_device(PyObject *o, pg_device *d);
/* The code of node kind `node`'s sub-op whose row (csrc/core/pg_subops.def) has the ID
 * `id` ("SCATTER_ADD") and every flag in `need`; -1 with a ValueError naming the kind's
 * rows that qualify (subops.c). */
int pg_subop_arg(const char *fn, int node, unsigned need, const char *id);
/* shape from a tuple/list of ints, or from varargs ints */
int pg_parse_shape(PyObject *o, int *ndim, int64_t *shape);

/* The transfer guard: 0 allow, 1 log, 2 disallow. */
extern int pg_guard_level;
/* A cpu version of `self` for a transfer the user did not write: the guard
 * is consulted and the transfer counted with `reason`. New reference. */
PyObject *pg_host_implicit(PyTensor *self, int reason);
/* Wait (without the GIL) for pending writes to `t`; -1 with an exception. */
int pg_wait(const pg_tensor *t);
/* An ndarray viewing a cpu tensor's memory; it keeps the tensor alive.
 * TypeError for bfloat16 (NumPy has no such dtype). */
PyObject *pg_numpy_view(PyTensor *cpu);
/* `h` itself, or for bfloat16 a float32 copy (exact) NumPy can view. New reference. */
PyObject *pg_host_widened(PyTensor *h);

/* A TorchFunctionMode is on the stack and not disabled (torch_function.c): an operator on
 * plain tensors (a C slot) then goes through its Tensor dunder's dispatcher, so that the mode
 * sees it. pg_tf_mode_operator: the dunder's result, or NULL without an exception when the
 * dunder does not dispatch. */
extern int pg_tf_modes_active;
PyObject *pg_tf_mode_operator(const char *dunder, PyObject *self, PyObject *other);
PyObject *pg_tf_mode_operator3(const char *dunder, PyObject *self, PyObject *a, PyObject *b);
#define PG_TF_MODE_BINARY(a, b, name, rname)                                                 \
    do {                                                                                     \
        if (pg_tf_modes_active) {                                                            \
            PyObject *r_ = PyTensor_Check(a) ? pg_tf_mode_operator(name, (a), (b))           \
                                             : pg_tf_mode_operator(rname, (b), (a));         \
            if (r_ || PyErr_Occurred())                                                      \
                return r_;                                                                   \
        }                                                                                    \
    } while (0)

extern PyMethodDef pg_tensor_methods[];
extern PyGetSetDef pg_tensor_getset[];
extern PyBufferProcs pg_tensor_as_buffer;

/* module-level functions from creation.c, interop.c and runtime.c */
extern PyMethodDef pg_creation_functions[];
extern PyMethodDef pg_interop_functions[];
extern PyMethodDef pg_runtime_functions[];
extern PyMethodDef pg_role_functions[];
extern PyMethodDef pg_raw_pointer_functions[];
extern PyMethodDef pg_math_functions[];
extern PyMethodDef pg_trace_functions[];
extern PyMethodDef pg_train_functions[];
extern PyMethodDef pg_conv_functions[];
extern PyMethodDef pg_sequence_functions[];
int pg_numpy_init(void);

#endif
