/* raw_pointer.c - a tensor's device address, for libraries pygpu hands memory to
 * directly (NCCL through the CUDA plugin, in pygpu/distributed/_nccl.py).
 * Private: the address is valid only while the tensor lives and after its
 * pending writes are waited for (Tensor.wait()). */
#include "tensor_object.h"

static PyObject *f_data_ptr(PyObject *mod, PyObject *arg)
{
    (void)mod;
    if (!PyTensor_Check(arg))
        return PyErr_Format(PyExc_TypeError, "_data_ptr expects a pygpu.Tensor, got %s",
                            Py_TYPE(arg)->tp_name);
    const pg_tensor *t = &((PyTensor *)arg)->t;
    return PyLong_FromVoidPtr(pg_tensor_data(t));
}

PyMethodDef pg_raw_pointer_functions[] = {
    {"_data_ptr", f_data_ptr, METH_O, "internal: address of a tensor's first element"},
    {NULL, NULL, 0, NULL},
};
