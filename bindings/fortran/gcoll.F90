! Fortran 2008 binding of libgcoll (include/gcoll.h): module gcoll.
!
!   use mpi_f08
!   use gcoll
!   type(gcoll_comm_t) :: comm
!   real :: grad(1024)
!   call gcoll_comm_create(MPI_COMM_WORLD, comm)              ! collective
!   call gcoll_allreduce(grad, grad, 1024, GCOLL_FLOAT32, GCOLL_SUM, comm, ierr)  ! in place
!   if (ierr /= GCOLL_SUCCESS) print *, gcoll_strerror(ierr), ': ', gcoll_last_error()
!   call gcoll_comm_destroy(comm)                            ! collective
!
! Names, arguments and rules are the C API's, one for one, with these Fortran
! idioms (as in MPI's mpi_f08):
! - Every call that returns a gcoll_status_t in C is a subroutine with a last,
!   OPTIONAL, intent(out) argument ierr that receives the status
!   (GCOLL_SUCCESS, GCOLL_ERR_...).  Without ierr a failure is fatal, like
!   MPI's default MPI_ERRORS_ARE_FATAL: the status and gcoll_last_error() are
!   written to error_unit and MPI_Abort(MPI_COMM_WORLD) is called.  Pass ierr
!   to handle errors yourself; bad input then never stops the program.
! - Buffers are type(*), dimension(*): any intrinsic type, contiguous, passed
!   by address.  The dtype argument says what is there, as in C.  Pass
!   arrays (one value: a 1-element array); to start at an offset pass a
!   contiguous section buf(k:), not the element buf(k): the names are generic
!   (see counts) and Fortran matches an element to no specific.  In place is
!   as in C: pass the same array as both buffers (allreduce, reduce on the
!   root), recvbuf(rank*sendcount+1:) as sendbuf (allgather), or
!   sendbuf(rank*recvcount+1:) as recvbuf (reduce_scatter).  gcoll_reduce's
!   recvbuf is optional: leave it out on the other ranks (by keyword:
!   call gcoll_reduce(x, count=n, dtype=..., op=..., root=..., comm=comm)).
! - Counts are default integer or integer(c_int64_t) (generic); a negative
!   count returns GCOLL_ERR_INVALID_ARG.
! - gcoll_comm_t is an opaque derived type (null until gcoll_comm_create;
!   null again after gcoll_comm_destroy); gcoll_stats_t is interoperable with
!   the C struct (its counters are uint64_t in C, integer(c_int64_t) here).
! - gcoll_strerror, gcoll_last_error, gcoll_dtype_name and gcoll_op_name
!   return character(len=:), allocatable.
!
! Link: mpif90 app.F90 -I$(includedir) -L$(libdir) -lgcoll_f08 -lgcoll
! (or pkg-config --cflags --libs gcoll_f08).  The C side of the binding is
! gcoll_fortran_shim.c (MPI_Comm_f2c and count checks), in libgcoll_f08 too.
module gcoll
    use, intrinsic :: iso_c_binding
    use, intrinsic :: iso_fortran_env, only: error_unit
    use mpi_f08, only: MPI_Comm, MPI_COMM_WORLD, MPI_Abort, MPI_Initialized, MPI_Finalized
    implicit none
    private

    ! Values equal include/gcoll.h's (test/fortran checks each against C).
    integer, parameter, public :: GCOLL_VERSION_MAJOR = 0, GCOLL_VERSION_MINOR = 1, &
        GCOLL_VERSION_PATCH = 0
    integer, parameter, public :: GCOLL_VERSION = GCOLL_VERSION_MAJOR * 10000 + &
        GCOLL_VERSION_MINOR * 100 + GCOLL_VERSION_PATCH

    ! gcoll_status_t
    integer, parameter, public :: GCOLL_SUCCESS = 0, GCOLL_ERR_INVALID_ARG = 1, &
        GCOLL_ERR_NO_MEMORY = 2, GCOLL_ERR_NOT_SUPPORTED = 3, GCOLL_ERR_TRANSPORT = 4, &
        GCOLL_ERR_TIMEOUT = 5, GCOLL_ERR_MISMATCH = 6, GCOLL_ERR_INTERNAL = 7, &
        GCOLL_STATUS_COUNT = 8
    ! gcoll_dtype_t
    integer, parameter, public :: GCOLL_INT8 = 0, GCOLL_UINT8 = 1, GCOLL_INT32 = 2, &
        GCOLL_UINT32 = 3, GCOLL_INT64 = 4, GCOLL_UINT64 = 5, GCOLL_FLOAT16 = 6, &
        GCOLL_BFLOAT16 = 7, GCOLL_FLOAT32 = 8, GCOLL_FLOAT64 = 9, GCOLL_DTYPE_COUNT = 10
    ! gcoll_op_t
    integer, parameter, public :: GCOLL_SUM = 0, GCOLL_PROD = 1, GCOLL_MIN = 2, &
        GCOLL_MAX = 3, GCOLL_AVG = 4, GCOLL_OP_COUNT = 5

    !> Opaque handle of a libgcoll communicator (gcoll_comm_t in C).
    type, public :: gcoll_comm_t
        private
        type(c_ptr) :: ptr = c_null_ptr
    end type

    !> Counters since gcoll_comm_create, this rank only (gcoll_stats_t in C).
    type, bind(c), public :: gcoll_stats_t
        integer(c_int64_t) :: calls                  !< collective calls completed
        integer(c_int64_t) :: bytes_sent             !< payload bytes sent, all levels
        integer(c_int64_t) :: bytes_sent_inter_node  !< of which to other nodes
    end type

    public :: gcoll_get_version, gcoll_strerror, gcoll_last_error
    public :: gcoll_dtype_size, gcoll_dtype_name, gcoll_op_name
    public :: gcoll_comm_create, gcoll_comm_destroy, gcoll_comm_rank, gcoll_comm_size
    public :: gcoll_comm_get_stats
    public :: gcoll_allreduce, gcoll_bcast, gcoll_reduce, gcoll_allgather
    public :: gcoll_reduce_scatter, gcoll_alltoall, gcoll_barrier

    interface gcoll_allreduce
        module procedure allreduce_i4, allreduce_i8
    end interface
    interface gcoll_bcast
        module procedure bcast_i4, bcast_i8
    end interface
    interface gcoll_reduce
        module procedure reduce_i4, reduce_i8
    end interface
    interface gcoll_allgather
        module procedure allgather_i4, allgather_i8
    end interface
    interface gcoll_reduce_scatter
        module procedure reduce_scatter_i4, reduce_scatter_i8
    end interface
    interface gcoll_alltoall
        module procedure alltoall_i4, alltoall_i8
    end interface

    ! The C side: libgcoll itself for what cannot fail, the shim for the rest.
    interface
        integer(c_int) function c_get_version() bind(c, name='gcoll_get_version')
            import :: c_int
        end function
        type(c_ptr) function c_strerror(status) bind(c, name='gcoll_strerror')
            import :: c_ptr, c_int
            integer(c_int), value :: status
        end function
        type(c_ptr) function c_dtype_name(dtype) bind(c, name='gcoll_dtype_name')
            import :: c_ptr, c_int
            integer(c_int), value :: dtype
        end function
        type(c_ptr) function c_op_name(op) bind(c, name='gcoll_op_name')
            import :: c_ptr, c_int
            integer(c_int), value :: op
        end function
        integer(c_size_t) function c_dtype_size(dtype) bind(c, name='gcoll_dtype_size')
            import :: c_size_t, c_int
            integer(c_int), value :: dtype
        end function
        integer(c_size_t) function c_strlen(s) bind(c, name='strlen')
            import :: c_size_t, c_ptr
            type(c_ptr), value :: s
        end function
        type(c_ptr) function f08_last_error() bind(c, name='gcoll_f08_last_error')
            import :: c_ptr
        end function
        integer(c_int) function f08_comm_create(fcomm, comm) bind(c, name='gcoll_f08_comm_create')
            import :: c_int, c_ptr
            integer(c_int), value :: fcomm
            type(c_ptr), intent(out) :: comm
        end function
        integer(c_int) function f08_comm_destroy(comm) bind(c, name='gcoll_f08_comm_destroy')
            import :: c_int, c_ptr
            type(c_ptr), value :: comm
        end function
        integer(c_int) function f08_comm_rank(comm, rank) bind(c, name='gcoll_f08_comm_rank')
            import :: c_int, c_ptr
            type(c_ptr), value :: comm
            integer(c_int), intent(out) :: rank
        end function
        integer(c_int) function f08_comm_size(comm, size) bind(c, name='gcoll_f08_comm_size')
            import :: c_int, c_ptr
            type(c_ptr), value :: comm
            integer(c_int), intent(out) :: size
        end function
        integer(c_int) function f08_comm_get_stats(comm, stats) bind(c, name='gcoll_f08_comm_get_stats')
            import :: c_int, c_ptr, gcoll_stats_t
            type(c_ptr), value :: comm
            type(gcoll_stats_t), intent(out) :: stats
        end function
        integer(c_int) function f08_allreduce(s, r, count, dtype, op, comm) &
                bind(c, name='gcoll_f08_allreduce')
            import :: c_int, c_int64_t, c_ptr
            type(*), dimension(*), intent(in) :: s
            type(*), dimension(*) :: r
            integer(c_int64_t), value :: count
            integer(c_int), value :: dtype, op
            type(c_ptr), value :: comm
        end function
        integer(c_int) function f08_bcast(buf, count, dtype, root, comm) bind(c, name='gcoll_f08_bcast')
            import :: c_int, c_int64_t, c_ptr
            type(*), dimension(*) :: buf
            integer(c_int64_t), value :: count
            integer(c_int), value :: dtype, root
            type(c_ptr), value :: comm
        end function
        integer(c_int) function f08_reduce(s, r, count, dtype, op, root, comm) &
                bind(c, name='gcoll_f08_reduce')
            import :: c_int, c_int64_t, c_ptr
            type(*), dimension(*), intent(in) :: s
            type(*), dimension(*), optional :: r   ! absent: NULL (non-root ranks)
            integer(c_int64_t), value :: count
            integer(c_int), value :: dtype, op, root
            type(c_ptr), value :: comm
        end function
        integer(c_int) function f08_allgather(s, r, sendcount, dtype, comm) &
                bind(c, name='gcoll_f08_allgather')
            import :: c_int, c_int64_t, c_ptr
            type(*), dimension(*), intent(in) :: s
            type(*), dimension(*) :: r
            integer(c_int64_t), value :: sendcount
            integer(c_int), value :: dtype
            type(c_ptr), value :: comm
        end function
        integer(c_int) function f08_reduce_scatter(s, r, recvcount, dtype, op, comm) &
                bind(c, name='gcoll_f08_reduce_scatter')
            import :: c_int, c_int64_t, c_ptr
            type(*), dimension(*), intent(in) :: s
            type(*), dimension(*) :: r
            integer(c_int64_t), value :: recvcount
            integer(c_int), value :: dtype, op
            type(c_ptr), value :: comm
        end function
        integer(c_int) function f08_alltoall(s, r, count, dtype, comm) bind(c, name='gcoll_f08_alltoall')
            import :: c_int, c_int64_t, c_ptr
            type(*), dimension(*), intent(in) :: s
            type(*), dimension(*) :: r
            integer(c_int64_t), value :: count
            integer(c_int), value :: dtype
            type(c_ptr), value :: comm
        end function
        integer(c_int) function f08_barrier(comm) bind(c, name='gcoll_f08_barrier')
            import :: c_int, c_ptr
            type(c_ptr), value :: comm
        end function
    end interface

contains

    ! ------------------------------------------------------------ helpers --

    !> Copy a NUL-terminated C string into a Fortran string ("" for NULL).
    function c_to_f(p) result(s)
        type(c_ptr), intent(in) :: p
        character(len=:), allocatable :: s
        character(kind=c_char), pointer :: a(:)
        integer :: i, n
        if (.not. c_associated(p)) then
            s = ''
            return
        end if
        n = int(c_strlen(p))
        call c_f_pointer(p, a, [n])
        allocate(character(len=n) :: s)
        do i = 1, n
            s(i:i) = a(i)
        end do
    end function

    !> Hand a status to ierr, or, without ierr, stop on failure (MPI's default).
    subroutine finish(status, ierr, what)
        integer(c_int), intent(in) :: status
        integer, optional, intent(out) :: ierr
        character(len=*), intent(in) :: what
        logical :: init, fini
        if (present(ierr)) then
            ierr = int(status)
            return
        end if
        if (status == GCOLL_SUCCESS) return
        write (error_unit, '(6a)') 'gcoll: ', what, ': ', gcoll_strerror(int(status)), ': ', &
            gcoll_last_error()
        call MPI_Initialized(init)
        call MPI_Finalized(fini)
        if (init .and. .not. fini) call MPI_Abort(MPI_COMM_WORLD, int(status))
        error stop 'gcoll: fatal error (pass ierr to handle it)'
    end subroutine

    ! ----------------------------------------------- version, errors, names --

    !> Run-time version of the linked libgcoll, as GCOLL_VERSION.
    integer function gcoll_get_version()
        gcoll_get_version = int(c_get_version())
    end function

    !> Name and meaning of a status code ("invalid argument").
    function gcoll_strerror(status) result(s)
        integer, intent(in) :: status
        character(len=:), allocatable :: s
        s = c_to_f(c_strerror(int(status, c_int)))
    end function

    !> Sentence describing the last failure on the calling thread, or "".
    function gcoll_last_error() result(s)
        character(len=:), allocatable :: s
        s = c_to_f(f08_last_error())
    end function

    !> Size in bytes of one element of dtype, or 0 for an unknown dtype.
    integer function gcoll_dtype_size(dtype)
        integer, intent(in) :: dtype
        gcoll_dtype_size = int(c_dtype_size(int(dtype, c_int)))
    end function

    !> Name of dtype ("float32"), or "unknown".
    function gcoll_dtype_name(dtype) result(s)
        integer, intent(in) :: dtype
        character(len=:), allocatable :: s
        s = c_to_f(c_dtype_name(int(dtype, c_int)))
    end function

    !> Name of op ("sum"), or "unknown".
    function gcoll_op_name(op) result(s)
        integer, intent(in) :: op
        character(len=:), allocatable :: s
        s = c_to_f(c_op_name(int(op, c_int)))
    end function

    ! ------------------------------------------------------ communicators --

    !> Wrap an MPI communicator.  Collective over mpicomm.
    subroutine gcoll_comm_create(mpicomm, comm, ierr)
        type(MPI_Comm), intent(in) :: mpicomm   ! not "mpi_comm": Fortran names ignore case
        type(gcoll_comm_t), intent(out) :: comm
        integer, optional, intent(out) :: ierr
        call finish(f08_comm_create(int(mpicomm%MPI_VAL, c_int), comm%ptr), ierr, 'gcoll_comm_create')
    end subroutine

    !> Release a communicator.  Collective.  comm is null afterwards.
    subroutine gcoll_comm_destroy(comm, ierr)
        type(gcoll_comm_t), intent(inout) :: comm
        integer, optional, intent(out) :: ierr
        integer(c_int) :: st
        st = f08_comm_destroy(comm%ptr)
        if (st == GCOLL_SUCCESS) comm%ptr = c_null_ptr
        call finish(st, ierr, 'gcoll_comm_destroy')
    end subroutine

    !> Rank of the caller in comm.
    subroutine gcoll_comm_rank(comm, rank, ierr)
        type(gcoll_comm_t), intent(in) :: comm
        integer, intent(out) :: rank
        integer, optional, intent(out) :: ierr
        integer(c_int) :: r
        r = -1
        call finish(f08_comm_rank(comm%ptr, r), ierr, 'gcoll_comm_rank')
        rank = int(r)
    end subroutine

    !> Number of ranks in comm.
    subroutine gcoll_comm_size(comm, size, ierr)
        type(gcoll_comm_t), intent(in) :: comm
        integer, intent(out) :: size
        integer, optional, intent(out) :: ierr
        integer(c_int) :: n
        n = 0
        call finish(f08_comm_size(comm%ptr, n), ierr, 'gcoll_comm_size')
        size = int(n)
    end subroutine

    !> Copy the counters of comm into stats.
    subroutine gcoll_comm_get_stats(comm, stats, ierr)
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_stats_t), intent(out) :: stats
        integer, optional, intent(out) :: ierr
        stats = gcoll_stats_t(0, 0, 0)
        call finish(f08_comm_get_stats(comm%ptr, stats), ierr, 'gcoll_comm_get_stats')
    end subroutine

    ! --------------------------------------------------------- collectives --
    ! Each comes with a 64-bit count (the _i8 procedure, which calls C) and a
    ! default-integer count (_i4, which widens it and calls the _i8 one).

    !> recvbuf(i) = op over ranks of sendbuf(i), on every rank.  In place: same array.
    subroutine allreduce_i8(sendbuf, recvbuf, count, dtype, op, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call finish(f08_allreduce(sendbuf, recvbuf, count, int(dtype, c_int), int(op, c_int), comm%ptr), &
                    ierr, 'gcoll_allreduce')
    end subroutine
    subroutine allreduce_i4(sendbuf, recvbuf, count, dtype, op, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer, intent(in) :: count, dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call allreduce_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, op, comm, ierr)
    end subroutine

    !> Copy count elements of buf on root to buf on every rank.
    subroutine bcast_i8(buf, count, dtype, root, comm, ierr)
        type(*), dimension(*) :: buf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, root
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call finish(f08_bcast(buf, count, int(dtype, c_int), int(root, c_int), comm%ptr), ierr, 'gcoll_bcast')
    end subroutine
    subroutine bcast_i4(buf, count, dtype, root, comm, ierr)
        type(*), dimension(*) :: buf
        integer, intent(in) :: count, dtype, root
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call bcast_i8(buf, int(count, c_int64_t), dtype, root, comm, ierr)
    end subroutine

    !> recvbuf(i) = op over ranks of sendbuf(i), on root only (recvbuf may be
    !> absent elsewhere).  In place (root): same array.
    subroutine reduce_i8(sendbuf, recvbuf, count, dtype, op, root, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*), optional :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, op, root
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call finish(f08_reduce(sendbuf, recvbuf, count, int(dtype, c_int), int(op, c_int), &
                               int(root, c_int), comm%ptr), ierr, 'gcoll_reduce')
    end subroutine
    subroutine reduce_i4(sendbuf, recvbuf, count, dtype, op, root, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*), optional :: recvbuf
        integer, intent(in) :: count, dtype, op, root
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call reduce_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, op, root, comm, ierr)
    end subroutine

    !> recvbuf holds size*sendcount elements, rank r's block at r*sendcount.
    !> In place: sendbuf is recvbuf(rank*sendcount+1:).
    subroutine allgather_i8(sendbuf, recvbuf, sendcount, dtype, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer(c_int64_t), intent(in) :: sendcount
        integer, intent(in) :: dtype
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call finish(f08_allgather(sendbuf, recvbuf, sendcount, int(dtype, c_int), comm%ptr), &
                    ierr, 'gcoll_allgather')
    end subroutine
    subroutine allgather_i4(sendbuf, recvbuf, sendcount, dtype, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer, intent(in) :: sendcount, dtype
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call allgather_i8(sendbuf, recvbuf, int(sendcount, c_int64_t), dtype, comm, ierr)
    end subroutine

    !> Rank r receives the reduction of block r of sendbuf (size*recvcount
    !> elements).  In place: recvbuf is sendbuf(rank*recvcount+1:).
    subroutine reduce_scatter_i8(sendbuf, recvbuf, recvcount, dtype, op, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer(c_int64_t), intent(in) :: recvcount
        integer, intent(in) :: dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call finish(f08_reduce_scatter(sendbuf, recvbuf, recvcount, int(dtype, c_int), int(op, c_int), &
                                       comm%ptr), ierr, 'gcoll_reduce_scatter')
    end subroutine
    subroutine reduce_scatter_i4(sendbuf, recvbuf, recvcount, dtype, op, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer, intent(in) :: recvcount, dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call reduce_scatter_i8(sendbuf, recvbuf, int(recvcount, c_int64_t), dtype, op, comm, ierr)
    end subroutine

    !> Block j of rank i's sendbuf lands in block i of rank j's recvbuf.  Not in place.
    subroutine alltoall_i8(sendbuf, recvbuf, count, dtype, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call finish(f08_alltoall(sendbuf, recvbuf, count, int(dtype, c_int), comm%ptr), ierr, 'gcoll_alltoall')
    end subroutine
    subroutine alltoall_i4(sendbuf, recvbuf, count, dtype, comm, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer, intent(in) :: count, dtype
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call alltoall_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, comm, ierr)
    end subroutine

    !> Return only once every rank of comm has entered the barrier.
    subroutine gcoll_barrier(comm, ierr)
        type(gcoll_comm_t), intent(in) :: comm
        integer, optional, intent(out) :: ierr
        call finish(f08_barrier(comm%ptr), ierr, 'gcoll_barrier')
    end subroutine
end module gcoll
