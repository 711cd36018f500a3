/* pg_ops_create.c - tensors from nothing: full, arange, random; the RNG state.
 *
 * Each device has a generator state (seed, offset). A random tensor of n
 * elements uses counters offset..offset+n-1 of Philox and advances offset by
 * n, so results are reproducible after manual_seed and identical on every
 * backend for the same sequence of calls. A torch.Generator keeps a (seed, offset)
 * of its own and draws through pg_op_random_at, the same stream on its own state. */
#include "pg_ops.h"

#include <math.h>
#include <stdio.h>
#include "pg_backend.h"
#include "pg_fork.h"

#include <pthread.h>

#define DEFAULT_SEED 0x5eedULL

static struct {
    uint64_t seed, offset;
} g_rng[PG_NUM_SLOTS];
static bool g_rng_init;
static pthread_mutex_t g_rng_lock = PTHREAD_MUTEX_INITIALIZER;

static void rng_init_locked(void)
{
    if (g_rng_init)
        return;
    for (int i = 0; i < PG_NUM_SLOTS; i++)
        g_rng[i].seed = DEFAULT_SEED;
    g_rng_init = true;
}

void pg_rng_after_fork(void) { pthread_mutex_init(&g_rng_lock, NULL); }

void pg_rng_seed(pg_device dev, uint64_t seed)
{
    pthread_mutex_lock(&g_rng_lock);
    rng_init_locked();
    g_rng[pg_device_slot(dev)].seed = seed;
    g_rng[pg_device_slot(dev)].offset = 0;
    pthread_mutex_unlock(&g_rng_lock);
}

void pg_rng_reserve(pg_device dev, uint64_t n, uint64_t *seed, uint64_t *offset)
{
    pthread_mutex_lock(&g_rng_lock);
    rng_init_locked();
    int slot = pg_device_slot(dev);
    *seed = g_rng[slot].seed;
    *offset = g_rng[slot].offset;
    g_rng[slot].offset += n;
    pthread_mutex_unlock(&g_rng_lock);
}

void pg_rng_get(pg_device dev, uint64_t *seed, uint64_t *offset)
{
    pthread_mutex_lock(&g_rng_lock);
    rng_init_locked();
    *seed = g_rng[pg_device_slot(dev)].seed;
    *offset = g_rng[pg_device_slot(dev)].offset;
    pthread_mutex_unlock(&g_rng_lock);
}

void pg_rng_set(pg_device dev, uint64_t seed, uint64_t offset)
{
    pthread_mutex_lock(&g_rng_lock);
    rng_init_locked();
    g_rng[pg_device_slot(dev)].seed = seed;
    g_rng[pg_device_slot(dev)].offset = offset;
    pthread_mutex_unlock(&g_rng_lock);
}

void pg_rng_seed_all(uint64_t seed)
{
    for (int s = 0; s < PG_NUM_SLOTS; s++)
        pg_rng_seed(pg_device_from_slot(s), seed);
}

/* A number stored into an integer tensor must fit its dtype (a float: after truncation;
 * NaN and +-inf never do): C's conversion would be undefined, and PyTorch refuses it
 * ("value cannot be converted to type int8_t without overflow"). One check for full(),
 * fill_ and t[i] = x. */
static pg_status check_int_fits(const pg_tensor *t, pg_scalar v, const char *op)
{
    pg_dtype dt = (pg_dtype)t->dtype;
    if (!pg_dtype_is_int(dt) || v.kind == PG_SCALAR_BOOL)
        return PG_OK;
    int bits = (int)(8 * pg_dtype_size(dt));
    bool is_signed = pg_dtype_is_signed(dt);
    /* the range as doubles: exact powers of two, the upper bound exclusive */
    double lo = is_signed ? -ldexp(1.0, bits - 1) : 0.0;
    double hi = ldexp(1.0, is_signed ? bits - 1 : bits);
    bool fits = v.kind == PG_SCALAR_FLOAT ? (trunc(v.f) >= lo && v.f < hi) /* NaN: false */
                                          : (bits == 64 || (v.i >= (int64_t)lo && v.i < (int64_t)hi));
    if (fits)
        return PG_OK;
    char value[40];
    if (v.kind == PG_SCALAR_FLOAT)
        snprintf(value, sizeof value, "%g", v.f);
    else
        snprintf(value, sizeof value, "%lld", (long long)v.i);
    return pg_error_set(PG_ERR_OVERFLOW,
                        "%s: the value %s does not fit in an %s tensor (range %.0f .. %.0f); use "
                        "a wider dtype or a value in range",
                        op, value, pg_dtype_name(dt), lo, hi - 1);
}

pg_status pg_op_fill_complex(const pg_tensor *t, double re, double im)
{
    pg_tensor part;
    pg_scalar v = {.kind = PG_SCALAR_FLOAT, .f = re};
    PG_TRY(pg_view_complex_part(t, false, &part));
    pg_status st = pg_op_fill(&part, v);
    pg_tensor_clear(&part);
    if (st != PG_OK)
        return st;
    v.f = im;
    PG_TRY(pg_view_complex_part(t, true, &part));
    st = pg_op_fill(&part, v);
    pg_tensor_clear(&part);
    return st;
}

