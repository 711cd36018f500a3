/* cpu_bf16_panels.h - a float32 weight's bfloat16 panels, packed by the optimizer's step.
 *
 * Under bf16 autocast a linear layer multiplies by its float32 weight W (O, I) rounded to
 * bfloat16, twice per step: forward x @ W^T and backward dX = dz @ W. The AVX512_BF16 GEMM
 * (cpu_gemm_bf16.c) would round and pack W into its pair-word panels for each of them, each
 * step: at batch 64 a fifth of the step. Instead, the cpu device keeps, per weight, both
 * packed orientations, and the optimizer's fused step (SGD, Adam and its family) writes
 * them while it writes the float32 weight, row block by row block while the rows are in
 * cache: one pass over the weights instead of three. The GEMMs then take B pre-packed
 * (pg_gemm.h b_packed) and pack only the activations.
 *
 * Validity: the panels hold the weight as of one write stamp of its storage (pg_storage.h
 * `version`, the tensor's `_write_stamp`): the stamp of the optimizer step that wrote them. Any
 * other write through pygpu (w.mul_(2), copy_, load_state_dict, a second optimizer) gives
 * the storage a new stamp, and the GEMMs pack W themselves again until the next step
 * refreshes the panels. The products are bit for bit the same either way (the same
 * rounding, the same slices and tiles). Writes that bypass pygpu (a NumPy view of the
 * memory, a DLPack importer) change no stamp: after one, write the weight through pygpu
 * (or call pygpu._C._bf16_panels(False)) before training on.
 *
 * Only on the cpu device, whose ops run when launched, so the stamp an op sees is its
 * own; a sim device's queue may hold later writes. A weight gets panels once a backward
 * under autocast has used it (training, not inference); the table keeps at most
 * PG_PANELS_SLOTS weights and PG_PANELS_MAX_BYTES, least recently used evicted. */
#ifndef PG_CPU_BF16_PANELS_H
#define PG_CPU_BF16_PANELS_H

#include <stdbool.h>
#include <stdint.h>

#include "../../core/pg_node.h"
#include "../../core/pg_pool.h"

enum { PG_PANELS_SLOTS = 64 };
#define PG_PANELS_MAX_BYTES ((int64_t)512 << 20)

/* Run `node` here when the panels concern it (*done = true): a bf16 linear layer whose
 * weight has valid panels, or an optimizer step on a weight that has a slot. Otherwise
 * *done = false and the caller runs the node as usual. The cpu device's launch only. */
pg_status pg_cpu_panels_launch(pg_pool *pool, const pg_node *node, bool *done);

/* On or off (every slot freed). Off by default; PYGPU_BF16_PANELS=1 starts it on. Measured
 * on Zen 4 (docs/performance.md), the step's packing costs about what the GEMMs' did (the
 * same words to round and transpose: prepack_rows 11.0% of the samples against pack_b's
 * 11.7%), and the tiles read the panels from L3 instead of a block just packed into L2:
 * with them the step ran 0.93-0.95x as fast on one thread and 0.95-1.14x on two (noise as
 * large as the effect, on a loaded machine). No gain shown, so not on by default; the
 * GEMM contract's b_packed and this table stay for CPUs where the passes cost more. */
void pg_cpu_panels_set_enabled(bool on);
bool pg_cpu_panels_enabled(void);

/* Counters since load: products that read panels (forward, dX), steps that wrote them,
 * live slots and their bytes. */
typedef struct pg_cpu_panels_stats {
    int64_t fwd_hits, dx_hits, packs, slots, bytes;
} pg_cpu_panels_stats;
void pg_cpu_panels_get_stats(pg_cpu_panels_stats *out);

#endif
