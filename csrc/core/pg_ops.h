/* pg_ops.h - the generic op layer: every user-facing operation, checked once.
 *
 * Each function validates its input (devices, dtypes, shapes, axes), applies
 * NumPy's promotion and broadcasting rules, allocates the output on the
 * operands' device and hands a pg_node to that device's backend. Nothing
 * below this layer checks user input again. Results are new tensors the
 * caller owns (release with pg_tensor_clear). Files: pg_ops_elementwise.c,
 * pg_ops_reduce.c, pg_ops_matmul.c, pg_ops_create.c, pg_ops_transfer.c. */
#ifndef PG_OPS_H
#define PG_OPS_H

#include <stdbool.h>
#include <string.h>

#include "pg_node.h"

/* PG_ERR_DEVICE naming both devices unless a and b share one. */
pg_status pg_check_same_device(const char *op, const pg_tensor *a, const pg_tensor *b);

/* Run or queue one prepared node on the device of its dst (counts the op). */
pg_status pg_launch(const pg_node *node);

/* The first step of building a node: every field zeroed (no sources, no parameters), then
 * its kind, subop and name (the pg_node.name sim's faults and the profiler match). */
static inline void pg_node_start(pg_node *n, int op, int subop, const char *name)
{
    memset(n, 0, sizeof *n);
    n->op = op;
    n->subop = subop;
    n->name = name;
}

/* The last step of a node built from prepared sources (pg_ops_elementwise.c): when its
 * `nsrc` sources were prepared (st is PG_OK) and dst has elements, run the node writing
 * dst; then release the sources' references, and `fresh` (the new result the op allocated,
 * or NULL) too if anything failed. Returns st, or the launch's status. */
pg_status pg_launch_and_clear(pg_node *n, int nsrc, const pg_tensor *dst, pg_tensor *fresh,
                              pg_status st);

/* `t` cast to dtype `dt` and broadcast to `ndim`/`shape`, as a new reference: a source
 * prepared for pg_launch_and_clear. */
pg_status pg_prepare_operand(const pg_tensor *t, int dt, int ndim, const int64_t *shape,
                             pg_tensor *out);

/* The dtype two tensors' elementwise op computes in, as torch.result_type: a 0-d tensor
 * and a tensor with dimensions give the latter's dtype unless the 0-d one is of a higher
 * kind (bool < integer < float); otherwise pg_dtype_promote. */
pg_status pg_dtype_result(const pg_tensor *a, const pg_tensor *b, int *dt); /* PyTorch's error where c10 cannot promote */

/* A Python scalar operand, kept with its kind for promotion (it only lifts the kind). */
enum { PG_SCALAR_BOOL, PG_SCALAR_INT, PG_SCALAR_FLOAT };
typedef struct pg_scalar {
    int kind;
    double f;  /* the value, as a double (an int's too) */
    int64_t i; /* the value, for bool and int kinds (an int of 2**63 to 2**64 - 1 beside a
                * uint64 tensor: its bits, which f says are unsigned) */
} pg_scalar;

/* creation (pg_ops_create.c) */
pg_status pg_op_full(pg_device dev, pg_dtype dt, int ndim, const int64_t *shape, pg_scalar v,
                     pg_tensor *out);
pg_status pg_op_fill(const pg_tensor *t, pg_scalar v);
pg_status pg_op_arange(pg_device dev, pg_dtype dt, double start, double step, int64_t n,
                       pg_tensor *out);
pg_status pg_op_random(pg_device dev, pg_dtype dt, int kind, int ndim, const int64_t *shape,
                       pg_tensor *out);
/* The same draw at counters at[1]..at[1]+n-1 of seed at[0] (a torch.Generator's own state,
 * which its owner advances); the device's generator is not touched. */
pg_status pg_op_random_at(pg_device dev, pg_dtype dt, int kind, int ndim, const int64_t *shape,
                          const uint64_t at[2], pg_tensor *out);
void pg_rng_seed(pg_device dev, uint64_t seed);
void pg_rng_seed_all(uint64_t seed);
/* dev's generator state (seed, offset): read, and set (get_rng_state / set_rng_state) */
void pg_rng_get(pg_device dev, uint64_t *seed, uint64_t *offset);
void pg_rng_set(pg_device dev, uint64_t seed, uint64_t offset);
/* n counters of dev's generator for a kernel that draws its own (attention's dropout):
 * the (seed, first offset) it draws them at; the generator moves on by n */
