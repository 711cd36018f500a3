/* pg_optim.h - the kinds of the adaptive-update node (PG_OP_ADAM's subop).
 *
 * One node op updates a parameter in place by one of PyTorch's per-element
 * optimizer rules; the kind picks the rule. Shared by the generic layer
 * (pg_ops_train.c), the CPU kernels (cpu_train.c) and the CUDA kernels
 * (csrc/backends/cuda/kernels/train.cu), so the codes are written once. Slots and hyper-parameters
 * of each kind: see pg_ops_train.c's header comment. */
#ifndef PG_OPTIM_H
#define PG_OPTIM_H

enum {
    PG_OPTIM_ADAM = 0,     /* Adam / AdamW (i[1]) / AMSGrad (i[0]) */
    PG_OPTIM_RMSPROP = 1,  /* RMSprop, optionally with momentum and centered */
    PG_OPTIM_ADAGRAD = 2,  /* Adagrad */
    PG_OPTIM_ADADELTA = 3, /* Adadelta */
    PG_OPTIM_KINDS
};

#endif
