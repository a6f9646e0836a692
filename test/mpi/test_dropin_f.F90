! SPDX-License-Identifier: BSD-3-Clause
! The PMPI drop-in under a Fortran program using `use mpi` (mpif.h-style
! symbols mpi_allreduce_ ...): MPI_ALLREDUCE in place and not, with
! MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, and the other intercepted
! collectives; then their nonblocking forms (MPI_IALLREDUCE in place and
! not ...), completed by MPI_WAIT, MPI_TEST, MPI_WAITALL beside
! point-to-point requests, MPI_WAITANY, MPI_WAITSOME and MPI_TESTALL; then
! the persistent forms (persistent_checks below), in the spelling this MPI
! declares (MPI-4's MPI_ALLREDUCE_INIT, else Open MPI 4.1's
! MPIX_ALLREDUCE_INIT of `use mpi_ext`), which it prints as "persistent:
! PREFIX" (MPI_, MPIX_ or none).  run_dropin.sh checks the report says they
! were served.  Preprocessed (.F90) for gcoll_build.h's persistent spelling.
#include "gcoll_build.h"
#if defined(HAVE_DECL_PMPI_ALLREDUCE_INIT) && HAVE_DECL_PMPI_ALLREDUCE_INIT
#define P_PREFIX 'MPI_'
#define P_ALLREDUCE_INIT MPI_ALLREDUCE_INIT
#define P_REDUCE_INIT MPI_REDUCE_INIT
#define P_BCAST_INIT MPI_BCAST_INIT
#define P_ALLGATHER_INIT MPI_ALLGATHER_INIT
#define P_REDUCE_SCATTER_BLOCK_INIT MPI_REDUCE_SCATTER_BLOCK_INIT
#define P_ALLTOALL_INIT MPI_ALLTOALL_INIT
#define P_BARRIER_INIT MPI_BARRIER_INIT
#elif defined(HAVE_DECL_PMPIX_ALLREDUCE_INIT) && HAVE_DECL_PMPIX_ALLREDUCE_INIT
#define P_PREFIX 'MPIX_'
#define P_USE_EXT 1
#define P_ALLREDUCE_INIT MPIX_ALLREDUCE_INIT
#define P_REDUCE_INIT MPIX_REDUCE_INIT
#define P_BCAST_INIT MPIX_BCAST_INIT
#define P_ALLGATHER_INIT MPIX_ALLGATHER_INIT
#define P_REDUCE_SCATTER_BLOCK_INIT MPIX_REDUCE_SCATTER_BLOCK_INIT
#define P_ALLTOALL_INIT MPIX_ALLTOALL_INIT
#define P_BARRIER_INIT MPIX_BARRIER_INIT
#endif
program test_dropin_f
  use mpi
#ifdef P_USE_EXT
  use mpi_ext
#endif
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

#ifdef P_ALLREDUCE_INIT
  if (rank == 0) print '(a, a)', 'persistent: ', P_PREFIX
  call persistent_checks()
#else
  if (rank == 0) print '(a)', 'persistent: none'
#endif

  call MPI_ALLREDUCE(bad, allbad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a, i0, a)', 'fortran use mpi: ', allbad, ' failed'
  call MPI_FINALIZE(ierr)
  if (allbad /= 0) stop 1

