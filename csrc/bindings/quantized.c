/* quantized.c - pygpu._C's int8 entry points, for pygpu/nn/quantized and the tests.
 *
 *   _qlinear(x, packed, w_scale, bias, act, a_dynamic, a_scale, a_zp, a_max, out_u8,
 *            c_scale, c_zp, c_max) -> y
 *       the quantized linear layer (pg_ops_quantized.c) on x's device (cpu, sim or cuda).
 *   _qgemm_kernel(a_max=127) -> name of the int8 kernel this CPU runs (PYGPU_ISA capped)
 *   _qgemm_test(kernel, a, packed, n, out, ...) -> None
 *       one int8 GEMM descriptor (pg_gemm.h) run by the named kernel ("portable", "avx2",
 *       "avx512_vnni", or None: the one this CPU picks) on host buffers (NumPy arrays:
 *       a (M,K) uint8 or float32, packed uint8, out (M,N) int32, float32 or uint8), on a
 *       pool of `threads`: tests/test_quantization_kernels.py checks each kernel exactly.
 * Arguments are checked again by the core (_qlinear) or here (_qgemm_test): bad buffers
 * raise TypeError/ValueError, never reach a kernel. */
#include <string.h>

#include "tensor_object.h"
#include "../backends/cpu/cpu_gemm_int8.h"
#include "../core/pg_ops_quantized.h"

#define T(o) (&((PyTensor *)(o))->t)

static PyObject *f_qlinear(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *x, *packed, *ws, *bo;
    int act, a_dynamic, out_u8;
    pg_qlinear_params q;
    memset(&q, 0, sizeof q);
    if (!PyArg_ParseTuple(args, "O!O!O!Oipdiipdii:_qlinear", &PyTensor_Type, &x, &PyTensor_Type,
                          &packed, &PyTensor_Type, &ws, &bo, &act, &a_dynamic, &q.a_scale,
                          &q.a_zp, &q.a_max, &out_u8, &q.c_scale, &q.c_zp, &q.c_max))
        return NULL;
    if (bo != Py_None && !PyTensor_Check(bo))
        return PyErr_Format(PyExc_TypeError, "_qlinear: bias must be a pygpu.Tensor or None, "
                                             "got %.80s", Py_TYPE(bo)->tp_name);
    q.a_dynamic = a_dynamic;
    q.out_u8 = out_u8;
    const pg_tensor *b = bo == Py_None ? NULL : T(bo);
    pg_tensor y;
    const bool heavy = T(x)->storage->device.type == PG_DEV_CPU &&
                       pg_tensor_numel(T(x)) * T(ws)->shape[0] >= 65536;
    pg_status st = PG_CALL(heavy, pg_op_qlinear(T(x), T(packed), T(ws), b, act, &q, &y));
    return pg_wrap_result(st, &y);
}

static PyObject *f_qgemm_kernel(PyObject *mod, PyObject *args)
{
    (void)mod;
    int a_max = 127;
    if (!PyArg_ParseTuple(args, "|i:_qgemm_kernel", &a_max))
        return NULL;
    const char *name;
    pg_cpu_qgemm_kernel(a_max, &name);
    return PyUnicode_FromString(name);
}