void pg_rng_reserve(pg_device dev, uint64_t n, uint64_t *seed, uint64_t *offset);

/* layout and copies (pg_ops_elementwise.c) */
pg_status pg_op_copy(const pg_tensor *dst, const pg_tensor *src); /* broadcast + cast */
pg_status pg_op_astype(const pg_tensor *t, pg_dtype dt, pg_tensor *out); /* always a new tensor */
pg_status pg_op_contiguous(const pg_tensor *t, pg_tensor *out); /* a reference if already so */
/* The sorts' and max/min/argmax's keys: an integer or bool tensor as a contiguous int64
 * tensor whose signed order is its order. The narrower integers and bool cast (exact), int64
 * is itself; uint64 keeps its bits with the top one flipped (x ^ 2**63), so its values of
 * 2**63 and above order above 2**63 - 1, as PyTorch's do. pg_op_order_key_back undoes it into
 * dt (the max and min a key reduced to, back in the input's dtype). */
pg_status pg_op_order_key(const pg_tensor *t, pg_tensor *out);
pg_status pg_op_order_key_back(const pg_tensor *key, pg_dtype dt, pg_tensor *out);
pg_status pg_op_reshape(const pg_tensor *t, int ndim, const int64_t *shape, pg_tensor *out);

/* math (pg_ops_elementwise.c, pg_ops_reduce.c, pg_ops_matmul.c) */
pg_status pg_op_binary(int op, const pg_tensor *a, const pg_tensor *b, pg_tensor *out);
pg_status pg_op_binary_scalar(int op, const pg_tensor *a, pg_scalar s, bool scalar_left,
                              pg_tensor *out);
pg_status pg_op_unary(int op, const pg_tensor *a, pg_tensor *out);
/* In place (PyTorch's add_, exp_, ...): the result written into `self`, which must have
 * the broadcast shape, no two elements in one place, and a dtype the result casts to
 * without changing kind (bool < int64 < float). One node with dst == src0 when the op
 * computes in self's dtype; else computed aside and copied in. */
pg_status pg_op_binary_(int op, const pg_tensor *self, const pg_tensor *b);
pg_status pg_op_binary_scalar_(int op, const pg_tensor *self, pg_scalar s);
pg_status pg_op_unary_(int op, const pg_tensor *self);
/* clamp_(lo, hi) with two number bounds in one pass (a CLAMP node): self float32 or
 * float64, lo and hi not NaN. PG_ERR_DTYPE where the backend has no CLAMP kernel
 * (pg_backend_has_op tells first): the caller then runs maximum_ and minimum_. */
pg_status pg_op_clamp_(const pg_tensor *self, double lo, double hi);
/* out = clamp(self, lo, hi) as one CLAMP node into a new contiguous tensor (same checks) */
pg_status pg_op_clamp(const pg_tensor *self, double lo, double hi, pg_tensor *out);
/* out = hardtanh's input gradient: dy where y (the clamp's output) is strictly inside the
 * bounds, else 0 (a NaN too), one CLAMP node with p.clamp.grad;
 * dy and y of one shape, float32 or float64 (the cuda kernels decline the node) */
pg_status pg_op_hardtanh_backward(const pg_tensor *dy, const pg_tensor *y, double lo, double hi,
                                  pg_tensor *out);
/* where(cond, a, b): cond bool; a and b promoted to one dtype; all three broadcast. */
pg_status pg_op_where(const pg_tensor *cond, const pg_tensor *a, const pg_tensor *b,
                      pg_tensor *out);
/* axes: NULL (naxes ignored) reduces everything; argmax takes at most one axis */
pg_status pg_op_reduce(int op, const pg_tensor *a, int naxes, const int *axes, bool keepdims,
                       pg_tensor *out);
pg_status pg_op_mean(const pg_tensor *a, int naxes, const int *axes, bool keepdims,
                     pg_tensor *out);
pg_status pg_op_matmul(const pg_tensor *a, const pg_tensor *b, pg_tensor *out);

/* devices and transfers (pg_ops_transfer.c) */
pg_status pg_op_to_device(const pg_tensor *t, pg_device dev, bool non_blocking, int implicit,
                          pg_tensor *out);
/* dst[...] = src, where the two may live on different devices (a counted
 * transfer into existing memory: the training-loop way to reuse buffers). */
