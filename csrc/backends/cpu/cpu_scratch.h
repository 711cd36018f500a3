/* cpu_scratch.h - per-thread packing buffers for pygpu's own GEMM kernels.
 *
 * A GEMM kernel packs its operands into buffers of a fixed size (MC*KC, KC*NC
 * elements); the scheduler calls it from a pool thread for each panel, many times per
 * training step. Allocating per call costs page faults on every call; one buffer per
 * thread and kernel, kept until the thread exits, costs nothing after the first. */
#ifndef PG_CPU_SCRATCH_H
#define PG_CPU_SCRATCH_H

#include <stddef.h>

/* One slot per kernel that keeps a buffer. */
typedef enum pg_cpu_scratch_slot {
    PG_SCRATCH_SGEMM = 0, /* cpu_sgemm.c */
    PG_SCRATCH_BF16GEMM,  /* cpu_gemm_bf16.c */
    PG_SCRATCH_INT8GEMM,  /* cpu_gemm_int8_drive.c */
    PG_SCRATCH_CONV,      /* cpu_conv.c: a chunk's unrolled input (grows to the largest) */
    PG_SCRATCH_CONV_BLOCK, /* cpu_conv.c: a chunk's output block */
    PG_SCRATCH_WINO,       /* cpu_conv_winograd.c: a channel's transform planes */
    PG_SCRATCH_WINO_CHUNK, /* cpu_conv_winograd.c: a chunk's V and M */
    PG_SCRATCH_DNNL_X,     /* cpu_conv_dnnl.c: x (or dx) in oneDNN's layout */
    PG_SCRATCH_DNNL_W,     /* cpu_conv_dnnl.c: w (or dW) in oneDNN's layout */
    PG_SCRATCH_DNNL_Y,     /* cpu_conv_dnnl.c: y (or dy) in oneDNN's layout */
    PG_SCRATCH_DNNL_PAD,   /* cpu_conv_dnnl.c: oneDNN's scratchpad */
    PG_SCRATCH_DNNL_PARTS, /* cpu_conv_dnnl.c: the batch split's partial weight gradients */
    PG_SCRATCH_NUM_SLOTS
} pg_cpu_scratch_slot;

/* This thread's buffer for `slot`, 64-byte aligned, at least `bytes` long (a slot is
 * always asked for the same size); freed when the thread exits. NULL if out of memory. */
void *pg_cpu_scratch(pg_cpu_scratch_slot slot, size_t bytes);

#endif
