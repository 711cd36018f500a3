/* pg_profile.h - the recorder behind pygpu.profiler (torch.profiler's API).
 *
 * While a profile records, every op that reaches a backend (pg_launch) and every transfer
 * (pg_ops_transfer.c) leaves one event: its name, device, operands' shapes and dtypes, the
 * host time of the call, and the bytes it moved between host and device. The device time
 * comes from whoever runs the work: cpu runs it inside the call; sim's worker times the
 * node when it runs it (pg_profile_device); the CUDA plugin times each op with a pair of
 * CUDA events and, inside it, each kernel launch and library call its launchers note
 * (csrc/backends/cuda/kernels/pg_cuda_kernels.h, pg_cuda_note_kernel / _gemm), and reports
 * them through the core API when they have finished. Events are found by id: the n-th
 * event of a recording has id base + n, so a late device time needs no search.
 * Off (the default), an op pays one relaxed atomic load. */
#ifndef PG_PROFILE_H
#define PG_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "pg_device.h"
#include "pg_node.h"

#define PG_PROFILE_MAX_OPERANDS 4 /* the first sources, then dst: enough for every node */
#define PG_PROFILE_MAX_KERNELS 8  /* per op; more are counted, not named */
#define PG_PROFILE_NAME 48

enum { PG_PROFILE_OP = 0, PG_PROFILE_COPY = 1 };

typedef struct pg_profile_operand {
    int8_t dtype, ndim; /* ndim -1: an absent optional operand */
    int64_t shape[PG_MAX_DIMS];
} pg_profile_operand;

/* One kernel (or library call) of an op, on the device: a name, and for a GEMM the library's
 * input, output and compute types (cudaDataType_t / cublasComputeType_t values; -1 else) and
 * a cublasLtMatmul's epilogue (cublasLtEpilogue_t; -1 else).
 * start_ns is from the op's device start; -1 where the device time is unknown. */
typedef struct pg_profile_kernel {
    char name[PG_PROFILE_NAME];
    int in_type, out_type, compute_type, epilogue;
    int64_t start_ns, dur_ns;
} pg_profile_kernel;

typedef struct pg_profile_event {
    uint64_t id;
    int kind; /* PG_PROFILE_OP, PG_PROFILE_COPY */
    char name[PG_PROFILE_NAME];
    pg_device dev;
    int nops;
    pg_profile_operand ops[PG_PROFILE_MAX_OPERANDS]; /* inputs, then the output last */
    uint64_t host_start_ns, host_end_ns; /* pg_now_ns (CLOCK_MONOTONIC) */
    int64_t device_start_ns, device_ns;  /* -1: not (yet) known */
    uint64_t h2d_bytes, d2h_bytes;
    uint64_t thread;                     /* the calling thread (gettid) */
    int nkernels, kernels_seen;          /* named, and launched in all */
    pg_profile_kernel kernels[PG_PROFILE_MAX_KERNELS];
} pg_profile_event;

/* Start a recording (clears the last one's events) / stop it. */
void pg_profile_start(void);
void pg_profile_stop(void);
bool pg_profile_on(void);

/* Around pg_launch's backend call: returns the event's id (0: not recording), and makes
 * it the calling thread's current op until end. cpu_inline: the backend ran the work in the
 * call, so the call's time is the device time. */
uint64_t pg_profile_op_begin(const pg_node *n);
void pg_profile_op_end(uint64_t id, bool cpu_inline);
/* The op being launched on this thread (0 when none, or not recording). */
uint64_t pg_profile_current(void);

/* A transfer of `bytes` from src to dst, its call from t0 to t1; link_ns (0 when async) is
 * the time the link was busy. */
void pg_profile_copy(pg_device src, pg_device dst, const pg_tensor *t, uint64_t bytes,
                     uint64_t t0, uint64_t t1, uint64_t link_ns);

/* Device time of op `id` (start on pg_now_ns's clock, or -1 where only the duration is
 * known), and its kernels (n of them; kernels_seen launched in all). Ignored for an id of
 * an earlier recording. */
void pg_profile_device(uint64_t id, int64_t start_ns, int64_t dur_ns,
                       const pg_profile_kernel *k, int n, int kernels_seen);

/* Copy out the recording's events: *out malloc'd (the caller frees), *n of them;
 * *dropped: events past the cap that were counted, not kept. */
int pg_profile_events(pg_profile_event **out, int64_t *n, uint64_t *dropped);

#endif
