/* pg_node_list.c - the operand list of a MULTI node (pg_node.h says what it holds): made by
 * the core op that builds the node, shared by reference count with an asynchronous
 * backend's queued task, so the list lives until the last of them is done with it. */
#include <stdlib.h>

#include "pg_node.h"
#include "pg_status.h"

pg_status pg_node_list_new(int count, int nsrc, int nextra, pg_node_list **out)
{
    pg_node_list *l = calloc(1, sizeof *l);
    int width = nsrc + 1 + nextra;
    pg_tensor *t = calloc((size_t)(count > 0 ? count : 1) * (size_t)width, sizeof *t);
    if (!l || !t) {
        free(l);
        free(t);
        return pg_error_set(PG_ERR_NOMEM, "multi-tensor step: out of host memory for a list of "
                                          "%d entries", count);
    }
    l->refs = 1;
    l->count = count;
    l->nsrc = nsrc;
    l->nextra = nextra;
    l->width = width;
    l->t = t;
    *out = l;
    return PG_OK;
}

void pg_node_list_retain(pg_node_list *l) { __atomic_fetch_add(&l->refs, 1, __ATOMIC_ACQ_REL); }

void pg_node_list_release(pg_node_list *l)
{
    if (l && __atomic_sub_fetch(&l->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        free(l->t);
        free(l);
    }
}
