/* optim.cu - the optimizers' updates on CUDA: SGD and the adaptive kinds (the op table's
 * PG_OPTIM rows: Adam(W), RMSprop, Adagrad, Adadelta, RAdam, Adamax), for one parameter (the
 * SGD, ADAM, ... nodes) and for a list of them (the MULTI node: pygpu.optim's multi-tensor
 * step, PyTorch's foreach/fused path). CPU twins:
 * csrc/backends/cpu/cpu_train.c's loops (one parameter) and cpu_multi.c (a list), operands
 * as csrc/core/pg_ops_train.c lays them out.
 *
 * Each kind's update of one element is written once, as a functor (pg_<kind>_step): the
 * single-tensor kernel runs it over one parameter with a grid-stride loop, the multi-tensor
 * kernel over its block's chunk of the list (pg_multi_tensor.cuh's table, PyTorch's
 * multi_tensor_apply). So a parameter steps to the same bits either way, on the GPU as on
 * the CPU twins: every multiply and add is rounded explicitly (pg_mul_rn, pg_add_rn: no FMA
 * contraction; the rest of the plugin lets nvcc contract). All operands contiguous,
 * float32 or float64 (the core refuses halves: the optimizers update a float32 master). */
#include <math.h>

#include "pg_multi_tensor.cuh"

/* A functor's operands: x[s] the slot-s tensor (pg_cuda_mt_entry's order: 0 the
 * parameter, 1 the grad, 2.. the kind's states; NULL where the kind does without), k the
 * element. bcast is unused by the updates (every state has the parameter's shape). */

/* f: lr, momentum, dampening, weight_decay; nesterov, first (the first step with momentum
 * sets the buffer to the grad) */
template <typename T> struct pg_sgd_step {
    static constexpr int slots = 3;
    T lr, mom, damp, wd;
    int nesterov, first;
    __device__ __forceinline__ void operator()(T *const *x, int64_t k, unsigned) const
    {
        T *p = x[0], *buf = x[2];
        const T *g = x[1];
        T d = pg_add_rn(g[k], pg_mul_rn(wd, p[k]));
        if (buf) {
            T b = first ? d : pg_add_rn(pg_mul_rn(mom, buf[k]), pg_mul_rn(T(1) - damp, d));
            buf[k] = b;
            d = nesterov ? pg_add_rn(d, pg_mul_rn(mom, b)) : b;
        }
        p[k] = p[k] - pg_mul_rn(lr, d);
    }
};

/* Adam's and RAdam's shared start: pk, the parameter after decoupled decay (AdamW's p *= 1 -
 * lr * wd, the caller passing lr * wd), and gk, the gradient the moments read (L2: g + wd * p) */
template <typename T>
__device__ __forceinline__ void pg_weight_decay(T p, T g, T wd, int decoupled, T *pk, T *gk)
{
    /* the CPU twins' arithmetic, to the bit: both products and the sum always run */
    const T l2 = decoupled ? T(0) : wd, keep = decoupled ? T(1) - wd : T(1);
    *pk = pg_mul_rn(p, keep);
    *gk = pg_add_rn(g, pg_mul_rn(l2, *pk));
}

/* the second moment's running average: b2 * v + (1 - b2) * g * g */
template <typename T> __device__ __forceinline__ T pg_ema_sq(T v, T g, T b2)
{
    return pg_add_rn(pg_mul_rn(b2, v), pg_mul_rn(pg_mul_rn(T(1) - b2, g), g));
}

/* f: lr / (1 - beta1^t), beta1, beta2, eps, weight decay, sqrt(1 - beta2^t); i: amsgrad
 * (slot 4, the running max), decoupled (AdamW: p *= 1 - lr * wd first) */
template <typename T> struct pg_adam_step {
    static constexpr int slots = 5;
    T step, b1, b2, eps, wd, bc2;
    int amsgrad, decoupled;
    __device__ __forceinline__ void operator()(T *const *x, int64_t k, unsigned) const
    {
        T *p = x[0], *m = x[2], *v = x[3], *vmax = amsgrad ? x[4] : nullptr;
        const T *g = x[1];
        T pk, gk;
        pg_weight_decay(p[k], g[k], wd, decoupled, &pk, &gk);
        T mk = pg_add_rn(pg_mul_rn(b1, m[k]), pg_mul_rn(T(1) - b1, gk));
        T vk = pg_ema_sq(v[k], gk, b2);
        m[k] = mk;
        v[k] = vk;
        if (vmax) {
            vk = vmax[k] > vk ? vmax[k] : vk;
            vmax[k] = vk;
        }
        p[k] = pk - pg_mul_rn(step, mk) / pg_add_rn(sqrt(vk) / bc2, eps);
    }
};

