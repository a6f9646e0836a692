/* SPDX-License-Identifier: BSD-3-Clause */
/* Several requests outstanding on every rank at once, in the simulator
 * (gcoll_sim_run_multi): for every registered algorithm, three requests of
 * different sizes (and roots) interleaved must give, bit for bit, what each
 * gives when it runs alone; and one run mixing three collectives.  Shapes:
 * 3 ranks on one node, 4 ranks as 2 nodes of 2, 5 ranks as nodes of 2, 2, 1.
 * Prints one line per failure and a summary; exit 1 on any failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sim/sim.h"
#include "algos/algo.h"
#include "base/log.h"

#define K 3
#define MAXP 5

static long n_cases, n_fail, n_declined;

typedef struct {
    const gcoll_algo_t *algo;
    gcoll_coll_args_t   a[MAXP];
    float              *send[MAXP], *recv[MAXP];
    size_t              sbytes, rbytes;
} req_t;

static void req_init(req_t *q, const gcoll_algo_t *algo, int P, size_t count, int root, int salt)
{
    memset(q, 0, sizeof(*q));
    q->algo = algo;
    for (int r = 0; r < P; r++) {
        gcoll_coll_args_t *a = &q->a[r];
        a->coll = algo->coll;
        a->count = count;
        a->dt_size = sizeof(float);
        a->root = root % P;
        a->src = gcoll_bref(GCOLL_BUF_SEND, 0);
        a->dst = gcoll_bref(GCOLL_BUF_RECV, 0);
        if (algo->coll == GCOLL_COLL_BCAST) a->src = a->dst;
        a->flags = GCOLL_ARGS_NODE_STEPS;
        gcoll_coll_buf_bytes(a, P, &q->sbytes, &q->rbytes);
        q->send[r] = malloc(q->sbytes + 4);
        q->recv[r] = malloc(q->rbytes + 4);
        for (size_t i = 0; i < q->sbytes / 4; i++)
            q->send[r][i] = (float)((int)((i * 7 + (size_t)r * 11 + (size_t)salt) % 23) - 11);
        for (size_t i = 0; i < q->rbytes / 4; i++)
            q->recv[r][i] = algo->coll == GCOLL_COLL_BCAST
                                ? (float)((int)((i + (size_t)r + (size_t)salt) % 17))
                                : -1.0f;
    }
}

static void req_free(req_t *q, int P)
{
    for (int r = 0; r < P; r++) {
        free(q->send[r]);
        free(q->recv[r]);
    }
}

static gcoll_status_t build(req_t *q, int P, const int *node_of, gcoll_sched_t *s)
{
    for (int r = 0; r < P; r++) {
        gcoll_group_t g = { P, r, NULL, node_of };
        gcoll_sched_init(&s[r]);
        gcoll_status_t st = gcoll_algo_build(q->algo, &q->a[r], &g, GCOLL_FLOAT32, GCOLL_SUM, &s[r]);
        if (st != GCOLL_SUCCESS) return st;
    }
    return GCOLL_SUCCESS;
}

/* Run every request alone (its reference: recv copies), then all together
 * on fresh copies of the inputs, and compare. */
