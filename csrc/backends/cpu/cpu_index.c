/* cpu_index.c - the CPU kernels of the index family (PG_OP_INDEX; node layouts in
 * csrc/core/pg_ops_index.h): gather/scatter-style moves along one axis, cumulative sums
 * and products, a stable argsort, masked fill and nonzero.
 *
 * Serial loops: each runs once per node on the calling thread (cpu) or on sim's worker.
 * Moves copy elements by their size, so they serve every dtype; the arithmetic subops
 * see float32, float64 and int64 only (the generic layer widens the others). Index
 * values are data, so the kernels check them all BEFORE writing anything: a bad index
 * fails the node with an IndexError and leaves the destination as it was. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_ops_index.h"
#include "cpu_kernels.h"
#include "cpu_vecmath.h"

static inline void move_elem(char *dst, const char *src, int64_t size)
{
    switch (size) {
    case 1: *dst = *src; break;
    case 2: memcpy(dst, src, 2); break;
    case 4: memcpy(dst, src, 4); break;
    default: memcpy(dst, src, 8); break;
    }
}

static inline void add_elem(int dtype, char *dst, const char *src)
{
    switch (dtype) {
    case PG_FLOAT32: *(float *)dst += *(const float *)src; break;
    case PG_FLOAT64: *(double *)dst += *(const double *)src; break;
    default: *(int64_t *)dst += *(const int64_t *)src; break;
    }
}

/* ---- moves along one axis ------------------------------------------------------------- *
 * One walk serves all six: the iteration runs over a shape `it`; operand P follows the
 * same coordinates; operand M follows them too except on `axis`, where it takes the
 * index value k (from the index at the flat position, or at coords[axis] for a 1-D
 * index). Reads move M -> P (gather, index_select); writes move or add P -> M. */
/* Every operand C-contiguous (the common case): (outer, len, inner) blocks, no coordinate
 * walk; a 1-D index moves whole rows of `inner` elements with memcpy. */
static void move_contiguous(const pg_node *n, const pg_tensor *P, const pg_tensor *M, bool read,
                            bool full, bool add, int axis, int64_t size)
{
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= P->shape[d];
    for (int d = axis + 1; d < P->ndim; d++)
        inner *= P->shape[d];
    int64_t lp = P->shape[axis], lm = M->shape[axis];
    const int64_t *idx = (const int64_t *)pg_tensor_data(&n->src[1]);
    char *pb = pg_tensor_data(P), *mb = pg_tensor_data(M);
    if (read && full && inner == 1 && (size == 4 || size == 8)) {
        /* gather along the last axis: one typed load per element in a loop with no
         * branch, so the CPU keeps many of the (scattered, cache-missing) loads in
         * flight; the general loop below ran 2.7x slower than PyTorch's here */
#define GATHER_LAST(T)                                                                     \
    for (int64_t o = 0; o < outer; o++) {                                                  \
        const T *mrow = (const T *)mb + o * lm;                                            \
        const int64_t *irow = idx + o * lp;                                                \
        T *prow = (T *)pb + o * lp;                                                        \
        for (int64_t j = 0; j < lp; j++)                                                   \
            prow[j] = mrow[irow[j]];                                                       \
    }
        if (size == 4) {
            GATHER_LAST(uint32_t)
        } else {
            GATHER_LAST(uint64_t)
        }
#undef GATHER_LAST
        return;
    }
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < lp; j++) {
            char *prow = pb + ((o * lp + j) * inner) * size;
            if (!full) {
                char *mrow = mb + ((o * lm + idx[j]) * inner) * size;
                if (add)
                    for (int64_t c = 0; c < inner; c++)
                        add_elem(P->dtype, mrow + c * size, prow + c * size);
                else if (read)
                    memcpy(prow, mrow, (size_t)(inner * size));
                else
                    memcpy(mrow, prow, (size_t)(inner * size));
                continue;
            }
            const int64_t *irow = idx + (o * lp + j) * inner;
            char *mbase = mb + o * lm * inner * size;
            for (int64_t c = 0; c < inner; c++) {
                char *p = prow + c * size, *m = mbase + (irow[c] * inner + c) * size;
                if (read)
                    move_elem(p, m, size);
                else if (add)
                    add_elem(P->dtype, m, p);
                else
                    move_elem(m, p, size);
            }
        }
}

