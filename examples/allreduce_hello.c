/* SPDX-License-Identifier: BSD-3-Clause */
/* The README's example: an in-place float allreduce over MPI_COMM_WORLD.
 *   mpicc allreduce_hello.c $(pkg-config --cflags --libs gcoll) -o hello
 *   mpirun -n 4 ./hello        (every rank prints the same sum) */
#include <stdio.h>
#include <gcoll.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    gcoll_comm_t comm;
    if (gcoll_comm_create(MPI_COMM_WORLD, &comm) != GCOLL_SUCCESS) {
        fprintf(stderr, "gcoll: %s\n", gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    float grad[1024];
    for (int i = 0; i < 1024; i++) grad[i] = (float)(rank + 1);
    gcoll_status_t st = gcoll_allreduce(grad, grad, 1024, GCOLL_FLOAT32, GCOLL_SUM, comm);
    if (st != GCOLL_SUCCESS) {
        fprintf(stderr, "%s: %s\n", gcoll_strerror(st), gcoll_last_error());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    float expect = (float)size * (float)(size + 1) / 2.0f;
    printf("rank %d: grad[0] = %g (expected %g)\n", rank, grad[0], expect);
    gcoll_comm_destroy(comm);
    MPI_Finalize();
    return grad[0] == expect && grad[1023] == expect ? 0 : 1;
}
