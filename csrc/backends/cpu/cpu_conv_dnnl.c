/* cpu_conv_dnnl.c - CONV nodes (forward, input gradient, weight gradient; float32) on oneDNN,
 * the CPU convolution library of the field (PyTorch's CPU convolutions are its direct
 * convolutions on blocked layouts), where it measures faster than pygpu's own kernels
 * (cpu_conv.c, cpu_conv_winograd.c, cpu_conv_direct.c; the table below, from
 * benchmarks/bench_conv_layers.py --paths, docs/performance.md).
 *
 * libdnnl.so.3 (oneDNN v3, the onednn-cpu-gomp wheel: pip install pygpu[cpu-fast]) is loaded
 * on the first CONV node, never at `import pygpu`, by cpu_dnnl.c, which declares the part of
 * its C API pygpu calls. Where no path loads, or the library refuses a shape, the node runs
 * on pygpu's own kernels.
 *
 * Per shape, a primitive descriptor and primitive are made once and kept (a bounded cache,
 * entries counted while in use): the primitive picks its layouts (format `any`), pygpu's
 * NCHW tensors are reordered into them and the output back, the reorders made once beside
 * it. Its scratchpad, and the reordered operands, are the calling thread's scratch buffers
 * (cpu_scratch.h), so a call allocates nothing once warm.
 *
 * Threads: this wheel runs on GNU OpenMP. The node's thread sets its OpenMP thread count to
 * its pool's (pygpu.set_num_threads; one for a pool-less call) before each call, before the
 * primitive is made too: oneDNN fixes a primitive's team size when it makes it (jcp.nthr),
 * so the cache is keyed by the count (a primitive made at 2 threads ran on 2 OpenMP threads
 * after pygpu.set_num_threads(1)). Under PYGPU_NODE_BUSY the team's CPU counts to the node
 * (cpu_busy.h's foreign marks), not to "outside nodes". OpenMP's
 * idle threads sleep instead of spinning after a call (OMP_WAIT_POLICY=passive, set before
 * the library loads unless the user set it), so they do not hold a core pygpu's pool wants.
 * PYGPU_ISA caps oneDNN's ISA too (dnnl_set_max_cpu_isa, before its first primitive).
 *
 * PYGPU_CONV=own|dnnl|auto (default auto: the table) forces a path; _C._cpu_conv_path says
 * which path a shape takes and why. */
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../core/pg_status.h"
#include "../../core/pg_ops_conv.h"
#include "cpu_busy.h"
#include "cpu_conv.h"
#include "cpu_dnnl.h"
#include "cpu_isa.h"
#include "cpu_scratch.h"

/* ---- which path a shape takes */
static int g_mode = -1; /* PG_CONV_PATH_*; -1: PYGPU_CONV not read yet */

static const char *const g_mode_names[PG_NUM_CONV_PATHS] = {
    [PG_CONV_PATH_AUTO] = "auto", [PG_CONV_PATH_OWN] = "own", [PG_CONV_PATH_DNNL] = "dnnl"};

int pg_cpu_conv_mode(void)
{
    if (g_mode < 0) {
        const char *e = getenv("PYGPU_CONV");
        int m = PG_CONV_PATH_AUTO;
        for (int i = 0; e && i < PG_NUM_CONV_PATHS; i++)
            if (strcmp(e, g_mode_names[i]) == 0)
                m = i;
        g_mode = m;
    }
    return g_mode;
}

int pg_cpu_conv_set_mode(const char *name)
{
    for (int i = 0; i < PG_NUM_CONV_PATHS; i++)
        if (strcmp(name, g_mode_names[i]) == 0) {
            pg_cpu_conv_mode();
            g_mode = i;
            return 0;
        }
    return -1;
}

const char *pg_cpu_conv_mode_name(int mode) { return g_mode_names[mode]; }

/* The choice table's rows: a CONV shape's kernel class and its input plane's size. */
typedef enum conv_class {
    CLASS_DW_S1,   /* depthwise (one input channel per group, groups > 1), stride 1 */
    CLASS_DW_S2,   /* depthwise, stride 2 and more */
    CLASS_GROUPED, /* other grouped */
    CLASS_STEM_K3, /* 3 or fewer input channels (an image's first layer), 3x3 or smaller */
    CLASS_STEM,    /* 3 or fewer input channels, a larger kernel (ImageNet's 7x7) */
    CLASS_K1_S1,   /* 1x1, stride 1 */
    CLASS_K1_S2,   /* 1x1, stride 2 and more (a ResNet's downsampling shortcut) */
    CLASS_K3_S1,   /* 3x3, stride 1 */
    CLASS_K3_S2,   /* 3x3, stride 2 and more */
    CLASS_OTHER,   /* any other kernel */
    NUM_CONV_CLASSES
} conv_class;
typedef enum conv_plane {
    PLANE_32, /* H*W >= 1024 (32 x 32 and up) */
    PLANE_16, /* 256 .. 1023 */
    PLANE_8,  /* 64 .. 255 */
    PLANE_4,  /* below 64 */
    NUM_CONV_PLANES
} conv_plane;