static pg_status index_MOVE(const pg_node *n)
{
    int axis = (int)n->p.index.axis;
    unsigned flags = pg_subop_flags(n->subop); /* the sub-op's row: a gather, a full index, adds */
    bool read = (flags & PG_SUBF_READ) != 0;
    bool full = (flags & PG_SUBF_FULL) != 0;
    bool add = (flags & PG_SUBF_ADD) != 0;
    const pg_tensor *P = read ? &n->dst : &n->src[0];
    const pg_tensor *M = read ? &n->src[0] : &n->dst;
    const pg_tensor *I = &n->src[1]; /* int64, contiguous */
    const int64_t *idx = (const int64_t *)pg_tensor_data(I);
    int nd = P->ndim;
    int64_t size = (int64_t)pg_dtype_size((pg_dtype)P->dtype);
    int64_t bound = M->shape[axis];
    int64_t nidx = pg_tensor_numel(I);
    for (int64_t j = 0; j < nidx; j++)
        if (idx[j] < 0 || idx[j] >= bound)
            return pg_error_set(PG_ERR_INDEX, "%s: index %lld is out of bounds for dimension %d "
                                              "with size %lld",
                                n->name, (long long)idx[j], axis, (long long)bound);
    bool same = true; /* M's shape is P's but on the axis (scatter's self may be larger) */
    for (int d = 0; d < nd; d++)
        same = same && (d == axis || M->shape[d] == P->shape[d]);
    if (same && pg_tensor_is_contiguous(P) && pg_tensor_is_contiguous(M)) {
        move_contiguous(n, P, M, read, full, add, axis, size);
        return PG_OK;
    }
    int64_t total = pg_tensor_numel(P);
    char *pbase = pg_tensor_data(P), *mbase = pg_tensor_data(M);
    int64_t coords[PG_MAX_DIMS] = {0};
    int64_t offp = 0, offm = 0; /* elements; offm leaves out the axis */
    for (int64_t flat = 0; flat < total; flat++) {
        int64_t k = full ? idx[flat] : idx[coords[axis]];
        char *p = pbase + offp * size;
        char *m = mbase + (offm + k * M->strides[axis]) * size;
        if (read)
            move_elem(p, m, size);
        else if (add)
            add_elem(P->dtype, m, p);
        else
            move_elem(m, p, size);
        for (int d = nd - 1; d >= 0; d--) {
            coords[d]++;
            offp += P->strides[d];
            if (d != axis)
                offm += M->strides[d];
            if (coords[d] < P->shape[d])
                break;
            offp -= P->strides[d] * P->shape[d];
            if (d != axis)
                offm -= M->strides[d] * P->shape[d];
            coords[d] = 0;
        }
    }
    return PG_OK;
}

/* ---- cumulative sum / product (contiguous in and out) ---------------------------------- */

#define CUMULATE(T, ACC)                                                                   \
    do {                                                                                   \
        const T *s = (const T *)pg_tensor_data(&n->src[0]);                                \
        T *o = (T *)pg_tensor_data(&n->dst);                                               \
        for (int64_t a = 0; a < outer; a++)                                                \
            for (int64_t c = 0; c < inner; c++) {                                          \
                ACC acc = prod ? (ACC)1 : (ACC)0;                                          \
                int64_t base = a * len * inner + c;                                        \
                for (int64_t i = 0; i < len; i++) {                                        \
                    ACC v = (ACC)s[base + i * inner];                                      \
                    acc = prod ? acc * v : acc + v;                                        \
                    o[base + i * inner] = (T)acc;                                          \
                }                                                                          \
            }                                                                              \
    } while (0)

static void line_shape(const pg_tensor *t, int axis, int64_t *outer, int64_t *len,
                       int64_t *inner)
{
    *outer = 1;
    *inner = 1;
    for (int d = 0; d < axis; d++)
        *outer *= t->shape[d];
    for (int d = axis + 1; d < t->ndim; d++)
        *inner *= t->shape[d];
    *len = t->shape[axis];
}

static pg_status index_CUMULATE(const pg_node *n)
{
    int64_t outer, len, inner;
    line_shape(&n->src[0], (int)n->p.index.axis, &outer, &len, &inner);
    bool prod = (pg_subop_flags(n->subop) & PG_SUBF_PROD) != 0;
    switch (n->dst.dtype) {
    case PG_FLOAT32: CUMULATE(float, double); break; /* a double accumulator, as PyTorch's CPU */
    case PG_FLOAT64: CUMULATE(double, double); break;
    case PG_INT64: CUMULATE(int64_t, int64_t); break;
    default:
        return pg_error_set(PG_ERR_DTYPE, "%s: no CPU kernel for %s", n->name,
                            pg_dtype_name((pg_dtype)n->dst.dtype));
    }
    return PG_OK;
}

/* ---- argsort: stable, NaN largest ----------------------------------------------------- */

