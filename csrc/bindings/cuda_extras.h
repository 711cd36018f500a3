/* cuda_extras.h - the bindings' door to the CUDA plugin's extras table
 * (csrc/core/pg_cuda_extras.h), shared by cuda_extras.c (the _C._cuda_* methods)
 * and interop.c (the DLPack and __cuda_array_interface__ stream hand-offs). */
#ifndef PG_BINDINGS_CUDA_EXTRAS_H
#define PG_BINDINGS_CUDA_EXTRAS_H

#include "../core/pg_cuda_extras.h"
#include "errors.h"

/* The table (loading the plugin first if need be), or NULL with
 * DeviceUnavailableError set: cuda cannot be used (as pygpu.cuda words it), or
 * the plugin's table is missing or of another version (the message says which). */
const pg_cuda_extras *pg_cuda_extras_get(void);
/* Load the CUDA plugin through pygpu.cuda._load (it preloads cuBLAS from its
 * wheel): 0, or -1 with an exception set. require=1 raises
 * DeviceUnavailableError saying why cuda cannot be used; require=0 only tries. */
int pg_cuda_load(int require);

#endif