static const char *const g_class_names[NUM_CONV_CLASSES] = {
    "depthwise stride 1", "depthwise stride 2", "grouped", "stem 3x3", "stem", "1x1 stride 1",
    "1x1 stride 2", "3x3 stride 1", "3x3 stride 2", "other kernel"};
static const char *const g_plane_names[NUM_CONV_PLANES] = {"32x32+", "16x16", "8x8", "4x4"};

/* What auto runs, per CPU, class, plane and sub-op: D oneDNN, O pygpu's own. From
 * benchmarks/bench_conv_layers.py --paths own,dnnl (1 thread, process CPU time, batch 32;
 * docs/performance.md, "oneDNN against pygpu's own convolutions"): pygpu's own where it was
 * clearly (> 5%) faster, summed over a cell's layers, oneDNN elsewhere, a plane not measured
 * as its measured neighbour, a class not measured (grouped, other kernels) oneDNN's. "fwd
 * dgrad wgrad" per cell. The winners differ by CPU: the first table was measured on an Intel
 * Xeon (Emerald Rapids, AVX-512), the others on an AMD EPYC Zen 5, at AVX-512 and capped at
 * AVX2 (PYGPU_ISA=avx2: oneDNN's AVX2 kernels against pygpu's, the ISA of a Zen 3); a CPU
 * takes its vendor's table at its ISA class, any other CPU the Intel one. */
typedef enum dnnl_table { TABLE_INTEL, TABLE_AMD_AVX512, TABLE_AMD_AVX2, NUM_DNNL_TABLES } dnnl_table;
static const char *const g_table_names[NUM_DNNL_TABLES] = {"Intel AVX-512", "AMD AVX-512",
                                                           "AMD AVX2"};
#define D true
#define O false
static const bool pg_dnnl_wins[NUM_DNNL_TABLES][NUM_CONV_CLASSES][NUM_CONV_PLANES][3] = {
    [TABLE_INTEL] = {
        /*                 32x32+     16x16      8x8        4x4 */
        [CLASS_DW_S1] = {{O, O, O}, {O, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_DW_S2] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_GROUPED] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_STEM_K3] = {{O, O, D}, {O, O, D}, {O, O, D}, {O, O, D}},
        [CLASS_STEM] = {{D, O, D}, {D, O, D}, {D, O, D}, {D, O, D}},
        [CLASS_K1_S1] = {{O, O, O}, {O, O, O}, {O, O, O}, {D, D, D}},
        [CLASS_K1_S2] = {{O, O, O}, {O, O, O}, {D, O, D}, {D, O, D}},
        [CLASS_K3_S1] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, O}},
        [CLASS_K3_S2] = {{D, D, D}, {D, D, D}, {D, O, O}, {D, O, O}},
        [CLASS_OTHER] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
    },
    [TABLE_AMD_AVX512] = {
        [CLASS_DW_S1] = {{O, O, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_DW_S2] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_GROUPED] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_STEM_K3] = {{D, O, D}, {D, O, D}, {D, O, D}, {D, O, D}},
        [CLASS_STEM] = {{D, O, D}, {D, O, D}, {D, O, D}, {D, O, D}},
        [CLASS_K1_S1] = {{O, O, O}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_K1_S2] = {{D, O, D}, {D, O, D}, {D, D, D}, {D, D, D}},
        [CLASS_K3_S1] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_K3_S2] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_OTHER] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
    },
    [TABLE_AMD_AVX2] = {
        [CLASS_DW_S1] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_DW_S2] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_GROUPED] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
        [CLASS_STEM_K3] = {{O, O, D}, {O, O, D}, {O, O, D}, {O, O, D}},
        [CLASS_STEM] = {{D, O, D}, {D, O, D}, {D, O, D}, {D, O, D}},
        [CLASS_K1_S1] = {{O, O, O}, {O, O, D}, {D, D, D}, {D, D, D}},
        [CLASS_K1_S2] = {{D, O, D}, {D, O, D}, {D, O, D}, {D, O, D}},
        [CLASS_K3_S1] = {{O, O, D}, {O, O, D}, {O, D, D}, {D, D, O}},
        [CLASS_K3_S2] = {{D, D, D}, {D, D, D}, {O, D, O}, {O, D, O}},
        [CLASS_OTHER] = {{D, D, D}, {D, D, D}, {D, D, D}, {D, D, D}},
    },
};
#undef D
#undef O

/* The CPU's table: its vendor (cpuid leaf 0; PYGPU_CONV_TABLE=intel|amd forces one) and its
 * ISA class after PYGPU_ISA's cap. */