typedef struct { double v; int64_t i; } key_f;
typedef struct { int64_t v; int64_t i; } key_i;

static int cmp_f(double a, double b)
{
    bool na = isnan(a), nb = isnan(b);
    if (na || nb)
        return (int)na - (int)nb;
    return (a > b) - (a < b);
}
static int asc_f(const void *x, const void *y)
{
    const key_f *a = x, *b = y;
    int c = cmp_f(a->v, b->v);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}
static int desc_f(const void *x, const void *y)
{
    const key_f *a = x, *b = y;
    int c = cmp_f(b->v, a->v);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}
static int asc_i(const void *x, const void *y)
{
    const key_i *a = x, *b = y;
    int c = (a->v > b->v) - (a->v < b->v);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}
static int desc_i(const void *x, const void *y)
{
    const key_i *a = x, *b = y;
    int c = (b->v > a->v) - (b->v < a->v);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}

static pg_status index_ARGSORT(const pg_node *n)
{
    int64_t outer, len, inner;
    line_shape(&n->src[0], (int)n->p.index.axis, &outer, &len, &inner);
    bool desc = n->p.index.flag != 0;
    int dt = n->src[0].dtype;
    bool is_int = dt == PG_INT64;
    if (dt != PG_FLOAT32 && dt != PG_FLOAT64 && dt != PG_INT64)
        return pg_error_set(PG_ERR_DTYPE, "argsort: no CPU kernel for %s",
                            pg_dtype_name((pg_dtype)dt));
    void *keys = malloc((size_t)len * (is_int ? sizeof(key_i) : sizeof(key_f)));
    if (!keys)
        return pg_error_set(PG_ERR_NOMEM, "argsort: cannot allocate %lld sort keys",
                            (long long)len);
    const char *s = pg_tensor_data(&n->src[0]);
    int64_t *o = (int64_t *)pg_tensor_data(&n->dst);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t c = 0; c < inner; c++) {
            int64_t base = a * len * inner + c;
            for (int64_t i = 0; i < len; i++) {
                int64_t at = base + i * inner;
                if (is_int) {
                    ((key_i *)keys)[i] = (key_i){((const int64_t *)s)[at], i};
                } else {
                    double v = dt == PG_FLOAT32 ? (double)((const float *)s)[at]
                                                : ((const double *)s)[at];
                    ((key_f *)keys)[i] = (key_f){v, i};
                }
            }
            if (is_int)
                qsort(keys, (size_t)len, sizeof(key_i), desc ? desc_i : asc_i);
            else
                qsort(keys, (size_t)len, sizeof(key_f), desc ? desc_f : asc_f);
            for (int64_t i = 0; i < len; i++)
                o[base + i * inner] = is_int ? ((key_i *)keys)[i].i : ((key_f *)keys)[i].i;
        }
    free(keys);
    return PG_OK;
}

/* v sorts strictly before u in topk's order (NaN the largest) */
static inline bool f_beats(double v, double u, bool largest)
{
    return largest ? (v > u || (v != v && u == u)) : (v < u || (v == v && u != u));
}

/* topk's screen (a contiguous float line, k kept): the first position at or after i whose
 * value may beat the worst kept w, 256 bytes at a time with vector compares, so the
 * scalar path below runs only on candidates (after the first few hundred elements of a random line,
 * a few in a thousand). largest: NaN beats every number, so the screen is !(v <= w); a
 * NaN w is beaten by nothing. smallest: v < w; a NaN w by every number. */
#define TOPK_BEATS(v, w, largest) ((largest) ? !((v) <= (w)) : (v) < (w))
/* GCC vector types (an omp simd reduction of the hits went through the stack): per 64
 * bytes, a lane mask; the masks of a 256-byte block are or-ed and folded to one word. */