/* f: lr, alpha, eps, weight_decay, momentum; slots: square_avg, momentum_buffer (NULL
 * without momentum), grad_avg (NULL unless centered) */
template <typename T> struct pg_rmsprop_step {
    static constexpr int slots = 5;
    T lr, a, eps, wd, mom;
    __device__ __forceinline__ void operator()(T *const *x, int64_t k, unsigned) const
    {
        T *p = x[0], *sq = x[2], *buf = x[3], *ga = x[4];
        const T *g = x[1];
        T gk = pg_add_rn(g[k], pg_mul_rn(wd, p[k]));
        T s = pg_add_rn(pg_mul_rn(a, sq[k]), pg_mul_rn(pg_mul_rn(T(1) - a, gk), gk));
        sq[k] = s;
        T avg;
        if (ga) {
            T gak = pg_add_rn(pg_mul_rn(a, ga[k]), pg_mul_rn(T(1) - a, gk));
            ga[k] = gak;
            avg = pg_add_rn(sqrt(s - pg_mul_rn(gak, gak)), eps);
        } else {
            avg = pg_add_rn(sqrt(s), eps);
        }
        if (buf) {
            T b = pg_add_rn(pg_mul_rn(mom, buf[k]), gk / avg);
            buf[k] = b;
            p[k] = p[k] - pg_mul_rn(lr, b);
        } else {
            p[k] = p[k] - pg_mul_rn(lr, gk / avg);
        }
    }
};

/* f: lr / (1 + (t - 1) lr_decay), weight_decay, eps; slot: sum */
template <typename T> struct pg_adagrad_step {
    static constexpr int slots = 3;
    T clr, wd, eps;
    __device__ __forceinline__ void operator()(T *const *x, int64_t k, unsigned) const
    {
        T *p = x[0], *sum = x[2];
        const T *g = x[1];
        T gk = pg_add_rn(g[k], pg_mul_rn(wd, p[k]));
        T s = pg_add_rn(sum[k], pg_mul_rn(gk, gk));
        sum[k] = s;
        p[k] = p[k] - pg_mul_rn(clr, gk / pg_add_rn(sqrt(s), eps));
    }
};

/* f: lr, rho, eps, weight_decay; slots: square_avg, acc_delta */
template <typename T> struct pg_adadelta_step {
    static constexpr int slots = 4;
    T lr, rho, eps, wd;
    __device__ __forceinline__ void operator()(T *const *x, int64_t k, unsigned) const
    {
        T *p = x[0], *sq = x[2], *acc = x[3];
        const T *g = x[1];
        T gk = pg_add_rn(g[k], pg_mul_rn(wd, p[k]));
        T s = pg_add_rn(pg_mul_rn(rho, sq[k]), pg_mul_rn(pg_mul_rn(T(1) - rho, gk), gk));
        sq[k] = s;
        T d = pg_mul_rn(sqrt(pg_add_rn(acc[k], eps)) / sqrt(pg_add_rn(s, eps)), gk);
        acc[k] = pg_add_rn(pg_mul_rn(rho, acc[k]), pg_mul_rn(pg_mul_rn(T(1) - rho, d), d));
        p[k] = p[k] - pg_mul_rn(lr, d);
    }
};

/* torch's lerp (aten/src/ATen/native/Lerp.h), as the CPU twins' LERP */
template <typename T> __device__ __forceinline__ T pg_lerp(T a, T b, T w)
{
    return w < T(0.5) ? pg_add_rn(a, pg_mul_rn(w, b - a)) : b - pg_mul_rn(b - a, T(1) - w);
}

/* f: step scale (rectified: lr * rect * sqrt(1 - beta2^t), else lr), 1 - beta1, beta2, eps,
 * weight decay (decoupled: lr * wd), 1 - beta1^t; i: rectified, decoupled */
