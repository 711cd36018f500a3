/* emu_fiber.cpp - runs one CUDA block on the calling host thread: each CUDA
 * thread is a fiber with its own stack, switched by a hand-written x86-64
 * context switch (callee-saved registers and the stack pointer only; much
 * cheaper than swapcontext, which makes a system call per switch).
 *
 * The scheduler resumes the block's threads in order; each runs until it
 * reaches __syncthreads or returns. When every live thread is at the barrier
 * the next pass resumes them all, so no thread passes a barrier before every
 * other thread reached it, as on the GPU. Threads run one at a time, so
 * shared memory and atomics need no locking within a block; a race between
 * threads of one block (a missing barrier) shows only where the sequential
 * order happens to expose it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <functional>

#include "emu_kernel.h"

thread_local uint3 pg_emu_threadIdx, pg_emu_blockIdx;
thread_local dim3 pg_emu_blockDim, pg_emu_gridDim;

extern "C" void pg_emu_switch(void **save_sp, void *to_sp);
extern "C" void pg_emu_trampoline();
asm(R"(
    .text
    .globl pg_emu_switch
    .hidden pg_emu_switch
    .type pg_emu_switch,@function
pg_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size pg_emu_switch, .-pg_emu_switch
    .globl pg_emu_trampoline
    .hidden pg_emu_trampoline
    .type pg_emu_trampoline,@function
pg_emu_trampoline:
    movq %r12, %rdi
    callq *%r13
    ud2
    .size pg_emu_trampoline, .-pg_emu_trampoline
)");

namespace {

constexpr size_t kStack = 128 * 1024;
constexpr int kMaxThreads = 1024;

enum { F_READY, F_BARRIER, F_DONE };

struct Fiber {
    void *sp;
    int state;
};

struct Sched {
    char *stacks = nullptr;
    Fiber fibers[kMaxThreads];
    void *sched_sp = nullptr;
    int cur = 0;
    const std::function<void()> *body = nullptr;
};

thread_local Sched *t_sched;

void fiber_entry(void *arg)
{
    Sched *s = (Sched *)arg;
    (*s->body)();
    s->fibers[s->cur].state = F_DONE;
    pg_emu_switch(&s->fibers[s->cur].sp, s->sched_sp);
    abort(); /* a finished fiber is never resumed */
}

Sched *sched()
{
    if (!t_sched) {
        Sched *s = new Sched();
        void *m = mmap(nullptr, kStack * kMaxThreads, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (m == MAP_FAILED) {
            fprintf(stderr, "cuda_emu: no memory for fiber stacks\n");
            abort();
        }
        s->stacks = (char *)m;
        t_sched = s;
    }
    return t_sched;
}

uint3 thread_of(int i, dim3 b)
{
    uint3 t;
    t.x = (unsigned)i % b.x;
    t.y = ((unsigned)i / b.x) % b.y;
    t.z = (unsigned)i / (b.x * b.y);
    return t;
}

} // namespace

void pg_emu_syncthreads()
{
    Sched *s = t_sched;
    s->fibers[s->cur].state = F_BARRIER;
    pg_emu_switch(&s->fibers[s->cur].sp, s->sched_sp);
}

/* Runs body for every thread of block `blk` of a grid of `grid` blocks of `block` threads. */
void pg_emu_run_block(const std::function<void()> &body, dim3 grid, dim3 block, uint3 blk)
{
    Sched *s = sched();
    const int n = (int)(block.x * block.y * block.z);
    s->body = &body;
    pg_emu_gridDim = grid;
    pg_emu_blockDim = block;
    pg_emu_blockIdx = blk;
    for (int i = 0; i < n; i++) {
        uintptr_t top = ((uintptr_t)(s->stacks + (size_t)(i + 1) * kStack)) & ~(uintptr_t)15;
        void **sp = (void **)(top - 72); /* rsp = top - 16 (16-aligned) at the trampoline */
        sp[0] = nullptr;                 /* r15 */
        sp[1] = nullptr;                 /* r14 */
        sp[2] = (void *)&fiber_entry;    /* r13: what the trampoline calls */
        sp[3] = (void *)s;               /* r12: its argument */
        sp[4] = nullptr;                 /* rbx */
        sp[5] = nullptr;                 /* rbp */
        sp[6] = (void *)&pg_emu_trampoline;
        s->fibers[i].sp = sp;
        s->fibers[i].state = F_READY;
    }
    for (;;) {
        int waiting = 0;
        for (int i = 0; i < n; i++) {
            if (s->fibers[i].state == F_DONE)
                continue;
            s->fibers[i].state = F_READY;
            s->cur = i;
            pg_emu_threadIdx = thread_of(i, block);
            pg_emu_switch(&s->sched_sp, s->fibers[i].sp);
            if (s->fibers[i].state == F_BARRIER)
                waiting++;
        }
        if (!waiting)
            break;
    }
    s->body = nullptr;
}