#define TOPK_SKIP(SUF, T, IT)                                                                 \
    typedef T tv_##SUF __attribute__((vector_size(64)));                                      \
    typedef IT tm_##SUF __attribute__((vector_size(64)));                                     \
    typedef uint64_t tq_##SUF __attribute__((vector_size(64)));                               \
    PG_CPU_DISPATCH(int64_t, topk_skip_##SUF, (const T *row, int64_t i, int64_t len, T w,   \
                                               bool largest), (row, i, len, w, largest))      \
    {                                                                                         \
        enum { W = 64 / sizeof(T) };                                                          \
        if (w != w)                                                                           \
            return largest ? len : i;                                                         \
        tv_##SUF wv = (tv_##SUF){0} + w;                                                      \
        for (; i + 4 * W <= len; i += 4 * W) {                                                \
            tm_##SUF hit = (tm_##SUF){0};                                                     \
            for (int b = 0; b < 4; b++) {                                                     \
                tv_##SUF v;                                                                   \
                memcpy(&v, row + i + b * W, 64);                                              \
                hit |= largest ? ~(v <= wv) : (v < wv);                                       \
            }                                                                                 \
            tq_##SUF q = (tq_##SUF)hit;                                                       \
            uint64_t any = (q[0] | q[1]) | (q[2] | q[3]) | (q[4] | q[5]) | (q[6] | q[7]);      \
            if (any)                                                                          \
                break;                                                                        \
        }                                                                                     \
        for (; i + W <= len; i += W) { /* the block that hit, 64 bytes at a time */           \
            tv_##SUF v;                                                                       \
            memcpy(&v, row + i, 64);                                                          \
            tq_##SUF q = (tq_##SUF)(largest ? ~(v <= wv) : (v < wv));                         \
            if ((q[0] | q[1]) | (q[2] | q[3]) | (q[4] | q[5]) | (q[6] | q[7]))                \
                break;                                                                        \
        }                                                                                     \
        for (; i < len && !TOPK_BEATS(row[i], w, largest); i++)                               \
            ;                                                                                 \
        return i;                                                                             \
    }
TOPK_SKIP(f32, float, int32_t)
TOPK_SKIP(f64, double, int64_t)

/* topk: per line, the k best so far kept sorted (a new element enters only when it sorts
 * strictly before the worst kept, so ties keep their input order: the first k of the
 * stable argsort). Lines where k is a large share of the line sort fully instead. */
static pg_status index_TOPK(const pg_node *n)
{
    int64_t outer, len, inner;
    int axis = (int)n->p.index.axis;
    line_shape(&n->src[0], axis, &outer, &len, &inner);
    int64_t k = n->dst.shape[axis];
    bool largest = n->p.index.flag != 0;
    int dt = n->src[0].dtype;
    bool is_int = dt == PG_INT64;
    if (dt != PG_FLOAT32 && dt != PG_FLOAT64 && dt != PG_INT64)
        return pg_error_set(PG_ERR_DTYPE, "topk: no CPU kernel for %s",
                            pg_dtype_name((pg_dtype)dt));
    bool full_sort = k > 64 || k * 8 > len;
    bool screen = !full_sort && !is_int && inner == 1; /* contiguous float lines */
    size_t ksize = is_int ? sizeof(key_i) : sizeof(key_f);
    int (*cmp)(const void *, const void *) =
        is_int ? (largest ? desc_i : asc_i) : (largest ? desc_f : asc_f);
    char *keys = malloc((size_t)(full_sort ? len : k + 1) * ksize);
    if (!keys)
        return pg_error_set(PG_ERR_NOMEM, "topk: cannot allocate %lld sort keys",
                            (long long)(full_sort ? len : k + 1));
    const char *s = pg_tensor_data(&n->src[0]);
    int64_t *o = (int64_t *)pg_tensor_data(&n->dst);
    for (int64_t a = 0; a < outer; a++)
        for (int64_t c = 0; c < inner; c++) {
            int64_t base = a * len * inner + c, m = 0;
            double wf = 0.0; /* the worst kept value, once k are kept */
            int64_t wi = 0;
            for (int64_t i = 0; i < len; i++) {
                if (m == k && k > 0 && screen) {
                    i = dt == PG_FLOAT32
                            ? topk_skip_f32((const float *)s + base, i, len, (float)wf, largest)
                            : topk_skip_f64((const double *)s + base, i, len, wf, largest);
                    if (i >= len)
                        break;
                }
                int64_t at = base + i * inner;
                if (m == k && !full_sort) { /* most elements: one compare with the worst kept */
                    bool better;
                    if (is_int) {
                        int64_t v = ((const int64_t *)s)[at];
                        better = largest ? v > wi : v < wi;
                    } else {
                        double v = dt == PG_FLOAT32 ? (double)((const float *)s)[at]
                                                    : ((const double *)s)[at];
                        better = largest ? (v > wf || (v != v && wf == wf))
                                         : (v < wf || (v == v && wf != wf));
                    }
                    if (!better || k == 0)
                        continue; /* a tie with the worst kept: the earlier one stays */
                }
                union { key_i ki; key_f kf; } key;
                if (is_int)
                    key.ki = (key_i){((const int64_t *)s)[at], i};
                else
                    key.kf = (key_f){dt == PG_FLOAT32 ? (double)((const float *)s)[at]
                                                      : ((const double *)s)[at], i};
                if (full_sort) {
                    memcpy(keys + i * ksize, &key, ksize);
                    continue;
                }
                int64_t pos = m < k ? m : k - 1;
                /* the new key's index is above every kept one, so for floats "sorts
                 * before" is "beats", inline (a qsort comparator per step cost more than
                 * the screen) */
                while (pos > 0 && (is_int ? cmp(&key, keys + (pos - 1) * ksize) < 0
                                          : f_beats(key.kf.v, ((key_f *)keys)[pos - 1].v,
                                                    largest))) {
                    memcpy(keys + pos * ksize, keys + (pos - 1) * ksize, ksize);
                    pos--;
                }
                memcpy(keys + pos * ksize, &key, ksize);
                if (m < k)
                    m++;
                if (m == k && k > 0) {
                    if (is_int)
                        wi = ((key_i *)keys)[k - 1].v;
                    else
                        wf = ((key_f *)keys)[k - 1].v;
                }
            }
            if (full_sort)
                qsort(keys, (size_t)len, ksize, cmp);
            int64_t base_o = a * k * inner + c;
            for (int64_t j = 0; j < k; j++)
                o[base_o + j * inner] = is_int ? ((key_i *)keys)[j].i : ((key_f *)keys)[j].i;
        }
    free(keys);
    return PG_OK;
}

