/* pg_dtype.c - names of element types, and PyTorch's promotion as data: c10's
 * promoteTypes lookup table (c10/core/ScalarType.h) over pygpu's codes, and
 * torch.result_type's combination of tensor, 0-d tensor and Python-number priorities
 * (c10's ResultTypeState, aten/src/ATen/native/TypeProperties.cpp). */
#include "pg_dtype.h"

#include <stdio.h>

#include "pg_status.h"

static const char *const pg_dtype_names[PG_NUM_DTYPES] = {
#define PG_DTYPE_NAME(ID, name, ...) [PG_##ID] = name,
    PG_DTYPES(PG_DTYPE_NAME)
#undef PG_DTYPE_NAME
};

void pg_dtype_list(char *buf, size_t len)
{
    int order[PG_NUM_DTYPES], n = 0;
    for (int i = 0; i < PG_NUM_DTYPES; i++) /* floats (float8 last), in code order */
        if (pg_dtype_is_float((pg_dtype)i) || pg_dtype_is_fp8((pg_dtype)i))
            order[n++] = i;
    for (int i = 0; i < PG_NUM_DTYPES; i++) /* the complex dtypes */
        if (pg_dtype_is_complex((pg_dtype)i))
            order[n++] = i;
    for (size_t size = 8; size >= 1; size /= 2) /* then the integers, widest first */
        for (int i = 0; i < PG_NUM_DTYPES; i++)
            if (pg_dtype_is_int((pg_dtype)i) && pg_dtype_size((pg_dtype)i) == size)
                order[n++] = i;
    for (int i = 0; i < PG_NUM_DTYPES; i++) /* the shell dtypes, in code order */
        if (pg_dtype_is_shell((pg_dtype)i))
            order[n++] = i;
    order[n++] = PG_BOOL;
    size_t k = 0;
    if (len)
        buf[0] = 0;
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ",
                              pg_dtype_names[order[i]]);
}

bool pg_dtype_valid(int code) { return code >= 0 && code < PG_NUM_DTYPES; }
const char *pg_dtype_name(pg_dtype dt) { return pg_dtype_names[dt]; }
bool pg_dtype_supported(pg_dtype dt) { return pg_dtype_valid((int)dt); }

/* torch.promote_types, c10's table written in its style: row a, column b, in code order
 * (b1 bool, i8 int64, f4 float32, f8 float64, f2 float16, bf bfloat16, u1 uint8, i1 int8,
 * i2 int16, i4 int32, c4 complex64, c8 complex128). c10 gives float16 with complex64
 * complex64 too (its complex32 only with complex32 itself). The bare dtypes (u2 uint16, u4
 * uint32, u8 uint64 and the float8 rows) promote only with themselves, and uint16/32/64 with
 * a float (the float): every other entry is ud, which c10's table has too ("not
 * supported"). tests/test_type_promotion.py compares every pair with torch's. */
enum { b1 = PG_BOOL, i8 = PG_INT64, f4 = PG_FLOAT32, f8 = PG_FLOAT64, f2 = PG_FLOAT16,
       bf = PG_BFLOAT16, u1 = PG_UINT8, i1 = PG_INT8, i2 = PG_INT16, i4 = PG_INT32,
       c4 = PG_COMPLEX64, c8 = PG_COMPLEX128, u2 = PG_UINT16, u4 = PG_UINT32, u8 = PG_UINT64,
       e4 = PG_FLOAT8_E4M3FN, e5 = PG_FLOAT8_E5M2, z4 = PG_FLOAT8_E4M3FNUZ,
       z5 = PG_FLOAT8_E5M2FNUZ, e8 = PG_FLOAT8_E8M0FNU, ud = PG_NO_PROMOTION };
