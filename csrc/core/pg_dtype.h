/* pg_dtype.h - element types: an enum with a size and a name.
 *
 * Codes are stable (they cross into Python and into the CUDA plugin). float16
 * and bfloat16 are storage dtypes: tensors can be created in them, cast to
 * and from every dtype and exchanged with NumPy/DLPack, but arithmetic
 * refuses them (pg_dtype_computes) and says to astype to float32. Their bits
 * are interpreted only by pg_half.h. */
#ifndef PG_DTYPE_H
#define PG_DTYPE_H

#include <stdbool.h>
#include <stddef.h>

#include "pg_status.h"

typedef enum pg_dtype {
    PG_BOOL = 0,
    PG_INT64 = 1,
    PG_FLOAT32 = 2,
    PG_FLOAT64 = 3,
    PG_FLOAT16 = 4,  /* storage only: IEEE binary16 */
    PG_BFLOAT16 = 5, /* storage only: the top 16 bits of a float32 */
    PG_NUM_DTYPES
} pg_dtype;

/* Inline (and so usable by the CUDA plugin, which links no core symbol). */
static inline size_t pg_dtype_size(pg_dtype dt)
{
    static const unsigned char sizes[PG_NUM_DTYPES] = {1, 8, 4, 8, 2, 2};
    return sizes[dt];
}
const char *pg_dtype_name(pg_dtype dt);
bool pg_dtype_valid(int code);      /* a known code */
bool pg_dtype_supported(pg_dtype dt); /* can be stored, cast and moved (every valid code) */
bool pg_dtype_computes(pg_dtype dt);  /* has arithmetic kernels (not float16/bfloat16) */
/* PG_ERR_DTYPE for `op` on a storage-only dtype, naming the astype to use; PG_OK otherwise. */
pg_status pg_dtype_check_computes(const char *op, pg_dtype dt);
bool pg_dtype_is_float(pg_dtype dt);

/* NumPy's promotion for two arrays: bool < int64 < float32 < float64,
 * except int64 with float32 gives float64 (as NumPy does). */
pg_dtype pg_dtype_promote(pg_dtype a, pg_dtype b);

#endif
