! SPDX-License-Identifier: BSD-3-Clause
! The PMPI drop-in under `use mpi_f08` (Open MPI's mpi_allreduce_f08_ ...):
! MPI_Allreduce in place and not, MPI_Bcast, MPI_Barrier, ierror omitted
! in some calls (the optional argument arrives as NULL); MPI_Iallreduce in
! place and not and MPI_Ibcast, completed by MPI_Wait, MPI_Test and
! MPI_Waitall (mpi_wait_f08_ ...); then a persistent allreduce in place and
! not (MPI-4's MPI_Allreduce_init, else Open MPI 4.1's MPIX_Allreduce_init
! of `use mpi_f08_ext`: mpix_allreduce_init_f08_), started three times with
! new inputs by MPI_Start and MPI_Startall (mpi_start_f08_ ...); it prints
! "persistent: PREFIX" (MPI_, MPIX_ or none) for run_dropin.sh.
! Preprocessed (.F90) for gcoll_build.h's persistent spelling.
#include "gcoll_build.h"
#if defined(HAVE_DECL_PMPI_ALLREDUCE_INIT) && HAVE_DECL_PMPI_ALLREDUCE_INIT
#define P_PREFIX 'MPI_'
#define P_ALLREDUCE_INIT MPI_Allreduce_init
#elif defined(HAVE_DECL_PMPIX_ALLREDUCE_INIT) && HAVE_DECL_PMPIX_ALLREDUCE_INIT
#define P_PREFIX 'MPIX_'
#define P_ALLREDUCE_INIT MPIX_Allreduce_init
#define P_USE_EXT 1
#endif
program test_dropin_f08
  use mpi_f08
#ifdef P_USE_EXT
  use mpi_f08_ext
#endif
  implicit none
  integer, parameter :: n = 500
  integer :: ierr, rank, nprocs, i, bad, allbad
  double precision :: dv(n), dr(n), da(n), db(n)
  type(MPI_Request) :: req, reqs(3)
  logical :: flag

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
  bad = 0
  do i = 1, n
    dv(i) = dble(rank + i)
  end do
  call MPI_Allreduce(dv, dr, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  do i = 1, n
    if (dr(i) /= dble(nprocs * i + nprocs * (nprocs - 1) / 2)) bad = bad + 1
  end do
  call MPI_Allreduce(MPI_IN_PLACE, dv, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (any(dv /= dr)) bad = bad + 1
  if (rank == 0) dv = 7
  call MPI_Bcast(dv, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD)
  if (any(dv /= 7)) bad = bad + 1
  call MPI_Barrier(MPI_COMM_WORLD)

  ! nonblocking
  do i = 1, n
    da(i) = dble(rank * i)
  end do
  call MPI_Iallreduce(da, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  call MPI_Wait(req, MPI_STATUS_IGNORE)
  if (req /= MPI_REQUEST_NULL) bad = bad + 1
  do i = 1, n
    if (db(i) /= dble(i * nprocs * (nprocs - 1) / 2)) bad = bad + 1
  end do
  call MPI_Iallreduce(MPI_IN_PLACE, da, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, req)
  flag = .false.
  do while (.not. flag)
    call MPI_Test(req, flag, MPI_STATUS_IGNORE, ierr)
  end do
  do i = 1, n
    if (da(i) /= dble((nprocs - 1) * i)) bad = bad + 1
  end do
  if (rank == 0) dv = 11
  dr = rank
  call MPI_Ibcast(dv, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, reqs(1))
  call MPI_Iallreduce(MPI_IN_PLACE, dr, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, &
                      reqs(2))
  call MPI_Ibarrier(MPI_COMM_WORLD, reqs(3))
  call MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE, ierr)
  if (any(dv /= 11)) bad = bad + 1
  if (any(dr /= dble(nprocs * (nprocs - 1) / 2))) bad = bad + 1
  do i = 1, 3
    if (reqs(i) /= MPI_REQUEST_NULL) bad = bad + 1
  end do

#ifdef P_ALLREDUCE_INIT
  if (rank == 0) print '(a, a)', 'persistent: ', P_PREFIX
  call persistent_checks()
#else
  if (rank == 0) print '(a)', 'persistent: none'
#endif

  call MPI_Allreduce(bad, allbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(a, i0, a)', 'fortran use mpi_f08: ', allbad, ' failed'
  call MPI_Finalize()
  if (allbad /= 0) stop 1

#ifdef P_ALLREDUCE_INIT
contains

  ! INTEGER sums, exact: not in place by MPI_Start and MPI_Wait (ierror
  ! omitted), in place by MPI_Startall and MPI_Waitall; the requests stay
  ! allocated between starts and MPI_Request_free frees them.
  subroutine persistent_checks()
    integer, asynchronous :: pa(n), pb(n), pc(n)
    type(MPI_Request) :: q1, q2(1)
    integer :: it, ier

    call P_ALLREDUCE_INIT(pa, pb, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, q1, ier)
    if (ier /= MPI_SUCCESS .or. q1 == MPI_REQUEST_NULL) bad = bad + 1
    call P_ALLREDUCE_INIT(MPI_IN_PLACE, pc, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                          MPI_INFO_NULL, q2(1))
    do it = 1, 3
      do i = 1, n
        pa(i) = rank * it + mod(i, 17)
        pb(i) = -1
        pc(i) = (rank + 1) * (i + it)
      end do
      call MPI_Start(q1)
      call MPI_Wait(q1, MPI_STATUS_IGNORE)
      if (q1 == MPI_REQUEST_NULL) bad = bad + 1
      do i = 1, n
        if (pb(i) /= it * nprocs * (nprocs - 1) / 2 + nprocs * mod(i, 17)) bad = bad + 1
      end do
      call MPI_Startall(1, q2, ier)
      if (ier /= MPI_SUCCESS) bad = bad + 1
      call MPI_Waitall(1, q2, MPI_STATUSES_IGNORE, ier)
      if (ier /= MPI_SUCCESS .or. q2(1) == MPI_REQUEST_NULL) bad = bad + 1
      do i = 1, n
        if (pc(i) /= (i + it) * nprocs * (nprocs + 1) / 2) bad = bad + 1
      end do
    end do
    call MPI_Request_free(q1, ier)
    call MPI_Request_free(q2(1))
    if (ier /= MPI_SUCCESS .or. q1 /= MPI_REQUEST_NULL .or. q2(1) /= MPI_REQUEST_NULL) &
      bad = bad + 1
  end subroutine persistent_checks
#endif
end program test_dropin_f08
