/* pg_dtype.h - element types: an enum with a size and a name.
 *
 * Codes are stable (they cross into Python and into the CUDA plugin). float16
 * and bfloat16 are dtypes like the others: ops build ordinary nodes for them,
 * and a backend's kernels load each element, compute in float32 and round the
 * result once at the store (a backend without a half kernel for an op says so
 * through supports_op, pg_backend.h). Their bits are interpreted by pg_half.h
 * (and the backends' vector converters). */
#ifndef PG_DTYPE_H
#define PG_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

/* The dtype table: one row per dtype, in code order (the codes are the row
 * numbers). Columns: ID (PG_ID), name, size in bytes, is_float, is_half.
 * The enum, the sizes, pg_dtype.c's names and _C._dtype_table() (from which
 * pygpu/_dtype.py makes its DType objects and its messages) come from it. */
#define PG_DTYPES(X)                   \
    X(BOOL, "bool", 1, false, false)   \
    X(INT64, "int64", 8, false, false) \
    X(FLOAT32, "float32", 4, true, false) \
    X(FLOAT64, "float64", 8, true, false) \
    X(FLOAT16, "float16", 2, true, true)  /* IEEE binary16 */ \
    X(BFLOAT16, "bfloat16", 2, true, true) /* the top 16 bits of a float32 */

typedef enum pg_dtype {
#define PG_DTYPE_ENUM(ID, name, size, is_float, is_half) PG_##ID,
    PG_DTYPES(PG_DTYPE_ENUM)
#undef PG_DTYPE_ENUM
    PG_NUM_DTYPES
} pg_dtype;

/* Inline (and so usable by the CUDA plugin, which links no core symbol). */
static inline size_t pg_dtype_size(pg_dtype dt)
{
#define PG_DTYPE_SIZE(ID, name, size, is_float, is_half) size,
    static const unsigned char sizes[PG_NUM_DTYPES] = {PG_DTYPES(PG_DTYPE_SIZE)};
#undef PG_DTYPE_SIZE
    return sizes[dt];
}
/* float16 or bfloat16 (inline too: backends pick their half kernels by it) */
static inline bool pg_dtype_is_half(pg_dtype dt) { return dt == PG_FLOAT16 || dt == PG_BFLOAT16; }
const char *pg_dtype_name(pg_dtype dt);
bool pg_dtype_valid(int code);      /* a known code */
bool pg_dtype_supported(pg_dtype dt); /* can be stored, cast and moved (every valid code) */
bool pg_dtype_is_float(pg_dtype dt);
/* "float32, float64, float16, bfloat16, int64 and bool": every dtype, for messages
 * (floats first); written into buf (128 bytes are plenty). */
void pg_dtype_list(char *buf, size_t len);

/* PyTorch's promotion for two tensors (torch.promote_types): bool < int64 <
 * float16, bfloat16 < float32 < float64, float16 with bfloat16 gives float32;
 * an integer with a float gives that float (int64 + float32 is float32, where
 * NumPy gives float64). 0-d tensors: pg_dtype_result (pg_ops.h). */
pg_dtype pg_dtype_promote(pg_dtype a, pg_dtype b);

#endif
