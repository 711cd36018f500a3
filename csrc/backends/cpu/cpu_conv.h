/* cpu_conv.h - the CPU kernels of the convolutional layers' nodes (CONV, POOL, BATCH_NORM;
 * operands in csrc/core/pg_ops_conv.h), for cpu and sim. Each takes the device's pool
 * (NULL: on the calling thread) and shares its own work among the pool's threads:
 * cpu_conv.c (im2col + the GEMM contract), cpu_conv_winograd.c (3x3 at stride 1),
 * cpu_conv_direct.c (depthwise), cpu_pool.c,
 * cpu_batchnorm.c. */
#ifndef PG_CPU_CONV_H
#define PG_CPU_CONV_H

#include "../../core/pg_node.h"
#include "../../core/pg_pool.h"

pg_status pg_cpu_conv_on(pg_pool *pool, const pg_node *n);
pg_status pg_cpu_conv_direct(pg_pool *pool, const pg_node *n); /* C/groups == 1 */
/* Winograd F(m x m, 3 x 3) (cpu_conv_winograd.c): the m (2 or 4) a CONV node runs with, or
 * 0 where it does not (3x3, stride 1, one group, float32, forward or input gradient) */
int pg_cpu_conv_winograd_tile(const pg_node *n);
pg_status pg_cpu_conv_winograd(pg_pool *pool, const pg_node *n, int m);
pg_status pg_cpu_pooling_on(pg_pool *pool, const pg_node *n);
pg_status pg_cpu_batch_norm_on(pg_pool *pool, const pg_node *n);

#endif
