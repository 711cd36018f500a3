/* testing.c - _C._test_* hooks: unit tests of C-level contracts that no
 * public API can reach without a GPU (tests/test_event_record.py, tests/test_cuda_api.py).
 *
 *   _test_event_record()   the backend-neutral pending-work record: a host
 *                          buffer with a pending write from a second backend
 *                          (a fake, standing in for cuda) is copied to sim:0,
 *                          and a sim write into a host buffer is waited for
 *                          by the fake; returns what each side saw.
 *   _test_blocking_hooks() whether the GIL is held before, inside and after
 *                          pg_blocking_begin/end (the hooks around cudaMalloc,
 *                          cudaHostAlloc, cudaFreeHost).
 *   _test_stats_op_done(ns) what a plugin's kernel timing reports: calls the
 *                          core API's stats_op_done for sim:0 with `ns`
 *                          (pygpu.stats() then counts it as kernel time).
 *
 *   _test_release_race()   a device storage with two references and one queued task's
 *                          hold loses one reference while the task finishes (its
 *                          unhold runs inside the release, through the storage's
 *                          test probe); returns whether the block went back to the
 *                          cache although the other reference still uses it (the
 *                          next allocation of that size then gets the same memory).
 *
 *   _test_gemm(...)        one GEMM descriptor (csrc/core/pg_gemm.h) run by the
 *                          CPU's kernels and scheduler on a pool of `threads`:
 *                          transposes, strided operands, alpha, beta and every
 *                          epilogue, which the public ops use only in part
 *                          (tests/test_gemm_contract.py); a and b share one
 *                          dtype, c has it or is float32 for half a and b
 *                          (tests/test_mixed_precision.py).
 *
 * Private: not part of pygpu's API; nothing here can crash on bad input
 * because the hooks take no input. */
#include <string.h>

#include "tensor_object.h"
#include "../backends/cpu/cpu_bf16_panels.h"
#include "../backends/cpu/cpu_gemm.h"
#include "../backends/sim/sim_backend.h"
#include "../core/pg_backend.h"

/* ---- a fake second backend: one queue whose "DMA" completes when waited on ---- */

static struct {
    int waits;
    uint64_t last_seq;
    pg_storage *target; /* the host buffer its pending write fills on completion */
    double value;
} g_fake;
static int g_fake_queue;

static pg_status fake_wait_event(const pg_backend *be, pg_event ev)
{
    (void)be;
    g_fake.waits++;
    g_fake.last_seq = ev.seq;
    if (g_fake.target) { /* the write lands only now: a copy that did not wait reads zeros */
        double *p = g_fake.target->data;
        for (size_t i = 0; i < g_fake.target->nbytes / sizeof(double); i++)
            p[i] = g_fake.value;
        g_fake.target = NULL;
    }
    return PG_OK;
}

static const pg_backend g_fake_backend = {.name = "fake", .type = PG_DEV_CUDA,
                                          .wait_event = fake_wait_event};

static PyObject *event_record(pg_storage *host_a, pg_storage *dev, pg_storage *host_b)
{
    enum { N = 1024 };
    const size_t nbytes = N * sizeof(double);
    g_fake.target = host_a;
    memset(host_a->data, 0, nbytes);
    g_fake.waits = 0;
    g_fake.value = 42.0;

    /* 1. fake (cuda) has a write to host_a queued; sim copies host_a -> sim:0 */
    pg_storage_mark(host_a, (pg_event){&g_fake_backend, &g_fake_queue, 7}, PG_ROLE_COPY, true);
    pg_copy c = {.kind = PG_COPY_H2D, .src = host_a, .dst = dev, .nbytes = nbytes, .async = true};
    pg_status st = pg_sim_backend.copy(&pg_sim_backend, 0, &c);
    int waits_at_enqueue = g_fake.waits;
    if (st == PG_OK)
        st = pg_storage_wait(dev);
    if (st != PG_OK)
        return pg_raise(st);
    double got = ((double *)dev->data)[N - 1];
    pg_event rec[PG_STORAGE_EVENTS];
    pg_storage_pending(host_a, rec);
    int write_is_fake = rec[0].backend == &g_fake_backend && rec[0].seq == 7;
    int read_is_sim = 0;
    for (int i = 1; i < PG_STORAGE_EVENTS; i++)
        read_is_sim |= rec[i].backend == &pg_sim_backend;

    /* 2. sim has a write to host_b queued (d2h); the fake orders itself after it */
    memset(host_b->data, 0, nbytes);
    pg_copy back = {.kind = PG_COPY_D2H, .src = dev, .dst = host_b, .nbytes = nbytes, .async = true};
    st = pg_sim_backend.copy(&pg_sim_backend, 0, &back);
    if (st == PG_OK)
        st = pg_storage_wait_others(host_b, true, &g_fake_backend, &g_fake_queue);
    if (st != PG_OK)
        return pg_raise(st);
    double back_got = ((double *)host_b->data)[N - 1];
    int waits_before_idle = g_fake.waits;
    st = pg_storage_wait_idle(host_a); /* waits on the fake write and the sim read */
    if (st != PG_OK)
        return pg_raise(st);
    return Py_BuildValue("{s:i,s:d,s:O,s:O,s:d,s:i,s:i,s:K}", "fake_waits_at_enqueue",
                         waits_at_enqueue, "copied", got, "write_is_fake",
                         write_is_fake ? Py_True : Py_False, "read_is_sim",
                         read_is_sim ? Py_True : Py_False, "copied_back", back_got,
                         "fake_waits_before_idle", waits_before_idle, "fake_waits_after_idle",
                         g_fake.waits, "fake_last_seq", (unsigned long long)g_fake.last_seq);
}

