/* pg_dtype.c - sizes, names and promotion of element types. */
#include "pg_dtype.h"

#include <stdio.h>

static const struct {
    const char *name;
    size_t size;
    bool is_float;
    bool is_half; /* a 16-bit float: float16 or bfloat16 */
} pg_dtype_info[PG_NUM_DTYPES] = {
#define PG_DTYPE_INFO(ID, name, size, is_float, is_half) [PG_##ID] = {name, size, is_float, is_half},
    PG_DTYPES(PG_DTYPE_INFO)
#undef PG_DTYPE_INFO
};

void pg_dtype_list(char *buf, size_t len)
{
    int order[PG_NUM_DTYPES], n = 0;
    for (int i = 0; i < PG_NUM_DTYPES; i++) /* floats, in code order */
        if (pg_dtype_info[i].is_float)
            order[n++] = i;
    for (int i = PG_NUM_DTYPES - 1; i >= 0; i--) /* then the others, widest first */
        if (!pg_dtype_info[i].is_float)
            order[n++] = i;
    size_t k = 0;
    if (len)
        buf[0] = 0;
    for (int i = 0; i < n && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ",
                              pg_dtype_info[order[i]].name);
}

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
    if (ha || hb) { /* a 16-bit float with another dtype: above bool and int64, below float32 */
        pg_dtype h = ha ? a : b, o = ha ? b : a;
        return o == PG_BOOL || o == PG_INT64 ? h : o;
    }
    return a > b ? a : b; /* codes are ordered bool < int64 < float32 < float64 */
}
