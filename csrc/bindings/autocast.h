/* autocast.h - the C side of pygpu.autocast (autocast.c), for the op bindings that
 * the policy covers. Above the Tensor type, as autograd.h is. */
#ifndef PG_BINDINGS_AUTOCAST_H
#define PG_BINDINGS_AUTOCAST_H

#include "tensor_object.h"

/* Regions open in any thread (the C ops ask the policy only then), and the
 * call of the "autocast" hook: new references to op's operands as the policy casts them
 * (b may be NULL; *b2 is then NULL). -1 with an exception. */
extern _Atomic int pg_autocast_regions;
int pg_autocast_cast(const char *op, PyObject *a, PyObject *b, PyObject **a2, PyObject **b2);
extern PyMethodDef pg_autocast_functions[];

#endif