static PyObject *f_test_event_record(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    const size_t nbytes = 1024 * sizeof(double);
    const pg_backend *sim;
    pg_storage *host_a = NULL, *host_b = NULL, *dev = NULL;
    pg_status st = pg_backend_for((pg_device){PG_DEV_SIM, 0}, &sim);
    if (st == PG_OK)
        st = pg_storage_new((pg_device){PG_DEV_CPU, 0}, nbytes, PG_STORAGE_PINNED, &host_a);
    if (st == PG_OK)
        st = pg_storage_new((pg_device){PG_DEV_CPU, 0}, nbytes, PG_STORAGE_PINNED, &host_b);
    if (st == PG_OK)
        st = pg_storage_new((pg_device){PG_DEV_SIM, 0}, nbytes, 0, &dev);
    PyObject *out = st == PG_OK ? event_record(host_a, dev, host_b) : pg_raise(st);
    g_fake.target = NULL;
    if (host_a) /* its fake event is done; the sim ones are waited for first */
        (void)pg_storage_wait_idle(host_a);
    if (host_b)
        (void)pg_storage_wait_idle(host_b);
    if (dev)
        (void)pg_storage_wait_idle(dev);
    pg_storage_release(host_a);
    pg_storage_release(host_b);
    pg_storage_release(dev);
    return out;
}

static PyObject *f_test_blocking_hooks(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    int before = PyGILState_Check();
    void *token = pg_blocking_begin();
    int inside = PyGILState_Check();
    pg_blocking_end(token);
    int after = PyGILState_Check();
    return Py_BuildValue("(OOO)", before ? Py_True : Py_False, inside ? Py_True : Py_False,
                         after ? Py_True : Py_False);
}

/* ---- a queued task finishing while a tensor's reference goes ---- */

static pg_storage *g_race_target;

/* The release probe: the worker's step, run once at the releasing thread's worst moment. */
static void finish_task_now(pg_storage *s)
{
    if (s != g_race_target)
        return;
    g_race_target = NULL; /* once: the unhold below releases too */
    pg_storage_unhold(s);
}

static PyObject *f_test_release_race(PyObject *mod, PyObject *noargs)
{
    (void)mod;
    (void)noargs;
    const pg_device sim0 = {PG_DEV_SIM, 0};
    const size_t nbytes = 4096;
    pg_storage *s = NULL, *next = NULL;
    pg_status st = pg_storage_new(sim0, nbytes, 0, &s); /* a tensor's reference */
    if (st != PG_OK)
        return pg_raise(st);
    pg_storage_retain(s); /* a view's */
    pg_storage_hold(s);   /* a queued task's (no events: it only reads, and runs at once) */
    g_race_target = s;
    pg_storage_set_release_probe(finish_task_now);
    pg_storage_release(s); /* the view goes while the task finishes; the tensor stays */
    pg_storage_set_release_probe(NULL);
    g_race_target = NULL;
    st = pg_storage_new(sim0, nbytes, 0, &next);
    bool shared = st == PG_OK && next->data == s->data;
    pg_storage_release(next);
    pg_storage_release(s);
    if (st != PG_OK)
        return pg_raise(st);
    return PyBool_FromLong(shared);
}

/* ---- the GEMM contract on the CPU ---- */

