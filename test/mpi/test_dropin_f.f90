! SPDX-License-Identifier: BSD-3-Clause
! The PMPI drop-in under a Fortran program using `use mpi` (mpif.h-style
! symbols mpi_allreduce_ ...): MPI_ALLREDUCE in place and not, with
! MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, and the other intercepted
! collectives; then their nonblocking forms (MPI_IALLREDUCE in place and
! not ...), completed by MPI_WAIT, MPI_TEST, MPI_WAITALL beside
! point-to-point requests, MPI_WAITANY, MPI_WAITSOME and MPI_TESTALL.  run_dropin.sh checks the report says they were served.
program test_dropin_f
  use mpi
  implicit none
  integer, parameter :: n = 1000
  integer :: ierr, rank, nprocs, i, r, bad, allbad
  integer :: iv(n), ir(n)
  real :: fv(n)
  double precision :: dv(n), dr(n), g(n * 8)
  double precision :: e
  integer :: req, reqs(4), idx, outc, idxs(4), tok, got, k, ndone
  integer :: stats(MPI_STATUS_SIZE, 4)
  logical :: flag
  integer :: ia(n), ib(n)
  real :: fa(n)
  double precision :: da(n), db(n), dg(n * 8), dt(n * 8), dx(n * 8)

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

  ! ---- nonblocking ----
  ! MPI_IALLREDUCE not in place (INTEGER), MPI_WAIT
  do i = 1, n
    ia(i) = rank * 3 + mod(i, 11)
  end do
  call MPI_IALLREDUCE(ia, ib, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  if (req /= MPI_REQUEST_NULL) bad = bad + 1
  do i = 1, n
    if (ib(i) /= 3 * nprocs * (nprocs - 1) / 2 + nprocs * mod(i, 11)) bad = bad + 1
  end do
  ! in place (REAL, MAX), MPI_TEST loop
  do i = 1, n
    fa(i) = real(rank + mod(i, 3))
  end do
  call MPI_IALLREDUCE(MPI_IN_PLACE, fa, n, MPI_REAL, MPI_MAX, MPI_COMM_WORLD, req, ierr)
  flag = .false.
  do while (.not. flag)
    call MPI_TEST(req, flag, MPI_STATUS_IGNORE, ierr)
  end do
  if (req /= MPI_REQUEST_NULL) bad = bad + 1
  do i = 1, n
    if (fa(i) /= real(nprocs - 1 + mod(i, 3))) bad = bad + 1
  end do
  ! MPI_WAITALL over an allreduce in place, a bcast and a ring exchange
  do k = 1, 2
    do i = 1, n
      da(i) = dble(rank + i) * k
      db(i) = -1
      if (rank == 0) db(i) = dble(i) + 0.5d0
    end do
    tok = rank * 7 + k
    got = -1
    call MPI_IRECV(got, 1, MPI_INTEGER, mod(rank + nprocs - 1, nprocs), 3, MPI_COMM_WORLD, &
                   reqs(1), ierr)
    call MPI_IALLREDUCE(MPI_IN_PLACE, da, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, &
                        reqs(2), ierr)
    call MPI_ISEND(tok, 1, MPI_INTEGER, mod(rank + 1, nprocs), 3, MPI_COMM_WORLD, reqs(3), ierr)
    call MPI_IBCAST(db, n, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, reqs(4), ierr)
    if (k == 1) then
      call MPI_WAITALL(4, reqs, stats, ierr)
      if (stats(MPI_SOURCE, 1) /= mod(rank + nprocs - 1, nprocs)) bad = bad + 1
    else
      ndone = 0
      do while (ndone < 4)   ! WAITANY for two, WAITSOME for the rest
        if (ndone < 2) then
          call MPI_WAITANY(4, reqs, idx, MPI_STATUS_IGNORE, ierr)
          if (idx < 1 .or. idx > 4) bad = bad + 1
          ndone = ndone + 1
        else
          call MPI_WAITSOME(4, reqs, outc, idxs, MPI_STATUSES_IGNORE, ierr)
          if (outc == MPI_UNDEFINED) exit
          ndone = ndone + outc
        end if
      end do
    end if
    if (any(reqs /= MPI_REQUEST_NULL)) bad = bad + 1
    if (got /= mod(rank + nprocs - 1, nprocs) * 7 + k) bad = bad + 1
    do i = 1, n
      e = 0
      do r = 0, nprocs - 1
        e = e + dble(r + i) * k
      end do
      if (da(i) /= e) bad = bad + 1
      if (db(i) /= dble(i) + 0.5d0) bad = bad + 1
    end do
  end do
  ! ireduce (root last, in place there), iallgather, ireduce_scatter_block,
  ! ialltoall, ibarrier, by MPI_TESTALL
  if (nprocs <= 8) then
    do i = 1, n
      da(i) = dble(rank + i)
    end do
    do i = 1, n * nprocs
      dt(i) = dble(rank * 1000 + i)
    end do
    if (rank == nprocs - 1) then
      call MPI_IREDUCE(MPI_IN_PLACE, da, n, MPI_DOUBLE_PRECISION, MPI_SUM, nprocs - 1, &
                       MPI_COMM_WORLD, reqs(1), ierr)
    else
      call MPI_IREDUCE(da, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, nprocs - 1, &
                       MPI_COMM_WORLD, reqs(1), ierr)
    end if
    call MPI_IALLGATHER(dt, n, MPI_DOUBLE_PRECISION, dg, n, MPI_DOUBLE_PRECISION, &
                        MPI_COMM_WORLD, reqs(2), ierr)
    call MPI_IREDUCE_SCATTER_BLOCK(dt, db, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, &
                                   reqs(3), ierr)
    call MPI_IALLTOALL(dt, n, MPI_DOUBLE_PRECISION, dx, n, MPI_DOUBLE_PRECISION, &
                       MPI_COMM_WORLD, reqs(4), ierr)
    flag = .false.
    do while (.not. flag)
      call MPI_TESTALL(4, reqs, flag, MPI_STATUSES_IGNORE, ierr)
    end do
    if (rank == nprocs - 1) then
      do i = 1, n
        e = 0
        do r = 0, nprocs - 1
          e = e + dble(r + i)
        end do
        if (da(i) /= e) bad = bad + 1
      end do
    end if
    do r = 0, nprocs - 1
      do i = 1, n
        if (dg(r * n + i) /= dble(r * 1000 + i)) bad = bad + 1
        if (dx(r * n + i) /= dble(r * 1000 + rank * n + i)) bad = bad + 1
      end do
    end do
    do i = 1, n
      e = 0
      do r = 0, nprocs - 1
        e = e + dble(r * 1000 + rank * n + i)
      end do
      if (db(i) /= e) bad = bad + 1
    end do
  end if
  ! (MPI_REQUEST_FREE on a nonblocking collective's request is erroneous,
  ! MPI-3.1 5.12, and Open MPI refuses it: not tested)
  call MPI_IBARRIER(MPI_COMM_WORLD, req, ierr)
  call MPI_WAIT(req, MPI_STATUS_IGNORE, ierr)
  if (req /= MPI_REQUEST_NULL) bad = bad + 1

  call MPI_ALLREDUCE(bad, allbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a)', 'fortran use mpi: ', allbad, ' failed'
  call MPI_FINALIZE(ierr)
  if (allbad /= 0) stop 1
end program test_dropin_f
