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

typedef enum pg_dtype {
    PG_BOOL = 0,
    PG_INT64 = 1,
    PG_FLOAT32 = 2,
    PG_FLOAT64 = 3,
    PG_FLOAT16 = 4,  /* IEEE binary16 */
    PG_BFLOAT16 = 5, /* the top 16 bits of a float32 */
    PG_NUM_DTYPES
} pg_dtype;

/* Inline (and so usable by the CUDA plugin, which links no core symbol). */
static inline size_t pg_dtype_size(pg_dtype dt)
{
    static const unsigned char sizes[PG_NUM_DTYPES] = {1, 8, 4, 8, 2, 2};
    return sizes[dt];
}
/* float16 or bfloat16 (inline too: backends pick their half kernels by it) */
static inline bool pg_dtype_is_half(pg_dtype dt) { return dt == PG_FLOAT16 || dt == PG_BFLOAT16; }
const char *pg_dtype_name(pg_dtype dt);
bool pg_dtype_valid(int code);      /* a known code */
bool pg_dtype_supported(pg_dtype dt); /* can be stored, cast and moved (every valid code) */
bool pg_dtype_is_float(pg_dtype dt);

/* NumPy's promotion for two arrays: bool < int64 < float32 < float64,
 * except int64 with float32 gives float64 (as NumPy does); a 16-bit float
 * ranks below float32 (with int64: float64), float16 with bfloat16 gives
 * float32 (as PyTorch). */
pg_dtype pg_dtype_promote(pg_dtype a, pg_dtype b);

#endif