template <typename T> struct pg_radam_step {
    static constexpr int slots = 4;
    T a, w, b2, eps, wd, bc1;
    int rect, decoupled;
    __device__ __forceinline__ void operator()(T *const *x, int64_t k, unsigned) const
    {
        T *p = x[0], *m = x[2], *v = x[3];
        const T *g = x[1];
        T pk, gk;
        pg_weight_decay(p[k], g[k], wd, decoupled, &pk, &gk);
        T mk = pg_lerp(m[k], gk, w);
        T vk = pg_ema_sq(v[k], gk, b2);
        m[k] = mk;
        v[k] = vk;
        T mc = mk / bc1;
        p[k] = rect ? pk - pg_mul_rn(mc, a) / pg_add_rn(sqrt(vk), eps) : pk - pg_mul_rn(mc, a);
    }
};

/* f: lr / (1 - beta1^t), 1 - beta1, beta2, eps, weight_decay; slots: exp_avg, exp_inf */
template <typename T> struct pg_adamax_step {
    static constexpr int slots = 4;
    T clr, w, b2, eps, wd;
    __device__ __forceinline__ void operator()(T *const *x, int64_t k, unsigned) const
    {
        T *p = x[0], *m = x[2], *u = x[3];
        const T *g = x[1];
        T gk = pg_add_rn(g[k], pg_mul_rn(wd, p[k]));
        T mk = pg_lerp(m[k], gk, w);
        T a = pg_mul_rn(b2, u[k]), b = pg_add_rn(fabs(gk), eps);
        T uk = (a > b || a != a) ? a : b;
        m[k] = mk;
        u[k] = uk;
        p[k] = p[k] - pg_mul_rn(clr, mk / uk);
    }
};

/* Each kind's functor from its node's scalars (f) and flags (i), as pg_ops_train.c sets them */
template <typename T> static pg_sgd_step<T> pg_sgd_of(const double *f, const int64_t *i)
{
    return {(T)f[0], (T)f[1], (T)f[2], (T)f[3], (int)i[0], (int)i[1]};
}
template <typename T> static pg_adam_step<T> pg_adam_of(const double *f, const int64_t *i)
{
    return {(T)f[0], (T)f[1], (T)f[2], (T)f[3], (T)f[4], (T)f[5], (int)i[0], (int)i[1]};
}
template <typename T> static pg_rmsprop_step<T> pg_rmsprop_of(const double *f, const int64_t *)
{
    return {(T)f[0], (T)f[1], (T)f[2], (T)f[3], (T)f[4]};
}
template <typename T> static pg_adagrad_step<T> pg_adagrad_of(const double *f, const int64_t *)
{
    return {(T)f[0], (T)f[1], (T)f[2]};
}
template <typename T> static pg_adadelta_step<T> pg_adadelta_of(const double *f, const int64_t *)
{
    return {(T)f[0], (T)f[1], (T)f[2], (T)f[3]};
}
template <typename T> static pg_radam_step<T> pg_radam_of(const double *f, const int64_t *i)
{
    return {(T)f[0], (T)f[1], (T)f[2], (T)f[3], (T)f[4], (T)f[5], (int)i[0], (int)i[1]};
}
template <typename T> static pg_adamax_step<T> pg_adamax_of(const double *f, const int64_t *)
{
    return {(T)f[0], (T)f[1], (T)f[2], (T)f[3], (T)f[4]};
}

/* one parameter's operands, by value */
template <typename T> struct pg_step_operands {
    T *x[PG_CUDA_MT_SLOTS];
};

/* one parameter: a grid-stride loop over its n elements */
template <typename T, typename Step>
__global__ void pg_step_kernel(pg_step_operands<T> ops, int64_t n, Step step)
{
    for (int64_t k = pg_thread_index(); k < n; k += pg_thread_count())
        step(ops.x, k, 0u);
}

/* a list: block b updates its chunk of the table's entry (pg_multi_tensor.cuh) */
template <typename T, typename Step>
__global__ void pg_multi_step_kernel(pg_mt_table<Step::slots> tab, Step step)
{
    int64_t lo, hi;
    const int t = pg_mt_chunk(tab, &lo, &hi);
    T *x[Step::slots];
#pragma unroll
    for (int s = 0; s < Step::slots; s++)
        x[s] = (T *)tab.ptr[s][t];
    const unsigned bcast = tab.bcast[t];
    for (int64_t k = lo + threadIdx.x; k < hi; k += blockDim.x)
        step(x, k, bcast);
}