/* A stored 2-D cpu matrix with unit stride along its rows: its data and leading dimension. */
static int gemm_operand(PyObject *o, const char *what, int dtype, int64_t rows, int64_t cols,
                        const void **data, int64_t *ld)
{
    if (!PyTensor_Check(o)) {
        PyErr_Format(PyExc_TypeError, "_test_gemm: %s must be a Tensor", what);
        return -1;
    }
    const pg_tensor *t = &((PyTensor *)o)->t;
    if (t->storage->device.type != PG_DEV_CPU || t->dtype != dtype || t->ndim != 2 ||
        t->shape[0] != rows || t->shape[1] != cols || (cols > 1 && t->strides[1] != 1) ||
        (rows > 1 && t->strides[0] < cols)) {
        PyErr_Format(PyExc_ValueError,
                     "_test_gemm: %s must be a cpu %s matrix of shape (%lld, %lld) with unit "
                     "stride along its rows",
                     what, pg_dtype_name((pg_dtype)dtype), (long long)rows, (long long)cols);
        return -1;
    }
    *data = pg_tensor_data(t);
    *ld = rows > 1 ? t->strides[0] : cols;
    return 0;
}

static PyObject *f_test_gemm(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *a, *b, *c, *bias = Py_None, *aux = Py_None, *bgrad = Py_None, *mask = Py_None;
    int ta, tb, epi, act, threads = 1;
    double alpha, beta;
    if (!PyArg_ParseTuple(args, "OOOppddii|OOOiO", &a, &b, &c, &ta, &tb, &alpha, &beta, &epi,
                          &act, &bias, &aux, &bgrad, &threads, &mask))
        return NULL;
    if (!PyTensor_Check(c) || ((PyTensor *)c)->t.ndim != 2)
        return PyErr_Format(PyExc_TypeError, "_test_gemm: c must be a 2-d Tensor");
    if (epi < 0 || epi > (PG_EPI_BIAS | PG_EPI_DACT | PG_EPI_BGRAD) || act < 0 ||
        act >= PG_NUM_ACT || threads < 1 || threads > 64)
        return PyErr_Format(PyExc_ValueError, "_test_gemm: bad epilogue, act or threads");
    const pg_tensor *ct = &((PyTensor *)c)->t;
    const pg_tensor *at = PyTensor_Check(a) ? &((PyTensor *)a)->t : NULL;
    if (!at || at->ndim != 2)
        return PyErr_Format(PyExc_TypeError, "_test_gemm: a must be a 2-d Tensor");
    pg_gemm g;
    memset(&g, 0, sizeof g);
    g.batch = 1;
    g.M = ct->shape[0];
    g.N = ct->shape[1];
    g.K = at->shape[ta ? 0 : 1];
    g.trans_a = ta;
    g.trans_b = tb;
    g.dtype_ab = at->dtype; /* a and b share it; c may be wider (half inputs, float32 c) */
    g.dtype_c = ct->dtype;
    g.compute = pg_gemm_compute_of(ct->dtype);
    g.alpha = alpha;
    g.beta = beta;
    g.epilogue = epi;
    g.act = act;
    const void *cdata, *dummy;
    int64_t one, ldm;
    /* half a with a float32 b: autocast's float32 weight (pg_gemm.h b_f32) */
    g.b_f32 = (at->dtype == PG_FLOAT16 || at->dtype == PG_BFLOAT16) && PyTensor_Check(b) &&
              ((PyTensor *)b)->t.dtype == PG_FLOAT32;
    const int bdt = g.b_f32 ? PG_FLOAT32 : at->dtype;
    if (gemm_operand(a, "a", at->dtype, ta ? g.K : g.M, ta ? g.M : g.K, &g.a, &g.lda) < 0 ||
        gemm_operand(b, "b", bdt, tb ? g.N : g.K, tb ? g.K : g.N, &g.b, &g.ldb) < 0 ||
        gemm_operand(c, "c", ct->dtype, g.M, g.N, &cdata, &g.ldc) < 0)
        return NULL;
    g.c = (void *)cdata;
    if (mask != Py_None) { /* pg_gemm.h b_mask: float32, laid out as b (same leading dim) */
        const void *md;
        if (gemm_operand(mask, "mask", PG_FLOAT32, tb ? g.N : g.K, tb ? g.K : g.N, &md, &ldm) < 0)
            return NULL;
        if (ldm != g.ldb && (tb ? g.N : g.K) > 1)
            return PyErr_Format(PyExc_ValueError, "_test_gemm: mask must have b's row stride");
        g.b_mask = md;
    }
    if ((epi & PG_EPI_BIAS) && gemm_operand(bias, "bias", ct->dtype, 1, g.N, &g.bias, &one) < 0)
        return NULL;
    if ((epi & PG_EPI_DACT) && gemm_operand(aux, "aux", ct->dtype, g.M, g.N, &g.aux, &g.ldaux) < 0)
        return NULL;
    if ((epi & PG_EPI_BGRAD)) {
        if (gemm_operand(bgrad, "bias_grad", ct->dtype, 1, g.N, &dummy, &one) < 0)
            return NULL;
        g.bias_grad = (void *)dummy;
    }
    pg_pool *pool = NULL;
    pg_status st = threads > 1 ? pg_pool_create("pygpu-test", threads, &pool) : PG_OK;
    if (st == PG_OK) {
        Py_BEGIN_ALLOW_THREADS st = pg_cpu_gemm_run(pool, &g);
        Py_END_ALLOW_THREADS
    }
    pg_pool_destroy(pool);
    if (st != PG_OK)
        return pg_raise(st);
    Py_RETURN_NONE;
}