#define PG_TABLED (PG_FLOAT8_E8M0FNU + 1) /* the rows the table below holds */
static const unsigned char pg_promote_table[PG_TABLED][PG_TABLED] = {
    /*        b1  i8  f4  f8  f2  bf  u1  i1  i2  i4  c4  c8  u2  u4  u8  e4  e5  z4  z5  e8 */
    /* b1 */ {b1, i8, f4, f8, f2, bf, u1, i1, i2, i4, c4, c8, ud, ud, ud, ud, ud, ud, ud, ud},
    /* i8 */ {i8, i8, f4, f8, f2, bf, i8, i8, i8, i8, c4, c8, ud, ud, ud, ud, ud, ud, ud, ud},
    /* f4 */ {f4, f4, f4, f8, f4, f4, f4, f4, f4, f4, c4, c8, f4, f4, f4, ud, ud, ud, ud, ud},
    /* f8 */ {f8, f8, f8, f8, f8, f8, f8, f8, f8, f8, c8, c8, f8, f8, f8, ud, ud, ud, ud, ud},
    /* f2 */ {f2, f2, f4, f8, f2, f4, f2, f2, f2, f2, c4, c8, f2, f2, f2, ud, ud, ud, ud, ud},
    /* bf */ {bf, bf, f4, f8, f4, bf, bf, bf, bf, bf, c4, c8, bf, bf, bf, ud, ud, ud, ud, ud},
    /* u1 */ {u1, i8, f4, f8, f2, bf, u1, i2, i2, i4, c4, c8, ud, ud, ud, ud, ud, ud, ud, ud},
    /* i1 */ {i1, i8, f4, f8, f2, bf, i2, i1, i2, i4, c4, c8, ud, ud, ud, ud, ud, ud, ud, ud},
    /* i2 */ {i2, i8, f4, f8, f2, bf, i2, i2, i2, i4, c4, c8, ud, ud, ud, ud, ud, ud, ud, ud},
    /* i4 */ {i4, i8, f4, f8, f2, bf, i4, i4, i4, i4, c4, c8, ud, ud, ud, ud, ud, ud, ud, ud},
    /* c4 */ {c4, c4, c4, c8, c4, c4, c4, c4, c4, c4, c4, c8, ud, ud, ud, ud, ud, ud, ud, ud},
    /* c8 */ {c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, c8, ud, ud, ud, ud, ud, ud, ud, ud},
    /* u2 */ {ud, ud, f4, f8, f2, bf, ud, ud, ud, ud, ud, ud, u2, ud, ud, ud, ud, ud, ud, ud},
    /* u4 */ {ud, ud, f4, f8, f2, bf, ud, ud, ud, ud, ud, ud, ud, u4, ud, ud, ud, ud, ud, ud},
    /* u8 */ {ud, ud, f4, f8, f2, bf, ud, ud, ud, ud, ud, ud, ud, ud, u8, ud, ud, ud, ud, ud},
    /* e4 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, e4, ud, ud, ud, ud},
    /* e5 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, e5, ud, ud, ud},
    /* z4 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, z4, ud, ud},
    /* z5 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, z5, ud},
    /* e8 */ {ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, ud, e8},
};
_Static_assert(sizeof pg_promote_table == PG_TABLED * PG_TABLED,
               "the promotion table has a row and a column per dtype up to float8_e8m0fnu");

/* complex32's row of c10's table over the table's first twelve columns (b1 .. c8): float16
 * and the integers give complex32, float32 and bfloat16 complex64, float64 complex128 */
static const unsigned char pg_promote_complex32[c8 + 1] = {
    [b1] = PG_COMPLEX32, [i8] = PG_COMPLEX32, [f4] = c4, [f8] = c8, [f2] = PG_COMPLEX32,
    [bf] = c4, [u1] = PG_COMPLEX32, [i1] = PG_COMPLEX32, [i2] = PG_COMPLEX32,
    [i4] = PG_COMPLEX32, [c4] = c4, [c8] = c8};

/* the rows after the table (the shell dtypes and complex32), as c10 has them: a dtype with
 * itself; complex32 with the full dtypes (above); the sub-byte unsigned integers (c10's
 * barebones unsigned types, as uint16) with a float; float4_e2m1fn_x2 with every unsigned
 * bare dtype (c10's table gives it there); every other pair has none */
static int promote_entry(pg_dtype a, pg_dtype b)
{
    if (a < PG_TABLED && b < PG_TABLED)
        return pg_promote_table[a][b];
    if (a == b)
        return a;
    if (a == PG_COMPLEX32 || b == PG_COMPLEX32) {
        pg_dtype o = a == PG_COMPLEX32 ? b : a;
        return (int)o <= (int)c8 ? pg_promote_complex32[o] : ud;
    }
    pg_dtype lo = a < b ? a : b, hi = a < b ? b : a; /* the table's rows come first */
    pg_dtype_kind kl = pg_dtype_kind_of(lo), kh = pg_dtype_kind_of(hi);
    if (kh == PG_KIND_SUBU && pg_dtype_is_float(lo))
        return lo;
    if (kh == PG_KIND_FP4 && (kl == PG_KIND_UINT || kl == PG_KIND_SUBU) && lo != PG_UINT8)
        return hi;
    return ud;
}

int pg_dtype_promote_or_none(pg_dtype a, pg_dtype b) { return promote_entry(a, b); }

/* c10's words for a pair it cannot promote, by c10's ScalarType names (the legacy column) */
static const char *const pg_c10_names[PG_NUM_DTYPES] = {
#define PG_DTYPE_C10(ID, name, size, ctype, kind, calc, legacy, ...) [PG_##ID] = legacy,
    PG_DTYPES(PG_DTYPE_C10)
#undef PG_DTYPE_C10
};

