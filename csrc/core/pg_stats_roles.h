/* pg_stats_roles.h - transfer counters attributed to the role a transfer plays.
 *
 * DataParallel and DistributedDataParallel move bytes for different reasons:
 * scattering a batch, replicating the weights, gathering the outputs,
 * reducing the gradients, collectives between processes. The code that does
 * such a step sets its role on the calling thread (pg_stats_role_set); every
 * transfer counted while it is set is added, per device pair, to that role's
 * totals. Roles are thread-local because DataParallel runs one thread per
 * device. The counting itself stays in one place: pg_stats_transfer() calls
 * pg_stats_role_transfer(). */
#ifndef PG_STATS_ROLES_H
#define PG_STATS_ROLES_H

#include <stdint.h>

#include "pg_device.h"

typedef enum pg_xfer_role {
    PG_XFER_NONE = 0,
    PG_XFER_SCATTER,     /* DataParallel: the batch split across devices */
    PG_XFER_REPLICATE,   /* DataParallel: the weights copied to every device */
    PG_XFER_GATHER,      /* DataParallel: the outputs brought to the output device */
    PG_XFER_GRAD_REDUCE, /* gradients summed onto the main device / staged for an all-reduce */
    PG_XFER_BROADCAST,   /* a collective broadcast staged through the host */
    PG_XFER_COLLECTIVE,  /* other collectives' host<->device staging */
    PG_NUM_XFER_ROLES
} pg_xfer_role;

typedef struct pg_xfer_role_stats {
    uint64_t count[PG_NUM_XFER_ROLES][PG_NUM_SLOTS][PG_NUM_SLOTS];
    uint64_t bytes[PG_NUM_XFER_ROLES][PG_NUM_SLOTS][PG_NUM_SLOTS];
} pg_xfer_role_stats;

/* Set the calling thread's role; returns the previous one (to restore). */
int pg_stats_role_set(int role);
int pg_stats_role_get(void);
const char *pg_role_name(int role); /* "scatter", ...; NULL out of range */
/* Called by pg_stats_transfer for every counted transfer. */
void pg_stats_role_transfer(pg_device src, pg_device dst, uint64_t bytes);
void pg_stats_role_snapshot(pg_xfer_role_stats *out);
void pg_stats_role_reset(void);

#endif