pg_status pg_op_fill(const pg_tensor *t, pg_scalar v)
{
    PG_TRY(check_int_fits(t, v, "assignment"));
    if (pg_tensor_numel(t) == 0)
        return PG_OK;
    if (pg_dtype_is_complex((pg_dtype)t->dtype)) /* the real part, and a zero imaginary one */
        return pg_op_fill_complex(t, v.kind == PG_SCALAR_FLOAT ? v.f : (double)v.i, 0.0);
    bool zero = v.kind == PG_SCALAR_FLOAT ? v.f == 0 && !signbit(v.f) : v.i == 0;
    if (pg_dtype_is_shell((pg_dtype)t->dtype) && zero) { /* zeros: the bytes, as unsigned */
        pg_tensor bytes = *t;
        bytes.dtype = pg_dtype_size((pg_dtype)t->dtype) == 1 ? PG_UINT8 : PG_UINT16;
        return pg_op_fill(&bytes, v);
    }
    if (pg_dtype_is_shell((pg_dtype)t->dtype)) /* PyTorch's fill kernel has no such dtype */
        return pg_error_set(PG_ERR_NOT_IMPLEMENTED, "\"fill_cpu\" not implemented for '%s'",
                            pg_dtype_legacy_name((pg_dtype)t->dtype));
    PG_TRY(pg_backend_check_op(pg_tensor_device(t), PG_OP_FILL, t->dtype, "fill"));
    if (t->storage->flags & PG_STORAGE_READONLY)
        return pg_error_set(PG_ERR_VALUE, "fill: the tensor is read-only");
    pg_node n;
    n.nextra = 0;
    n.op = PG_OP_FILL;
    n.subop = 0;
    n.nsrc = 0;
    n.dst = *t;
    n.name = "fill";
    n.p.scalar.f = v.kind == PG_SCALAR_FLOAT ? v.f : (double)v.i;
    if (t->dtype == PG_BOOL)
        n.p.scalar.i = v.kind == PG_SCALAR_FLOAT ? v.f != 0 : v.i != 0;
    else
        n.p.scalar.i = v.kind == PG_SCALAR_FLOAT ? (int64_t)v.f : v.i;
    n.p.scalar.scalar_left = 0;
    return pg_launch(&n);
}

pg_status pg_op_full(pg_device dev, pg_dtype dt, int ndim, const int64_t *shape, pg_scalar v,
                     pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (!pg_dtype_supported(dt))
        return pg_error_set(PG_ERR_DTYPE, "dtype code %d is not a pygpu dtype", (int)dt);
    pg_tensor like = {.dtype = dt};
    PG_TRY(check_int_fits(&like, v, "full"));
    PG_TRY(pg_tensor_empty(dev, dt, ndim, shape, out));
    pg_status st = pg_op_fill(out, v);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

pg_status pg_op_arange(pg_device dev, pg_dtype dt, double start, double step, int64_t n,
                       pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (!pg_dtype_supported(dt) || dt == PG_BOOL)
        return pg_error_set(PG_ERR_DTYPE, "arange: dtype %s is not supported", pg_dtype_name(dt));
    if (pg_dtype_is_narrow_int(dt)) { /* counted in int64, then cast (wrapping, as PyTorch) */
        pg_tensor wide;
        PG_TRY(pg_op_arange(dev, PG_INT64, start, step, n, &wide));
        pg_status st = pg_op_astype(&wide, dt, out);
        pg_tensor_clear(&wide);
        return st;
    }
    PG_TRY(pg_backend_check_op(dev, PG_OP_ARANGE, dt, "arange"));
    PG_TRY(pg_tensor_empty(dev, dt, 1, &n, out));
    if (n == 0)
        return PG_OK;
    pg_node node;
    node.nextra = 0;
    node.op = PG_OP_ARANGE;
    node.subop = 0;
    node.nsrc = 0;
    node.dst = *out;
    node.p.arange.start = start;
    node.p.arange.step = step;
    node.name = "arange";
    pg_status st = pg_launch(&node);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

/* Draw at `at` (seed, first offset) or, with at NULL, at the device generator's next
 * counters (which then move on by the element count). */
static pg_status random_draw(pg_device dev, pg_dtype dt, int kind, int ndim, const int64_t *shape,
                             const uint64_t *at, pg_tensor *out)
{
    pg_tensor_out_init(out, NULL);
    if (dt != PG_FLOAT32 && dt != PG_FLOAT64)
        return pg_error_set(PG_ERR_DTYPE, "%s: dtype must be float32 or float64, got %s",
                            pg_subop_name(kind), pg_dtype_name(dt));
    PG_TRY(pg_tensor_empty(dev, dt, ndim, shape, out));
    int64_t n = pg_tensor_numel(out);
    pg_node node;
    node.nextra = 0;
    node.op = PG_OP_RANDOM;
    node.subop = kind;
    node.nsrc = 0;
    node.dst = *out;
    node.name = pg_subop_name(kind); /* the RANDOM row's: "rand", "randn" */
    if (at) {
        node.p.random.seed = at[0];
        node.p.random.offset = at[1];
    } else {
        pg_rng_reserve(dev, (uint64_t)n, &node.p.random.seed, &node.p.random.offset);
    }
    if (n == 0)
        return PG_OK;
    pg_status st = pg_launch(&node);
    if (st != PG_OK)
        pg_tensor_clear(out);
    return st;
}

pg_status pg_op_random(pg_device dev, pg_dtype dt, int kind, int ndim, const int64_t *shape,
                       pg_tensor *out)
{
    return random_draw(dev, dt, kind, ndim, shape, NULL, out);
}

pg_status pg_op_random_at(pg_device dev, pg_dtype dt, int kind, int ndim, const int64_t *shape,
                          const uint64_t at[2], pg_tensor *out)
{
    return random_draw(dev, dt, kind, ndim, shape, at, out);
}
