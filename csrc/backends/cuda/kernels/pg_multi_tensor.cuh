/* pg_multi_tensor.cuh - the chunk table of the list kernels (MULTI, MULTI_NORM), as
 * PyTorch's multi_tensor_apply (aten/src/ATen/native/cuda/MultiTensorApply.cuh) lays it out:
 * a list of tensors is cut into chunks of PG_CUDA_MT_CHUNK elements, one block per chunk,
 * and each launch takes a table of up to pg_mt_table<D>::tensors entries and
 * PG_MT_BLOCKS chunks BY VALUE, as a kernel argument. So no table is copied to the device
 * and nothing is allocated: a CUDA graph captures the arguments with the launch, and a
 * replay reads the same table (the pointers in it are the captured tensors', which the
 * graph holds). A list too long for one table takes a few launches (AdamW over a 6-layer
 * GPT's 76 tensors: two), each of them filling its table.
 *
 * The table is at most PG_MT_TABLE_BYTES, under the 4 KB of kernel parameters every CUDA
 * version and architecture takes (the emulated device checks the limit at each launch:
 * tests/cuda_emu/emu_kernel.h). Host code only builds tables (pg_mt_apply); the kernels
 * (in the .cu files, where the launches are) read their block's chunk with pg_mt_chunk. */
#ifndef PG_MULTI_TENSOR_CUH
#define PG_MULTI_TENSOR_CUH

#include "pg_cuda_common.cuh"

#define PG_MT_BLOCKS 320        /* chunks (blocks) per launch, as PyTorch's */
#define PG_MT_TABLE_BYTES 3584  /* leaves 512 bytes of the 4 KB for the kernel's other arguments */
#define PG_MT_THREADS 512       /* threads per block: 64 elements of a chunk each */

/* D operand slots per entry (pg_cuda_mt_entry's first D): as many entries as fit */
template <int D> struct pg_mt_table {
    static constexpr int tensors =
        (PG_MT_TABLE_BYTES - 8 - PG_MT_BLOCKS * 5) / (8 * D + 8 + 1) - 1;
    void *ptr[D][tensors];
    int64_t numel[tensors];
    int32_t block_chunk[PG_MT_BLOCKS];      /* block b: chunk block_chunk[b] of ... */
    unsigned char block_tensor[PG_MT_BLOCKS]; /* ... entry block_tensor[b] */
    unsigned char bcast[tensors];           /* pg_cuda_mt_entry.bcast */
};
static_assert(pg_mt_table<1>::tensors < 256, "block_tensor holds an entry's index in a byte");

/* Block blockIdx.x's chunk: its entry, and the elements [*lo, *hi) of it */
template <int D>
__device__ __forceinline__ int pg_mt_chunk(const pg_mt_table<D> &tab, int64_t *lo, int64_t *hi)
{
    const int t = tab.block_tensor[blockIdx.x];
    const int64_t n = tab.numel[t], start = (int64_t)tab.block_chunk[blockIdx.x] * PG_CUDA_MT_CHUNK;
    *lo = start;
    *hi = n - start < PG_CUDA_MT_CHUNK ? n : start + PG_CUDA_MT_CHUNK;
    return t;
}

/* Element k of an entry's slot s: k, or 0 for an operand of one element (bit s of bcast) */
__device__ __forceinline__ int64_t pg_mt_at(unsigned bcast, int s, int64_t k)
{
    return (bcast >> s) & 1u ? 0 : k;
}

/* Fills tables with the entries' chunks in list order and calls launch(table, blocks,
 * first) for each full table and the last one: `blocks` chunks, the first of them the
 * `first`-th chunk of the whole list (where MULTI_NORM writes its partial sums). Entries
 * with no element take no block. Returns the first launch's error, launching no more. */
template <int D, typename Launch>
static cudaError_t pg_mt_apply(const pg_cuda_mt_entry *e, int count, Launch launch)
{
    constexpr int tensors = pg_mt_table<D>::tensors;
    static_assert(sizeof(pg_mt_table<D>) <= PG_MT_TABLE_BYTES,
                  "a chunk table over its kernel-argument budget");
    pg_mt_table<D> tab{};
    int nt = 0, nb = 0;
    int64_t first = 0;
    for (int i = 0; i < count; i++) {
        if (e[i].numel <= 0)
            continue;
        for (int s = 0; s < D; s++)
            tab.ptr[s][nt] = e[i].ptr[s];
        tab.numel[nt] = e[i].numel;
        tab.bcast[nt] = (unsigned char)e[i].bcast;
        const int64_t chunks = (e[i].numel + PG_CUDA_MT_CHUNK - 1) / PG_CUDA_MT_CHUNK;
        for (int64_t c = 0; c < chunks; c++) {
            tab.block_tensor[nb] = (unsigned char)nt;
            tab.block_chunk[nb] = (int32_t)c;
            nb++;
            const bool last = c == chunks - 1;
            if (nb < PG_MT_BLOCKS && !(last && nt + 1 == tensors))
                continue;
            cudaError_t err = launch(tab, nb, first);
            if (err != cudaSuccess)
                return err;
            first += nb;
            nb = 0;
            if (last) {
                nt = -1; /* the next entry starts a fresh table */
            } else { /* this entry's later chunks: it moves to the new table's slot 0 */
                for (int s = 0; s < D; s++)
                    tab.ptr[s][0] = tab.ptr[s][nt];
                tab.numel[0] = tab.numel[nt];
                tab.bcast[0] = tab.bcast[nt];
                nt = 0;
            }
        }
        nt++;
    }
    return nb > 0 ? launch(tab, nb, first) : cudaSuccess;
}

#endif