static bool cpu_is_amd(void)
{
    static int amd = -1;
    if (amd < 0) {
        const char *e = getenv("PYGPU_CONV_TABLE");
        if (e && (strcmp(e, "amd") == 0 || strcmp(e, "intel") == 0)) {
            amd = strcmp(e, "amd") == 0;
        } else {
            amd = 0;
#if defined(__x86_64__) || defined(__i386__)
            unsigned a, b, c, d;
            if (__get_cpuid(0, &a, &b, &c, &d))
                amd = b == 0x68747541u && d == 0x69746e65u && c == 0x444d4163u; /* AuthenticAMD */
#endif
        }
    }
    return amd;
}

static dnnl_table table_of(void)
{
    if (!cpu_is_amd())
        return TABLE_INTEL;
    return pg_cpu_isa() >= PG_ISA_AVX512 ? TABLE_AMD_AVX512 : TABLE_AMD_AVX2;
}

static conv_class class_of(int64_t C, const pg_conv_geom *g)
{
    bool s1 = g->sh == 1 && g->sw == 1;
    if (g->groups > 1)
        return C / g->groups == 1 ? (s1 ? CLASS_DW_S1 : CLASS_DW_S2) : CLASS_GROUPED;
    if (C <= 3)
        return g->kh <= 3 && g->kw <= 3 ? CLASS_STEM_K3 : CLASS_STEM;
    if (g->kh == 1 && g->kw == 1)
        return s1 ? CLASS_K1_S1 : CLASS_K1_S2;
    if (g->kh == 3 && g->kw == 3)
        return s1 ? CLASS_K3_S1 : CLASS_K3_S2;
    return CLASS_OTHER;
}

static conv_plane plane_of(int64_t HW)
{
    return HW >= 1024 ? PLANE_32 : HW >= 256 ? PLANE_16 : HW >= 64 ? PLANE_8 : PLANE_4;
}

/* the column of a sub-op: what it computes (y forward, x input gradient, w weight gradient) */
static int col_of(int subop)
{
    int r = pg_conv_computes(subop);
    return r == PG_CONV_Y ? 0 : r == PG_CONV_X ? 1 : 2;
}

bool pg_cpu_conv_path(int subop, int64_t C, int64_t HW, const pg_conv_geom *g, int dtype,
                      bool bias, const char **why)
{
    static __thread char buf[640];
    int mode = pg_cpu_conv_mode();
    if (mode == PG_CONV_PATH_OWN) {
        *why = "PYGPU_CONV=own";
        return false;
    }
    if (dtype != PG_FLOAT32) {
        *why = "oneDNN runs float32 convolutions only here";
        return false;
    }
    if (bias && pg_conv_computes(subop) == PG_CONV_X) {
        *why = "the input gradient with a bias (ConvTranspose) stays on pygpu's kernels";
        return false;
    }
    if (!pg_cpu_dnnl_loaded()) {
        snprintf(buf, sizeof buf, "oneDNN is not loaded: %s", pg_cpu_dnnl_why());
        *why = buf;
        return false;
    }
    if (pg_cpu_dnnl_forked()) {
        *why = "a process forked after oneDNN was loaded: its OpenMP threads do not survive a fork";
        return false;
    }
    if (mode == PG_CONV_PATH_DNNL) {
        *why = "PYGPU_CONV=dnnl";
        return true;
    }
    conv_class k = class_of(C, g);
    conv_plane p = plane_of(HW);
    dnnl_table t = table_of();
    bool dnnl = pg_dnnl_wins[t][k][p][col_of(subop)];
    snprintf(buf, sizeof buf, "%s at %s: %s measured faster (%s table)", g_class_names[k],
             g_plane_names[p], dnnl ? "oneDNN" : "pygpu's own", g_table_names[t]);
    *why = buf;
    return dnnl;
}

/* ---- the primitive cache (a child forked after oneDNN loaded never reaches it: its lock
 * needs no reset there) */
static pthread_mutex_t g_cache_lock = PTHREAD_MUTEX_INITIALIZER;
typedef struct prim_key {
    int32_t subop, bias, kh, kw, sh, sw, ph, pw, dh, dw, isa, threads; /* threads: OpenMP's */
    int64_t N, C, H, W, O, OH, OW, G;
} prim_key;

enum { ROLES = 3 }; /* x, w, y (pg_conv_role) */

typedef struct prim_entry {
    prim_key key;
    int refs;      /* calls using it now, + 1 while in the cache */
    void *pd, *prim;
    void *user_md[ROLES]; /* pygpu's layout (NCHW, OIHW / GOIHW) */
    const void *prim_md[ROLES]; /* the primitive's (owned by pd) */
    void *reorder[ROLES]; /* user -> primitive for inputs, back for the output; NULL: same */
    size_t bytes[ROLES], scratch_bytes;
    void *reorder_pd[ROLES];       /* kept for its scratchpad's layout */
    size_t reorder_scratch[ROLES]; /* a reorder's own scratchpad (user mode: every primitive
                                    * here may run on two threads at once) */
    void *bias_md;
} prim_entry;

#define CACHE_SLOTS 256 /* shapes kept, the oldest dropped when full: MobileNetV2 has 74
                        * (sub-op, shape) pairs on oneDNN a thread count, and at 64 made
                        * every primitive again each step */