pg_status pg_op_copy_between(const pg_tensor *dst, const pg_tensor *src, bool non_blocking);
pg_status pg_op_pin_memory(const pg_tensor *t, pg_tensor *out);
pg_status pg_tensor_wait(const pg_tensor *t);
pg_status pg_device_synchronize(pg_device dev);

/* fused training ops (pg_ops_train.c); b, y may be NULL; act is a PG_ACT_* code */
pg_status pg_op_linear_fwd(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b, int act,
                           pg_tensor *y);
/* Whether linear's fused weight mask (the *_masked ops) runs on `dev`: the devices that run
 * the CPU's GEMM kernels (cpu, sim), which multiply it in as they pack W. pygpu's pruned
 * layers ask this (_C._linear_mask_runs) rather than the device type. */
bool pg_linear_mask_runs_on(pg_device dev);
/* pg_op_linear_fwd with W's pruning mask (NULL: none): the layer's weight is w * mask, multiplied as
 * the GEMM packs W (pg_gemm.h b_mask); mask float32, shaped as w, w float32; cpu and sim */
pg_status pg_op_linear_fwd_masked(const pg_tensor *x, const pg_tensor *w, const pg_tensor *mask,
                                  const pg_tensor *b, int act, pg_tensor *y);
/* dx / db are left empty (NULL storage) unless wanted. wgrad_f32: dW and db in float32
 * (accumulated in float32, never rounded to the operands' half dtype): autocast's linear,
 * whose parameters are float32; only with float16/bfloat16 operands. */
pg_status pg_op_linear_bwd(const pg_tensor *dy, const pg_tensor *x, const pg_tensor *w,
                           const pg_tensor *y, int act, bool want_dx, bool want_db, bool wgrad_f32,
                           pg_tensor *dx, pg_tensor *dw, pg_tensor *db);
/* softmax (log: log_softmax) over x's last axis, x float32/float64 of any shape;
 * PG_ERR_DTYPE where the backend has no SOFTMAX kernel (pg_backend_has_op tells first). */
pg_status pg_op_softmax_rows(const pg_tensor *x, bool log, pg_tensor *out);
/* layer_norm over x's last axis (C): w and b NULL or (C,) of x's dtype and device;
 * float32/float64; PG_ERR_DTYPE where the backend has no LAYER_NORM kernel. save NULL, or
 * it receives each row's mean and 1/sqrt(var + eps), (R, 2) for R = numel / C, which
 * pg_op_layer_norm_backward reads (PyTorch's native_layer_norm's mean and rstd). */
pg_status pg_op_layer_norm_rows(const pg_tensor *x, const pg_tensor *w, const pg_tensor *b,
                                double eps, pg_tensor *out, pg_tensor *save);
/* its backward from the forward's save: dx (x's shape) always; dw, db (C,) when asked (else
 * left empty); w NULL when the forward had none. One LAYER_NORM node (subop BWD). */
pg_status pg_op_layer_norm_backward(const pg_tensor *dy, const pg_tensor *x, const pg_tensor *w,
                                    const pg_tensor *save, bool want_dw, bool want_db,
                                    pg_tensor *dx, pg_tensor *dw, pg_tensor *db);
/* pg_op_linear_fwd with W's pruning mask (NULL: none): dx = dz @ (W * mask), the mask multiplied as
 * the GEMM packs W, and dW (the gradient of the unmasked W) = (dz^T @ x) * mask; dW float32 */
pg_status pg_op_linear_bwd_masked(const pg_tensor *dy, const pg_tensor *x, const pg_tensor *w,
                                  const pg_tensor *mask, const pg_tensor *y, int act, bool want_dx,
                                  bool want_db, bool wgrad_f32, pg_tensor *dx, pg_tensor *dw,
                                  pg_tensor *db);
pg_status pg_op_xent_fwd(const pg_tensor *logits, const pg_tensor *labels, bool mean,
                         pg_tensor *loss, pg_tensor *probs);
pg_status pg_op_xent_bwd(const pg_tensor *probs, const pg_tensor *labels, const pg_tensor *gloss,
                         bool mean, pg_tensor *dlogits);
