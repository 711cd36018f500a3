/* pg_dtype.c - sizes, names and promotion of element types. */
#include "pg_dtype.h"

static const struct {
    const char *name;
    size_t size; /* mirrored by pg_dtype_size() in the header */
    bool is_float;
    bool is_half; /* a 16-bit float: float16 or bfloat16 */
} pg_dtype_info[PG_NUM_DTYPES] = {
    [PG_BOOL] = {"bool", 1, false, false},
    [PG_INT64] = {"int64", 8, false, false},
    [PG_FLOAT32] = {"float32", 4, true, false},
    [PG_FLOAT64] = {"float64", 8, true, false},
    [PG_FLOAT16] = {"float16", 2, true, true},
    [PG_BFLOAT16] = {"bfloat16", 2, true, true},
};

bool pg_dtype_valid(int code) { return code >= 0 && code < PG_NUM_DTYPES; }
const char *pg_dtype_name(pg_dtype dt) { return pg_dtype_info[dt].name; }
bool pg_dtype_supported(pg_dtype dt) { return pg_dtype_valid((int)dt); }

bool pg_dtype_is_float(pg_dtype dt) { return pg_dtype_info[dt].is_float; }

pg_dtype pg_dtype_promote(pg_dtype a, pg_dtype b)
{
    if (a == b)
        return a;
    bool ha = pg_dtype_info[a].is_half, hb = pg_dtype_info[b].is_half;
    if (ha && hb) /* float16 with bfloat16: float32, as PyTorch */
        return PG_FLOAT32;
    if (ha || hb) { /* a 16-bit float with another dtype, as NumPy's float16 */
        pg_dtype h = ha ? a : b, o = ha ? b : a;
        return o == PG_BOOL ? h : o == PG_INT64 ? PG_FLOAT64 : o;
    }
    if ((a == PG_INT64 && b == PG_FLOAT32) || (a == PG_FLOAT32 && b == PG_INT64))
        return PG_FLOAT64;
    return a > b ? a : b; /* codes are ordered bool < int64 < float32 < float64 */
}
