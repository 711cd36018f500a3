/* pg_dtype.h - element types: one table of every dtype with its size, C type,
 * kind and PyTorch's names, and the promotion table over it.
 *
 * Codes are the table's row numbers and stable (they cross into Python and into
 * the CUDA plugin): new dtypes are appended, never inserted. float16 and bfloat16
 * are dtypes like the others: ops build ordinary nodes for them, and a backend's
 * kernels load each element, compute in float32 and round the result once at the
 * store (a backend without a half kernel for an op says so through supports_op,
 * pg_backend.h). Their bits are interpreted by pg_half.h (and the backends' vector
 * converters). The integer dtypes wrap on overflow as PyTorch's do: their kernels
 * compute in the `calc` column's unsigned type, so no signed overflow is undefined.
 * complex64 and complex128 are (real, imaginary) pairs of float32/float64, as PyTorch's and
 * NumPy's: the core never hands a backend a complex operand except to the FFT node kind.
 * A copy, cast or fill of a complex tensor runs on its real view (pg_view_complex_as_real,
 * pg_ops_index.h: the pairs as a trailing axis of 2), and pygpu/_tensor/complex.py composes the
 * complex arithmetic from real ops on those views, so every backend runs it unchanged. */
#ifndef PG_DTYPE_H
#define PG_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The dtype table: one row per dtype, in code order. Columns:
 *   ID      the enum suffix (PG_INT8)
 *   name    pygpu's and PyTorch's name ("int8"), NumPy's too (bfloat16: ml_dtypes')
 *   size    bytes per element
 *   ctype   the host C type an element is stored as (the halves: their bits)
 *   kind    KIND_BOOL, KIND_SINT (signed integer), KIND_UINT, KIND_FLOAT, KIND_HALF
 *           (a 16-bit float computed in float32), KIND_COMPLEX (a pair of the calc type),
 *           KIND_FP8 (an 8-bit float that is stored, cast, moved and compared, as PyTorch's
 *           float8 dtypes: pg_fp8.h reads its bits); read by pg_dtype_kind() and by the
 *           filtered lists below
 *   calc    the C type an element is computed in: an integer's unsigned type of at least
 *           int's width (arithmetic wraps there, as PyTorch's does, with no undefined
 *           behaviour), float for the halves, a complex dtype's part (float, double),
 *           the type itself for the others
 *   legacy  PyTorch's legacy name, c10's ScalarType name: "Char" gives torch.CharTensor,
 *           torch.CharStorage (what a checkpoint's pickle names) and the cast method
 *           Tensor.char(); "UInt16" only the type string Tensor.type() gives and the name
 *           PyTorch's "not implemented for 'UInt16'" uses (the bare dtypes, below, have no
 *           legacy class or cast method)
 *   alias   PyTorch's other spelling, torch.int for int32 ("" for none)
 * Rows after COMPLEX128 are PyTorch's "bare" dtypes (pg_dtype_is_bare): uint16, uint32 and
 * uint64 (c10's barebones unsigned types) and the float8 family, on which PyTorch runs few
 * ops and refuses promotion with any other dtype (pg_dtype.c's table says so); then
 * PyTorch's "shell" dtypes (pg_dtype_is_shell), which only name bytes: the sub-byte integers
 * uint1..uint7 (KIND_SUBU) and int1..int7 (KIND_SUBS), the bits types (KIND_BITS) and
 * float4_e2m1fn_x2 (KIND_FP4, two float4 in a byte). A tensor of one is made (empty, zeros),
 * viewed (Tensor.view(dtype), slices, reshape) and, for the bits types and float4, copied
 * bytewise; PyTorch runs nothing else on them, and pg_backend_check_op refuses the rest as
 * it does. Last, complex32 (ComplexHalf): a pair of float16s, a complex dtype like the others
 * (its real view is float16 pairs), appended after the shell rows as codes never move.
 * The enum, the sizes, pg_dtype.c's names and kinds, _C._dtype_table() (from which
 * pygpu/_dtype.py makes its DType objects, its messages and the NumPy and storage-name
 * mappings), the CPU kernels' per-dtype instantiations (PG_INT_DTYPES) and the CUDA
 * kernels' dtype dispatch all come from it. */
#define PG_DTYPE_ROWS(P, X)                                                                \
    P(X, BOOL, "bool", 1, uint8_t, KIND_BOOL, uint32_t, "Bool", "")                       \
    P(X, INT64, "int64", 8, int64_t, KIND_SINT, uint64_t, "Long", "long")                 \
    P(X, FLOAT32, "float32", 4, float, KIND_FLOAT, float, "Float", "float")               \
    P(X, FLOAT64, "float64", 8, double, KIND_FLOAT, double, "Double", "double")           \
    P(X, FLOAT16, "float16", 2, uint16_t, KIND_HALF, float, "Half", "half") /* binary16 */ \
    P(X, BFLOAT16, "bfloat16", 2, uint16_t, KIND_HALF, float, "BFloat16", "") /* float32's top half */ \
    P(X, UINT8, "uint8", 1, uint8_t, KIND_UINT, uint32_t, "Byte", "")                     \
    P(X, INT8, "int8", 1, int8_t, KIND_SINT, uint32_t, "Char", "")                        \
    P(X, INT16, "int16", 2, int16_t, KIND_SINT, uint32_t, "Short", "short")               \
    P(X, INT32, "int32", 4, int32_t, KIND_SINT, uint32_t, "Int", "int")                   \
    P(X, COMPLEX64, "complex64", 8, pg_complex64, KIND_COMPLEX, float, "ComplexFloat", "cfloat") \
    P(X, COMPLEX128, "complex128", 16, pg_complex128, KIND_COMPLEX, double, "ComplexDouble", "cdouble") \
    P(X, UINT16, "uint16", 2, uint16_t, KIND_UINT, uint32_t, "UInt16", "")                \
    P(X, UINT32, "uint32", 4, uint32_t, KIND_UINT, uint32_t, "UInt32", "")                \
    P(X, UINT64, "uint64", 8, uint64_t, KIND_UINT, uint64_t, "UInt64", "")                \
    P(X, FLOAT8_E4M3FN, "float8_e4m3fn", 1, uint8_t, KIND_FP8, float, "Float8_e4m3fn", "") \
    P(X, FLOAT8_E5M2, "float8_e5m2", 1, uint8_t, KIND_FP8, float, "Float8_e5m2", "")       \
    P(X, FLOAT8_E4M3FNUZ, "float8_e4m3fnuz", 1, uint8_t, KIND_FP8, float, "Float8_e4m3fnuz", "") \
    P(X, FLOAT8_E5M2FNUZ, "float8_e5m2fnuz", 1, uint8_t, KIND_FP8, float, "Float8_e5m2fnuz", "") \
    P(X, FLOAT8_E8M0FNU, "float8_e8m0fnu", 1, uint8_t, KIND_FP8, float, "Float8_e8m0fnu", "") \
    P(X, UINT1, "uint1", 1, uint8_t, KIND_SUBU, uint8_t, "UInt1", "bit") \
    P(X, UINT2, "uint2", 1, uint8_t, KIND_SUBU, uint8_t, "UInt2", "") \
    P(X, UINT3, "uint3", 1, uint8_t, KIND_SUBU, uint8_t, "UInt3", "") \
    P(X, UINT4, "uint4", 1, uint8_t, KIND_SUBU, uint8_t, "UInt4", "") \
    P(X, UINT5, "uint5", 1, uint8_t, KIND_SUBU, uint8_t, "UInt5", "") \
    P(X, UINT6, "uint6", 1, uint8_t, KIND_SUBU, uint8_t, "UInt6", "") \
    P(X, UINT7, "uint7", 1, uint8_t, KIND_SUBU, uint8_t, "UInt7", "") \
    P(X, INT1, "int1", 1, uint8_t, KIND_SUBS, uint8_t, "Int1", "") \
    P(X, INT2, "int2", 1, uint8_t, KIND_SUBS, uint8_t, "Int2", "") \
    P(X, INT3, "int3", 1, uint8_t, KIND_SUBS, uint8_t, "Int3", "") \
    P(X, INT4, "int4", 1, uint8_t, KIND_SUBS, uint8_t, "Int4", "") \
    P(X, INT5, "int5", 1, uint8_t, KIND_SUBS, uint8_t, "Int5", "") \
    P(X, INT6, "int6", 1, uint8_t, KIND_SUBS, uint8_t, "Int6", "") \
    P(X, INT7, "int7", 1, uint8_t, KIND_SUBS, uint8_t, "Int7", "") \
    P(X, BITS1X8, "bits1x8", 1, uint8_t, KIND_BITS, uint8_t, "Bits1x8", "") \
    P(X, BITS2X4, "bits2x4", 1, uint8_t, KIND_BITS, uint8_t, "Bits2x4", "") \
    P(X, BITS4X2, "bits4x2", 1, uint8_t, KIND_BITS, uint8_t, "Bits4x2", "") \
    P(X, BITS8, "bits8", 1, uint8_t, KIND_BITS, uint8_t, "Bits8", "") \
    P(X, BITS16, "bits16", 2, uint16_t, KIND_BITS, uint16_t, "Bits16", "") \
    P(X, FLOAT4_E2M1FN_X2, "float4_e2m1fn_x2", 1, uint8_t, KIND_FP4, uint8_t, "Float4_e2m1fn_x2", "") \
    P(X, COMPLEX32, "complex32", 4, pg_complex32, KIND_COMPLEX, float, "ComplexHalf", "chalf")

/* X(ID, name, size, ctype, kind, calc, legacy, alias) for every row */
#define PG_DTYPES(X) PG_DTYPE_ROWS(PG_DTYPE_EVERY, X)
/* ... for the integer rows only (signed and unsigned; not bool), in code order: the
 * CPU kernels write an integer loop once and instantiate it for each of these */
#define PG_INT_DTYPES(X) PG_DTYPE_ROWS(PG_DTYPE_IF_INT, X)
/* ... for every row but the complex and the shell ones: what the backends' per-dtype kernels
 * (casts, the CUDA dtype dispatch) instantiate, since no complex operand reaches them and a
 * shell dtype is only ever moved bytewise */
#define PG_REAL_DTYPES(X) PG_DTYPE_ROWS(PG_DTYPE_IF_REAL, X)
#define PG_DTYPE_EVERY(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_REAL(X, ID, name, size, ctype, kind, ...) \
    PG_DTYPE_IF_REAL_##kind(X, ID, name, size, ctype, kind, __VA_ARGS__)
#define PG_DTYPE_IF_REAL_KIND_BOOL(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_REAL_KIND_SINT(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_REAL_KIND_UINT(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_REAL_KIND_FLOAT(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_REAL_KIND_HALF(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_REAL_KIND_COMPLEX(X, ...)
#define PG_DTYPE_IF_REAL_KIND_FP8(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_REAL_KIND_SUBU(X, ...)
#define PG_DTYPE_IF_REAL_KIND_SUBS(X, ...)
#define PG_DTYPE_IF_REAL_KIND_BITS(X, ...)
#define PG_DTYPE_IF_REAL_KIND_FP4(X, ...)
/* ... for the rows a kernel computes in (every real row but the float8 ones, which only the
 * CPU's casts read, through pg_fp8.h): the CUDA kernels' dtype dispatch */
#define PG_COMPUTED_DTYPES(X) PG_DTYPE_ROWS(PG_DTYPE_IF_COMPUTED, X)
#define PG_DTYPE_IF_COMPUTED(X, ID, name, size, ctype, kind, ...) \
    PG_DTYPE_IF_COMPUTED_##kind(X, ID, name, size, ctype, kind, __VA_ARGS__)
#define PG_DTYPE_IF_COMPUTED_KIND_BOOL(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_COMPUTED_KIND_SINT(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_COMPUTED_KIND_UINT(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_COMPUTED_KIND_FLOAT(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_COMPUTED_KIND_HALF(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_COMPUTED_KIND_COMPLEX(X, ...)
#define PG_DTYPE_IF_COMPUTED_KIND_FP8(X, ...)
#define PG_DTYPE_IF_COMPUTED_KIND_SUBU(X, ...)
#define PG_DTYPE_IF_COMPUTED_KIND_SUBS(X, ...)
#define PG_DTYPE_IF_COMPUTED_KIND_BITS(X, ...)
#define PG_DTYPE_IF_COMPUTED_KIND_FP4(X, ...)
#define PG_DTYPE_IF_INT(X, ID, name, size, ctype, kind, ...) \
    PG_DTYPE_IF_INT_##kind(X, ID, name, size, ctype, kind, __VA_ARGS__)
#define PG_DTYPE_IF_INT_KIND_SINT(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_INT_KIND_UINT(X, ...) X(__VA_ARGS__)
#define PG_DTYPE_IF_INT_KIND_BOOL(X, ...)
#define PG_DTYPE_IF_INT_KIND_FLOAT(X, ...)
#define PG_DTYPE_IF_INT_KIND_HALF(X, ...)
#define PG_DTYPE_IF_INT_KIND_COMPLEX(X, ...)
#define PG_DTYPE_IF_INT_KIND_FP8(X, ...)
#define PG_DTYPE_IF_INT_KIND_SUBU(X, ...)
#define PG_DTYPE_IF_INT_KIND_SUBS(X, ...)
#define PG_DTYPE_IF_INT_KIND_BITS(X, ...)
#define PG_DTYPE_IF_INT_KIND_FP4(X, ...)

/* a complex element as it lies in memory: NumPy's and C99's layout (real, then imaginary) */
typedef struct pg_complex64 {
    float re, im;
} pg_complex64;
typedef struct pg_complex128 {
    double re, im;
} pg_complex128;
typedef struct pg_complex32 { /* c10::complex<Half>: the bits of two float16s */
    uint16_t re, im;
} pg_complex32;

typedef enum pg_dtype {
#define PG_DTYPE_ENUM(ID, ...) PG_##ID,
    PG_DTYPES(PG_DTYPE_ENUM)
#undef PG_DTYPE_ENUM
    PG_NUM_DTYPES
} pg_dtype;

/* the kind column as values */
typedef enum pg_dtype_kind {
    PG_KIND_BOOL, PG_KIND_SINT, PG_KIND_UINT, PG_KIND_FLOAT, PG_KIND_HALF, PG_KIND_COMPLEX,
    PG_KIND_FP8, PG_KIND_SUBU, PG_KIND_SUBS, PG_KIND_BITS, PG_KIND_FP4
} pg_dtype_kind;

/* Inline (and so usable by the CUDA plugin, which links no core symbol). */
static inline size_t pg_dtype_size(pg_dtype dt)
{
#define PG_DTYPE_SIZE(ID, name, size, ...) size,
    static const unsigned char sizes[PG_NUM_DTYPES] = {PG_DTYPES(PG_DTYPE_SIZE)};
#undef PG_DTYPE_SIZE
    return sizes[dt];
}
static inline pg_dtype_kind pg_dtype_kind_of(pg_dtype dt)
{
#define PG_DTYPE_KIND(ID, name, size, ctype, kind, ...) PG_##kind,
    static const unsigned char kinds[PG_NUM_DTYPES] = {PG_DTYPES(PG_DTYPE_KIND)};
#undef PG_DTYPE_KIND
    return (pg_dtype_kind)kinds[dt];
}
/* float16 or bfloat16 (inline too: backends pick their half kernels by it) */
static inline bool pg_dtype_is_half(pg_dtype dt) { return pg_dtype_kind_of(dt) == PG_KIND_HALF; }
/* a signed or unsigned integer; bool is not one */
static inline bool pg_dtype_is_int(pg_dtype dt)
{
    pg_dtype_kind k = pg_dtype_kind_of(dt);
    return k == PG_KIND_SINT || k == PG_KIND_UINT;
}
/* an integer other than int64 (int8, uint8, int16, int32, uint16, uint32, uint64): the
 * reductions, sorts, cumulative sums and matmul run them as int64 and cast back. Exact for
 * the narrower ones; uint64 keeps its bits, so its sums and products wrap as PyTorch's int64
 * results do, and an order (sort, max) reduces its order key (pg_op_order_key, pg_ops.h:
 * the top bit flipped), so 2**63 and above order above 2**63 - 1. */
static inline bool pg_dtype_is_narrow_int(pg_dtype dt)
{
    return pg_dtype_is_int(dt) && dt != PG_INT64;
}
/* every float dtype a kernel computes: float32, float64 and the halves (not float8) */
static inline bool pg_dtype_is_float(pg_dtype dt)
{
    pg_dtype_kind k = pg_dtype_kind_of(dt);
    return k == PG_KIND_FLOAT || k == PG_KIND_HALF;
}
/* a float8 dtype (PyTorch's is_floating_point holds; only casts and moves read its bits) */
static inline bool pg_dtype_is_fp8(pg_dtype dt) { return pg_dtype_kind_of(dt) == PG_KIND_FP8; }
/* PyTorch's "bare" dtypes, the rows after complex128: uint16, uint32, uint64 (c10's
 * isBarebonesUnsignedType) and float8. PyTorch refuses their promotion with any other
 * dtype and runs few ops on them (float8: casts, moves and pg_fp8_ops.h's table). */
static inline bool pg_dtype_is_bare(pg_dtype dt) { return dt > PG_COMPLEX128 && dt != PG_COMPLEX32; }
/* PyTorch's shell dtypes (the sub-byte integers, the bits types, float4_e2m1fn_x2): bytes with
 * a name, which PyTorch makes, views, slices and (bits, float4) copies, and nothing else */
static inline bool pg_dtype_is_shell(pg_dtype dt)
{
    pg_dtype_kind k = pg_dtype_kind_of(dt);
    return k == PG_KIND_SUBU || k == PG_KIND_SUBS || k == PG_KIND_BITS || k == PG_KIND_FP4;
}
/* a shell dtype PyTorch copies (clone, copy_ to its own dtype, zero_, contiguous): the bits
 * types and float4_e2m1fn_x2; the sub-byte integers are not ("copy_kernel" not implemented) */
static inline bool pg_dtype_shell_copies(pg_dtype dt)
{
    pg_dtype_kind k = pg_dtype_kind_of(dt);
    return k == PG_KIND_BITS || k == PG_KIND_FP4;
}
/* complex32, complex64 or complex128 (PyTorch's dtype.is_complex) */
static inline bool pg_dtype_is_complex(pg_dtype dt) { return pg_dtype_kind_of(dt) == PG_KIND_COMPLEX; }
/* a complex dtype's part (complex64: float32, complex32: float16), and the complex dtype whose
 * part a float is (float64: complex128; float32 and bfloat16: complex64; float16: complex32,
 * c10's toComplexType) */
static inline pg_dtype pg_dtype_complex_part(pg_dtype dt)
{
    return dt == PG_COMPLEX128 ? PG_FLOAT64 : dt == PG_COMPLEX32 ? PG_FLOAT16 : PG_FLOAT32;
}
static inline pg_dtype pg_dtype_to_complex(pg_dtype dt)
{
    return dt == PG_FLOAT64 || dt == PG_COMPLEX128 ? PG_COMPLEX128
           : dt == PG_FLOAT16 || dt == PG_COMPLEX32 ? PG_COMPLEX32
                                                    : PG_COMPLEX64;
}
/* PyTorch's dtype.is_signed: the signed integers, the floats and the complex dtypes (float8
 * too, but float8_e8m0fnu, which has no sign bit) */
static inline bool pg_dtype_is_signed(pg_dtype dt)
{
    pg_dtype_kind k = pg_dtype_kind_of(dt);
    return k != PG_KIND_BOOL && k != PG_KIND_UINT && k != PG_KIND_SUBU && k != PG_KIND_BITS &&
           dt != PG_FLOAT8_E8M0FNU;
}
/* the category promotion compares (c10's): bool 0 < integer 1 < float 2 < complex 3 */
static inline int pg_dtype_category(pg_dtype dt)
{
    return dt == PG_BOOL ? 0 : pg_dtype_is_complex(dt) ? 3 : pg_dtype_is_float(dt) || pg_dtype_is_fp8(dt) ? 2 : 1;
}
const char *pg_dtype_name(pg_dtype dt);
const char *pg_dtype_legacy_name(pg_dtype dt); /* the legacy column, c10's name: "UInt16" */
bool pg_dtype_valid(int code);      /* a known code */
bool pg_dtype_supported(pg_dtype dt); /* can be stored, cast and moved (every valid code) */
/* "float32, float64, float16, bfloat16, int64, int32, ... and bool": every dtype, for
 * messages (floats first, then the integers widest first); written into buf (400 bytes are
 * plenty). */
void pg_dtype_list(char *buf, size_t len);

/* PyTorch's promotion of two dtypes (torch.promote_types): c10's promoteTypes lookup
 * table, as data (pg_dtype.c). Mixed signedness widens (uint8 with int8 is int16), an
 * integer with a float gives the float (int64 + float32 is float32, where NumPy gives
 * float64), float16 with bfloat16 gives float32. 0-d tensors and Python scalars:
 * pg_dtype_result_of (below). */
pg_dtype pg_dtype_promote(pg_dtype a, pg_dtype b);
/* PG_NO_PROMOTION where c10's table has no entry (a bare dtype with another dtype: uint16
 * with int8, float8_e5m2 with float32); pg_dtype_promote_check turns it into PyTorch's
 * RuntimeError ("Promotion for uint16, uint32, uint64 types is not supported, ...") */
#define PG_NO_PROMOTION 0xff
int pg_dtype_promote_or_none(pg_dtype a, pg_dtype b);
int pg_dtype_promote_check(pg_dtype a, pg_dtype b); /* 0, or a pg_status with the message set */

/* torch.result_type's three priorities, c10's ResultTypeState: operands with dimensions,
 * 0-d tensors and Python numbers (wrapped: a Python float counts as the default dtype,
 * float32; an int as int64; a bool as bool), each promoted within itself (-1: none of
 * that priority); pg_dtype_result_of combines them: a lower priority counts only when
 * its category is above the higher's (a float 0-d tensor makes an integer tensor's
 * result float; a float64 0-d tensor leaves a float16 tensor float16), and a bool
 * result of the higher one takes the lower's dtype. */
typedef struct pg_result_state {
    int dim, zero, wrapped;
    int bad_a, bad_b; /* the first pair c10 cannot promote (-1: none) */
} pg_result_state;
#define PG_RESULT_STATE_INIT {-1, -1, -1, -1, -1}
void pg_result_state_add(pg_result_state *s, pg_dtype dt, int priority); /* 0, 1, 2 as above */
pg_dtype pg_dtype_result_of(const pg_result_state *s);
/* pg_dtype_result_of, or PyTorch's promotion error for the first pair it could not promote
 * (a pg_status, 0 when fine) */
int pg_dtype_result_check(const pg_result_state *s, int *out);

#endif
