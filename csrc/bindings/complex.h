/* complex.h - the bindings' fork for complex operands (complex.c): an op whose operand is a
 * complex tensor or a Python complex goes to pygpu/_tensor/complex.py's hook instead of the core. */
#ifndef PG_BINDINGS_COMPLEX_H
#define PG_BINDINGS_COMPLEX_H

#include <Python.h>
#include <stdbool.h>

/* a complex tensor or a Python complex (NULL: false) */
bool pg_complex_operand(PyObject *o);
/* hook(family, name, a, b, args, kwargs): family "binary", "binary_", "unary", "unary_",
 * "reduce" or "matmul"; name the op's ("add", "add_", "sum"); b, args, kwargs may be NULL */
PyObject *pg_complex_dispatch(const char *family, const char *name, PyObject *a, PyObject *b,
                              PyObject *args, PyObject *kwargs);
/* PyTorch's UserWarning when a cast from a complex dtype to a real one drops the imaginary
 * parts (Tensor.to, astype, copy_); 0, or -1 if the warning became an error */
int pg_complex_cast_warn(int from, int to);

#endif