const char *pg_dtype_legacy_name(pg_dtype dt) { return pg_c10_names[dt]; }

int pg_dtype_promote_check(pg_dtype a, pg_dtype b)
{
    if (promote_entry(a, b) != ud)
        return PG_OK;
    bool fp8 = pg_dtype_is_fp8(a) || pg_dtype_is_fp8(b); /* c10 asks about float8 first */
    bool bits = pg_dtype_kind_of(a) == PG_KIND_BITS || pg_dtype_kind_of(b) == PG_KIND_BITS;
    bool bare_uint = pg_dtype_kind_of(a) == PG_KIND_SUBU || pg_dtype_kind_of(b) == PG_KIND_SUBU ||
                     (pg_dtype_is_bare(a) && pg_dtype_kind_of(a) == PG_KIND_UINT) ||
                     (pg_dtype_is_bare(b) && pg_dtype_kind_of(b) == PG_KIND_UINT);
    if (!fp8 && (bits || !bare_uint)) /* (c10 asserts on the signed sub-byte and float4 pairs) */
        return pg_error_set(PG_ERR_RUNTIME, "Promotion from %s and %s is unsupported.",
                            pg_c10_names[a], pg_c10_names[b]);
    return pg_error_set(PG_ERR_RUNTIME, "Promotion for %s is not supported, attempted to "
                                        "promote %s and %s",
                        fp8 ? "Float8 Types" : "uint16, uint32, uint64 types",
                        pg_c10_names[a], pg_c10_names[b]);
}

/* a pair with no entry gives its first operand: callers that can meet one check first
 * (pg_dtype_promote_check) */
pg_dtype pg_dtype_promote(pg_dtype a, pg_dtype b)
{
    int r = promote_entry(a, b);
    return r == ud ? a : (pg_dtype)r;
}

/* note the first pair c10 could not promote; the result then stays what it was */
static int promote_noting(pg_result_state *s, int a, int b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    int r = promote_entry((pg_dtype)a, (pg_dtype)b);
    if (r == ud) {
        if (s->bad_a < 0)
            s->bad_a = a, s->bad_b = b;
        return a;
    }
    return r;
}

void pg_result_state_add(pg_result_state *s, pg_dtype dt, int priority)
{
    int *slot = priority == 0 ? &s->dim : priority == 1 ? &s->zero : &s->wrapped;
    *slot = promote_noting(s, *slot, (int)dt);
}

/* a bad pair's second member when the first has no complex dtype (float8 with a complex number) */
#define NO_COMPLEX (-2)

/* c10's combine_categories(higher, lower) (-1: no operand of that priority): a complex
 * lower priority makes a float higher one its complex dtype (float64 tensor + 1j:
 * complex128), an integer or bool one the lower's */
/* c10's isFloatingType: the floats, float8 and float4 (which have no complex dtype) */
static bool floating(int dt)
{
    return pg_dtype_is_float((pg_dtype)dt) || pg_dtype_is_fp8((pg_dtype)dt) ||
           pg_dtype_kind_of((pg_dtype)dt) == PG_KIND_FP4;
}

static int combine_categories(pg_result_state *s, int higher, int lower)
{
    if (higher < 0)
        return lower;
    if (lower < 0 || pg_dtype_is_complex((pg_dtype)higher))
        return higher;
    if (pg_dtype_is_complex((pg_dtype)lower)) {
        if (floating(higher) && !pg_dtype_is_float((pg_dtype)higher) && s->bad_a < 0)
            s->bad_a = higher, s->bad_b = NO_COMPLEX; /* c10 has no complex float8 or float4 */
        return pg_dtype_is_float((pg_dtype)higher) ? (int)pg_dtype_to_complex((pg_dtype)higher) : lower;
    }
    if (floating(higher))
        return higher;
    if (higher == PG_BOOL || floating(lower))
        return promote_noting(s, higher, lower);
    return higher;
}

pg_dtype pg_dtype_result_of(const pg_result_state *s)
{
    int r;
    return pg_dtype_result_check(s, &r) == PG_OK ? (pg_dtype)r : (pg_dtype)s->dim;
}

int pg_dtype_result_check(const pg_result_state *s, int *out)
{
    pg_result_state t = *s;
    int r = combine_categories(&t, t.dim, combine_categories(&t, t.zero, t.wrapped));
    *out = r < 0 ? PG_FLOAT32 : r;
    if (t.bad_a >= 0 && t.bad_b == NO_COMPLEX)
        return pg_error_set(PG_ERR_RUNTIME, "Unknown Complex ScalarType for %s",
                            pg_c10_names[t.bad_a]);
    return t.bad_a < 0 ? PG_OK : pg_dtype_promote_check((pg_dtype)t.bad_a, (pg_dtype)t.bad_b);
}
