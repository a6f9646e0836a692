/* SPDX-License-Identifier: BSD-3-Clause */
/* For run_tune.sh: create a communicator under the GCOLL_* environment the
 * script sets, report the outcome of gcoll_comm_create on rank 0, and if it
 * succeeded run one allreduce per size given on the command line (so that
 * GCOLL_DEBUG=INFO shows which table row chose each).  Exit status: 0 on
 * success, 3 if gcoll_comm_create failed with GCOLL_ERR_INVALID_ARG, 1 on any
 * other failure. */
#include <stdio.h>
#include <stdlib.h>
#include "gcoll.h"

int main(int argc, char **argv)
{
    int rank, rc = 0;
    gcoll_comm_t comm;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    gcoll_status_t st = gcoll_comm_create(MPI_COMM_WORLD, &comm);
    if (st != GCOLL_SUCCESS) {
        if (rank == 0)
            printf("test_tune_create: gcoll_comm_create: %s: %s\n", gcoll_strerror(st),
                   gcoll_last_error());
        MPI_Finalize();
        return st == GCOLL_ERR_INVALID_ARG ? 3 : 1;
    }
    for (int i = 1; i < argc && rc == 0; i++) {
        size_t n = strtoul(argv[i], NULL, 10) / sizeof(float);
        float *buf = calloc(n ? n : 1, sizeof(float));
        if (!buf || gcoll_allreduce(buf, buf, n, GCOLL_FLOAT32, GCOLL_SUM, comm) != GCOLL_SUCCESS)
            rc = 1;
        free(buf);
    }
    gcoll_comm_destroy(comm);
    if (rank == 0) printf("test_tune_create: %s\n", rc ? "allreduce failed" : "ok");
    MPI_Finalize();
    return rc;
}
