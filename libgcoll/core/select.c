/* Algorithm selection.  GCOLL_ALGO forces an algorithm per collective;
 * otherwise built-in size thresholds choose (the tuned selection tables of
 * GCOLL_TUNE_FILE replace these rules in a later step).  The thresholds follow
 * the usual latency/bandwidth crossovers: log(P)-round algorithms while alpha
 * dominates, bandwidth-optimal ring/pairwise schemes once beta does. */
#include <string.h>
#include "core/comm.h"
#include "core/config.h"
#include "core/log.h"
#include "core/select.h"
#include "core/status.h"

/* Parse "allreduce=ring,bcast=binomial" into comm->forced[]. */
static gcoll_status_t parse_forced(struct gcoll_comm *c, const char *spec)
{
    char buf[GCOLL_CONFIG_STR_MAX];
    strcpy(buf, spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');
        if (!eq)
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                               "GCOLL_ALGO item '%s' is not <collective>=<algorithm>", item);
        *eq = '\0';
        gcoll_coll_t coll = gcoll_coll_from_name(item);
        if (coll == GCOLL_COLL_COUNT)
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "GCOLL_ALGO names unknown collective '%s'",
                               item);
        const gcoll_algo_t *a = gcoll_algo_find(coll, eq + 1);
        if (!a)
            return GCOLL_ERROR(GCOLL_ERR_INVALID_ARG,
                               "GCOLL_ALGO: '%s' is not an algorithm of %s (gcoll_info -a lists them)",
                               eq + 1, item);
        c->forced[coll] = a;
    }
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_select_init(gcoll_comm_t comm)
{
    memset(comm->forced, 0, sizeof(comm->forced));
    memset(comm->logged, 0, sizeof(comm->logged));
    return parse_forced(comm, gcoll_config.algo);
}

/* Flat rules: log(P)-round algorithms while alpha dominates, bandwidth-
 * optimal ones once beta does. */
static const char *pick_flat(gcoll_coll_t coll, size_t bytes, size_t block, int size)
{
    int pow2 = (size & (size - 1)) == 0;
    switch (coll) {
    case GCOLL_COLL_ALLREDUCE:
        if (bytes <= 16384) return "rdouble";
        return bytes <= (1u << 20) && pow2 ? "rabenseifner" : "ring";
    case GCOLL_COLL_BCAST:          return bytes <= 65536 || size <= 2 ? "binomial" : "scatter_allgather";
    case GCOLL_COLL_REDUCE:         return bytes <= 65536 ? "binomial" : "rs_gather";
    case GCOLL_COLL_ALLGATHER:      return bytes <= 65536 ? (pow2 ? "rdouble" : "bruck") : "ring";
    case GCOLL_COLL_REDUCE_SCATTER: return bytes <= 65536 ? "rhalving" : "ring";
    case GCOLL_COLL_ALLTOALL:       return block <= 256 ? "bruck" : "pairwise";
    default:                        return "dissemination";
    }
}

/* With a shared segment: one node uses it directly; several nodes use the
 * two-level algorithms (the leader form for small allreduces, where one
 * inter-node round trip matters more than bandwidth). */
static const char *pick(gcoll_comm_t c, gcoll_coll_t coll, size_t bytes, size_t block)
{
    if (!c->shm || coll == GCOLL_COLL_ALLTOALL || c->size == 1)
        return pick_flat(coll, bytes, block, c->size);
    if (c->nnodes == 1) return "shm";
    if (c->local_size == 1 && c->nodes_uniform) return pick_flat(coll, bytes, block, c->size);
    int regular = c->nodes_uniform && c->nodes_contiguous;
    switch (coll) {
    case GCOLL_COLL_ALLREDUCE:
        return bytes <= 16384 || !c->nodes_uniform ? "hier_leader" : "hier";
    case GCOLL_COLL_ALLGATHER:
    case GCOLL_COLL_REDUCE_SCATTER:
        return regular ? "hier" : pick_flat(coll, bytes, block, c->size);
    default:
        return "hier";
    }
}

static size_t call_bytes(gcoll_comm_t comm, const gcoll_coll_args_t *args)
{
    size_t src, dst;
    gcoll_coll_buf_bytes(args, comm->size, &src, &dst);
    return src > dst ? src : dst;
}

const gcoll_algo_t *gcoll_select_fallback(gcoll_comm_t comm, const gcoll_coll_args_t *args)
{
    return gcoll_algo_find(args->coll, pick_flat(args->coll, call_bytes(comm, args),
                                                 args->count * args->dt_size, comm->size));
}

static int size_class(size_t bytes)
{
    int k = 0;
    while (k < 63 && ((size_t)1 << k) < bytes) k++;
    return k;
}

const gcoll_algo_t *gcoll_select(gcoll_comm_t comm, gcoll_coll_args_t *args)
{
    size_t bytes = call_bytes(comm, args);
    const gcoll_algo_t *a = comm->forced[args->coll];
    const char *why = "forced by GCOLL_ALGO";
    if (!a) {
        a   = gcoll_algo_find(args->coll, pick(comm, args->coll, bytes, args->count * args->dt_size));
        why = "built-in thresholds";
    }
    int k = size_class(bytes);
    if (GCOLL_UNLIKELY(gcoll_log_level >= GCOLL_LOG_INFO) && !(comm->logged[args->coll] >> k & 1)) {
        comm->logged[args->coll] |= (uint64_t)1 << k;
        gcoll_info("select %s %zu..%zu B, %d ranks, %d node(s): %s (%s)", gcoll_coll_name(args->coll),
                   k ? ((size_t)1 << (k - 1)) + 1 : 0, (size_t)1 << k, comm->size, comm->nnodes,
                   a->name, why);
    }
    return a;
}