static PyObject *f_gemm_mask_counts(PyObject *mod, PyObject *noargs)
{
    (void)mod, (void)noargs;
    int64_t fused, copied;
    pg_cpu_gemm_mask_counts(&fused, &copied);
    return Py_BuildValue("(LL)", (long long)fused, (long long)copied);
}

static PyObject *f_gemm_packs_b(PyObject *mod, PyObject *arg)
{
    (void)mod;
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name)
        return NULL;
    int dt = strcmp(name, "float32") == 0 ? PG_FLOAT32 : strcmp(name, "bfloat16") == 0 ? PG_BFLOAT16 : -1;
    if (dt < 0)
        return PyErr_Format(PyExc_ValueError, "_gemm_packs_b: 'float32' or 'bfloat16', got %R",
                            arg);
    return PyBool_FromLong(pg_cpu_gemm_packs_b(dt));
}

static PyObject *f_test_stats_op_done(PyObject *mod, PyObject *arg)
{
    (void)mod;
    unsigned long long ns = PyLong_AsUnsignedLongLong(arg);
    if (ns == (unsigned long long)-1 && PyErr_Occurred())
        return NULL;
    pg_core_api_get()->stats_op_done((pg_device){PG_DEV_SIM, 0}, (uint64_t)ns);
    Py_RETURN_NONE;
}

/* _bf16_panels(enable=None): switch the weights' pre-packed bf16 panels on or off (off frees
 * them; cpu_bf16_panels.h), then (enabled, fwd_hits, dx_hits, packs, slots, bytes) */
static PyObject *f_bf16_panels(PyObject *mod, PyObject *args)
{
    (void)mod;
    PyObject *enable = Py_None;
    if (!PyArg_ParseTuple(args, "|O:_bf16_panels", &enable))
        return NULL;
    if (enable != Py_None) {
        int on = PyObject_IsTrue(enable);
        if (on < 0)
            return NULL;
        pg_cpu_panels_set_enabled(on != 0);
    }
    pg_cpu_panels_stats st;
    pg_cpu_panels_get_stats(&st);
    return Py_BuildValue("(OLLLLL)", pg_cpu_panels_enabled() ? Py_True : Py_False,
                         (long long)st.fwd_hits, (long long)st.dx_hits, (long long)st.packs,
                         (long long)st.slots, (long long)st.bytes);
}

PyMethodDef pg_testing_functions[] = {
    {"_bf16_panels", f_bf16_panels, METH_VARARGS,
     "_bf16_panels(enable=None): turn the cpu device's pre-packed bf16 weight panels on or off "
     "(off frees them), then (enabled, fwd_hits, dx_hits, packs, slots, bytes)"},
    {"_test_gemm", f_test_gemm, METH_VARARGS,
     "internal test: _test_gemm(a, b, c, trans_a, trans_b, alpha, beta, epilogue, act, "
     "bias=None, aux=None, bias_grad=None, threads=1, mask=None) runs C = epi(alpha op(a) "
     "op(b * mask) + beta C) in place on the CPU"},
    {"_gemm_mask_counts", f_gemm_mask_counts, METH_NOARGS,
     "internal: (fused, copied): GEMM kernel calls that multiplied a mask of B in as they "
     "packed B, and masked copies of B written where a kernel does not pack B itself"},
    {"_gemm_packs_b", f_gemm_packs_b, METH_O,
     "internal: _gemm_packs_b(dtype name): whether the CPU's GEMM for float32, or autocast's "
     "bfloat16 with float32 weights, packs B itself here (a mask of B then costs no copy)"},
    {"_test_event_record", f_test_event_record, METH_NOARGS,
     "internal test: the pending-work record shared by two backends"},
    {"_test_release_race", f_test_release_race, METH_NOARGS,
     "internal test: whether a live storage's block was given back when its last queued "
     "task finished during the release of another reference"},
    {"_test_blocking_hooks", f_test_blocking_hooks, METH_NOARGS,
     "internal test: (GIL held before, inside, after) pg_blocking_begin/end"},
    {"_test_stats_op_done", f_test_stats_op_done, METH_O,
     "internal test: report one op's kernel time (ns) on sim:0 through the plugin API"},
    {NULL, NULL, 0, NULL},
};
