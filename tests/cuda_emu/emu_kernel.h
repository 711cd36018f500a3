/* emu_kernel.h - the CUDA built-ins that the csrc/backends/cuda/kernels/ .cu files use, for compiling those
 * files as ordinary C++ on the CPU (force-included by build.py before each
 * kernel file; never part of the shipped plugin).
 *
 * __half/__nv_bfloat16 and their operators come from the toolkit's own
 * cuda_fp16.h/cuda_bf16.h in host mode: an operator on two halves computes in
 * half (widen, operate, round to half), as the hardware's half instructions
 * do, so a kernel that computes in half instead of float32 shows it here.
 * threadIdx/blockIdx/blockDim/gridDim are per-OS-thread variables the fiber
 * scheduler (emu_fiber.cpp) sets before it resumes each CUDA thread;
 * __syncthreads yields to that scheduler; __shared__ arrays are static
 * thread_local (one block runs at a time on a host thread). A launch
 * `k<<<g, b, s, st>>>(args)` is rewritten by build.py into
 * pg_emu_launch(pg_emu_cfg{g, b, s, st}, k, args), which converts the
 * arguments to the kernel's parameter types (as a CUDA launch does) and
 * queues the grid on the stand-in stream (emu_runtime.cpp). */
#ifndef PG_EMU_KERNEL_H
#define PG_EMU_KERNEL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cmath>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#undef __shared__
#define __shared__ static thread_local
#undef __global__
#define __global__

extern thread_local uint3 pg_emu_threadIdx, pg_emu_blockIdx;
extern thread_local dim3 pg_emu_blockDim, pg_emu_gridDim;
#define threadIdx pg_emu_threadIdx
#define blockIdx pg_emu_blockIdx
#define blockDim pg_emu_blockDim
#define gridDim pg_emu_gridDim

void pg_emu_syncthreads();
#define __syncthreads() pg_emu_syncthreads()
#define __threadfence_system() __atomic_thread_fence(__ATOMIC_SEQ_CST)
#define __threadfence() __atomic_thread_fence(__ATOMIC_SEQ_CST)

/* explicitly rounded arithmetic: the build passes -ffp-contract=off, so these
 * are single IEEE operations as on the GPU */
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline double __dmul_rn(double a, double b) { return a * b; }
static inline double __dadd_rn(double a, double b) { return a + b; }
/* device-only math functions (correctly rounded here; the GPU's rsqrtf is within 2 ulp) */
static inline float rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double rsqrt(double x) { return 1.0 / sqrt(x); }
/* CUDA's pow and powf are not correctly rounded (2 ulp at most): the first H200 run gave
 * (-3.0) ** 1.0 = -2.9999999999999996 where glibc gives -3. The kernels' pow is one ulp
 * toward zero here (except where the result is 0, +-1, inf or NaN), so a kernel that
 * relies on pow for an exact whole power fails on the emulated device as on the GPU
 * (csrc/core/pg_pow.h computes those by squaring). Everything <cmath> declares is
 * included above, so the macros below reach only the kernel files' own calls. */
static inline double pg_emu_cuda_pow(double x, double y)
{
    double r = pow(x, y);
    return (r == 0 || r == 1 || r == -1 || !isfinite(r)) ? r : nextafter(r, 0.0);
}
static inline float pg_emu_cuda_powf(float x, float y)
{
    float r = powf(x, y);
    return (r == 0 || r == 1 || r == -1 || !isfinite(r)) ? r : nextafterf(r, 0.0f);
}
#define pow(x, y) pg_emu_cuda_pow(x, y)
#define powf(x, y) pg_emu_cuda_powf(x, y)

static inline unsigned __float_as_uint(float x)
{
    unsigned u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static inline float __uint_as_float(unsigned u)
{
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

template <typename T> static inline T atomicCAS(T *p, T expected, T desired)
{
    __atomic_compare_exchange_n(p, &expected, desired, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    return expected;
}
template <typename T> static inline T atomicOr(T *p, T v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicAnd(T *p, T v) { return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicExch(T *p, T v) { return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST); }
template <typename T> static inline T atomicAdd(T *p, T v)
{
    if constexpr (std::is_integral<T>::value) {
        return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);
    } else { /* float/double: a CAS loop, as the hardware's own atomic is one read-modify-write */
        T old = *p;
        while (!__atomic_compare_exchange(p, &old, &(T &)(const T &)(old + v), false,
                                          __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
        }
        return old;
    }
}

/* Warp shuffles. Each CUDA thread is a fiber that runs until it yields, so lanes of a warp
 * do not run in lockstep here: a shuffle puts the caller's value in a slot, waits at a
 * block barrier, reads its partner's and waits again. So every thread of the block must
 * reach the same shuffles (the kernels' block reductions do: all threads take part,
 * idle lanes with a neutral value); a shuffle inside a branch some threads skip hangs
 * here as __syncthreads would, rather than returning a stale value. */
template <typename T> static inline T pg_emu_shfl(T v, unsigned src_lane_of(unsigned, int), int arg)
{
    static thread_local T slot[1024];
    unsigned tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    slot[tid] = v;
    pg_emu_syncthreads();
    unsigned src = (tid & ~31u) | (src_lane_of(tid & 31u, arg) & 31u);
    T r = src < blockDim.x * blockDim.y * blockDim.z ? slot[src] : v;
    pg_emu_syncthreads();
    return r;
}
static inline unsigned pg_emu_lane_xor(unsigned lane, int m) { return lane ^ (unsigned)m; }
static inline unsigned pg_emu_lane_down(unsigned lane, int d)
{
    return lane + (unsigned)d < 32u ? lane + (unsigned)d : lane;
}
template <typename T> static inline T __shfl_xor_sync(unsigned, T v, int lane_mask)
{
    return pg_emu_shfl(v, pg_emu_lane_xor, lane_mask);
}
template <typename T> static inline T __shfl_down_sync(unsigned, T v, unsigned delta)
{
    return pg_emu_shfl(v, pg_emu_lane_down, (int)delta);
}

/* The launch configuration of `<<<grid, block, shmem, stream>>>`. */
struct pg_emu_cfg {
    dim3 grid;
    dim3 block;
    size_t shmem = 0;
    cudaStream_t stream = 0;
};

/* Queues body() once per CUDA thread of the grid on cfg.stream (emu_runtime.cpp):
 * validates the configuration as the driver does and sets the last error. */
cudaError_t pg_emu_launch_grid(const pg_emu_cfg &cfg, std::function<void()> body);

template <typename... P, typename... A>
static cudaError_t pg_emu_launch(const pg_emu_cfg &cfg, void (*kernel)(P...), A &&...args)
{
    static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong argument count");
    /* CUDA's limit on a kernel's parameters before 12.1 (and on every architecture before
     * Volta): 4 KB. The list kernels pass their chunk table by value (pg_multi_tensor.cuh) */
    static_assert((0 + ... + sizeof(std::decay_t<P>)) <= 4096,
                  "kernel parameters over CUDA's 4 KB");
    /* each argument converted to its parameter's type once, at the launch, as CUDA does */
    auto params = std::make_shared<std::tuple<std::decay_t<P>...>>(std::forward<A>(args)...);
    return pg_emu_launch_grid(cfg, [kernel, params]() { std::apply(kernel, *params); });
}

#endif