/* in place on p (and buf / m, v); buf may be NULL when momentum is 0 */
/* the recurrent layers (pg_ops_rnn.c: shapes, slots and the packed-sequence layout there):
 * one direction of one layer over T steps of batch sizes bs (never growing), forward
 * (h, c, out, m, save written) and backward (dh, dc in: dh_n, dc_n; out: dh0, dc0; dg, dhw,
 * dhall written); `cell` is an RNN_CELL row of pg_subops.def (PG_RNN_CELL_LSTM, ...) */
int64_t pg_rnn_save_width(int cell, int64_t H, int64_t P);
pg_status pg_op_rnn_forward(int cell, const pg_tensor *g, const pg_tensor *w_hh,
                            const pg_tensor *b_hh, const pg_tensor *w_hr, const pg_tensor *h,
                            const pg_tensor *c, const pg_tensor *out, const pg_tensor *m,
                            const pg_tensor *save, int64_t T, const int64_t *bs, bool reverse);
pg_status pg_op_rnn_backward(int cell, const pg_tensor *save, const pg_tensor *w_hh,
                             const pg_tensor *w_hr, const pg_tensor *m, const pg_tensor *dout,
                             const pg_tensor *dh, const pg_tensor *dc, const pg_tensor *dg,
                             const pg_tensor *dhw, const pg_tensor *dhall, int64_t T,
                             const int64_t *bs, bool reverse);

/* scaled-dot-product attention (pg_ops_attention.c: shapes and slots there): out and the
 * rows' logsumexp; with dropout_p > 0 the generator counters it drew from (seed, offset),
 * which the backward takes to draw the same decisions */
pg_status pg_op_sdpa_fwd(const pg_tensor *q, const pg_tensor *k, const pg_tensor *v,
                         const pg_tensor *mask, double scale, bool causal, double dropout_p,
                         pg_tensor *out, pg_tensor *lse, uint64_t *seed, uint64_t *offset);
pg_status pg_op_sdpa_bwd(const pg_tensor *q, const pg_tensor *k, const pg_tensor *v,
                         const pg_tensor *mask, const pg_tensor *out, const pg_tensor *dout,
                         const pg_tensor *lse, double scale, bool causal, double dropout_p,
                         uint64_t seed, uint64_t offset, pg_tensor *dq, pg_tensor *dk,
                         pg_tensor *dv);

/* pygpu.amp.GradScaler's fused unscale and inf/NaN check (pg_ops_amp.c): g (contiguous,
 * float) *= inv_scale in place; found (0-d float32 on g's device) becomes 1 if any element
 * of g was inf or NaN and is otherwise left as it was. */
pg_status pg_op_amp_unscale(const pg_tensor *g, double inv_scale, const pg_tensor *found);
pg_status pg_op_sgd(const pg_tensor *p, const pg_tensor *g, const pg_tensor *buf, double lr,
                    double momentum, double dampening, double weight_decay, bool nesterov,
                    bool first);
pg_status pg_op_adam(const pg_tensor *p, const pg_tensor *g, const pg_tensor *m,
                     const pg_tensor *v, double lr, double beta1, double beta2, double eps,
                     double weight_decay, int64_t step);
/* One in-place step of an adaptive optimizer (kind: a PG_OPTIM row's name, pg_ops.def:
 * "adam", "rmsprop", "adagrad", "adadelta") on parameter p
 * with gradient g; state: up to three tensors shaped like p (NULL where the kind or its
 * flags need none); hyper: the kind's hyper-parameters as PyTorch names them (see
 * pg_ops_train.c); step >= 1 the step number; flags: amsgrad/decoupled, centered. */
pg_status pg_op_optim(const char *kind, const pg_tensor *p, const pg_tensor *g,
                      const pg_tensor *const state[3], const double hyper[5], int64_t step,
                      int flag0, int flag1);
/* The updates of `count` parameters of one device and dtype as ONE node (MULTI): kind "sgd"
 * (hyper: lr, momentum, dampening, weight_decay; flags: nesterov, first step; state[3i]: the
 * momentum buffer) or a PG_OPTIM row's, as pg_op_optim; state: 3 * count entries, parameter
 * i's at 3i. Bit for bit the per-parameter updates'. */
pg_status pg_op_optim_multi(const char *kind, int count, const pg_tensor *const *p,
                            const pg_tensor *const *g, const pg_tensor *const *state,
                            const double hyper[5], int64_t step, int flag0, int flag1);

