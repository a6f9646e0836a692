/* SPDX-License-Identifier: BSD-3-Clause */
/* For run_tune.sh and run_tune_cache.sh: create a communicator under the
 * GCOLL_* environment the script sets, report the outcome of
 * gcoll_comm_create on rank 0, and if it succeeded run one allreduce per
 * size given on the command line (so that GCOLL_DEBUG=INFO shows which table
 * row chose each), its result checked.  With -p first, every rank also asks the selection layer
 * which allreduce algorithm each size gets and rank 0 prints the one line
 * all ranks agree on ("test_tune_create: selection 8:shm 4096:shm ...") or
 * the first rank that disagrees.  Exit status: 0 on success, 3 if
 * gcoll_comm_create failed with GCOLL_ERR_INVALID_ARG, 2 if ranks disagree,
 * 1 on any other failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gcoll.h"
#include "core/comm.h"
#include "core/select.h"

#define LINE 1024

/* "SIZE:ALGO ..." for the sizes argv[first..], as this rank would choose. */
static void selection(gcoll_comm_t comm, int argc, char **argv, int first, char *line)
{
    size_t n = 0;
    line[0] = '\0';
    for (int i = first; i < argc && n < LINE; i++) {
        size_t bytes = strtoul(argv[i], NULL, 10);
        gcoll_coll_args_t a = { .coll = GCOLL_COLL_ALLREDUCE, .count = bytes / sizeof(float),
                                .dt_size = sizeof(float) };
        const gcoll_algo_t *algo = gcoll_select(comm, &a);
        n += (size_t)snprintf(line + n, LINE - n, "%s%zu:%s", n ? " " : "", bytes, algo->name);
    }
}

int main(int argc, char **argv)
{
    int rank, size, rc = 0, first = 1, print = argc > 1 && !strcmp(argv[1], "-p");
    gcoll_comm_t comm;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    first += print;
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &comm);
    if (st != GCOLL_SUCCESS) {
        if (rank == 0)
            printf("test_tune_create: gcoll_comm_create: %s: %s\n", gcoll_strerror(st),
                   gcoll_last_error());
        MPI_Finalize();
        return st == GCOLL_ERR_INVALID_ARG ? 3 : 1;
    }
    if (print) {
        char mine[LINE], *all = malloc((size_t)size * LINE);
        selection(comm, argc, argv, first, mine);
        MPI_Gather(mine, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
        for (int r = 1; rank == 0 && r < size && rc == 0; r++)
            if (strcmp(all + (size_t)r * LINE, mine)) {
                printf("test_tune_create: rank %d chooses '%s', rank 0 '%s'\n", r,
                       all + (size_t)r * LINE, mine);
                rc = 2;
            }
        if (rank == 0 && rc == 0)
            printf("test_tune_create: selection on all %d ranks: %s\n", size, mine);
        free(all);
        MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    for (int i = first; i < argc && rc == 0; i++) {
        size_t n = strtoul(argv[i], NULL, 10) / sizeof(float);
        float *buf = calloc(n ? n : 1, sizeof(float));
        for (size_t j = 0; buf && j < n; j++) buf[j] = (float)(rank + 1);
        if (!buf || gcoll_allreduce(buf, buf, n, GCOLL_FLOAT32, GCOLL_SUM, comm) != GCOLL_SUCCESS)
            rc = 1;
        for (size_t j = 0; rc == 0 && j < n; j++)   /* exact: small integers */
            if (buf[j] != (float)(size * (size + 1) / 2)) rc = 1;
        free(buf);
    }
    gcoll_comm_destroy(comm);
    if (rank == 0) printf("test_tune_create: %s\n", rc == 2 ? "ranks disagree"
                                                    : rc ? "allreduce failed or wrong" : "ok");
    MPI_Finalize();
    return rc;
}
