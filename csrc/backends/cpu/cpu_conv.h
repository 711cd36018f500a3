/* cpu_conv.h - the CPU kernels of the convolutional layers' nodes (CONV, POOL, BATCH_NORM;
 * operands in csrc/core/pg_ops_conv.h), for cpu and sim. Each takes the device's pool
 * (NULL: on the calling thread) and shares its own work among the pool's threads:
 * cpu_conv.c (im2col + the GEMM contract), cpu_conv_direct.c (depthwise), cpu_pool.c,
 * cpu_batchnorm.c. */
#ifndef PG_CPU_CONV_H
#define PG_CPU_CONV_H

#include "../../core/pg_node.h"
#include "../../core/pg_pool.h"

pg_status pg_cpu_conv_on(pg_pool *pool, const pg_node *n);
pg_status pg_cpu_conv_direct(pg_pool *pool, const pg_node *n); /* C/groups == 1 */
pg_status pg_cpu_pooling_on(pg_pool *pool, const pg_node *n);
pg_status pg_cpu_batch_norm_on(pg_pool *pool, const pg_node *n);

#endif