/* A C-contiguous buffer of `itemsize`-byte items with `nbytes` bytes in all. */
static int get_buf(PyObject *o, const char *what, int writable, Py_ssize_t itemsize,
                   Py_ssize_t nbytes, Py_buffer *v)
{
    if (PyObject_GetBuffer(o, v, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return -1;
    if (v->itemsize != itemsize || v->len != nbytes) {
        PyErr_Format(PyExc_ValueError, "_qgemm_test: %s must hold %zd bytes of %zd-byte items, "
                                       "got %zd of %zd", what, nbytes, itemsize, v->len,
                     v->itemsize);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

static PyObject *f_qgemm_test(PyObject *mod, PyObject *args, PyObject *kw)
{
    (void)mod;
    static char *kwlist[] = {"kernel", "a", "packed", "n", "out", "a_float", "a_dynamic",
                             "a_scale", "a_zp", "a_max", "w_scale", "bias", "act", "out_kind",
                             "c_scale", "c_zp", "c_max", "threads", NULL};
    const char *kernel = NULL, *out_kind = "s32";
    PyObject *a, *packed, *out, *wso = Py_None, *bo = Py_None;
    long long n;
    int a_float = 0, a_dynamic = 0, a_zp = 0, a_max = 127, act = 0, c_zp = 0, c_max = 255;
    int threads = 1;
    double a_scale = 1.0, c_scale = 1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "zOOLO|ppdiiOOisdiii:_qgemm_test", kwlist, &kernel,
                                     &a, &packed, &n, &out, &a_float, &a_dynamic, &a_scale, &a_zp,
                                     &a_max, &wso, &bo, &act, &out_kind, &c_scale, &c_zp, &c_max,
                                     &threads))
        return NULL;
    if (n < 1 || n > (1LL << 40) || threads < 1 || threads > 64 || act < 0 ||
        act >= PG_NUM_ACT || (a_max != 127 && a_max != 255))
        return PyErr_Format(PyExc_ValueError, "_qgemm_test: bad n, threads, act or a_max");
    pg_qgemm_kernel_fn fn = kernel ? pg_cpu_qgemm_kernel_named(kernel, a_max)
                                   : pg_cpu_qgemm_kernel(a_max, NULL);
    if (!fn)
        return PyErr_Format(PyExc_ValueError, "_qgemm_test: kernel %s does not run here "
                                              "(or takes no a_max %d)", kernel, a_max);
    Py_buffer va;
    if (PyObject_GetBuffer(a, &va, PyBUF_C_CONTIGUOUS | PyBUF_ND) < 0)
        return NULL;
    if (va.ndim != 2 || va.itemsize != (a_float ? 4 : 1)) {
        PyBuffer_Release(&va);
        return PyErr_Format(PyExc_ValueError, "_qgemm_test: a must be 2-D %s", a_float ? "float32" : "uint8");
    }
    if (va.shape[1] < 1 || va.shape[1] > PG_QGEMM_MAX_K) {
        PyBuffer_Release(&va);
        return PyErr_Format(PyExc_ValueError, "_qgemm_test: K must be in [1, %d]", PG_QGEMM_MAX_K);
    }
    pg_qgemm g;
    memset(&g, 0, sizeof g);
    g.M = va.shape[0];
    g.K = va.shape[1];
    g.N = n;
    g.lda = g.K;
    g.a_dynamic = a_dynamic && a_float;
    g.a_scale = (float)a_scale;
    g.a_zp = a_zp;
    g.a_max = a_max;
    g.act = act;
    g.ldc = n;
    g.c_scale = (float)c_scale;
    g.c_zp = c_zp;
    g.c_max = c_max;
    if (a_float)
        g.a_f32 = va.buf;
    else
        g.a_u8 = va.buf;
    Py_buffer vp, vo, vs = {0}, vb = {0};
    const int osz = strcmp(out_kind, "u8") == 0 ? 1 : 4;
    if (get_buf(packed, "packed", 0, 1, (Py_ssize_t)pg_qpack_bytes(g.N, g.K), &vp) < 0) {
        PyBuffer_Release(&va);
        return NULL;
    }
    if (get_buf(out, "out", 1, osz, (Py_ssize_t)(g.M * g.N * osz), &vo) < 0) {
        PyBuffer_Release(&va);
        PyBuffer_Release(&vp);
        return NULL;
    }
    int bad = 0;
    if (wso != Py_None)
        bad = get_buf(wso, "w_scale", 0, 4, (Py_ssize_t)(4 * g.N), &vs) < 0;
    if (!bad && bo != Py_None)
        bad = get_buf(bo, "bias", 0, 4, (Py_ssize_t)(4 * g.N), &vb) < 0;
    if (!bad && (strcmp(out_kind, "s32") != 0 && strcmp(out_kind, "f32") != 0 &&
                 strcmp(out_kind, "u8") != 0)) {
        PyErr_SetString(PyExc_ValueError, "_qgemm_test: out_kind must be s32, f32 or u8");
        bad = 1;
    }
    if (!bad && (!(a_scale > 0) || !(c_scale > 0) || a_zp < 0 || a_zp > a_max || c_zp < 0 ||
                 c_max < 1 || c_max > 255 || c_zp > c_max)) {
        PyErr_SetString(PyExc_ValueError, "_qgemm_test: scales must be > 0, zero points in range");
        bad = 1;
    }
    if (!bad && wso == Py_None && strcmp(out_kind, "s32") != 0) {
        PyErr_SetString(PyExc_ValueError, "_qgemm_test: a float or u8 output needs w_scale");
        bad = 1;
    }
    pg_status st = PG_OK;
    if (!bad) {
        g.b_packed = vp.buf;
        g.b_colsum = pg_qpack_colsum(vp.buf, g.N, g.K);
        g.b_scale = wso != Py_None ? vs.buf : NULL;
        g.bias = bo != Py_None ? vb.buf : NULL;
        if (strcmp(out_kind, "s32") == 0)
            g.c_s32 = vo.buf;
        else if (strcmp(out_kind, "f32") == 0)
            g.c_f32 = vo.buf;
        else
            g.c_u8 = vo.buf;
        pg_pool *pool = NULL;
        st = threads > 1 ? pg_pool_create("pygpu-qtest", threads, &pool) : PG_OK;
        if (st == PG_OK) {
            Py_BEGIN_ALLOW_THREADS
            st = pg_cpu_qgemm_run(pool, &g, fn); /* the scheduler's row or column panels */
            Py_END_ALLOW_THREADS
        }
        pg_pool_destroy(pool);
    }
    PyBuffer_Release(&va);
    PyBuffer_Release(&vp);
    PyBuffer_Release(&vo);
    if (vs.obj)
        PyBuffer_Release(&vs);
    if (vb.obj)
        PyBuffer_Release(&vb);
    if (bad)
        return NULL;
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

PyMethodDef pg_quantized_functions[] = {
    {"_qlinear", f_qlinear, METH_VARARGS,
     "internal: _qlinear(x, packed, w_scale, bias, act, a_dynamic, a_scale, a_zp, a_max, "
     "out_u8, c_scale, c_zp, c_max): the int8 linear layer (pygpu.nn.quantized)"},
    {"_qgemm_kernel", f_qgemm_kernel, METH_VARARGS,
     "internal: the int8 GEMM kernel this CPU runs for activations up to a_max (127 or 255)"},
    {"_qgemm_test", (PyCFunction)(void (*)(void))f_qgemm_test, METH_VARARGS | METH_KEYWORDS,
     "internal test: one int8 GEMM descriptor through a named kernel on NumPy buffers"},
    {NULL, NULL, 0, NULL},
};
