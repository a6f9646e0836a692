! SPDX-License-Identifier: BSD-3-Clause
! The Fortran binding (module gcoll) against mpi_f08's own collectives,
! under mpirun (run_fortran.sh: 1-4 ranks, and 4 ranks as 2 simulated nodes).
!
! Every rank's input is a known function of (rank, index) with small integer
! values (-2..2), so sums and products are exact in every type and libgcoll
! must give MPI's bytes exactly.  Buffers are byte arrays with a guard tail,
! filled alike for both sides, and compared whole: a result written past its
! end differs too.  Types float32, float64, int32, int64; counts 0, 1, 1001
! (not a multiple of 2, 3 or 4) and 7919 (prime); every collective, every op
! (AVG against MPI's SUM divided by the rank count), roots 0 and size-1, the
! in-place forms; the same for the nonblocking forms (all outstanding at
! once, a blocking call posted among them, waited in reverse order), a
! gcoll_test loop, and the persistent forms started three times on changing
! input (waited one by one and by gcoll_waitall); then the constants against
! the C header, the stats counters (one call per completed request), and
! bad input (each must return GCOLL_ERR_INVALID_ARG with a sentence in
! gcoll_last_error, non-contiguous buffers of nonblocking calls included,
! and the communicator must still work).  Last, the compressor calls on a
! communicator of one rank per node (GCOLL_NODE_SIZE=1, so the inter-node
! step compresses from 2 ranks on) against references computed here: BF16
! on small integers and TopK at ratio 1 are exact, blocking, nonblocking
! and in place; 1-bit's error feedback changes the next output for the
! same input (and without it the output does not change, and after
! gcoll_compressor_reset it is the first one again), and brings the mean of
! 100 outputs at least twice as close to the exact sum; bad parameters are
! refused with the right ierr.
!
! Prints "test_bindings: N ranks: ok (K checks on rank 0, M on all ranks)" and
! exits 0, or lists the failures and exits 1.
program test_bindings
    use, intrinsic :: iso_c_binding
    use mpi_f08
    use gcoll
    implicit none

    interface
        integer(c_int) function gcoll_test_enum_values(v, cap) bind(c, name='gcoll_test_enum_values')
            import :: c_int
            integer(c_int), intent(out) :: v(*)
            integer(c_int), value :: cap
        end function
        integer(c_int) function c_setenv(name, value, overwrite) bind(c, name='setenv')
            import :: c_int, c_char
            character(kind=c_char), dimension(*), intent(in) :: name, value
            integer(c_int), value :: overwrite
        end function
        integer(c_int) function c_unsetenv(name) bind(c, name='unsetenv')
            import :: c_int, c_char
            character(kind=c_char), dimension(*), intent(in) :: name
        end function
    end interface

    integer, parameter :: NT = 4, GUARD = 64
    integer, parameter :: gtype(NT) = [GCOLL_FLOAT32, GCOLL_FLOAT64, GCOLL_INT32, GCOLL_INT64]
    character(len=7), parameter :: tname(NT) = ['float32', 'float64', 'int32  ', 'int64  ']
    integer, parameter :: esize(NT) = [4, 8, 4, 8]
    integer, parameter :: counts(4) = [0, 1, 1001, 7919]
    integer, parameter :: gop(4) = [GCOLL_SUM, GCOLL_PROD, GCOLL_MIN, GCOLL_MAX]
    type(MPI_Datatype) :: mtype(NT)
    type(MPI_Op) :: mop(4)

    integer :: rank, nranks, checks = 0, failures = 0, gcalls = 0
    type(gcoll_comm_t) :: comm
    type(gcoll_stats_t) :: s0
    integer :: t, c, ierr, total, allchecks

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nranks)
    mtype = [MPI_REAL, MPI_DOUBLE_PRECISION, MPI_INTEGER, MPI_INTEGER8]
    mop = [MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX]

    call test_constants()
    call gcoll_comm_create(MPI_COMM_WORLD, comm, ierr)
    call expect(ierr == GCOLL_SUCCESS, 'gcoll_comm_create: '//gcoll_last_error())
    if (ierr /= GCOLL_SUCCESS) call MPI_Abort(MPI_COMM_WORLD, 1)
    call test_rank_size()
    call gcoll_comm_get_stats(comm, s0, ierr)
    call expect(ierr == GCOLL_SUCCESS, 'gcoll_comm_get_stats')

    do t = 1, NT
        do c = 1, size(counts)
            call test_allreduce(t, counts(c))
            call test_reduce(t, counts(c))
            call test_bcast(t, counts(c))
            call test_allgather(t, counts(c))
            call test_reduce_scatter(t, counts(c))
            call test_alltoall(t, counts(c))
        end do
    end do
    call gcoll_barrier(comm, ierr)
    call ok(ierr, 'gcoll_barrier')
    call test_count_kinds()
    do t = 1, NT
        do c = 1, size(counts)
            call test_nonblocking(t, counts(c))
        end do
    end do
    call test_test_loop()
    call test_waitall()
    call test_persistent()
    call test_stats()
    call test_bad_input()
    call test_nonblocking_bad_input()
    call test_compression()
    call gcoll_comm_destroy(comm, ierr)
    call expect(ierr == GCOLL_SUCCESS, 'gcoll_comm_destroy')

    call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call MPI_Allreduce(checks, allchecks, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0) then
        if (total == 0) then
            print '(a,i0,a,i0,a,i0,a)', 'test_bindings: ', nranks, ' ranks: ok (', checks, &
                ' checks on rank 0, ', allchecks, ' on all ranks)'
        else
            print '(a,i0,a,i0,a,i0,a)', 'test_bindings: ', nranks, ' ranks: FAILED (', total, &
                ' failures, ', checks, ' checks on rank 0)'
        end if
    end if
    call MPI_Finalize()
    if (total /= 0) error stop 1

contains

    ! ---------------------------------------------------------- checking --

    subroutine expect(cond, what)
        logical, intent(in) :: cond
        character(len=*), intent(in) :: what
        checks = checks + 1
        if (cond) return
        failures = failures + 1
        if (failures <= 20) print '(a,i0,2a)', 'FAIL rank ', rank, ': ', what
    end subroutine

    !> A collective's status: must be GCOLL_SUCCESS; counts the calls for the stats check.
    subroutine ok(st, what)
        integer, intent(in) :: st
        character(len=*), intent(in) :: what
        if (st == GCOLL_SUCCESS) gcalls = gcalls + 1
        call expect(st == GCOLL_SUCCESS, what//': '//gcoll_strerror(st)//': '//gcoll_last_error())
    end subroutine

    !> Bit-for-bit comparison of libgcoll's bytes with MPI's.
    subroutine same(what, got, want)
        character(len=*), intent(in) :: what
        integer(c_int8_t), intent(in) :: got(:), want(:)
        integer :: i
        character(len=24) :: at
        do i = 1, min(size(got), size(want))
            if (got(i) /= want(i)) exit
        end do
        if (size(got) == size(want) .and. i > size(got)) then
            call expect(.true., what)
        else
            write (at, '(a,i0)') ' differs at byte ', i - 1
            call expect(.false., what//trim(at))
        end if
    end subroutine

    function label(coll, t, n, extra) result(s)
        character(len=*), intent(in) :: coll, extra
        integer, intent(in) :: t, n
        character(len=:), allocatable :: s
        character(len=16) :: num
        write (num, '(i0)') n
        s = coll//' '//trim(tname(t))//' n='//trim(num)//' '//extra
    end function

    ! ------------------------------------------------------------- data --

    !> A byte buffer of `elems` elements of type t plus a guard, every byte
    !> 0x50 + rank: a peer's bytes copied past the end show as a difference.
    subroutine new(buf, t, elems)
        integer(c_int8_t), allocatable, intent(out) :: buf(:)
        integer, intent(in) :: t, elems
        allocate (buf(elems * esize(t) + GUARD))
        buf = int(80 + rank, c_int8_t)
    end subroutine

    !> Elements [0, n) of buf: value (i*7 + r*3 + salt) mod 5 - 2 in type t.
    subroutine fill(buf, t, n, r, salt)
        integer(c_int8_t), target, contiguous, intent(inout) :: buf(:)
        integer, intent(in) :: t, n, r, salt
        real(c_float), pointer :: f4(:)
        real(c_double), pointer :: f8(:)
        integer(c_int32_t), pointer :: i4(:)
        integer(c_int64_t), pointer :: i8(:)
        integer :: i
        select case (gtype(t))
        case (GCOLL_FLOAT32)
            call c_f_pointer(c_loc(buf(1)), f4, [n])
            f4 = [(real(value(i, r, salt), c_float), i = 0, n - 1)]
        case (GCOLL_FLOAT64)
            call c_f_pointer(c_loc(buf(1)), f8, [n])
            f8 = [(real(value(i, r, salt), c_double), i = 0, n - 1)]
        case (GCOLL_INT32)
            call c_f_pointer(c_loc(buf(1)), i4, [n])
            i4 = [(int(value(i, r, salt), c_int32_t), i = 0, n - 1)]
        case (GCOLL_INT64)
            call c_f_pointer(c_loc(buf(1)), i8, [n])
            i8 = [(int(value(i, r, salt), c_int64_t), i = 0, n - 1)]
        end select
    end subroutine

    integer function value(i, r, salt)
        integer, intent(in) :: i, r, salt
        value = mod(i * 7 + r * 3 + salt, 5) - 2
    end function

    !> Elements [0, n) of buf divided by `by`, as libgcoll's AVG divides its
    !> sum: IEEE division for floats, truncation toward zero for integers.
    subroutine divide(buf, t, n, by)
        integer(c_int8_t), target, contiguous, intent(inout) :: buf(:)
        integer, intent(in) :: t, n, by
        real(c_float), pointer :: f4(:)
        real(c_double), pointer :: f8(:)
        integer(c_int32_t), pointer :: i4(:)
        integer(c_int64_t), pointer :: i8(:)
        select case (gtype(t))
        case (GCOLL_FLOAT32)
            call c_f_pointer(c_loc(buf(1)), f4, [n])
            f4 = f4 / real(by, c_float)
        case (GCOLL_FLOAT64)
            call c_f_pointer(c_loc(buf(1)), f8, [n])
            f8 = f8 / real(by, c_double)
        case (GCOLL_INT32)
            call c_f_pointer(c_loc(buf(1)), i4, [n])
            i4 = i4 / int(by, c_int32_t)
        case (GCOLL_INT64)
            call c_f_pointer(c_loc(buf(1)), i8, [n])
            i8 = i8 / int(by, c_int64_t)
        end select
    end subroutine

    ! ------------------------------------------------------ collectives --

    subroutine test_allreduce(t, n)
        integer, intent(in) :: t, n
        integer(c_int8_t), allocatable, target :: x(:), got(:), want(:), avg(:)
        integer :: o, st
        call new(x, t, n)
        call fill(x, t, n, rank, 0)
        do o = 1, 4
            call new(got, t, n)
            call new(want, t, n)
            call gcoll_allreduce(x, got, n, gtype(t), gop(o), comm, st)
            call ok(st, label('allreduce', t, n, gcoll_op_name(gop(o))))
            call MPI_Allreduce(x, want, n, mtype(t), mop(o), MPI_COMM_WORLD)
            call same(label('allreduce', t, n, gcoll_op_name(gop(o))), got, want)
            ! in place: the same array as send and receive buffer
            got = x
            call gcoll_allreduce(got, got, n, gtype(t), gop(o), comm, st)
            call ok(st, label('allreduce', t, n, gcoll_op_name(gop(o))//' in place'))
            call same(label('allreduce', t, n, gcoll_op_name(gop(o))//' in place'), got, want)
            if (gop(o) == GCOLL_SUM) avg = want
        end do
        call divide(avg, t, n, nranks)
        call new(got, t, n)
        call gcoll_allreduce(x, got, n, gtype(t), GCOLL_AVG, comm, st)
        call ok(st, label('allreduce', t, n, 'avg'))
        call same(label('allreduce', t, n, 'avg'), got, avg)
        got = x
        call gcoll_allreduce(got, got, n, gtype(t), GCOLL_AVG, comm, st)
        call ok(st, label('allreduce', t, n, 'avg in place'))
        call same(label('allreduce', t, n, 'avg in place'), got, avg)
    end subroutine

    subroutine test_reduce(t, n)
        integer, intent(in) :: t, n
        integer(c_int8_t), allocatable, target :: x(:), got(:), want(:)
        integer :: o, root, st, k
        character(len=16) :: r
        integer, parameter :: ops(5) = [GCOLL_SUM, GCOLL_PROD, GCOLL_MIN, GCOLL_MAX, GCOLL_AVG]
        integer, parameter :: mpiop(5) = [1, 2, 3, 4, 1]   ! index into mop: AVG is MPI's SUM / size
        call new(x, t, n)
        call fill(x, t, n, rank, 1)
        do k = 1, 2
            root = merge(0, nranks - 1, k == 1)
            write (r, '(a,i0,a)') 'root=', root, ' '
            do o = 1, 5
                call new(got, t, n)
                call new(want, t, n)
                if (rank == root) then
                    call gcoll_reduce(x, got, n, gtype(t), ops(o), root, comm, st)
                else   ! recvbuf is used on the root only: leave it out
                    call gcoll_reduce(x, count=n, dtype=gtype(t), op=ops(o), root=root, comm=comm, ierr=st)
                end if
                call ok(st, label('reduce', t, n, trim(r)//' '//gcoll_op_name(ops(o))))
                call MPI_Reduce(x, want, n, mtype(t), mop(mpiop(o)), root, MPI_COMM_WORLD)
                if (ops(o) == GCOLL_AVG .and. rank == root) call divide(want, t, n, nranks)
                if (rank == root) call same(label('reduce', t, n, trim(r)//' '//gcoll_op_name(ops(o))), got, want)
                ! in place on the root
                if (rank == root) then
                    got = x
                    call gcoll_reduce(got, got, n, gtype(t), ops(o), root, comm, st)
                else
                    call gcoll_reduce(x, count=n, dtype=gtype(t), op=ops(o), root=root, comm=comm, ierr=st)
                end if
                call ok(st, label('reduce', t, n, trim(r)//' '//gcoll_op_name(ops(o))//' in place'))
                if (rank == root) call same(label('reduce', t, n, trim(r)//' '//gcoll_op_name(ops(o))//' in place'), got, want)
            end do
        end do
    end subroutine

    subroutine test_bcast(t, n)
        integer, intent(in) :: t, n
        integer(c_int8_t), allocatable, target :: got(:), want(:)
        integer :: root, st, k
        character(len=16) :: r
        do k = 1, 2
            root = merge(0, nranks - 1, k == 1)
            write (r, '(a,i0)') 'root=', root
            call new(got, t, n)
            call fill(got, t, n, rank, 2)
            want = got
            call gcoll_bcast(got, n, gtype(t), root, comm, st)
            call ok(st, label('bcast', t, n, trim(r)))
            call MPI_Bcast(want, n, mtype(t), root, MPI_COMM_WORLD)
            call same(label('bcast', t, n, trim(r)), got, want)
        end do
    end subroutine

    subroutine test_allgather(t, n)
        integer, intent(in) :: t, n
        integer(c_int8_t), allocatable, target :: x(:), got(:), want(:)
        integer :: st, off, nb
        nb = n * esize(t)
        call new(x, t, n)
        call fill(x, t, n, rank, 3)
        call new(got, t, nranks * n)
        call new(want, t, nranks * n)
        call gcoll_allgather(x, got, n, gtype(t), comm, st)
        call ok(st, label('allgather', t, n, ''))
        call MPI_Allgather(x, n, mtype(t), want, n, mtype(t), MPI_COMM_WORLD)
        call same(label('allgather', t, n, ''), got, want)
        ! in place: sendbuf is this rank's block of recvbuf (a section, not an
        ! element: generic names match arrays only)
        call new(got, t, nranks * n)
        off = rank * nb
        got(off + 1:off + nb) = x(1:nb)
        call gcoll_allgather(got(off + 1:), got, n, gtype(t), comm, st)
        call ok(st, label('allgather', t, n, 'in place'))
        call same(label('allgather', t, n, 'in place'), got, want)
    end subroutine

    subroutine test_reduce_scatter(t, n)
        integer, intent(in) :: t, n
        integer(c_int8_t), allocatable, target :: x(:), got(:), want(:), inplace(:)
        integer :: o, st, off, nb
        nb = n * esize(t)
        off = rank * nb
        call new(x, t, nranks * n)
        call fill(x, t, nranks * n, rank, 4)
        do o = 1, 4
            call new(got, t, n)
            call new(want, t, n)
            call gcoll_reduce_scatter(x, got, n, gtype(t), gop(o), comm, st)
            call ok(st, label('reduce_scatter', t, n, gcoll_op_name(gop(o))))
            call MPI_Reduce_scatter_block(x, want, n, mtype(t), mop(o), MPI_COMM_WORLD)
            call same(label('reduce_scatter', t, n, gcoll_op_name(gop(o))), got, want)
            ! in place: recvbuf is this rank's block of sendbuf
            inplace = x
            call gcoll_reduce_scatter(inplace, inplace(off + 1:), n, gtype(t), gop(o), comm, st)
            call ok(st, label('reduce_scatter', t, n, gcoll_op_name(gop(o))//' in place'))
            call same(label('reduce_scatter', t, n, gcoll_op_name(gop(o))//' in place'), &
                      inplace(off + 1:off + nb), want(1:nb))
        end do
        call new(got, t, n)
        call gcoll_reduce_scatter(x, got, n, gtype(t), GCOLL_AVG, comm, st)
        call ok(st, label('reduce_scatter', t, n, 'avg'))
        call new(want, t, n)
        call MPI_Reduce_scatter_block(x, want, n, mtype(t), MPI_SUM, MPI_COMM_WORLD)
        call divide(want, t, n, nranks)
        call same(label('reduce_scatter', t, n, 'avg'), got, want)
    end subroutine

    subroutine test_alltoall(t, n)
        integer, intent(in) :: t, n
        integer(c_int8_t), allocatable, target :: x(:), got(:), want(:)
        integer :: st
        call new(x, t, nranks * n)
        call fill(x, t, nranks * n, rank, 5)
        call new(got, t, nranks * n)
        call new(want, t, nranks * n)
        call gcoll_alltoall(x, got, n, gtype(t), comm, st)
        call ok(st, label('alltoall', t, n, ''))
        call MPI_Alltoall(x, n, mtype(t), want, n, mtype(t), MPI_COMM_WORLD)
        call same(label('alltoall', t, n, ''), got, want)
    end subroutine

    !> The generic's integer(c_int64_t) counts reach the same code.
    subroutine test_count_kinds()
        real(c_double) :: x(5), y(5), ref(5)
        integer :: st
        x = [1, 2, 3, 4, 5] * real(rank + 1, c_double)
        call gcoll_allreduce(x, y, 5_c_int64_t, GCOLL_FLOAT64, GCOLL_SUM, comm, st)
        call ok(st, 'allreduce with a c_int64_t count')
        call MPI_Allreduce(x, ref, 5, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
        call expect(all(transfer(y, 1_c_int64_t, 5) == transfer(ref, 1_c_int64_t, 5)), 'allreduce with a c_int64_t count: result')
        y = x
        call gcoll_bcast(y, 5_c_int64_t, GCOLL_FLOAT64, 0, comm, st)
        call ok(st, 'bcast with a c_int64_t count')
        call expect(all(nint(y) == [1, 2, 3, 4, 5]), 'bcast with a c_int64_t count: result')
    end subroutine

    ! ------------------------------------------- nonblocking, persistent --

    !> A post's status: must be GCOLL_SUCCESS; not a completed call (ok() counts those).
    subroutine posted(st, what)
        integer, intent(in) :: st
        character(len=*), intent(in) :: what
        call expect(st == GCOLL_SUCCESS, what//': '//gcoll_strerror(st)//': '//gcoll_last_error())
    end subroutine

    !> Every nonblocking collective outstanding at once (in-place allgather
    !> too), a blocking allreduce posted after them, all waited in reverse
    !> order; then each result against MPI's own collective.
    subroutine test_nonblocking(t, n)
        integer, intent(in) :: t, n
        integer(c_int8_t), allocatable, target, asynchronous :: xa(:), ga(:), xb(:), xr(:), gr(:), &
            xg(:), gg(:), gi(:), xs(:), gs(:), xt(:), gt(:)
        integer(c_int8_t), allocatable, target :: y(:), want(:)
        type(gcoll_request_t) :: req(8)
        integer :: st, k, root, nb
        root = nranks - 1
        nb = n * esize(t)
        call new(xa, t, n)
        call fill(xa, t, n, rank, 6)
        call new(ga, t, n)
        call gcoll_iallreduce(xa, ga, n, gtype(t), GCOLL_MAX, comm, req(1), st)
        call posted(st, label('iallreduce', t, n, 'max'))
        call new(xb, t, n)
        call fill(xb, t, n, rank, 7)
        call gcoll_ibcast(xb, n, gtype(t), root, comm, req(2), st)
        call posted(st, label('ibcast', t, n, ''))
        call new(xr, t, n)
        call fill(xr, t, n, rank, 8)
        call new(gr, t, n)
        if (rank == 0) then
            call gcoll_ireduce(xr, gr, n, gtype(t), GCOLL_SUM, 0, comm, req(3), st)
        else
            call gcoll_ireduce(xr, count=n, dtype=gtype(t), op=GCOLL_SUM, root=0, comm=comm, &
                               request=req(3), ierr=st)
        end if
        call posted(st, label('ireduce', t, n, ''))
        call new(xg, t, n)
        call fill(xg, t, n, rank, 9)
        call new(gg, t, nranks * n)
        call gcoll_iallgather(xg, gg, n, gtype(t), comm, req(4), st)
        call posted(st, label('iallgather', t, n, ''))
        call new(gi, t, nranks * n)
        gi(rank * nb + 1:rank * nb + nb) = xg(1:nb)
        call gcoll_iallgather(gi(rank * nb + 1:), gi, n, gtype(t), comm, req(5), st)
        call posted(st, label('iallgather', t, n, 'in place'))
        call new(xs, t, nranks * n)
        call fill(xs, t, nranks * n, rank, 10)
        call new(gs, t, n)
        call gcoll_ireduce_scatter(xs, gs, n, gtype(t), GCOLL_MIN, comm, req(6), st)
        call posted(st, label('ireduce_scatter', t, n, ''))
        call new(xt, t, nranks * n)
        call fill(xt, t, nranks * n, rank, 11)
        call new(gt, t, nranks * n)
        call gcoll_ialltoall(xt, gt, n, gtype(t), comm, req(7), st)
        call posted(st, label('ialltoall', t, n, ''))
        call gcoll_ibarrier(comm, req(8), st)
        call posted(st, 'ibarrier')
        call new(y, t, n)
        call gcoll_allreduce(xa, y, n, gtype(t), GCOLL_SUM, comm, st)
        call ok(st, label('allreduce among outstanding requests', t, n, ''))
        do k = size(req), 1, -1
            call gcoll_wait(req(k), st)
            call ok(st, label('gcoll_wait', t, n, 'reverse order'))
            call expect(req(k) == GCOLL_REQUEST_NULL, label('completed request is null', t, n, ''))
        end do

        call new(want, t, n)
        call MPI_Allreduce(xa, want, n, mtype(t), MPI_MAX, MPI_COMM_WORLD)
        call same(label('iallreduce', t, n, 'max'), ga, want)
        call MPI_Allreduce(xa, want, n, mtype(t), MPI_SUM, MPI_COMM_WORLD)
        call same(label('allreduce among outstanding requests', t, n, ''), y, want)
        call new(want, t, n)
        call fill(want, t, n, rank, 7)
        call MPI_Bcast(want, n, mtype(t), root, MPI_COMM_WORLD)
        call same(label('ibcast', t, n, ''), xb, want)
        call new(want, t, n)
        call MPI_Reduce(xr, want, n, mtype(t), MPI_SUM, 0, MPI_COMM_WORLD)
        if (rank == 0) call same(label('ireduce', t, n, ''), gr, want)
        call new(want, t, nranks * n)
        call MPI_Allgather(xg, n, mtype(t), want, n, mtype(t), MPI_COMM_WORLD)
        call same(label('iallgather', t, n, ''), gg, want)
        call same(label('iallgather', t, n, 'in place'), gi, want)
        call new(want, t, n)
        call MPI_Reduce_scatter_block(xs, want, n, mtype(t), MPI_MIN, MPI_COMM_WORLD)
        call same(label('ireduce_scatter', t, n, 'min'), gs, want)
        call new(want, t, nranks * n)
        call MPI_Alltoall(xt, n, mtype(t), want, n, mtype(t), MPI_COMM_WORLD)
        call same(label('ialltoall', t, n, ''), gt, want)
    end subroutine

    !> gcoll_test until both of two requests are done, tested last-posted first.
    subroutine test_test_loop()
        integer, parameter :: n = 7919
        real(c_double), allocatable, target, asynchronous :: a(:), ga(:), b(:), gb(:)
        real(c_double), allocatable :: ra(:), rb(:)
        type(gcoll_request_t) :: r(2)
        logical :: done(2), flag
        integer :: st, k, i, loops
        a = [(real(value(i, rank, 12), c_double), i = 0, n - 1)]
        b = [(real(value(i, rank, 13), c_double), i = 0, nranks * n - 1)]
        allocate (ga(n), gb(nranks * n), ra(n), rb(nranks * n))
        call gcoll_iallreduce(a, ga, n, GCOLL_FLOAT64, GCOLL_SUM, comm, r(1), st)
        call posted(st, 'iallreduce for the test() loop')
        call gcoll_ialltoall(b, gb, n, GCOLL_FLOAT64, comm, r(2), st)
        call posted(st, 'ialltoall for the test() loop')
        done = .false.
        loops = 0
        do while (.not. all(done) .and. loops < 100000000)
            loops = loops + 1
            do k = 2, 1, -1
                if (done(k)) cycle
                call gcoll_test(r(k), done(k), st)
                if (done(k)) call ok(st, 'gcoll_test completion')
            end do
        end do
        call expect(all(done), 'gcoll_test loop finished')
        call expect(all(r == GCOLL_REQUEST_NULL), 'requests completed by gcoll_test are null')
        call MPI_Allreduce(a, ra, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
        call MPI_Alltoall(b, n, MPI_DOUBLE_PRECISION, rb, n, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
        call expect(all(transfer(ga, 1_c_int64_t, n) == transfer(ra, 1_c_int64_t, n)), &
                    'iallreduce by gcoll_test equals MPI_Allreduce')
        call expect(all(transfer(gb, 1_c_int64_t, nranks * n) == transfer(rb, 1_c_int64_t, nranks * n)), &
                    'ialltoall by gcoll_test equals MPI_Alltoall')
        flag = .false.
        call gcoll_test(r(1), flag, st)
        call expect(st == GCOLL_SUCCESS .and. flag, 'gcoll_test of GCOLL_REQUEST_NULL: done at once')
        call gcoll_wait(r(1), st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_wait of GCOLL_REQUEST_NULL')
    end subroutine

    !> gcoll_waitall of non-persistent requests (then null) on columns of a
    !> 2-D array, and a whole 2-D array as one buffer (assumed rank).
    subroutine test_waitall()
        integer(c_int64_t), target, asynchronous :: a(3, 4), g(3, 4), w(3, 4)
        type(gcoll_request_t) :: r(3)
        integer :: st, k
        do k = 1, 4
            a(:, k) = rank + k
        end do
        g = -1
        do k = 1, 3
            call gcoll_iallreduce(a(:, k), g(:, k), 3, GCOLL_INT64, GCOLL_SUM, comm, r(k), st)
            call posted(st, 'iallreduce of a column')
        end do
        call gcoll_waitall(3, r, st)
        call ok(st, 'gcoll_waitall of non-persistent requests')
        if (st == GCOLL_SUCCESS) gcalls = gcalls + 2
        call expect(all(r == GCOLL_REQUEST_NULL), 'gcoll_waitall sets completed requests to null')
        call MPI_Allreduce(a, w, 12, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD)
        call expect(all(g(:, 1:3) == w(:, 1:3)) .and. all(g(:, 4) == -1), &
                    'iallreduce of columns by gcoll_waitall equals MPI_Allreduce')
        call gcoll_iallreduce(a, g, 12, GCOLL_INT64, GCOLL_SUM, comm, r(1), st)
        call posted(st, 'iallreduce of a 2-D array')
        call gcoll_wait(r(1), st)
        call ok(st, 'gcoll_wait of a 2-D iallreduce')
        call expect(all(g == w), 'iallreduce of a 2-D array equals MPI_Allreduce')
    end subroutine

    !> Every persistent collective started 3 times on changing input, waited
    !> in reverse order (gcoll_waitall the second time), against MPI's; then
    !> freed.
    subroutine test_persistent()
        integer, parameter :: n = 1001
        integer(c_int32_t), allocatable, target, asynchronous :: x(:), y(:), b(:), gr(:), gg(:), &
            xs(:), gs(:), gt(:)
        integer(c_int32_t), allocatable :: want(:)
        type(gcoll_request_t) :: p(7)
        integer :: st, k, i, step, root
        character(len=8) :: s
        root = nranks - 1
        allocate (x(n), y(n), b(n), gr(n), gg(nranks * n), xs(nranks * n), gs(n), gt(nranks * n))
        call gcoll_allreduce_init(x, y, n, GCOLL_INT32, GCOLL_SUM, comm, p(1), st)
        call posted(st, 'allreduce_init')
        call gcoll_bcast_init(b, n, GCOLL_INT32, root, comm, p(2), st)
        call posted(st, 'bcast_init')
        if (rank == 0) then
            call gcoll_reduce_init(x, gr, n, GCOLL_INT32, GCOLL_PROD, 0, comm, p(3), st)
        else
            call gcoll_reduce_init(x, count=n, dtype=GCOLL_INT32, op=GCOLL_PROD, root=0, comm=comm, &
                                   request=p(3), ierr=st)
        end if
        call posted(st, 'reduce_init')
        call gcoll_allgather_init(x, gg, n, GCOLL_INT32, comm, p(4), st)
        call posted(st, 'allgather_init')
        call gcoll_reduce_scatter_init(xs, gs, n, GCOLL_INT32, GCOLL_MAX, comm, p(5), st)
        call posted(st, 'reduce_scatter_init')
        call gcoll_alltoall_init(xs, gt, n, GCOLL_INT32, comm, p(6), st)
        call posted(st, 'alltoall_init')
        call gcoll_barrier_init(comm, p(7), st)
        call posted(st, 'barrier_init')
        do step = 1, 3
            write (s, '(a,i0)') ' step ', step
            x = [(int(value(i, rank, step), c_int32_t), i = 0, n - 1)]
            xs = [(int(value(i, rank, 10 + step), c_int32_t), i = 0, nranks * n - 1)]
            b = merge(x + 1, -99 + 0 * x, rank == root)
            do k = 1, size(p)
                call gcoll_start(p(k), st)
                call posted(st, 'gcoll_start'//trim(s))
            end do
            if (step == 2) then
                call gcoll_waitall(size(p), p, st)
                call ok(st, 'gcoll_waitall of persistent requests')
                if (st == GCOLL_SUCCESS) gcalls = gcalls + size(p) - 1
            else
                do k = size(p), 1, -1
                    call gcoll_wait(p(k), st)
                    call ok(st, 'gcoll_wait of a persistent request'//trim(s))
                end do
            end if
            call expect(all(p /= GCOLL_REQUEST_NULL), 'persistent requests stay valid'//trim(s))
            allocate (want(n))
            call MPI_Allreduce(x, want, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
            call expect(all(y == want), 'persistent allreduce'//trim(s))
            call MPI_Reduce(x, want, n, MPI_INTEGER, MPI_PROD, 0, MPI_COMM_WORLD)
            if (rank == 0) call expect(all(gr == want), 'persistent reduce'//trim(s))
            call MPI_Reduce_scatter_block(xs, want, n, MPI_INTEGER, MPI_MAX, MPI_COMM_WORLD)
            call expect(all(gs == want), 'persistent reduce_scatter'//trim(s))
            want = merge(x + 1, -99 + 0 * x, rank == root)
            call MPI_Bcast(want, n, MPI_INTEGER, root, MPI_COMM_WORLD)
            call expect(all(b == want), 'persistent bcast'//trim(s))
            deallocate (want)
            allocate (want(nranks * n))
            call MPI_Allgather(x, n, MPI_INTEGER, want, n, MPI_INTEGER, MPI_COMM_WORLD)
            call expect(all(gg == want), 'persistent allgather'//trim(s))
            call MPI_Alltoall(xs, n, MPI_INTEGER, want, n, MPI_INTEGER, MPI_COMM_WORLD)
            call expect(all(gt == want), 'persistent alltoall'//trim(s))
            deallocate (want)
        end do
        do k = 1, size(p)
            call gcoll_request_free(p(k), st)
            call expect(st == GCOLL_SUCCESS .and. p(k) == GCOLL_REQUEST_NULL, 'gcoll_request_free')
        end do
        call gcoll_start(p(1), st)
        call invalid(st, 'gcoll_start of a freed (null) request')
    end subroutine

    !> Each must return GCOLL_ERR_INVALID_ARG with a sentence and leave the
    !> request null; scalars are buffers too; the communicator still works.
    subroutine test_nonblocking_bad_input()
        real(c_float), target, asynchronous :: x(8), y(8)
        integer(c_int32_t), target, asynchronous :: one, tot
        type(gcoll_request_t) :: r, rs(1)
        integer :: st, st2
        x = 1
        call gcoll_iallreduce(x, y, -1, GCOLL_FLOAT32, GCOLL_SUM, comm, r, st)
        call invalid(st, 'iallreduce count = -1')
        call expect(r == GCOLL_REQUEST_NULL, 'no request from a failed post')
        call gcoll_ibcast(x, 8, GCOLL_FLOAT32, nranks, comm, r, st)
        call invalid(st, 'ibcast root = size')
        call gcoll_ireduce_scatter(x, y, 1_c_int64_t, 99, GCOLL_SUM, comm, r, st)
        call invalid(st, 'ireduce_scatter dtype = 99')
        call gcoll_iallreduce(x(1:8:2), y, 4, GCOLL_FLOAT32, GCOLL_SUM, comm, r, st)
        call invalid(st, 'iallreduce of a non-contiguous sendbuf')
        call expect(index(gcoll_last_error(), 'sendbuf is not contiguous') > 0, &
                    'non-contiguous: the sentence names sendbuf: '//gcoll_last_error())
        call gcoll_allgather_init(x, y(1:8:2), 1, GCOLL_FLOAT32, comm, r, st)
        call invalid(st, 'allgather_init into a non-contiguous recvbuf')
        call expect(r == GCOLL_REQUEST_NULL, 'no request from a non-contiguous buffer')
        call gcoll_waitall(-1, rs, st)
        call invalid(st, 'gcoll_waitall count = -1')
        call gcoll_ibarrier(comm, r, st)
        call posted(st, 'ibarrier')
        call gcoll_start(r, st2)
        call invalid(st2, 'gcoll_start of a non-persistent request')
        call gcoll_wait(r, st)
        call ok(st, 'gcoll_wait of the ibarrier')
        one = int(rank + 1, c_int32_t)
        tot = -1
        call gcoll_iallreduce(one, tot, 1, GCOLL_INT32, GCOLL_SUM, comm, r, st)
        call posted(st, 'iallreduce of a scalar')
        call gcoll_wait(r, st)
        call ok(st, 'gcoll_wait of the scalar iallreduce')
        call expect(tot == nranks * (nranks + 1) / 2, 'iallreduce of a scalar: result')
    end subroutine

    ! ---------------------------------------------- constants, counters --

    subroutine test_constants()
        integer, parameter :: mine(36) = [GCOLL_VERSION_MAJOR, GCOLL_VERSION_MINOR, &
            GCOLL_VERSION_PATCH, GCOLL_VERSION, &
            GCOLL_SUCCESS, GCOLL_ERR_INVALID_ARG, GCOLL_ERR_NO_MEMORY, GCOLL_ERR_NOT_SUPPORTED, &
            GCOLL_ERR_TRANSPORT, GCOLL_ERR_TIMEOUT, GCOLL_ERR_MISMATCH, GCOLL_ERR_INTERNAL, &
            GCOLL_STATUS_COUNT, &
            GCOLL_INT8, GCOLL_UINT8, GCOLL_INT32, GCOLL_UINT32, GCOLL_INT64, GCOLL_UINT64, &
            GCOLL_FLOAT16, GCOLL_BFLOAT16, GCOLL_FLOAT32, GCOLL_FLOAT64, GCOLL_DTYPE_COUNT, &
            GCOLL_SUM, GCOLL_PROD, GCOLL_MIN, GCOLL_MAX, GCOLL_AVG, GCOLL_OP_COUNT, 24, &
            GCOLL_COMPRESS_NONE, GCOLL_COMPRESS_BF16, GCOLL_COMPRESS_TOPK, GCOLL_COMPRESS_ONEBIT, &
            GCOLL_COMPRESS_COUNT]
        integer(c_int) :: theirs(64)
        integer :: n, i
        type(gcoll_stats_t), target :: st(2)
        character(len=24) :: msg
        n = gcoll_test_enum_values(theirs, 64)
        call expect(n == size(mine), 'as many constants in Fortran as in C')
        do i = 1, min(n, size(mine))
            write (msg, '(a,i0)') 'constant #', i
            call expect(mine(i) == theirs(i), trim(msg)//' equals its C value')
        end do
        call expect(c_sizeof(st(1)) == 24, 'gcoll_stats_t is 24 bytes as in C')
        call expect(gcoll_get_version() == GCOLL_VERSION, 'gcoll_get_version() == GCOLL_VERSION')
        call expect(gcoll_dtype_name(GCOLL_FLOAT32) == 'float32', 'gcoll_dtype_name(GCOLL_FLOAT32)')
        call expect(gcoll_dtype_name(GCOLL_DTYPE_COUNT) == 'unknown', 'gcoll_dtype_name(GCOLL_DTYPE_COUNT)')
        call expect(gcoll_op_name(GCOLL_AVG) == 'avg', 'gcoll_op_name(GCOLL_AVG)')
        call expect(gcoll_dtype_size(GCOLL_FLOAT64) == 8 .and. gcoll_dtype_size(GCOLL_BFLOAT16) == 2 &
                    .and. gcoll_dtype_size(99) == 0, 'gcoll_dtype_size')
        call expect(gcoll_strerror(GCOLL_ERR_INVALID_ARG) == 'invalid argument', &
                    'gcoll_strerror(GCOLL_ERR_INVALID_ARG) is "'//gcoll_strerror(GCOLL_ERR_INVALID_ARG)//'"')
        call expect(len(gcoll_strerror(42)) > 0, 'gcoll_strerror of an unknown code is not empty')
        call expect(gcoll_compress_name(GCOLL_COMPRESS_TOPK) == 'topk', 'gcoll_compress_name(TOPK)')
        call expect(gcoll_compress_name(GCOLL_COMPRESS_COUNT) == 'unknown', &
                    'gcoll_compress_name(GCOLL_COMPRESS_COUNT)')
    end subroutine

    subroutine test_rank_size()
        integer :: r, s, st1, st2
        call gcoll_comm_rank(comm, r, st1)
        call gcoll_comm_size(comm, s, st2)
        call expect(st1 == GCOLL_SUCCESS .and. r == rank, 'gcoll_comm_rank equals MPI_Comm_rank')
        call expect(st2 == GCOLL_SUCCESS .and. s == nranks, 'gcoll_comm_size equals MPI_Comm_size')
    end subroutine

    !> calls moved by exactly the successful collectives made; bytes moved when
    !> there are peers; inter-node bytes exactly when there are several nodes.
    subroutine test_stats()
        type(gcoll_stats_t) :: s1
        integer(c_int64_t) :: d(2), tot(2)
        character(len=16) :: env
        integer :: node_size, st, elen
        character(len=64) :: msg
        call gcoll_comm_get_stats(comm, s1, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_comm_get_stats')
        write (msg, '(a,i0,a,i0)') 'stats: calls moved by ', s1%calls - s0%calls, ', made ', gcalls
        call expect(s1%calls - s0%calls == gcalls, trim(msg))
        d = [s1%bytes_sent - s0%bytes_sent, s1%bytes_sent_inter_node - s0%bytes_sent_inter_node]
        call expect(d(2) >= 0 .and. d(2) <= d(1), 'stats: 0 <= inter-node bytes <= bytes sent')
        call MPI_Allreduce(d, tot, 2, MPI_INTEGER8, MPI_SUM, MPI_COMM_WORLD)
        if (nranks > 1) call expect(tot(1) > 0, 'stats: bytes_sent moved')
        node_size = 0
        call get_environment_variable('GCOLL_NODE_SIZE', env, elen)
        if (elen > 0) read (env, *) node_size
        if (node_size > 0 .and. node_size < nranks) then
            call expect(tot(2) > 0, 'stats: bytes_sent_inter_node moved with several nodes')
        else
            call expect(tot(2) == 0, 'stats: no inter-node bytes on one node')
        end if
    end subroutine

    ! ------------------------------------------------------- bad input --

    !> Must be GCOLL_ERR_INVALID_ARG with a sentence, on every rank.
    subroutine invalid(st, what)
        integer, intent(in) :: st
        character(len=*), intent(in) :: what
        character(len=:), allocatable :: why
        why = gcoll_last_error()
        call expect(st == GCOLL_ERR_INVALID_ARG, what//': status '//gcoll_strerror(st))
        call expect(len(why) > 0, what//': gcoll_last_error() is empty')
    end subroutine

    subroutine test_bad_input()
        real(c_float) :: x(4), y(4)
        integer(c_int32_t) :: one(1), tot1(1)
        integer :: st
        type(gcoll_comm_t) :: none, gone, other
        x = 1
        call gcoll_bcast(x, 4, GCOLL_FLOAT32, nranks, comm, st)
        call invalid(st, 'bcast root = size')
        call gcoll_bcast(x, 4, GCOLL_FLOAT32, -1, comm, st)
        call invalid(st, 'bcast root = -1')
        call gcoll_reduce(x, y, 4, GCOLL_FLOAT32, GCOLL_SUM, nranks, comm, st)
        call invalid(st, 'reduce root = size')
        call gcoll_allreduce(x, y, 4, GCOLL_DTYPE_COUNT, GCOLL_SUM, comm, st)
        call invalid(st, 'allreduce dtype = GCOLL_DTYPE_COUNT')
        call gcoll_allreduce(x, y, 4, 99, GCOLL_SUM, comm, st)
        call invalid(st, 'allreduce dtype = 99')
        call gcoll_allreduce(x, y, 4, -1, GCOLL_SUM, comm, st)
        call invalid(st, 'allreduce dtype = -1')
        call gcoll_allgather(x, y, 1, 1234, comm, st)
        call invalid(st, 'allgather dtype = 1234')
        call gcoll_allreduce(x, y, 4, GCOLL_FLOAT32, GCOLL_OP_COUNT, comm, st)
        call invalid(st, 'allreduce op = GCOLL_OP_COUNT')
        call gcoll_allreduce(x, y, -1, GCOLL_FLOAT32, GCOLL_SUM, comm, st)
        call invalid(st, 'allreduce count = -1')
        call gcoll_alltoall(x, y, -5_c_int64_t, GCOLL_FLOAT32, comm, st)
        call invalid(st, 'alltoall count = -5 (c_int64_t)')
        call gcoll_reduce(x, count=4, dtype=GCOLL_FLOAT32, op=GCOLL_SUM, root=rank, comm=comm, ierr=st)
        call invalid(st, 'reduce without recvbuf on the root')
        call gcoll_barrier(none, st)
        call invalid(st, 'barrier on a communicator never created')
        call gcoll_comm_create(MPI_COMM_NULL, other, st)
        call invalid(st, 'gcoll_comm_create(MPI_COMM_NULL)')
        ! a destroyed communicator (the copy keeps the old handle)
        call gcoll_comm_create(MPI_COMM_WORLD, other, st)
        call expect(st == GCOLL_SUCCESS, 'second gcoll_comm_create')
        gone = other
        call gcoll_comm_destroy(other, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_comm_destroy of the second')
        call gcoll_barrier(gone, st)
        call invalid(st, 'barrier on a destroyed communicator')
        ! a successful call clears the sentence, and the communicator still works
        one = 1
        call gcoll_allreduce(one, tot1, 1, GCOLL_INT32, GCOLL_SUM, comm, st)
        call expect(st == GCOLL_SUCCESS .and. tot1(1) == nranks, 'allreduce after bad input')
        call expect(len(gcoll_last_error()) == 0, 'gcoll_last_error() is "" after a success')
    end subroutine
    ! ------------------------------------------------------- compression --

    !> A communicator like MPI_COMM_WORLD whose every rank is a node of its
    !> own (GCOLL_NODE_SIZE=1, read at create; the caller's setting restored).
    subroutine comm_of_single_nodes(zc, st)
        type(gcoll_comm_t), intent(out) :: zc
        integer, intent(out) :: st
        character(len=32) :: keep
        integer :: klen, kst
        call get_environment_variable('GCOLL_NODE_SIZE', keep, klen, kst)
        call expect(c_setenv('GCOLL_NODE_SIZE'//c_null_char, '1'//c_null_char, 1_c_int) == 0, 'setenv')
        call gcoll_comm_create(MPI_COMM_WORLD, zc, st)
        if (kst == 0) then
            call expect(c_setenv('GCOLL_NODE_SIZE'//c_null_char, keep(1:klen)//c_null_char, 1_c_int) == 0, &
                        'setenv back')
        else
            call expect(c_unsetenv('GCOLL_NODE_SIZE'//c_null_char) == 0, 'unsetenv')
        end if
    end subroutine

    !> Rank r's element i: a small integer (-5..5) times scale, varying with step.
    pure real(c_float) function grad(i, r, step, scale)
        integer, intent(in) :: i, r, step
        real(c_float), intent(in) :: scale
        grad = real(mod(i * 7 + r * 3 + step * 5, 11) - 5, c_float) * scale
    end function

    !> x = this rank's gradient; want = the sum over every rank's, computed
    !> here (exact: small multiples of a power of two).
    subroutine gradients(x, want, step, scale)
        real(c_float), intent(out) :: x(:), want(:)
        integer, intent(in) :: step
        real(c_float), intent(in) :: scale
        integer :: i, r
        do i = 1, size(x)
            x(i) = grad(i, rank, step, scale)
            want(i) = 0
            do r = 0, nranks - 1
                want(i) = want(i) + grad(i, r, step, scale)
            end do
        end do
    end subroutine

    subroutine test_compression()
        type(gcoll_comm_t) :: zc
        integer :: st
        call comm_of_single_nodes(zc, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_comm_create (GCOLL_NODE_SIZE=1): '//gcoll_last_error())
        if (st /= GCOLL_SUCCESS) return
        call test_exact_codec(zc, gcoll_compress_params_t(kind=GCOLL_COMPRESS_BF16), 'bf16', 1.0)
        call test_exact_codec(zc, gcoll_compress_params_t(kind=GCOLL_COMPRESS_TOPK, topk_ratio=1d0), &
                              'topk at ratio 1', 0.25)
        call test_topk_lossy(zc)
        call test_onebit_feedback(zc)
        call test_compress_bad_input(zc)
        call gcoll_comm_destroy(zc, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_comm_destroy (GCOLL_NODE_SIZE=1)')
    end subroutine

    !> A codec that is exact on these gradients: every output equals the
    !> sum computed here, step after step (residuals stay zero), blocking,
    !> nonblocking, in place and not, and AVG is that sum divided by the ranks.
    subroutine test_exact_codec(zc, params, what, scale)
        type(gcoll_comm_t), intent(in) :: zc
        type(gcoll_compress_params_t), intent(in) :: params
        character(len=*), intent(in) :: what
        real(c_float), intent(in) :: scale
        integer, parameter :: n = 1001
        real(c_float), target, asynchronous :: x(n), y(n)
        real(c_float) :: want(n)
        type(gcoll_compressor_t) :: z
        type(gcoll_request_t) :: req
        integer :: st, step
        character(len=64) :: msg
        call gcoll_compressor_create(zc, n, params, z, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_compressor_create ('//what//'): '//gcoll_last_error())
        if (st /= GCOLL_SUCCESS) return
        do step = 1, 4
            write (msg, '(2a,i0)') what, ' step ', step
            call gradients(x, want, step, scale)
            y = -99
            select case (step)
            case (1)
                call gcoll_allreduce_compressed(x, y, n, GCOLL_FLOAT32, GCOLL_SUM, z, st)
            case (2)
                y = x
                call gcoll_allreduce_compressed(y, y, int(n, c_int64_t), GCOLL_FLOAT32, GCOLL_SUM, z, st)
            case (3)
                call gcoll_iallreduce_compressed(x, y, n, GCOLL_FLOAT32, GCOLL_SUM, z, req, st)
                if (st == GCOLL_SUCCESS) call gcoll_wait(req, st)
            case default
                y = x
                call gcoll_iallreduce_compressed(y, y, n, GCOLL_FLOAT32, GCOLL_AVG, z, req, st)
                if (st == GCOLL_SUCCESS) call gcoll_wait(req, st)
                want = want / real(nranks, c_float)
            end select
            call expect(st == GCOLL_SUCCESS, trim(msg)//': '//gcoll_last_error())
            call expect(all(y == want), trim(msg)//': differs from the exact sum')
        end do
        call gcoll_compressor_destroy(z, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_compressor_destroy ('//what//')')
    end subroutine

    !> TopK at its default ratio (1%) drops most of these gradients: lossy
    !> wherever anything is compressed (several ranks, each its own node).
    subroutine test_topk_lossy(zc)
        type(gcoll_comm_t), intent(in) :: zc
        integer, parameter :: n = 1001
        real(c_float) :: x(n), y(n), want(n)
        type(gcoll_compressor_t) :: z
        integer :: st
        call gcoll_compressor_create(zc, n, gcoll_compress_params_t(kind=GCOLL_COMPRESS_TOPK), z, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_compressor_create (topk 1%)')
        if (st /= GCOLL_SUCCESS) return
        call gradients(x, want, 1, 1.0)
        call gcoll_allreduce_compressed(x, y, n, GCOLL_FLOAT32, GCOLL_SUM, z, st)
        call expect(st == GCOLL_SUCCESS, 'topk 1%: '//gcoll_last_error())
        if (nranks > 1) then
            call expect(2 * count(y /= want) > n, 'topk 1%: most of the sum should be dropped')
        else
            call expect(all(y == want), 'topk 1% on one rank: nothing to compress, exact')
        end if
        call gcoll_compressor_destroy(z, st)
    end subroutine

    !> 1-bit with and without error feedback, the same gradient every call.
    subroutine test_onebit_feedback(zc)
        type(gcoll_comm_t), intent(in) :: zc
        integer, parameter :: n = 1000, steps = 100
        real(c_float) :: x(n), want(n), first(n), y(n), yn(n)
        real(c_double) :: mean(n), mean_n(n), err, err_n
        type(gcoll_compressor_t) :: ef, noef
        integer :: st, st2, step
        character(len=96) :: msg
        call gcoll_compressor_create(zc, n, gcoll_compress_params_t(kind=GCOLL_COMPRESS_ONEBIT), ef, st)
        call gcoll_compressor_create(zc, n, gcoll_compress_params_t(kind=GCOLL_COMPRESS_ONEBIT, &
                                     no_error_feedback=.true.), noef, st2)
        call expect(st == GCOLL_SUCCESS .and. st2 == GCOLL_SUCCESS, 'gcoll_compressor_create (onebit)')
        if (st /= GCOLL_SUCCESS .or. st2 /= GCOLL_SUCCESS) return
        call gradients(x, want, 1, 1.0)
        call gcoll_allreduce_compressed(x, first, n, GCOLL_FLOAT32, GCOLL_SUM, ef, st)
        call gcoll_allreduce_compressed(x, yn, n, GCOLL_FLOAT32, GCOLL_SUM, noef, st2)
        call expect(st == GCOLL_SUCCESS .and. st2 == GCOLL_SUCCESS, 'onebit: first call')
        call expect(all(first == yn), 'onebit: the first output is the same with and without feedback')
        if (nranks == 1) then
            call expect(all(first == want), 'onebit on one rank: nothing to compress, exact')
        else
            call expect(any(first /= want), 'onebit: lossy on several nodes')
            call gcoll_allreduce_compressed(x, y, n, GCOLL_FLOAT32, GCOLL_SUM, ef, st)
            call gcoll_allreduce_compressed(x, yn, n, GCOLL_FLOAT32, GCOLL_SUM, noef, st2)
            call expect(any(y /= first), 'onebit: the residual changes the next output')
            call expect(all(yn == first), 'onebit without feedback: the same output again')
            call gcoll_compressor_reset(ef, st)
            call expect(st == GCOLL_SUCCESS, 'gcoll_compressor_reset')
            call gcoll_allreduce_compressed(x, y, n, GCOLL_FLOAT32, GCOLL_SUM, ef, st)
            call expect(all(y == first), 'onebit after reset: the first output again')
            ! the mean of the outputs approaches the exact sum with feedback only
            call gcoll_compressor_reset(ef, st)
            mean = 0
            mean_n = 0
            do step = 1, steps
                call gcoll_allreduce_compressed(x, y, n, GCOLL_FLOAT32, GCOLL_SUM, ef, st)
                call gcoll_allreduce_compressed(x, yn, n, GCOLL_FLOAT32, GCOLL_SUM, noef, st2)
                mean = mean + y / steps
                mean_n = mean_n + yn / steps
            end do
            err = norm2(mean - want) / norm2(real(want, c_double))
            err_n = norm2(mean_n - want) / norm2(real(want, c_double))
            write (msg, '(a,es9.2,a,es9.2)') 'onebit: relative error of the mean ', err, &
                ', without feedback ', err_n
            call expect(st == GCOLL_SUCCESS .and. st2 == GCOLL_SUCCESS .and. 2 * err < err_n, trim(msg))
            if (rank == 0) print '(a)', 'test_bindings: '//trim(msg)
        end if
        call gcoll_compressor_destroy(ef, st)
        call gcoll_compressor_destroy(noef, st2)
        call expect(st == GCOLL_SUCCESS .and. st2 == GCOLL_SUCCESS, 'gcoll_compressor_destroy (onebit)')
    end subroutine

    subroutine expect_status(st, want, what)
        integer, intent(in) :: st, want
        character(len=*), intent(in) :: what
        call expect(st == want, what//': status '//gcoll_strerror(st)//', expected '//gcoll_strerror(want))
        call expect(st == GCOLL_SUCCESS .or. len(gcoll_last_error()) > 0, what//': no sentence')
    end subroutine

    subroutine test_compress_bad_input(zc)
        type(gcoll_comm_t), intent(in) :: zc
        real(c_float), target, asynchronous :: x(8), y(8)
        type(gcoll_compressor_t) :: z, stale, none
        type(gcoll_request_t) :: r, r2
        integer :: st
        x = 1
        call gcoll_compressor_create(zc, 8, gcoll_compress_params_t(kind=99), z, st)
        call invalid(st, 'compressor kind = 99')
        call gcoll_compressor_create(zc, 8, gcoll_compress_params_t(kind=GCOLL_COMPRESS_TOPK, &
                                     topk_ratio=1.5d0), z, st)
        call invalid(st, 'topk_ratio = 1.5')
        call gcoll_compressor_create(zc, 8, gcoll_compress_params_t(kind=GCOLL_COMPRESS_ONEBIT, &
                                     onebit_block=-1_c_int64_t), z, st)
        call invalid(st, 'onebit_block = -1')
        call expect(index(gcoll_last_error(), 'onebit_block') > 0, 'onebit_block = -1: named')
        call gcoll_compressor_create(zc, -1, gcoll_compress_params_t(kind=GCOLL_COMPRESS_BF16), z, st)
        call invalid(st, 'compressor count = -1')
        call gcoll_allreduce_compressed(x, y, 8, GCOLL_FLOAT32, GCOLL_SUM, none, st)
        call invalid(st, 'allreduce_compressed with a compressor never created')
        call gcoll_compressor_create(zc, 8, gcoll_compress_params_t(kind=GCOLL_COMPRESS_BF16), z, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_compressor_create after the refusals')
        if (st /= GCOLL_SUCCESS) return
        call gcoll_allreduce_compressed(x, y, 7, GCOLL_FLOAT32, GCOLL_SUM, z, st)
        call invalid(st, 'allreduce_compressed count 7 on a compressor of 8')
        call gcoll_allreduce_compressed(x, y, -1, GCOLL_FLOAT32, GCOLL_SUM, z, st)
        call invalid(st, 'allreduce_compressed count = -1')
        call gcoll_allreduce_compressed(x, y, 8, GCOLL_FLOAT64, GCOLL_SUM, z, st)
        call expect_status(st, GCOLL_ERR_NOT_SUPPORTED, 'allreduce_compressed of float64')
        call gcoll_allreduce_compressed(x, y, 8, GCOLL_FLOAT32, GCOLL_MAX, z, st)
        call expect_status(st, GCOLL_ERR_NOT_SUPPORTED, 'allreduce_compressed with op max')
        call gcoll_iallreduce_compressed(x(1:8:2), y, 4, GCOLL_FLOAT32, GCOLL_SUM, z, r, st)
        call invalid(st, 'iallreduce_compressed of a non-contiguous sendbuf')
        call expect(r == GCOLL_REQUEST_NULL, 'no request from a non-contiguous buffer')
        call gcoll_iallreduce_compressed(x, y, 8, GCOLL_FLOAT32, GCOLL_SUM, z, r, st)
        call expect(st == GCOLL_SUCCESS, 'iallreduce_compressed: '//gcoll_last_error())
        if (nranks > 1) then   ! on one node it is the exact iallreduce, which has no such rule
            call gcoll_iallreduce_compressed(x, y, 8, GCOLL_FLOAT32, GCOLL_SUM, z, r2, st)
            call invalid(st, 'a second iallreduce_compressed while one is in flight')
            call gcoll_compressor_destroy(z, st)
            call invalid(st, 'gcoll_compressor_destroy while a call is in flight')
        end if
        call gcoll_wait(r, st)
        call expect(st == GCOLL_SUCCESS .and. all(y == real(nranks, c_float)), &
                    'iallreduce_compressed after the refusals')
        stale = z
        call gcoll_compressor_destroy(z, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_compressor_destroy')
        call gcoll_compressor_destroy(z, st)
        call expect(st == GCOLL_SUCCESS, 'gcoll_compressor_destroy of the null compressor it left')
        call gcoll_allreduce_compressed(x, y, 8, GCOLL_FLOAT32, GCOLL_SUM, stale, st)
        call invalid(st, 'allreduce_compressed on a destroyed compressor')
        call gcoll_compressor_reset(stale, st)
        call invalid(st, 'gcoll_compressor_reset of a destroyed compressor')
    end subroutine
end program test_bindings