/* The list ops (pg_ops_foreach.c), each ONE node over `count` contiguous tensors of one
 * device and dtype (float32/float64): out = () the norm_type-norm of them all together
 * (clip_grad_norm_'s total; inf: the largest |x|); x_i = x_i <bop> s in place for each, s a
 * one-element tensor (torch._foreach_mul_(tensors, scalar_tensor)). */
pg_status pg_op_multi_norm(int count, const pg_tensor *const *x, double norm_type, pg_tensor *out);
pg_status pg_op_foreach_binary_(int bop, int count, const pg_tensor *const *x, const pg_tensor *s);

const char *pg_binary_name(int op);
const char *pg_unary_name(int op);
const char *pg_reduce_name(int op);

/* addcmul / addcdiv / lerp in one pass (pg_ops_ternary.c): op is a TERNARY row of
 * pg_subops.def; c is NULL for a two-operand row (PG_TERNARY_LERP: value is the weight);
 * float32/float64 */
pg_status pg_op_ternary(int op, const pg_tensor *a, const pg_tensor *b, const pg_tensor *c,
                        double value, pg_tensor *out);
pg_status pg_op_ternary_(int op, const pg_tensor *self, const pg_tensor *b, const pg_tensor *c,
                         double value);

/* torch.linalg's factorizations as one LINALG node (pg_ops_linalg.c; op a LINALG row of
 * pg_subops.def): `a` (and `b`) float32/float64 batches of matrices (.., m, n) on one
 * device whose backend runs the node (cpu, sim); the outputs, in order, then info int64
 * (..), LAPACK's info per matrix (with `check`, a nonzero one is raised instead):
 *   LU        LU (.., n, n), pivots int64 (.., n) 1-based
 *   SOLVE     X (.., n, k) = A^-1 B (b: (.., n, k), the same batch)
 *   INV       A^-1
 *   CHOLESKY  L (flag 1: U), the other triangle zero
 *   QR        Q, R (flag 0 reduced, 1 complete, 2 R only: Q is empty)
 *   SVD       U, S, Vh (flag 0 reduced, 1 full, 2 S only: U and Vh are empty)
 *   EIGH      w ascending, V (flag 1: from the upper triangle)
 *   LSTSQ     X (.., n, k), rank int64 (..), S (.., min(m, n)); param: rcond */
#define PG_LINALG_MAX_OUT 3 /* results besides info */
pg_status pg_op_linalg(int op, const pg_tensor *a, const pg_tensor *b, int flag, double param,
                       bool check, pg_tensor outs[PG_LINALG_MAX_OUT + 1], int *nout);

/* ---- complex tensors (pg_ops_complex.c) ----------------------------------------------
 * A complex64/complex128 tensor's real view: its (real, imaginary) pairs as a trailing axis
 * of 2 in float32/float64 (PyTorch's view_as_real). Copies, casts and fills of complex
 * tensors run on these views, so no backend kernel sees a complex operand. */
pg_status pg_view_complex_as_real(const pg_tensor *t, pg_tensor *out);
/* PyTorch's view_as_complex: a float32/float64 tensor whose last axis is 2 with stride 1,
 * even strides elsewhere and an even offset, as complex64/complex128 without it */
pg_status pg_view_real_as_complex(const pg_tensor *t, pg_tensor *out);
/* Tensor.real (imag false) / Tensor.imag (true) of a complex tensor: a real view */
pg_status pg_view_complex_part(const pg_tensor *t, bool imag, pg_tensor *out);
/* every element of complex t becomes re + im j (pg_ops_create.c; pg_op_fill's complex
 * case). pg_op_copy's: a complex source into a real dst keeps the real part (the bindings
 * warn as PyTorch) */
pg_status pg_op_fill_complex(const pg_tensor *t, double re, double im);
/* true if some operand or output of the node is complex */
bool pg_node_has_complex(const pg_node *n);

/* ---- the FFT node (pg_ops_fft.c): one 1-D transform along the last axis, per line ------
 * op an FFT row of pg_subops.def: C2C (complex -> complex of n), R2C (float32/float64 of n
 * -> complex of n/2+1), C2R (complex of n/2+1 -> float of n); forward: the sign of the
 * exponent (-1 forward), fct the factor every output is multiplied by (the norm). The
 * caller pads or trims the last axis to what the row reads; the result is new and
 * contiguous, on src's device. */
pg_status pg_op_fft(int op, const pg_tensor *src, int64_t n, bool forward, double fct,
                    pg_tensor *out);

#endif
