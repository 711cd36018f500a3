/* emu_internal.h - what the stand-in runtime, cuBLAS and NCCL share. */
#ifndef PG_EMU_INTERNAL_H
#define PG_EMU_INTERNAL_H
#include <functional>

#include "emu_kernel.h"

/* Runs f in order on stream s, or appends it to the graph s is capturing. */
void pg_emu_enqueue(cudaStream_t s, std::function<void()> f);
int pg_emu_device_count();
#endif
