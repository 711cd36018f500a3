/* cpu_conv.h - the CPU kernels of the convolutional layers' nodes (CONV, POOL, BATCH_NORM;
 * operands in csrc/core/pg_ops_conv.h), for cpu and sim. Each takes the device's pool
 * (NULL: on the calling thread) and shares its own work among the pool's threads:
 * cpu_conv.c (im2col + the GEMM contract), cpu_conv_winograd.c (3x3 at stride 1),
 * cpu_conv_direct.c (depthwise), cpu_conv_dnnl.c (oneDNN's, where it measures faster),
 * cpu_pool.c, cpu_batchnorm.c. */
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
/* oneDNN's convolutions (cpu_conv_dnnl.c; the library loaded by cpu_dnnl.h's loader).
 * Which path a CONV shape takes: PYGPU_CONV (or pg_cpu_conv_set_mode) forces one, auto
 * follows the measured table. */
typedef enum pg_conv_path { PG_CONV_PATH_AUTO, PG_CONV_PATH_OWN, PG_CONV_PATH_DNNL, PG_NUM_CONV_PATHS } pg_conv_path;
uint64_t pg_cpu_dnnl_calls(void); /* CONV nodes oneDNN ran, since the process started */
int pg_cpu_conv_mode(void);
int pg_cpu_conv_set_mode(const char *name); /* "auto", "own", "dnnl"; -1 for another name */
const char *pg_cpu_conv_mode_name(int mode);
/* whether a CONV sub-op of x's C channels and H*W plane, float dtype `dtype`, with a bias or
 * not, runs on oneDNN; *why says why (a thread's own buffer, until its next call) */
bool pg_cpu_conv_path(int subop, int64_t C, int64_t HW, const pg_conv_geom *g, int dtype,
                      bool bias, const char **why);
bool pg_cpu_conv_dnnl_wants(const pg_node *n);
/* runs n on oneDNN; *ran false (and PG_OK) where oneDNN refuses the shape */
pg_status pg_cpu_conv_dnnl(pg_pool *pool, const pg_node *n, bool *ran);
pg_status pg_cpu_pooling_on(pg_pool *pool, const pg_node *n);
pg_status pg_cpu_batch_norm_on(pg_pool *pool, const pg_node *n);

#endif