#ifdef P_ALLREDUCE_INIT
contains

  ! Each request made once and started three times, new inputs each time:
  ! an allreduce not in place (MPI_START, MPI_WAIT); one in place beside a
  ! persistent ring exchange (MPI_SEND_INIT, MPI_RECV_INIT: MPI's own) and
  ! an MPI_BOR allreduce, which the drop-in leaves to MPI (bitwise op), all
  ! by one MPI_STARTALL and MPI_WAITALL, then MPI_TEST on the inactive
  ! requests; then reduce (in place at the root), bcast, allgather,
  ! reduce_scatter_block, alltoall and barrier by one MPI_STARTALL and
  ! MPI_WAITALL.  After each wait the requests stay allocated (inactive);
  ! MPI_REQUEST_FREE frees them.  The buffers are ASYNCHRONOUS: MPI reads
  ! and writes them in calls that do not name them (MPI_START, MPI_WAIT).
  subroutine persistent_checks()
    integer, parameter :: m = 4, pmax = 8
    integer, asynchronous :: pa(n), pb(n), pc(n), bits, orv, tok, got
    integer, asynchronous :: pd(n), pdr(n), pe(n), pg(m), pgr(m * pmax)
    integer, asynchronous :: pt(m * pmax), ptr(m * pmax), ps(m * pmax), psr(m)
    integer :: q1, q4(4), q6(6), it, i, k, r, e, ier
    integer :: stats(MPI_STATUS_SIZE, 6)
    logical :: flag

    call P_ALLREDUCE_INIT(pa, pb, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &
                          q1, ier)
    if (ier /= MPI_SUCCESS .or. q1 == MPI_REQUEST_NULL) bad = bad + 1
    call P_ALLREDUCE_INIT(MPI_IN_PLACE, pc, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                          MPI_INFO_NULL, q4(1), ier)
    call MPI_RECV_INIT(got, 1, MPI_INTEGER, mod(rank + nprocs - 1, nprocs), 5, MPI_COMM_WORLD, &
                       q4(2), ier)
    call P_ALLREDUCE_INIT(bits, orv, 1, MPI_INTEGER, MPI_BOR, MPI_COMM_WORLD, MPI_INFO_NULL, &
                          q4(3), ier)
    call MPI_SEND_INIT(tok, 1, MPI_INTEGER, mod(rank + 1, nprocs), 5, MPI_COMM_WORLD, q4(4), ier)
    do it = 1, 3
      do i = 1, n
        pa(i) = rank * it + mod(i, 13)
        pb(i) = -1
        pc(i) = (rank + 1) * (i + it)
      end do
      bits = ishft(1, mod(rank + it, 30))
      tok = rank * 10 + it
      call MPI_START(q1, ier)
      if (ier /= MPI_SUCCESS) bad = bad + 1
      call MPI_WAIT(q1, MPI_STATUS_IGNORE, ier)
      if (ier /= MPI_SUCCESS .or. q1 == MPI_REQUEST_NULL) bad = bad + 1
      do i = 1, n
        if (pb(i) /= it * nprocs * (nprocs - 1) / 2 + nprocs * mod(i, 13)) bad = bad + 1
      end do
      call MPI_STARTALL(4, q4, ier)
      if (ier /= MPI_SUCCESS) bad = bad + 1
      call MPI_WAITALL(4, q4, stats, ier)
      if (ier /= MPI_SUCCESS .or. any(q4 == MPI_REQUEST_NULL)) bad = bad + 1
      do i = 1, n
        if (pc(i) /= (i + it) * nprocs * (nprocs + 1) / 2) bad = bad + 1
      end do
      e = 0
      do r = 0, nprocs - 1
        e = ior(e, ishft(1, mod(r + it, 30)))
      end do
      if (orv /= e) bad = bad + 1
      if (got /= mod(rank + nprocs - 1, nprocs) * 10 + it) bad = bad + 1
      call MPI_TEST(q4(1), flag, MPI_STATUS_IGNORE, ier)
      if (.not. flag .or. q4(1) == MPI_REQUEST_NULL) bad = bad + 1
    end do

    if (nprocs <= pmax) then
      if (rank == 0) then
        call P_REDUCE_INIT(MPI_IN_PLACE, pd, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, &
                           MPI_INFO_NULL, q6(1), ier)
      else
        call P_REDUCE_INIT(pd, pdr, n, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, &
                           MPI_INFO_NULL, q6(1), ier)
      end if
      call P_BCAST_INIT(pe, n, MPI_INTEGER, nprocs - 1, MPI_COMM_WORLD, MPI_INFO_NULL, q6(2), ier)
      call P_ALLGATHER_INIT(pg, m, MPI_INTEGER, pgr, m, MPI_INTEGER, MPI_COMM_WORLD, &
                            MPI_INFO_NULL, q6(3), ier)
      call P_REDUCE_SCATTER_BLOCK_INIT(ps, psr, m, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                                       MPI_INFO_NULL, q6(4), ier)
      call P_ALLTOALL_INIT(pt, m, MPI_INTEGER, ptr, m, MPI_INTEGER, MPI_COMM_WORLD, &
                           MPI_INFO_NULL, q6(5), ier)
      call P_BARRIER_INIT(MPI_COMM_WORLD, MPI_INFO_NULL, q6(6), ier)
      do it = 1, 3
        do i = 1, n
          pd(i) = rank + i * it
          pe(i) = -1
          if (rank == nprocs - 1) pe(i) = 1000 * it + i
        end do
        pg = rank * 10 + it
        do k = 1, m * nprocs
          ps(k) = rank + k * it
          pt(k) = rank * 100 + k + it
        end do
        call MPI_STARTALL(6, q6, ier)
        if (ier /= MPI_SUCCESS) bad = bad + 1
        call MPI_WAITALL(6, q6, MPI_STATUSES_IGNORE, ier)
        if (ier /= MPI_SUCCESS .or. any(q6 == MPI_REQUEST_NULL)) bad = bad + 1
        if (rank == 0) then
          do i = 1, n
            if (pd(i) /= nprocs * (nprocs - 1) / 2 + nprocs * i * it) bad = bad + 1
          end do
        end if
        do i = 1, n
          if (pe(i) /= 1000 * it + i) bad = bad + 1
        end do
        do r = 0, nprocs - 1
          do k = 1, m
            if (pgr(r * m + k) /= r * 10 + it) bad = bad + 1
            if (ptr(r * m + k) /= r * 100 + rank * m + k + it) bad = bad + 1
          end do
        end do
        do k = 1, m
          if (psr(k) /= nprocs * (nprocs - 1) / 2 + nprocs * (rank * m + k) * it) bad = bad + 1
        end do
      end do
      do k = 1, 6
        call MPI_REQUEST_FREE(q6(k), ier)
      end do
      if (any(q6 /= MPI_REQUEST_NULL)) bad = bad + 1
    end if

    call MPI_REQUEST_FREE(q1, ier)
    if (ier /= MPI_SUCCESS .or. q1 /= MPI_REQUEST_NULL) bad = bad + 1
    do k = 1, 4
      call MPI_REQUEST_FREE(q4(k), ier)
    end do
    if (any(q4 /= MPI_REQUEST_NULL)) bad = bad + 1
  end subroutine persistent_checks
#endif
end program test_dropin_f