/* float32 or float64: make(T()) gives the kind's functor, run by `run` */
template <typename Make, typename Run>
static cudaError_t pg_step_dispatch(int dtype, Make make, Run run)
{
    return pg_dispatch_dtype(dtype, [&](auto t) -> cudaError_t {
        using T = decltype(t);
        if constexpr (std::is_floating_point<T>::value)
            return run(t, make(t));
        return cudaErrorInvalidValue;
    });
}

/* one parameter of n elements: operands p, g, s0, s1, s2 */
template <typename Make>
static cudaError_t pg_step_one(const pg_cuda_ctx *ctx, const char *name, int dtype, void *p,
                               const void *g, void *s0, void *s1, void *s2, int64_t n, Make make)
{
    if (n == 0)
        return cudaSuccess;
    return pg_step_dispatch(dtype, make, [&](auto t, auto step) -> cudaError_t {
        using T = decltype(t);
        using Step = decltype(step);
        pg_step_operands<T> ops = {{(T *)p, (T *)g, (T *)s0, (T *)s1, (T *)s2}};
        pg_step_kernel<T, Step><<<pg_cuda_grid(n, PG_CUDA_BLOCK, ctx), PG_CUDA_BLOCK, 0,
                                  pg_cuda_noted(ctx, name)>>>(ops, n, step);
        return cudaGetLastError();
    });
}

/* a list, in as few launches as its length allows (pg_mt_apply) */
template <typename Make>
static cudaError_t pg_step_list(const pg_cuda_ctx *ctx, const char *name, int dtype,
                                const pg_cuda_mt_entry *e, int count, Make make)
{
    return pg_step_dispatch(dtype, make, [&](auto t, auto step) -> cudaError_t {
        using T = decltype(t);
        using Step = decltype(step);
        return pg_mt_apply<Step::slots>(e, count, [&](const pg_mt_table<Step::slots> &tab,
                                                      int blocks, int64_t) -> cudaError_t {
            pg_multi_step_kernel<T, Step><<<blocks, PG_MT_THREADS, 0, pg_cuda_noted(ctx, name)>>>(
                tab, step);
            return cudaGetLastError();
        });
    });
}

extern "C" cudaError_t pg_kernel_sgd(const pg_cuda_ctx *ctx, int dtype, void *p, const void *g,
                                     void *buf, int64_t n, const double *f, int nesterov,
                                     int first)
{
    const int64_t i[2] = {nesterov, first};
    return pg_step_one(ctx, "pg_sgd_kernel", dtype, p, g, buf, NULL, NULL, n,
                       [&](auto t) { return pg_sgd_of<decltype(t)>(f, i); });
}

extern "C" cudaError_t pg_kernel_multi_sgd(PG_CUDA_MULTI_ARGS)
{
    (void)subop;
    return pg_step_list(ctx, "pg_multi_sgd_kernel", dtype, e, count,
                        [&](auto t) { return pg_sgd_of<decltype(t)>(f, i); });
}

/* the adaptive kinds, one pair of launchers per PG_OPTIM row (pg_ops.def) */
#define PG_OPTIM(ID, name, ...)                                                                    \
    extern "C" cudaError_t pg_kernel_##name(PG_CUDA_OPTIM_ARGS)                                    \
    {                                                                                              \
        return pg_step_one(ctx, "pg_" #name "_kernel", dtype, p, g, s0, s1, s2, n,                 \
                           [&](auto t) { return pg_##name##_of<decltype(t)>(f, i); });             \
    }                                                                                              \
    extern "C" cudaError_t pg_kernel_multi_##name(PG_CUDA_MULTI_ARGS)                              \
    {                                                                                              \
        (void)subop;                                                                               \
        return pg_step_list(ctx, "pg_multi_" #name "_kernel", dtype, e, count,                     \
                            [&](auto t) { return pg_##name##_of<decltype(t)>(f, i); });            \
    }
#include "pg_ops.def"
