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
/* Whether autograd follows `o`: it requires grad, or it is a view (made under grad mode) of a
 * tensor that does, as PyTorch's views do (the base may have gained a history after the view
 * was made: pygpu/autograd/views.py then regenerates the view's). */
static inline int pg_ag_req(PyObject *o)
{
    if (!o || !PyTensor_Check(o))
        return 0;
    const PyTensor *t = (const PyTensor *)o;
    return t->requires_grad || (t->base && ((const PyTensor *)t->base)->requires_grad);
}
/* Under grad mode, `out` sharing `src`'s memory (a view op's result) gets src's base, or src
 * itself, as its base (PyTorch's _base): an in-place write through it then rebases the base's
 * history. Views made under no_grad get none, as PyTorch's cannot be rebased either. */
static inline void pg_ag_note_view(PyObject *out, PyObject *src)
{
    if (!out || !src || out == src || pg_grad_disabled || !PyTensor_Check(src))
        return;
    PyTensor *o = (PyTensor *)out, *s = (PyTensor *)src;
    if (o->base || o->t.storage != s->t.storage)
        return;
    o->base = Py_NewRef(s->base ? s->base : src);
}
extern _Thread_local int pg_tracing;
PyObject *pg_ag_trace_record_slow(PyObject *out, const char *name, PyObject *a, PyObject *b,
                                  PyObject *args, PyObject *kwargs);
static inline PyObject *pg_ag_record(PyObject *out, const char *name, PyObject *a, PyObject *b,
                                     PyObject *args, PyObject *kwargs)
{
    if (!out || pg_grad_disabled)
        return out;
    pg_ag_note_view(out, a);
    if (!(pg_ag_req(a) || pg_ag_req(b)))  /* torch.jit.trace (pg_tracing 2) sees it still */
        return pg_tracing > 1 ? pg_ag_trace_record_slow(out, name, a, b, args, kwargs) : out;
    return pg_ag_record_slow(out, name, a, b, args, kwargs);
}
/* Tracing (pygpu.onnx's exporter, torch.jit.trace): while this thread traces a forward, an
 * op autograd does not record (a comparison, a logical op: no gradient) is reported to the
 * Python hook "trace" with its name, output and operands, so a mask computed inside the
 * forward is an op of the exported graph. pg_tracing 2 (the JIT's tracer) also reports a
 * differentiable op none of whose operands requires grad (on an integer input), with its
 * arguments. Off: one flag check. Steals `out`; returns it or NULL. */
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
PyObject *pg_ag_get_base(PyObject *self, void *c);
PyObject *pg_ag_get_version(PyObject *self, void *c);
PyObject *pg_ag_get_write_stamp(PyObject *self, void *c);
/* t[key] = value / t.copy_(src) when autograd is involved (grad mode on and t or the value
 * requires grad): the Python hooks "setitem_grad" / "copy_grad" write and record the write
 * (pygpu/autograd/writes.py). 1: handled (or -1: error); 0: not autograd's, write as usual. */
int pg_ag_setitem(PyObject *self, PyObject *key, PyObject *value);
PyObject *pg_ag_copy(PyObject *self, PyObject *src, int non_blocking, int *handled);

#endif
