/* meta_backend.h - the 'meta' device's backend table (meta_backend.c): shapes, no data. */
#ifndef PG_META_BACKEND_H
#define PG_META_BACKEND_H

#include "../../core/pg_backend.h"

extern const pg_backend pg_meta_backend;

#endif