/* ---- masked fill (dst strided, mask broadcast) and nonzero --------------------------- */

static pg_status index_MASKED_FILL(const pg_node *n)
{
    const pg_tensor *D = &n->dst, *Mk = &n->src[0];
    int64_t size = (int64_t)pg_dtype_size((pg_dtype)D->dtype);
    const char *value = pg_tensor_data(&n->src[1]);
    char *dbase = pg_tensor_data(D);
    const uint8_t *mbase = (const uint8_t *)pg_tensor_data(Mk);
    int64_t total = pg_tensor_numel(D);
    if (pg_tensor_is_contiguous(D) && pg_tensor_is_contiguous(Mk)) {
        switch (size) {
#define FILL_FLAT(T)                                                                        \
    do {                                                                                    \
        T v, *d = (T *)dbase;                                                               \
        memcpy(&v, value, sizeof v);                                                        \
        for (int64_t i = 0; i < total; i++)                                                 \
            d[i] = mbase[i] ? v : d[i];                                                     \
    } while (0)
        case 1: FILL_FLAT(uint8_t); break;
        case 2: FILL_FLAT(uint16_t); break;
        case 4: FILL_FLAT(uint32_t); break;
        default: FILL_FLAT(uint64_t); break;
#undef FILL_FLAT
        }
        return PG_OK;
    }
    int64_t coords[PG_MAX_DIMS] = {0};
    int64_t offd = 0, offm = 0;
    for (int64_t flat = 0; flat < total; flat++) {
        if (mbase[offm])
            move_elem(dbase + offd * size, value, size);
        for (int d = D->ndim - 1; d >= 0; d--) {
            coords[d]++;
            offd += D->strides[d];
            offm += Mk->strides[d];
            if (coords[d] < D->shape[d])
                break;
            offd -= D->strides[d] * D->shape[d];
            offm -= Mk->strides[d] * D->shape[d];
            coords[d] = 0;
        }
    }
    return PG_OK;
}

static pg_status index_NONZERO(const pg_node *n)
{
    const uint8_t *m = (const uint8_t *)pg_tensor_data(&n->src[0]);
    int64_t len = n->src[0].shape[0], want = n->dst.shape[0], k = 0;
    for (int64_t i = 0; i < len; i++)
        k += m[i] != 0;
    if (k != want)
        return pg_error_set(PG_ERR_RUNTIME, "nonzero: the mask has %lld true elements, not the "
                                            "%lld counted before (was it written meanwhile?)",
                            (long long)k, (long long)want);
    int64_t *o = (int64_t *)pg_tensor_data(&n->dst);
    k = 0;
    for (int64_t i = 0; i < len; i++)
        if (m[i])
            o[k++] = i;
    return PG_OK;
}

/* each INDEX row's kernel, by its family column (pg_subops.def) */
typedef pg_status (*index_fn)(const pg_node *);
static const index_fn index_kernels[PG_NUM_SUBOPS] = {
#define PG_SUBOP_INDEX(ID, name, flags, family) [PG_INDEX_##ID] = index_##family,
#include "../../core/pg_subops.def"
};

pg_status pg_cpu_index(const pg_node *n)
{
    index_fn fn = n->subop >= 0 && n->subop < PG_NUM_SUBOPS ? index_kernels[n->subop] : NULL;
    if (!fn)
        return pg_error_set(PG_ERR_RUNTIME, "index: %s is not an INDEX sub-op",
                            pg_subop_id(n->subop));
    return fn(n);
}