static void run_case(const char *what, req_t *reqs, int P, const int *node_of)
{
    gcoll_sched_t s[K][MAXP];
    gcoll_sched_t *ptrs[K * MAXP];
    const void *sends[K * MAXP];
    void *recvs[K * MAXP];
    float *alone[K][MAXP];
    int declined = 0;
    memset(s, 0, sizeof(s));
    n_cases++;
    for (int k = 0; k < K; k++) {
        gcoll_status_t st = build(&reqs[k], P, node_of, s[k]);
        if (st == GCOLL_ERR_NOT_SUPPORTED) declined = 1;
        else if (st != GCOLL_SUCCESS) {
            printf("FAIL %s: build: %s\n", what, gcoll_last_error());
            n_fail++;
            declined = 1;
        }
    }
    for (int k = 0; k < K && !declined; k++) {
        gcoll_sim_t sim = { .nranks = P, .node_of = node_of };
        void *rb[MAXP];
        for (int r = 0; r < P; r++) {
            alone[k][r] = malloc(reqs[k].rbytes + 4);
            memcpy(alone[k][r], reqs[k].recv[r], reqs[k].rbytes);
            rb[r] = alone[k][r];
            ptrs[r] = &s[k][r];
        }
        if (gcoll_sim_run(&sim, ptrs, (const void *const *)reqs[k].send, rb) != GCOLL_SUCCESS) {
            printf("FAIL %s: request %d alone: %s\n", what, k, gcoll_last_error());
            n_fail++;
        }
    }
    if (!declined) {
        gcoll_sim_t sim = { .nranks = P, .node_of = node_of };
        for (int k = 0; k < K; k++)
            for (int r = 0; r < P; r++) {
                ptrs[k * P + r] = &s[k][r];
                sends[k * P + r] = reqs[k].send[r];
                recvs[k * P + r] = reqs[k].recv[r];
            }
        if (gcoll_sim_run_multi(&sim, K, ptrs, sends, recvs) != GCOLL_SUCCESS) {
            printf("FAIL %s: %d requests interleaved: %s\n", what, K, gcoll_last_error());
            n_fail++;
        }
        for (int k = 0; k < K; k++)
            for (int r = 0; r < P; r++) {
                int root_only = reqs[k].algo->coll == GCOLL_COLL_REDUCE;
                if (root_only && r != reqs[k].a[r].root) continue;
                if (memcmp(alone[k][r], reqs[k].recv[r], reqs[k].rbytes) != 0) {
                    printf("FAIL %s: request %d rank %d differs from the request alone\n", what, k,
                           r);
                    n_fail++;
                }
            }
        for (int k = 0; k < K; k++)
            for (int r = 0; r < P; r++) free(alone[k][r]);
    } else {
        n_declined++;
    }
    for (int k = 0; k < K; k++)
        for (int r = 0; r < P; r++) gcoll_sched_fini(&s[k][r]);
}

int main(void)
{
    static const int one[3] = { 0, 0, 0 }, two[4] = { 0, 0, 1, 1 }, three[5] = { 0, 0, 1, 1, 2 };
    static const struct { int P; const int *node_of; } shapes[] = { { 3, one }, { 4, two },
                                                                     { 5, three } };
    static const size_t counts[K] = { 5, 1001, 70001 };
    char what[128];
    gcoll_log_level = -1;   /* a declining builder WARNs; the summary counts it */
    for (const gcoll_algo_t *const *a = gcoll_algos; *a; a++) {
        for (size_t sh = 0; sh < sizeof(shapes) / sizeof(shapes[0]); sh++) {
            int P = shapes[sh].P;
            req_t reqs[K];
            for (int k = 0; k < K; k++) req_init(&reqs[k], *a, P, counts[k], k + 1, k);
            snprintf(what, sizeof(what), "%s/%s P=%d", gcoll_coll_name((*a)->coll), (*a)->name,
                     P);
            run_case(what, reqs, P, shapes[sh].node_of);
            for (int k = 0; k < K; k++) req_free(&reqs[k], P);
        }
    }
    /* three different collectives outstanding at once, 4 ranks as 2 nodes */
    {
        req_t reqs[K];
        req_init(&reqs[0], gcoll_algo_find(GCOLL_COLL_ALLREDUCE, "hier"), 4, 300001, 0, 1);
        req_init(&reqs[1], gcoll_algo_find(GCOLL_COLL_BCAST, "binomial"), 4, 4099, 3, 2);
        req_init(&reqs[2], gcoll_algo_find(GCOLL_COLL_ALLGATHER, "ring"), 4, 1000, 0, 3);
        run_case("mixed hier allreduce + binomial bcast + ring allgather P=4", reqs, 4, two);
        for (int k = 0; k < K; k++) req_free(&reqs[k], 4);
    }
    printf("test_sim_multi: %ld cases, %ld failed, %ld declined by a builder\n", n_cases, n_fail,
           n_declined);
    return n_fail || n_cases - n_declined < 20 ? 1 : 0;
}
