/* pg_device.h - a device is a small value: (type, index), like c10::Device.
 *
 * "slot" numbers every possible device densely (cpu, sim:0..15, cuda:0..15, meta:0..15) so
 * that per-device tables (statistics, allocators) are plain arrays. */
#ifndef PG_DEVICE_H
#define PG_DEVICE_H

#include <stdbool.h>

typedef enum pg_device_type {
    PG_DEV_CPU = 0,
    PG_DEV_SIM = 1,
    PG_DEV_CUDA = 2,
    PG_DEV_META = 3, /* shapes and dtypes, no storage (csrc/backends/meta/) */
    PG_NUM_DEVICE_TYPES
} pg_device_type;

#define PG_MAX_DEVICES_PER_TYPE 16
#define PG_NUM_SLOTS (1 + (PG_NUM_DEVICE_TYPES - 1) * PG_MAX_DEVICES_PER_TYPE)

typedef struct pg_device {
    int type;  /* pg_device_type */
    int index; /* 0 for cpu */
} pg_device;

static inline bool pg_device_eq(pg_device a, pg_device b)
{
    return a.type == b.type && a.index == b.index;
}

static inline int pg_device_slot(pg_device d)
{
    return d.type == PG_DEV_CPU ? 0 : 1 + (d.type - 1) * PG_MAX_DEVICES_PER_TYPE + d.index;
}

static inline pg_device pg_device_from_slot(int slot)
{
    pg_device d = {PG_DEV_CPU, 0};
    if (slot > 0) {
        d.type = 1 + (slot - 1) / PG_MAX_DEVICES_PER_TYPE;
        d.index = (slot - 1) % PG_MAX_DEVICES_PER_TYPE;
    }
    return d;
}

const char *pg_device_type_name(int type); /* "cpu", "sim", "cuda", "meta" */
/* "cpu", "sim:1": the spelling pygpu.device() accepts */
const char *pg_device_str(pg_device d, char *buf, int len);

#endif
