/* autograd.h - the C side of autograd (autograd.c): grad mode, the recording hook the
 * op bindings call, and the Tensor's autograd methods. Above the Tensor type: it
 * includes tensor_object.h, which declares nothing of it, so the binding files that
 * record ops include this header and the Tensor type itself does not depend on it. */
#ifndef PG_BINDINGS_AUTOGRAD_H
#define PG_BINDINGS_AUTOGRAD_H

#include "tensor_object.h"

/* Grad mode (pygpu.no_grad / enable_grad): per thread, as in PyTorch. */
extern _Thread_local int pg_grad_disabled;

/* Autograd recording. After an op made `out` from operands `a`
 * and `b` (Tensors, Python scalars or NULL), attach a grad_fn when grad mode is
 * on and an operand requires grad; `args`/`kwargs` are the op's own Python
 * arguments (NULL if none), passed to the Python hook to recover axes etc.
 * Steals `out`; returns it, or NULL with an exception. Ops with no gradient
 * involved pay only the inline flag checks. */
PyObject *pg_ag_record_slow(PyObject *out, const char *name, PyObject *a, PyObject *b,
                            PyObject *args, PyObject *kwargs);
static inline int pg_ag_req(PyObject *o)
{
    return o && PyTensor_Check(o) && ((PyTensor *)o)->requires_grad;
}
static inline PyObject *pg_ag_record(PyObject *out, const char *name, PyObject *a, PyObject *b,
                                     PyObject *args, PyObject *kwargs)
{
    if (!out || pg_grad_disabled || !(pg_ag_req(a) || pg_ag_req(b)))
        return out;
    return pg_ag_record_slow(out, name, a, b, args, kwargs);
}
/* Tracing (pygpu.onnx's exporter): while this thread traces a forward, an op autograd does
 * not record (a comparison, a logical op: no gradient) is reported to the Python hook
 * "trace" with its name, output and operands, so a mask computed inside the forward is an
 * op of the exported graph. Off: one flag check. Steals `out`; returns it or NULL. */
extern _Thread_local int pg_tracing;
PyObject *pg_ag_trace_slow(PyObject *out, const char *name, PyObject *a, PyObject *b);
static inline PyObject *pg_ag_trace(PyObject *out, const char *name, PyObject *a, PyObject *b)
{
    if (!out || !pg_tracing)
        return out;
    return pg_ag_trace_slow(out, name, a, b);
}
/* -1 with an error if `self` may not be written in place by an op autograd does not
 * record (`what`): under grad mode, a tensor that requires grad. */
int pg_ag_check_inplace(PyObject *self, const char *what);
/* Before writing `self` in place by the op `name` (method name, "add_") with operand
 * `other` (or NULL): Py_None (a new reference) when autograd is not involved, NULL with
 * PyTorch's error for a leaf that requires grad or where the write cannot be given a
 * correct history (`op`, the op table's name of the out-of-place op, NULL if autograd
 * does not record this one), else a token for pg_ag_inplace_end. */
PyObject *pg_ag_inplace_begin(PyObject *self, PyObject *other, const char *name, const char *op);
/* After the write: record it as self's grad_fn (a no-op for Py_None). Steals `tok`. */
int pg_ag_inplace_end(PyObject *tok, PyObject *self, PyObject *other, const char *op);
extern PyMethodDef pg_autograd_functions[];
PyObject *pg_ag_requires_grad_(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *pg_ag_detach(PyObject *self, PyObject *noargs);
PyObject *pg_ag_backward(PyObject *self, PyObject *args, PyObject *kwargs);
PyObject *pg_ag_set_grad_fn(PyObject *self, PyObject *fn);

#endif