static prim_entry *g_cache[CACHE_SLOTS];
static int g_cache_next;

static void entry_free(prim_entry *e)
{
    for (int r = 0; r < ROLES; r++) {
        if (e->reorder[r])
            pg_dnnl.primitive_destroy(e->reorder[r]);
        if (e->reorder_pd[r])
            pg_dnnl.primitive_desc_destroy(e->reorder_pd[r]);
        if (e->user_md[r])
            pg_dnnl.memory_desc_destroy(e->user_md[r]);
    }
    if (e->bias_md)
        pg_dnnl.memory_desc_destroy(e->bias_md);
    if (e->prim)
        pg_dnnl.primitive_destroy(e->prim);
    if (e->pd)
        pg_dnnl.primitive_desc_destroy(e->pd);
    free(e);
}

static void entry_release(prim_entry *e)
{
    pthread_mutex_lock(&g_cache_lock);
    bool last = --e->refs == 0;
    pthread_mutex_unlock(&g_cache_lock);
    if (last)
        entry_free(e);
}

/* the query and argument of each role, by column (forward, input gradient, weight gradient) */
static const int g_role_query[3][ROLES] = {
    {DNNL_QUERY_SRC_MD, DNNL_QUERY_WEIGHTS_MD, DNNL_QUERY_DST_MD},
    {DNNL_QUERY_DIFF_SRC_MD, DNNL_QUERY_WEIGHTS_MD, DNNL_QUERY_DIFF_DST_MD},
    {DNNL_QUERY_SRC_MD, DNNL_QUERY_DIFF_WEIGHTS_MD, DNNL_QUERY_DIFF_DST_MD},
};
static const int g_role_arg[3][ROLES] = {
    {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
    {DNNL_ARG_DIFF_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_DST},
    {DNNL_ARG_SRC, DNNL_ARG_DIFF_WEIGHTS, DNNL_ARG_DIFF_DST},
};

static void key_of(const pg_node *n, prim_key *k)
{
    const pg_tensor *x = pg_conv_operand(n, PG_CONV_X), *y = pg_conv_operand(n, PG_CONV_Y);
    const pg_conv_geom *g = &n->p.conv;
    memset(k, 0, sizeof *k);
    k->subop = n->subop;
    int col = col_of(n->subop);
    k->bias = col == 2 ? n->extra[0].storage != NULL : col == 0 && n->src[2].storage != NULL;
    k->kh = g->kh, k->kw = g->kw, k->sh = g->sh, k->sw = g->sw;
    k->ph = g->ph, k->pw = g->pw, k->dh = g->dh, k->dw = g->dw;
    k->isa = pg_cpu_isa();
    k->N = x->shape[0], k->C = x->shape[1], k->H = x->shape[2], k->W = x->shape[3];
    k->O = y->shape[1], k->OH = y->shape[2], k->OW = y->shape[3], k->G = g->groups;
}

/* padding after an axis: what makes oneDNN's output size the node's (never below 0: a
 * stride that does not divide leaves the last inputs unread, as in PyTorch) */
static int64_t pad_after(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int64_t d)
{
    int64_t r = (out - 1) * s + (k - 1) * d + 1 - in - p;
    return r > 0 ? r : 0;
}

#define DNNL_TRY(call)                                                                            \
    do {                                                                                         \
        if ((call) != DNNL_SUCCESS)                                                              \
            goto fail;                                                                           \
    } while (0)

static prim_entry *entry_make(const prim_key *k)
{
    prim_entry *e = calloc(1, sizeof *e);
    void *any[ROLES] = {0}, *attr = NULL, *hint = NULL, *bias_any = NULL;
    if (!e)
        return NULL;
    e->key = *k;
    int col = col_of(k->subop);
    int64_t Cg = k->C / k->G, Og = k->O / k->G;
    dnnl_dims xd = {k->N, k->C, k->H, k->W}, yd = {k->N, k->O, k->OH, k->OW};
    dnnl_dims wd = {k->G, Og, Cg, k->kh, k->kw}, bd = {k->O};
    int wnd = k->G > 1 ? 5 : 4;
    if (k->G == 1) {
        wd[0] = k->O, wd[1] = k->C, wd[2] = k->kh, wd[3] = k->kw;
    }
    dnnl_dims strides = {k->sh, k->sw}, dil = {k->dh - 1, k->dw - 1}, pl = {k->ph, k->pw};
    dnnl_dims pr = {pad_after(k->H, k->OH, k->kh, k->sh, k->ph, k->dh),
                    pad_after(k->W, k->OW, k->kw, k->sw, k->pw, k->dw)};
    const int64_t *dims[ROLES] = {xd, wd, yd};
    int nd[ROLES] = {4, wnd, 4};
    for (int r = 0; r < ROLES; r++) {
        DNNL_TRY(pg_dnnl.memory_desc_create_with_tag(&e->user_md[r], nd[r], dims[r], DNNL_F32,
                                                    nd[r] == 5 ? DNNL_TAG_ABCDE : DNNL_TAG_ABCD));
        DNNL_TRY(pg_dnnl.memory_desc_create_with_tag(&any[r], nd[r], dims[r], DNNL_F32,
                                                    DNNL_TAG_ANY));
    }
    if (k->bias) {
        DNNL_TRY(pg_dnnl.memory_desc_create_with_tag(&e->bias_md, 1, bd, DNNL_F32, DNNL_TAG_A));
        DNNL_TRY(pg_dnnl.memory_desc_create_with_tag(&bias_any, 1, bd, DNNL_F32, DNNL_TAG_A));
    }
    DNNL_TRY(pg_dnnl.primitive_attr_create(&attr));
    DNNL_TRY(pg_dnnl.primitive_attr_set_scratchpad_mode(attr, DNNL_SCRATCHPAD_USER));
    if (col == 0) {
        DNNL_TRY(pg_dnnl.convolution_forward_primitive_desc_create(
            &e->pd, pg_dnnl.engine, DNNL_FORWARD_TRAINING, DNNL_CONVOLUTION_DIRECT, any[0], any[1],
            bias_any, any[2], strides, dil, pl, pr, attr));
    } else {
        DNNL_TRY(pg_dnnl.convolution_forward_primitive_desc_create(
            &hint, pg_dnnl.engine, DNNL_FORWARD_TRAINING, DNNL_CONVOLUTION_DIRECT, any[0], any[1],
            bias_any, any[2], strides, dil, pl, pr, NULL));
        if (col == 1)
            DNNL_TRY(pg_dnnl.convolution_backward_data_primitive_desc_create(
                &e->pd, pg_dnnl.engine, DNNL_CONVOLUTION_DIRECT, any[0], any[1], any[2], strides,
                dil, pl, pr, hint, attr));
        else
            DNNL_TRY(pg_dnnl.convolution_backward_weights_primitive_desc_create(
                &e->pd, pg_dnnl.engine, DNNL_CONVOLUTION_DIRECT, any[0], any[1], bias_any, any[2],
                strides, dil, pl, pr, hint, attr));
    }
    DNNL_TRY(pg_dnnl.primitive_create(&e->prim, e->pd));
    int out = pg_conv_computes(k->subop);
    for (int r = 0; r < ROLES; r++) {
        e->prim_md[r] = pg_dnnl.primitive_desc_query_md(e->pd, g_role_query[col][r], 0);
        if (!e->prim_md[r])
            goto fail;
        if (pg_dnnl.memory_desc_equal(e->prim_md[r], e->user_md[r]))
            continue;
        void *rpd = NULL;
        const void *from = r == out ? e->prim_md[r] : e->user_md[r];
        const void *to = r == out ? e->user_md[r] : e->prim_md[r];
        DNNL_TRY(pg_dnnl.reorder_primitive_desc_create(&rpd, from, pg_dnnl.engine, to,
                                                      pg_dnnl.engine, attr));
        e->reorder_pd[r] = rpd;
        DNNL_TRY(pg_dnnl.primitive_create(&e->reorder[r], rpd));
        const void *rsmd = pg_dnnl.primitive_desc_query_md(rpd, DNNL_QUERY_SCRATCHPAD_MD, 0);
        e->reorder_scratch[r] = rsmd ? pg_dnnl.memory_desc_get_size(rsmd) : 0;
        e->bytes[r] = pg_dnnl.memory_desc_get_size(e->prim_md[r]);
    }
    const void *smd = pg_dnnl.primitive_desc_query_md(e->pd, DNNL_QUERY_SCRATCHPAD_MD, 0);
    e->scratch_bytes = smd ? pg_dnnl.memory_desc_get_size(smd) : 0;
    e->refs = 1;
    goto done;
fail:
    entry_free(e);
    e = NULL;
done:
    for (int r = 0; r < ROLES; r++)
        if (any[r])
            pg_dnnl.memory_desc_destroy(any[r]);
    if (bias_any)
        pg_dnnl.memory_desc_destroy(bias_any);
    if (attr)
        pg_dnnl.primitive_attr_destroy(attr);
    if (hint)
        pg_dnnl.primitive_desc_destroy(hint);
    return e;
}

/* The entry of a shape, made on a miss, counted as in use (entry_release when done); NULL
 * when oneDNN refuses the shape. */
static prim_entry *entry_get(const prim_key *k)
{
    pthread_mutex_lock(&g_cache_lock);
    for (int i = 0; i < CACHE_SLOTS; i++)
        if (g_cache[i] && memcmp(&g_cache[i]->key, k, sizeof *k) == 0) {
            g_cache[i]->refs++;
            pthread_mutex_unlock(&g_cache_lock);
            return g_cache[i];
        }
    pthread_mutex_unlock(&g_cache_lock);
    prim_entry *e = entry_make(k); /* outside the lock: it can take milliseconds */
    if (!e)
        return NULL;
    pthread_mutex_lock(&g_cache_lock);
    prim_entry *old = g_cache[g_cache_next];
    g_cache[g_cache_next] = e;
    g_cache_next = (g_cache_next + 1) % CACHE_SLOTS;
    e->refs++; /* the caller's */
    bool free_old = old && --old->refs == 0;
    pthread_mutex_unlock(&g_cache_lock);
    if (free_old)
        entry_free(old);
    return e;
}

/* ---- running a node */
static const pg_cpu_scratch_slot g_role_slot[ROLES] = {PG_SCRATCH_DNNL_X, PG_SCRATCH_DNNL_W,
                                                       PG_SCRATCH_DNNL_Y};

/* a reorder, with its scratchpad (the thread's PAD slot: used one primitive at a time) */
static dnnl_status exec_reorder(prim_entry *e, int r, void *stream, void *from, void *to)
{
    dnnl_exec_arg args[3] = {{DNNL_ARG_SRC, from}, {DNNL_ARG_DST, to}, {0, NULL}};
    int nargs = 2;
    void *pad_mem = NULL;
    if (e->reorder_scratch[r]) {
        void *buf = pg_cpu_scratch(PG_SCRATCH_DNNL_PAD, e->reorder_scratch[r]);
        const void *smd = pg_dnnl.primitive_desc_query_md(e->reorder_pd[r],
                                                         DNNL_QUERY_SCRATCHPAD_MD, 0);
        if (!buf || !smd)
            return -1;
        dnnl_status st = pg_dnnl.memory_create(&pad_mem, smd, pg_dnnl.engine, buf);
        if (st != DNNL_SUCCESS)
            return st;
        args[nargs++] = (dnnl_exec_arg){DNNL_ARG_SCRATCHPAD, pad_mem};
    }
    dnnl_status st = pg_dnnl.primitive_execute(e->reorder[r], stream, nargs, args);
    if (pad_mem)
        pg_dnnl.memory_destroy(pad_mem);
    return st;
}

/* The operands of one call: x, w, y (pg_conv_role order) and the bias (or its gradient),
 * each in pygpu's layout; a slice of the batch, or a partial weight gradient, in the split. */
typedef struct dnnl_ptrs {
    void *role[ROLES], *bias;
} dnnl_ptrs;

static pg_status run_entry(prim_entry *e, int col, int out, const dnnl_ptrs *ptr)
{
    void *stream = NULL, *user_mem[ROLES] = {0}, *prim_mem[ROLES] = {0}, *bias_mem = NULL,
         *scratch_mem = NULL;
    pg_status st = PG_OK;
    DNNL_TRY(pg_dnnl.stream_create(&stream, pg_dnnl.engine, DNNL_STREAM_DEFAULT));
    for (int r = 0; r < ROLES; r++) {
        DNNL_TRY(pg_dnnl.memory_create(&user_mem[r], e->user_md[r], pg_dnnl.engine,
                                      ptr->role[r]));
        if (!e->reorder[r])
            continue;
        void *buf = pg_cpu_scratch(g_role_slot[r], e->bytes[r]);
        if (!buf) {
            st = pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for oneDNN's layouts");
            goto done;
        }
        DNNL_TRY(pg_dnnl.memory_create(&prim_mem[r], e->prim_md[r], pg_dnnl.engine, buf));
        if (r != out)
            DNNL_TRY(exec_reorder(e, r, stream, user_mem[r], prim_mem[r]));
    }
    dnnl_exec_arg args[ROLES + 2];
    int nargs = 0;
    for (int r = 0; r < ROLES; r++)
        args[nargs++] =
            (dnnl_exec_arg){g_role_arg[col][r], prim_mem[r] ? prim_mem[r] : user_mem[r]};
    if (e->key.bias) {
        DNNL_TRY(pg_dnnl.memory_create(&bias_mem, e->bias_md, pg_dnnl.engine, ptr->bias));
        args[nargs++] = (dnnl_exec_arg){col == 2 ? DNNL_ARG_DIFF_BIAS : DNNL_ARG_BIAS, bias_mem};
    }
    if (e->scratch_bytes) {
        void *buf = pg_cpu_scratch(PG_SCRATCH_DNNL_PAD, e->scratch_bytes);
        const void *smd = pg_dnnl.primitive_desc_query_md(e->pd, DNNL_QUERY_SCRATCHPAD_MD, 0);
        if (!buf) {
            st = pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for oneDNN's scratchpad");
            goto done;
        }
        DNNL_TRY(pg_dnnl.memory_create(&scratch_mem, smd, pg_dnnl.engine, buf));
        args[nargs++] = (dnnl_exec_arg){DNNL_ARG_SCRATCHPAD, scratch_mem};
    }
    DNNL_TRY(pg_dnnl.primitive_execute(e->prim, stream, nargs, args));
    if (e->reorder[out])
        DNNL_TRY(exec_reorder(e, out, stream, prim_mem[out], user_mem[out]));
    DNNL_TRY(pg_dnnl.stream_wait(stream));
    goto done;
fail:
    st = pg_error_set(PG_ERR_RUNTIME, "conv2d: a oneDNN call failed (PYGPU_CONV=own avoids it)");
done:
    for (int r = 0; r < ROLES; r++) {
        if (user_mem[r])
            pg_dnnl.memory_destroy(user_mem[r]);
        if (prim_mem[r])
            pg_dnnl.memory_destroy(prim_mem[r]);
    }
    if (bias_mem)
        pg_dnnl.memory_destroy(bias_mem);
    if (scratch_mem)
        pg_dnnl.memory_destroy(scratch_mem);
    if (stream)
        pg_dnnl.stream_destroy(stream);
    return st;
}

bool pg_cpu_conv_dnnl_wants(const pg_node *n)
{
    const char *why;
    const pg_tensor *x = pg_conv_operand(n, PG_CONV_X);
    int col = col_of(n->subop);
    bool bias = col == 2 ? n->extra[0].storage != NULL : n->src[2].storage != NULL;
    return pg_cpu_conv_path(n->subop, x->shape[1], x->shape[2] * x->shape[3], &n->p.conv,
                            n->dst.dtype, bias, &why);
}

static uint64_t g_calls;

uint64_t pg_cpu_dnnl_calls(void) { return __atomic_load_n(&g_calls, __ATOMIC_RELAXED); }

/* The node's own operands, whole. */
static void node_ptrs(const pg_node *n, dnnl_ptrs *p)
{
    for (int r = 0; r < ROLES; r++)
        p->role[r] = pg_tensor_data(pg_conv_operand(n, r));
    p->bias = col_of(n->subop) == 2 ? (n->extra[0].storage ? pg_tensor_data(&n->extra[0]) : NULL)
                                    : (n->src[2].storage ? pg_tensor_data(&n->src[2]) : NULL);
}

/* ---- the batch split: one oneDNN primitive per pool thread, on a slice of the batch.
 * oneDNN's own threads are an OpenMP team, and where torch was imported first its libgomp's
 * idle threads spin (about 3 ms after each region: torch's runtime read no OMP_WAIT_POLICY)
 * on the cores pygpu's pool then wants: in one process with torch, a ResNet-18 step at 2
 * threads took twice the CPU. So where the batch has a sample per thread, each pool task
 * runs a single-threaded primitive (no OpenMP region at all) on its slice; a weight gradient
 * is summed from the tasks' partials, in task order. PYGPU_DNNL_SPLIT=0 keeps the team. */
typedef struct split_job {
    const pg_node *n;
    prim_entry *e[2]; /* slices of lo samples, and of lo + 1 */
    int64_t N, T, lo;
    int64_t x_sample, y_sample; /* elements a sample */
    float *partial;             /* weight gradient: (T - 1) x (w elements + bias elements) */
    int64_t w_elems, b_elems;
} split_job;

static pg_status split_task(void *ctx, int64_t t)
{
    split_job *j = ctx;
    int64_t n0 = j->N * t / j->T, n1 = j->N * (t + 1) / j->T;
    prim_entry *e = j->e[n1 - n0 - j->lo];
    int col = col_of(j->n->subop), out = pg_conv_computes(j->n->subop);
    dnnl_ptrs p;
    node_ptrs(j->n, &p);
    p.role[PG_CONV_X] = (float *)p.role[PG_CONV_X] + n0 * j->x_sample;
    p.role[PG_CONV_Y] = (float *)p.role[PG_CONV_Y] + n0 * j->y_sample;
    if (col == 2 && t > 0) {
        float *mine = j->partial + (t - 1) * (j->w_elems + j->b_elems);
        p.role[PG_CONV_W] = mine;
        p.bias = p.bias ? mine + j->w_elems : NULL;
    }
    int before = pg_dnnl.omp_get_max_threads ? pg_dnnl.omp_get_max_threads() : 0;
    if (pg_dnnl.omp_set_num_threads && before != 1)
        pg_dnnl.omp_set_num_threads(1);
    pg_status st = run_entry(e, col, out, &p);
    if (pg_dnnl.omp_set_num_threads && before > 1)
        pg_dnnl.omp_set_num_threads(before);
    return st;
}

enum { SUM_CHUNK = 16384 }; /* elements a summing task */

static pg_status sum_task(void *ctx, int64_t t)
{
    split_job *j = ctx;
    float *w = (float *)pg_tensor_data(pg_conv_operand(j->n, PG_CONV_W));
    int64_t a = t * SUM_CHUNK, b = a + SUM_CHUNK < j->w_elems ? a + SUM_CHUNK : j->w_elems;
    for (int64_t k = 1; k < j->T; k++) {
        const float *p = j->partial + (k - 1) * (j->w_elems + j->b_elems);
        for (int64_t i = a; i < b; i++)
            w[i] += p[i];
    }
    return PG_OK;
}

static bool split_wanted(int64_t N, int64_t T)
{
    static int on = -1;
    if (on < 0) {
        const char *e = getenv("PYGPU_DNNL_SPLIT");
        on = !(e && strcmp(e, "0") == 0);
    }
    return on && T > 1 && N >= T;
}

/* NULL-free entries for the slices' sizes, or false (oneDNN refused one: the caller runs the
 * node on pygpu's kernels) */
static bool split_entries(split_job *j, const prim_key *whole)
{
    for (int s = 0; s < 2; s++) {
        j->e[s] = NULL;
        if (s == 1 && j->N % j->T == 0)
            continue;
        prim_key k = *whole;
        k.N = j->lo + s;
        k.threads = 1;
        if (!(j->e[s] = entry_get(&k)))
            return false;
    }
    return true;
}

static pg_status run_split(pg_pool *pool, const pg_node *n, const prim_key *whole, bool *ran)
{
    split_job j = {.n = n, .N = whole->N, .T = pg_pool_threads(pool)};
    j.lo = j.N / j.T;
    j.x_sample = whole->C * whole->H * whole->W;
    j.y_sample = whole->O * whole->OH * whole->OW;
    int col = col_of(n->subop);
    pg_status st = PG_OK;
    /* made with one OpenMP thread: a primitive takes its team size when it is made */
    int before = pg_dnnl.omp_get_max_threads ? pg_dnnl.omp_get_max_threads() : 0;
    if (pg_dnnl.omp_set_num_threads)
        pg_dnnl.omp_set_num_threads(1);
    bool ok = split_entries(&j, whole);
    if (pg_dnnl.omp_set_num_threads && before > 0)
        pg_dnnl.omp_set_num_threads(before);
    if (ok && col == 2) {
        j.w_elems = pg_tensor_numel(pg_conv_operand(n, PG_CONV_W));
        j.b_elems = whole->bias ? whole->O : 0;
        /* the caller's buffer, kept: a fresh one a call cost a page fault per 4 KiB */
        j.partial = pg_cpu_scratch(PG_SCRATCH_DNNL_PARTS,
                                   (size_t)((j.T - 1) * (j.w_elems + j.b_elems)) * sizeof(float));
        if (!j.partial)
            st = pg_error_set(PG_ERR_NOMEM, "conv2d: out of memory for the weight gradient");
    }
    if (ok && st == PG_OK)
        st = pg_pool_run(pool, j.T, split_task, &j);
    if (ok && st == PG_OK && col == 2) {
        st = pg_pool_run(pool, (j.w_elems + SUM_CHUNK - 1) / SUM_CHUNK, sum_task, &j);
        if (j.b_elems) {
            float *b = (float *)pg_tensor_data(&n->extra[0]);
            for (int64_t t = 1; t < j.T; t++)
                for (int64_t o = 0; o < j.b_elems; o++)
                    b[o] += j.partial[(t - 1) * (j.w_elems + j.b_elems) + j.w_elems + o];
        }
    }
    for (int s = 0; s < 2; s++)
        if (j.e[s])
            entry_release(j.e[s]);
    *ran = ok && st == PG_OK;
    return st;
}

pg_status pg_cpu_conv_dnnl(pg_pool *pool, const pg_node *n, bool *ran)
{
    prim_key k;
    key_of(n, &k);
    k.threads = pool ? pg_pool_threads(pool) : 1;
    *ran = false;
    if (split_wanted(k.N, k.threads)) {
        pg_status st = run_split(pool, n, &k, ran);
        if (*ran)
            __atomic_fetch_add(&g_calls, 1, __ATOMIC_RELAXED);
        return st;
    }
    /* the thread's OpenMP count is the process's OpenMP runtime's: where torch is loaded, its
     * libgomp (global symbols) runs oneDNN's regions too, so the count torch set is put back.
     * Set before entry_get: a primitive made now takes its team size from it. */
    int before = pg_dnnl.omp_get_max_threads ? pg_dnnl.omp_get_max_threads() : 0;
    if (pg_dnnl.omp_set_num_threads)
        pg_dnnl.omp_set_num_threads(k.threads);
    prim_entry *e = entry_get(&k);
    pg_status st = PG_OK;
    if (e) { /* else oneDNN refused the shape: pygpu's own kernels run it */
        pg_cpu_busy_mark mark;
        pg_cpu_busy_foreign_begin(&mark);
        dnnl_ptrs p;
        node_ptrs(n, &p);
        st = run_entry(e, col_of(n->subop), pg_conv_computes(n->subop), &p);
        pg_cpu_busy_foreign_end(&mark);
        entry_release(e);
    }
    if (pg_dnnl.omp_set_num_threads && before > 0)
        pg_dnnl.omp_set_num_threads(before);
    if (!e)
        return PG_OK;
    *ran = st == PG_OK;
    if (*ran)
        __atomic_fetch_add(&g_calls, 1, __ATOMIC_RELAXED);
    return st;
}
