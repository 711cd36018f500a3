/* pg_dtype.c - sizes, names and promotion of element types. */
#include "pg_dtype.h"

#include "pg_status.h"

static const struct {
    const char *name;
    size_t size; /* mirrored by pg_dtype_size() in the header */
    bool is_float;
    bool computes; /* arithmetic kernels exist */
} pg_dtype_info[PG_NUM_DTYPES] = {
    [PG_BOOL] = {"bool", 1, false, true},
    [PG_INT64] = {"int64", 8, false, true},
    [PG_FLOAT32] = {"float32", 4, true, true},
    [PG_FLOAT64] = {"float64", 8, true, true},
    [PG_FLOAT16] = {"float16", 2, true, false},  /* storage only */
    [PG_BFLOAT16] = {"bfloat16", 2, true, false}, /* storage only */
};

bool pg_dtype_valid(int code) { return code >= 0 && code < PG_NUM_DTYPES; }
const char *pg_dtype_name(pg_dtype dt) { return pg_dtype_info[dt].name; }
bool pg_dtype_supported(pg_dtype dt) { return pg_dtype_valid((int)dt); }
bool pg_dtype_computes(pg_dtype dt) { return pg_dtype_valid((int)dt) && pg_dtype_info[dt].computes; }

pg_status pg_dtype_check_computes(const char *op, pg_dtype dt)
{
    if (pg_dtype_computes(dt))
        return PG_OK;
    return pg_error_set(PG_ERR_DTYPE,
                        "%s: %s tensors are storage only in pygpu (create, cast, move and "
                        "exchange them); for arithmetic convert first with "
                        ".astype(pygpu.float32)",
                        op, pg_dtype_valid((int)dt) ? pg_dtype_info[dt].name : "?");
}
bool pg_dtype_is_float(pg_dtype dt) { return pg_dtype_info[dt].is_float; }

pg_dtype pg_dtype_promote(pg_dtype a, pg_dtype b)
{
    if (a == b)
        return a;
    if ((a == PG_INT64 && b == PG_FLOAT32) || (a == PG_FLOAT32 && b == PG_INT64))
        return PG_FLOAT64;
    return a > b ? a : b; /* codes are ordered bool < int64 < float32 < float64 (callers
                             check pg_dtype_computes first: no 16-bit dtype gets here) */
}
