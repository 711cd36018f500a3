/* module.c - pygpu._C: registers the built-in backends and assembles the module.
 *
 * The Python package (pygpu/__init__.py) imports this and calls _setup() to
 * hand over its dtype objects and hooks. No CUDA call happens here: the CUDA
 * plugin is loaded on first use (pygpu/cuda/__init__.py). */
#include <pthread.h>

#include "autocast.h"
#include "autograd.h"
#include "tensor_object.h"

#include "../backends/cpu/cpu_gemm_half.h"
#include "../backends/cpu/cpu_isa.h"
#include "../backends/cpu/cpu_parallel.h"
#include "../backends/meta/meta_backend.h"
#include "../backends/sim/sim_backend.h"
#include "../core/pg_backend.h"
#include "../core/pg_fork.h"

extern const pg_backend pg_cpu_backend;
void pg_cpu_blas_init(void);

static struct PyModuleDef pg_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pygpu._C",
    .m_doc = "The C core of pygpu: tensors, backends, transfer counters.",
    .m_size = -1,
};

/* The core's blocking hooks (pg_backend.h): give up the GIL only if this
 * thread holds it (a sim worker or a call already outside the GIL does not). */
static void *pg_gil_release(void) { return PyGILState_Check() ? (void *)PyEval_SaveThread() : NULL; }

static void pg_gil_restore(void *token)
{
    if (token)
        PyEval_RestoreThread((PyThreadState *)token);
}

/* A fork()ed child resets the core's and the backends' threads and locks first
 * (pg_fork.h): DataLoader workers and torch.multiprocessing's fork children. */
static void after_fork_child(void)
{
    pg_after_fork_child();
    pg_cpu_after_fork();
    pg_sim_after_fork();
}

extern PyMethodDef pg_testing_functions[]; /* testing.c: _C._test_* hooks */
int pg_elementwise_methods_ready(void); /* elementwise_methods.c: the op table's methods */
extern PyMethodDef pg_surface_functions[]; /* tensor_surface.c: Python-written methods, index ops */
extern PyMethodDef pg_quantized_functions[]; /* quantized.c: the int8 layers' entry points */
extern PyMethodDef pg_cuda_extras_functions[]; /* cuda_extras.c: the CUDA plugin's extras table */
extern PyMethodDef pg_profile_functions[]; /* profile.c: pygpu.profiler's recorder */
extern PyMethodDef pg_linalg_functions[]; /* linalg.c: LAPACK's factorizations (pygpu/linalg/__init__.py) */
extern PyMethodDef pg_complex_functions[]; /* complex.c: complex views and the FFT node */
extern PyMethodDef pg_subop_functions[];  /* subops.c: _C._subop_table() */
extern PyMethodDef pg_storage_functions[]; /* storage.c: storages' identity, shared memory */
extern PyMethodDef pg_graph_functions[];   /* graph.c: the node graph of cpu and sim */
extern PyMethodDef pg_torch_function_functions[]; /* torch_function.c: __torch_function__ */
int pg_torch_function_init(PyObject *m);   /* torch_function.c: its types and Tensor.as_subclass */

PyMODINIT_FUNC PyInit__C(void)
{
    const char *bad_isa = pg_cpu_isa_env_check();
    if (bad_isa) {
        PyErr_Format(PyExc_ValueError,
                     "PYGPU_ISA='%s' names no instruction set level; use one of baseline, avx2, "
                     "avx512, avx512_bf16 (it caps the CPU kernels' level), or unset it",
                     bad_isa);
        return NULL;
    }
    (void)pg_cpu_isa(); /* decided once, before any worker thread asks */
    if (pthread_atfork(NULL, NULL, after_fork_child) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "pygpu: cannot register its fork handler");
        return NULL;
    }
    if (pg_numpy_init() < 0 || pg_tensor_type_ready() < 0 || pg_elementwise_methods_ready() < 0)
        return NULL;
    PyObject *m = PyModule_Create(&pg_module);
    if (!m)
        return NULL;
    if (PyModule_AddFunctions(m, pg_creation_functions) < 0 ||
        PyModule_AddFunctions(m, pg_interop_functions) < 0 ||
        PyModule_AddFunctions(m, pg_runtime_functions) < 0 ||
        PyModule_AddFunctions(m, pg_role_functions) < 0 ||
        PyModule_AddFunctions(m, pg_raw_pointer_functions) < 0 ||
        PyModule_AddFunctions(m, pg_math_functions) < 0 ||
        PyModule_AddFunctions(m, pg_trace_functions) < 0 ||
        PyModule_AddFunctions(m, pg_autograd_functions) < 0 ||
        PyModule_AddFunctions(m, pg_train_functions) < 0 ||
        PyModule_AddFunctions(m, pg_conv_functions) < 0 ||
        PyModule_AddFunctions(m, pg_sequence_functions) < 0 ||
        PyModule_AddFunctions(m, pg_autocast_functions) < 0 ||
        PyModule_AddFunctions(m, pg_testing_functions) < 0 ||
        PyModule_AddFunctions(m, pg_surface_functions) < 0 ||
        PyModule_AddFunctions(m, pg_quantized_functions) < 0 ||
        PyModule_AddFunctions(m, pg_linalg_functions) < 0 ||
        PyModule_AddFunctions(m, pg_complex_functions) < 0 ||
        PyModule_AddFunctions(m, pg_subop_functions) < 0 ||
        PyModule_AddFunctions(m, pg_storage_functions) < 0 ||
        PyModule_AddFunctions(m, pg_graph_functions) < 0 ||
        PyModule_AddFunctions(m, pg_cuda_extras_functions) < 0 ||
        PyModule_AddFunctions(m, pg_profile_functions) < 0 ||
        PyModule_AddFunctions(m, pg_torch_function_functions) < 0 ||
        pg_torch_function_init(m) < 0 || pg_errors_init(m) < 0 ||
        PyModule_AddObjectRef(m, "Tensor", (PyObject *)&PyTensor_Type) < 0 ||
        pg_size_type_ready() < 0 || PyModule_AddObjectRef(m, "Size", (PyObject *)&PySize_Type) < 0 ||
        PyModule_AddIntConstant(m, "MAX_DIMS", PG_MAX_DIMS) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    pg_cpu_blas_init(); /* before anyone (threadpoolctl) reads OpenBLAS's thread count */
    pg_cpu_gemm_half_register();
    pg_backend_register(PG_DEV_CPU, &pg_cpu_backend);
    pg_backend_register(PG_DEV_SIM, &pg_sim_backend);
    pg_backend_register(PG_DEV_META, &pg_meta_backend);
    pg_set_blocking_hooks(pg_gil_release, pg_gil_restore);
    return m;
}
