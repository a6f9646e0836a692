! SPDX-License-Identifier: BSD-3-Clause
! The PMPI drop-in under a Fortran program using `use mpi` (mpif.h-style
! symbols mpi_allreduce_ ...): MPI_ALLREDUCE in place and not, with
! MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, and the other intercepted
! collectives.  run_dropin.sh checks the report says they were served.
program test_dropin_f
  use mpi
  implicit none
  integer, parameter :: n = 1000
  integer :: ierr, rank, nprocs, i, r, bad, allbad
  integer :: iv(n), ir(n)
  real :: fv(n)
  double precision :: dv(n), dr(n), g(n * 8)
  double precision :: e

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  bad = 0

  do i = 1, n
    iv(i) = rank + mod(i, 7)
    dv(i) = dble(rank + 1) * dble(mod(i, 5))
    fv(i) = real(rank + 1)
  end do
  call MPI_ALLREDUCE(iv, ir, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  do i = 1, n
    if (ir(i) /= nprocs * mod(i, 7) + nprocs * (nprocs - 1) / 2) bad = bad + 1
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, iv, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (iv(i) /= ir(i)) bad = bad + 1
  end do
  call MPI_ALLREDUCE(dv, dr, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (dr(i) /= dble(nprocs) * dble(mod(i, 5))) bad = bad + 1
  end do
  call MPI_ALLREDUCE(MPI_IN_PLACE, fv, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  do i = 1, n
    if (fv(i) /= real(nprocs * (nprocs + 1) / 2)) bad = bad + 1
  end do

  ! reduce in place at the root, bcast, allgather, barrier
  do i = 1, n
    dv(i) = dble(rank + i)
  end do
  if (rank == 0) then
    call MPI_REDUCE(MPI_IN_PLACE, dv, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    do i = 1, n
      e = 0
      do r = 0, nprocs - 1
        e = e + dble(r + i)
      end do
      if (dv(i) /= e) bad = bad + 1
    end do
  else
    call MPI_REDUCE(dv, dr, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  end if
  if (rank == 0) iv = 42
  call MPI_BCAST(iv, n, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (any(iv /= 42)) bad = bad + 1
  if (nprocs <= 8) then
    dv(1:4) = dble(rank)
    call MPI_ALLGATHER(dv, 4, MPI_DOUBLE_PRECISION, g, 4, MPI_DOUBLE_PRECISION, &
                       MPI_COMM_WORLD, ierr)
    do r = 0, nprocs - 1
      if (any(g(r * 4 + 1:r * 4 + 4) /= dble(r))) bad = bad + 1
    end do
  end if
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)

  call MPI_ALLREDUCE(bad, allbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a)', 'fortran use mpi: ', allbad, ' failed'
  call MPI_FINALIZE(ierr)
  if (allbad /= 0) stop 1
end program test_dropin_f
