/* SPDX-License-Identifier: BSD-3-Clause */
/* Node structure of a group for the hierarchical builders. */
#include <stdlib.h>
#include <string.h>
#include "base/alloc.h"
#include "algos/hier/hier.h"
#include "base/status.h"

static int node_of(const gcoll_group_t *g, int i)
{
    return g->node_of ? g->node_of[i] : 0;
}

gcoll_status_t gcoll_hier_check(const gcoll_coll_args_t *args, const gcoll_group_t *g,
                                const char *algo)
{
    if (!(args->flags & GCOLL_ARGS_NODE_STEPS))
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED,
                           "%s needs the shared-memory segment, which this communicator lacks",
                           algo);
    if (g->ranks)
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED,
                           "%s runs only on a whole communicator, not on a sub-group", algo);
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_hier_init(gcoll_hier_t *h, const gcoll_group_t *g)
{
    memset(h, 0, sizeof(*h));
    int n = g->size, max_node = 0;
    for (int i = 0; i < n; i++) if (node_of(g, i) > max_node) max_node = node_of(g, i);
    int nn = max_node + 1;
    int *count = gcoll_calloc((size_t)nn, sizeof(int));
    h->leaders = gcoll_malloc(sizeof(int) * (size_t)nn);
    h->rail = gcoll_malloc(sizeof(int) * (size_t)nn);
    h->node_members = gcoll_malloc(sizeof(int) * (size_t)n);
    if (!count || !h->leaders || !h->rail || !h->node_members) {
        free(count);
        gcoll_hier_fini(h);
        return GCOLL_ERROR(GCOLL_ERR_NO_MEMORY, "cannot allocate the node map of %d ranks", n);
    }
    h->nnodes  = nn;
    h->my_node = node_of(g, g->me);
    for (int k = 0; k < nn; k++) { h->leaders[k] = -1; h->rail[k] = -1; }
    h->contiguous = 1;
    for (int i = 0; i < n; i++) {
        int k = node_of(g, i);
        if (h->leaders[k] < 0) h->leaders[k] = i;
        else if (node_of(g, i - 1) != k) h->contiguous = 0;
        if (k == h->my_node) {
            if (i == g->me) h->local = count[k];
            h->node_members[count[k]] = i;
        }
        count[k]++;
    }
    h->local_size = count[h->my_node];
    h->first_of_node = h->leaders[h->my_node];
    h->uniform = 1;
    for (int k = 0; k < nn; k++) if (count[k] != h->local_size) h->uniform = 0;
    /* rail: the member with my local index on each node */
    memset(count, 0, sizeof(int) * (size_t)nn);
    for (int i = 0; i < n; i++) {
        int k = node_of(g, i);
        if (count[k]++ == h->local) h->rail[k] = i;
    }
    h->my_rail_index = h->my_node;
    free(count);
    return GCOLL_SUCCESS;
}

void gcoll_hier_fini(gcoll_hier_t *h)
{
    free(h->leaders);
    free(h->rail);
    free(h->node_members);
    memset(h, 0, sizeof(*h));
}

gcoll_group_t gcoll_hier_subgroup(const gcoll_group_t *g, const int *idx, int n, int me,
                                  int *ranks)
{
    for (int i = 0; i < n; i++) ranks[i] = gcoll_group_rank(g, idx[i]);
    gcoll_group_t sub = { n, me, ranks, NULL };
    return sub;
}

int gcoll_hier_local_of(const gcoll_group_t *g, int i)
{
    int local = 0;
    for (int j = 0; j < i; j++) local += node_of(g, j) == node_of(g, i);
    return local;
}

gcoll_status_t gcoll_hier_check_regular(const gcoll_hier_t *h, const char *algo)
{
    if (!h->uniform || !h->contiguous)
        return GCOLL_ERROR(GCOLL_ERR_NOT_SUPPORTED,
                           "%s needs nodes of equal size holding consecutive ranks", algo);
    return GCOLL_SUCCESS;
}
