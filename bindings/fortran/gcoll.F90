! SPDX-License-Identifier: BSD-3-Clause
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
! Nonblocking and persistent collectives (gcoll.h's section of that name):
! gcoll_iallreduce(sendbuf, recvbuf, count, dtype, op, comm, request, ierr)
! and gcoll_ibcast, gcoll_ireduce, gcoll_iallgather, gcoll_ireduce_scatter,
! gcoll_ialltoall, gcoll_ibarrier take the blocking call's arguments plus an
! intent(out) type(gcoll_request_t) before ierr; gcoll_allreduce_init etc.
! make persistent requests, started with gcoll_start(request, ierr).  Then
! gcoll_wait(request, ierr), gcoll_test(request, flag, ierr) (logical flag),
! gcoll_waitall(count, requests, ierr), gcoll_request_free(request, ierr),
! with C's rules: a completed non-persistent request becomes
! GCOLL_REQUEST_NULL (compare with == or /=), a persistent one stays valid.
! As for MPI's nonblocking calls:
! - The buffers belong to libgcoll until the request completes.  Declare
!   them ASYNCHRONOUS (the module's dummies are), so that the compiler does
!   not keep their values in registers across the wait.
! - Their dummies are assumed-rank (dimension(..)): arrays of any rank, or
!   scalars.  They must be contiguous: for a non-contiguous section a
!   compiler would pass a temporary copy, gone before the request
!   completes, so the call returns GCOLL_ERR_INVALID_ARG instead.  (This
!   needs IS_CONTIGUOUS and assumed-rank, Fortran 2018: gfortran 9 or later.)
!
! Gradient compression (gcoll.h's section of that name):
!   type(gcoll_compressor_t) :: z
!   call gcoll_compressor_create(comm, 1024, gcoll_compress_params_t(kind=GCOLL_COMPRESS_TOPK, &
!                                topk_ratio=0.01d0), z, ierr)       ! collective
!   call gcoll_allreduce_compressed(grad, grad, 1024, GCOLL_FLOAT32, GCOLL_SUM, z, ierr)
!   call gcoll_compressor_destroy(z, ierr)                           ! local; z is null after
! gcoll_compress_params_t has C's fields with C's defaults (kind NONE,
! topk_ratio 0 for 0.01, onebit_block 0 for 2048; no_error_feedback is a
! logical).  gcoll_iallreduce_compressed(..., compressor, request, ierr) is
! the nonblocking form, with the nonblocking rules above; gcoll_compressor_reset
! zeroes the residuals; gcoll_compress_name(kind) names a codec.  A negative
! count or onebit_block is refused on every rank (the create is collective).
!
! Link: mpif90 app.F90 -I$(includedir) -L$(libdir) -lgcoll_f08 -lgcoll
! (or pkg-config --cflags --libs gcoll_f08).  The C side of the binding is
! gcoll_fortran_shim.c (MPI_Comm_f2c, count checks, the one entry point of
! the nonblocking posts), in libgcoll_f08 too.
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
    ! gcoll_compress_t
    integer, parameter, public :: GCOLL_COMPRESS_NONE = 0, GCOLL_COMPRESS_BF16 = 1, &
        GCOLL_COMPRESS_TOPK = 2, GCOLL_COMPRESS_ONEBIT = 3, GCOLL_COMPRESS_COUNT = 4

    !> Opaque handle of a libgcoll communicator (gcoll_comm_t in C).
    type, public :: gcoll_comm_t
        private
        type(c_ptr) :: ptr = c_null_ptr
    end type

    !> Handle of an outstanding or persistent collective (gcoll_request_t in C):
    !> GCOLL_REQUEST_NULL until posted, and again once a non-persistent one
    !> completes (gcoll_wait, gcoll_test) or a persistent one is freed.
    type, public :: gcoll_request_t
        private
        type(c_ptr) :: ptr = c_null_ptr
    end type
    type(gcoll_request_t), parameter, public :: GCOLL_REQUEST_NULL = gcoll_request_t(c_null_ptr)

    !> Opaque handle of a compressor (gcoll_compressor_t in C): null until
    !> gcoll_compressor_create, and again after gcoll_compressor_destroy.
    type, public :: gcoll_compressor_t
        private
        type(c_ptr) :: ptr = c_null_ptr
    end type

    !> Parameters of a compressor (gcoll_compress_params_t in C), with C's
    !> defaults: set kind, keep the rest unless you mean otherwise.
    type, public :: gcoll_compress_params_t
        integer :: kind = GCOLL_COMPRESS_NONE
        real(c_double) :: topk_ratio = 0          !< TOPK: fraction kept, in (0, 1]; 0 means 0.01
        integer(c_int64_t) :: onebit_block = 0    !< ONEBIT: elements per scale; 0 means 2048
        logical :: no_error_feedback = .false.    !< drop the residual instead of carrying it
    end type

    ! The collectives of gcoll_f08_post, numbered as in gcoll_fortran_shim.c.
    integer, parameter :: NB_ALLREDUCE = 0, NB_BCAST = 1, NB_REDUCE = 2, NB_ALLGATHER = 3, &
        NB_REDUCE_SCATTER = 4, NB_ALLTOALL = 5, NB_BARRIER = 6

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
    public :: gcoll_iallreduce, gcoll_ibcast, gcoll_ireduce, gcoll_iallgather
    public :: gcoll_ireduce_scatter, gcoll_ialltoall, gcoll_ibarrier
    public :: gcoll_allreduce_init, gcoll_bcast_init, gcoll_reduce_init, gcoll_allgather_init
    public :: gcoll_reduce_scatter_init, gcoll_alltoall_init, gcoll_barrier_init
    public :: gcoll_start, gcoll_test, gcoll_wait, gcoll_waitall, gcoll_request_free
    public :: gcoll_compressor_create, gcoll_compressor_destroy, gcoll_compressor_reset
    public :: gcoll_allreduce_compressed, gcoll_iallreduce_compressed, gcoll_compress_name
    public :: operator(==), operator(/=)

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
    interface gcoll_iallreduce
        module procedure iallreduce_i4, iallreduce_i8
    end interface
    interface gcoll_ibcast
        module procedure ibcast_i4, ibcast_i8
    end interface
    interface gcoll_ireduce
        module procedure ireduce_i4, ireduce_i8
    end interface
    interface gcoll_iallgather
        module procedure iallgather_i4, iallgather_i8
    end interface
    interface gcoll_ireduce_scatter
        module procedure ireduce_scatter_i4, ireduce_scatter_i8
    end interface
    interface gcoll_ialltoall
        module procedure ialltoall_i4, ialltoall_i8
    end interface
    interface gcoll_allreduce_init
        module procedure allreduce_init_i4, allreduce_init_i8
    end interface
    interface gcoll_bcast_init
        module procedure bcast_init_i4, bcast_init_i8
    end interface
    interface gcoll_reduce_init
        module procedure reduce_init_i4, reduce_init_i8
    end interface
    interface gcoll_allgather_init
        module procedure allgather_init_i4, allgather_init_i8
    end interface
    interface gcoll_reduce_scatter_init
        module procedure reduce_scatter_init_i4, reduce_scatter_init_i8
    end interface
    interface gcoll_alltoall_init
        module procedure alltoall_init_i4, alltoall_init_i8
    end interface
    interface gcoll_waitall
        module procedure waitall_i4, waitall_i8
    end interface
    interface gcoll_compressor_create
        module procedure compressor_create_i4, compressor_create_i8
    end interface
    interface gcoll_allreduce_compressed
        module procedure allreduce_compressed_i4, allreduce_compressed_i8
    end interface
    interface gcoll_iallreduce_compressed
        module procedure iallreduce_compressed_i4, iallreduce_compressed_i8
    end interface
    interface operator(==)
        module procedure request_eq
    end interface
    interface operator(/=)
        module procedure request_ne
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
        type(c_ptr) function c_compress_name(kind) bind(c, name='gcoll_compress_name')
            import :: c_ptr, c_int
            integer(c_int), value :: kind
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
        integer(c_int) function f08_post(coll, persistent, s, r, count, dtype, op, root, comm, req) &
                bind(c, name='gcoll_f08_post')
            import :: c_int, c_int64_t, c_ptr
            integer(c_int), value :: coll, persistent
            type(c_ptr), value :: s, r
            integer(c_int64_t), value :: count
            integer(c_int), value :: dtype, op, root
            type(c_ptr), value :: comm
            type(c_ptr), intent(out) :: req
        end function
        integer(c_int) function f08_fail(fn, arg) bind(c, name='gcoll_f08_fail')
            import :: c_int, c_char
            character(kind=c_char), dimension(*), intent(in) :: fn, arg
        end function
        integer(c_int) function f08_start(req) bind(c, name='gcoll_f08_start')
            import :: c_int, c_ptr
            type(c_ptr), value :: req
        end function
        integer(c_int) function f08_test(req, done) bind(c, name='gcoll_f08_test')
            import :: c_int, c_ptr
            type(c_ptr), intent(inout) :: req
            integer(c_int), intent(out) :: done
        end function
        integer(c_int) function f08_wait(req) bind(c, name='gcoll_f08_wait')
            import :: c_int, c_ptr
            type(c_ptr), intent(inout) :: req
        end function
        integer(c_int) function f08_waitall(n, reqs) bind(c, name='gcoll_f08_waitall')
            import :: c_int, c_int64_t, c_ptr
            integer(c_int64_t), value :: n
            type(c_ptr), intent(inout) :: reqs(*)
        end function
        integer(c_int) function f08_request_free(req) bind(c, name='gcoll_f08_request_free')
            import :: c_int, c_ptr
            type(c_ptr), intent(inout) :: req
        end function
        integer(c_int) function f08_compressor_create(comm, count, kind, topk_ratio, onebit_block, &
                no_error_feedback, z) bind(c, name='gcoll_f08_compressor_create')
            import :: c_int, c_int64_t, c_double, c_ptr
            type(c_ptr), value :: comm
            integer(c_int64_t), value :: count, onebit_block
            integer(c_int), value :: kind, no_error_feedback
            real(c_double), value :: topk_ratio
            type(c_ptr), intent(out) :: z
        end function
        integer(c_int) function f08_compressor_destroy(z) bind(c, name='gcoll_f08_compressor_destroy')
            import :: c_int, c_ptr
            type(c_ptr), value :: z
        end function
        integer(c_int) function f08_compressor_reset(z) bind(c, name='gcoll_f08_compressor_reset')
            import :: c_int, c_ptr
            type(c_ptr), value :: z
        end function
        integer(c_int) function f08_allreduce_compressed(s, r, count, dtype, op, z) &
                bind(c, name='gcoll_f08_allreduce_compressed')
            import :: c_int, c_int64_t, c_ptr
            type(*), dimension(*), intent(in) :: s
            type(*), dimension(*) :: r
            integer(c_int64_t), value :: count
            integer(c_int), value :: dtype, op
            type(c_ptr), value :: z
        end function
        integer(c_int) function f08_iallreduce_compressed(s, r, count, dtype, op, z, req) &
                bind(c, name='gcoll_f08_iallreduce_compressed')
            import :: c_int, c_int64_t, c_ptr
            type(c_ptr), value :: s, r
            integer(c_int64_t), value :: count
            integer(c_int), value :: dtype, op
            type(c_ptr), value :: z
            type(c_ptr), intent(out) :: req
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

    ! ------------------------------------------- nonblocking and persistent --
    ! Every i... and ..._init procedure (an _i8 and an _i4 per name, as for the
    ! blocking ones) hands its buffers to post, which checks them and calls
    ! the shim's one entry point, gcoll_f08_post.

    !> Post (persistent 0) or build (1) collective `coll` (NB_*): the buffers'
    !> addresses once each is known to be contiguous; rname names recvbuf
    !> in messages ("buf" for bcast).
    subroutine post(coll, persistent, fn, count, dtype, op, root, comm, request, ierr, &
                    sendbuf, recvbuf, rname)
        integer, intent(in) :: coll, persistent
        character(len=*), intent(in) :: fn
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, op, root
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        type(*), dimension(..), target, asynchronous, intent(in), optional :: sendbuf
        type(*), dimension(..), target, asynchronous, optional :: recvbuf
        character(len=*), intent(in), optional :: rname
        type(c_ptr) :: s, r
        if (.not. addresses(fn, ierr, s, r, sendbuf, recvbuf, rname)) return
        call finish(f08_post(int(coll, c_int), int(persistent, c_int), s, r, count, int(dtype, c_int), &
                             int(op, c_int), int(root, c_int), comm%ptr, request%ptr), ierr, fn)
    end subroutine

    !> s, r = the addresses of sendbuf and recvbuf (NULL where absent) for a
    !> nonblocking call, once each is known to be contiguous; else false, the
    !> failure handed to ierr (rname names recvbuf in its sentence).
    logical function addresses(fn, ierr, s, r, sendbuf, recvbuf, rname)
        character(len=*), intent(in) :: fn
        integer, optional, intent(out) :: ierr
        type(c_ptr), intent(out) :: s, r
        type(*), dimension(..), target, asynchronous, intent(in), optional :: sendbuf
        type(*), dimension(..), target, asynchronous, optional :: recvbuf
        character(len=*), intent(in), optional :: rname
        s = c_null_ptr
        r = c_null_ptr
        addresses = .false.
        if (present(sendbuf)) then
            if (.not. located(sendbuf, s)) then
                call finish(f08_fail(fn//c_null_char, 'sendbuf'//c_null_char), ierr, fn)
                return
            end if
        end if
        if (present(recvbuf)) then
            if (.not. located(recvbuf, r)) then
                call finish(f08_fail(fn//c_null_char, rname//c_null_char), ierr, fn)
                return
            end if
        end if
        addresses = .true.
    end function

    !> p = the address of buf, which stays valid after the call returns; false
    !> when buf is not contiguous (its actual argument would be a copy).  A
    !> zero-sized buf gets NULL (C_LOC must not be given one; count 0 allows it).
    logical function located(buf, p)
        type(*), dimension(..), target, asynchronous, intent(in) :: buf
        type(c_ptr), intent(out) :: p
        p = c_null_ptr
        located = is_contiguous(buf)
        if (located .and. size(buf) > 0) p = c_loc(buf)
    end function

    !> Nonblocking gcoll_barrier: complete once every rank has entered it.
    subroutine gcoll_ibarrier(comm, request, ierr)
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_BARRIER, 0, 'gcoll_ibarrier', 0_c_int64_t, 0, 0, 0, comm, request, ierr)
    end subroutine

    !> Persistent gcoll_barrier.
    subroutine gcoll_barrier_init(comm, request, ierr)
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_BARRIER, 1, 'gcoll_barrier_init', 0_c_int64_t, 0, 0, 0, comm, request, ierr)
    end subroutine

    !> Start an inactive persistent request.
    subroutine gcoll_start(request, ierr)
        type(gcoll_request_t), intent(in) :: request
        integer, optional, intent(out) :: ierr
        call finish(f08_start(request%ptr), ierr, 'gcoll_start')
    end subroutine

    !> Advance every outstanding request once; flag = .true. if request is
    !> complete (non-persistent: it is GCOLL_REQUEST_NULL now).
    subroutine gcoll_test(request, flag, ierr)
        type(gcoll_request_t), intent(inout) :: request
        logical, intent(out) :: flag
        integer, optional, intent(out) :: ierr
        integer(c_int) :: done
        done = 0
        call finish(f08_test(request%ptr, done), ierr, 'gcoll_test')
        flag = done /= 0
    end subroutine

    !> Block until request completes; ierr is the collective's outcome.
    subroutine gcoll_wait(request, ierr)
        type(gcoll_request_t), intent(inout) :: request
        integer, optional, intent(out) :: ierr
        call finish(f08_wait(request%ptr), ierr, 'gcoll_wait')
    end subroutine

    !> gcoll_wait on requests(1:count); every one completes, ierr is the first failure.
    subroutine waitall_i8(count, requests, ierr)
        integer(c_int64_t), intent(in) :: count
        type(gcoll_request_t), intent(inout) :: requests(*)
        integer, optional, intent(out) :: ierr
        type(c_ptr), allocatable :: h(:)
        integer(c_int) :: st
        allocate (h(max(count, 0_c_int64_t)))
        h = requests(1:size(h))%ptr
        st = f08_waitall(count, h)
        requests(1:size(h))%ptr = h
        call finish(st, ierr, 'gcoll_waitall')
    end subroutine
    subroutine waitall_i4(count, requests, ierr)
        integer, intent(in) :: count
        type(gcoll_request_t), intent(inout) :: requests(*)
        integer, optional, intent(out) :: ierr
        call waitall_i8(int(count, c_int64_t), requests, ierr)
    end subroutine

    !> Free an inactive request (persistent, or completed); it becomes GCOLL_REQUEST_NULL.
    subroutine gcoll_request_free(request, ierr)
        type(gcoll_request_t), intent(inout) :: request
        integer, optional, intent(out) :: ierr
        call finish(f08_request_free(request%ptr), ierr, 'gcoll_request_free')
    end subroutine

    !> The same request (or both null): request == GCOLL_REQUEST_NULL;
    !> elemental, so all(requests == GCOLL_REQUEST_NULL) works too.
    elemental logical function request_eq(a, b)
        type(gcoll_request_t), intent(in) :: a, b
        if (c_associated(a%ptr)) then
            request_eq = c_associated(a%ptr, b%ptr)
        else
            request_eq = .not. c_associated(b%ptr)
        end if
    end function
    elemental logical function request_ne(a, b)
        type(gcoll_request_t), intent(in) :: a, b
        request_ne = .not. request_eq(a, b)
    end function

    !> Nonblocking gcoll_allreduce: its arguments, then the request to complete.
    subroutine iallreduce_i8(sendbuf, recvbuf, count, dtype, op, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_ALLREDUCE, 0, 'gcoll_iallreduce', count, dtype, op, 0, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine iallreduce_i4(sendbuf, recvbuf, count, dtype, op, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer, intent(in) :: count, dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call iallreduce_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, op, comm, request, ierr)
    end subroutine

    !> Persistent gcoll_allreduce: a request made inactive; gcoll_start runs it.
    subroutine allreduce_init_i8(sendbuf, recvbuf, count, dtype, op, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_ALLREDUCE, 1, 'gcoll_allreduce_init', count, dtype, op, 0, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine allreduce_init_i4(sendbuf, recvbuf, count, dtype, op, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer, intent(in) :: count, dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call allreduce_init_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, op, comm, request, ierr)
    end subroutine

    !> Nonblocking gcoll_bcast: its arguments, then the request to complete.
    subroutine ibcast_i8(buf, count, dtype, root, comm, request, ierr)
        type(*), dimension(..), target, asynchronous :: buf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, root
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_BCAST, 0, 'gcoll_ibcast', count, dtype, 0, root, comm, request, ierr, &
                  recvbuf=buf, rname='buf')
    end subroutine
    subroutine ibcast_i4(buf, count, dtype, root, comm, request, ierr)
        type(*), dimension(..), target, asynchronous :: buf
        integer, intent(in) :: count, dtype, root
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call ibcast_i8(buf, int(count, c_int64_t), dtype, root, comm, request, ierr)
    end subroutine

    !> Persistent gcoll_bcast: a request made inactive; gcoll_start runs it.
    subroutine bcast_init_i8(buf, count, dtype, root, comm, request, ierr)
        type(*), dimension(..), target, asynchronous :: buf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, root
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_BCAST, 1, 'gcoll_bcast_init', count, dtype, 0, root, comm, request, ierr, &
                  recvbuf=buf, rname='buf')
    end subroutine
    subroutine bcast_init_i4(buf, count, dtype, root, comm, request, ierr)
        type(*), dimension(..), target, asynchronous :: buf
        integer, intent(in) :: count, dtype, root
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call bcast_init_i8(buf, int(count, c_int64_t), dtype, root, comm, request, ierr)
    end subroutine

    !> Nonblocking gcoll_reduce: its arguments, then the request to complete.
    subroutine ireduce_i8(sendbuf, recvbuf, count, dtype, op, root, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous, optional :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, op, root
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_REDUCE, 0, 'gcoll_ireduce', count, dtype, op, root, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine ireduce_i4(sendbuf, recvbuf, count, dtype, op, root, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous, optional :: recvbuf
        integer, intent(in) :: count, dtype, op, root
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call ireduce_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, op, root, comm, request, ierr)
    end subroutine

    !> Persistent gcoll_reduce: a request made inactive; gcoll_start runs it.
    subroutine reduce_init_i8(sendbuf, recvbuf, count, dtype, op, root, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous, optional :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, op, root
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_REDUCE, 1, 'gcoll_reduce_init', count, dtype, op, root, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine reduce_init_i4(sendbuf, recvbuf, count, dtype, op, root, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous, optional :: recvbuf
        integer, intent(in) :: count, dtype, op, root
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call reduce_init_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, op, root, comm, request, ierr)
    end subroutine

    !> Nonblocking gcoll_allgather: its arguments, then the request to complete.
    subroutine iallgather_i8(sendbuf, recvbuf, sendcount, dtype, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer(c_int64_t), intent(in) :: sendcount
        integer, intent(in) :: dtype
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_ALLGATHER, 0, 'gcoll_iallgather', sendcount, dtype, 0, 0, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine iallgather_i4(sendbuf, recvbuf, sendcount, dtype, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer, intent(in) :: sendcount, dtype
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call iallgather_i8(sendbuf, recvbuf, int(sendcount, c_int64_t), dtype, comm, request, ierr)
    end subroutine

    !> Persistent gcoll_allgather: a request made inactive; gcoll_start runs it.
    subroutine allgather_init_i8(sendbuf, recvbuf, sendcount, dtype, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer(c_int64_t), intent(in) :: sendcount
        integer, intent(in) :: dtype
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_ALLGATHER, 1, 'gcoll_allgather_init', sendcount, dtype, 0, 0, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine allgather_init_i4(sendbuf, recvbuf, sendcount, dtype, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer, intent(in) :: sendcount, dtype
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call allgather_init_i8(sendbuf, recvbuf, int(sendcount, c_int64_t), dtype, comm, request, ierr)
    end subroutine

    !> Nonblocking gcoll_reduce_scatter: its arguments, then the request to complete.
    subroutine ireduce_scatter_i8(sendbuf, recvbuf, recvcount, dtype, op, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer(c_int64_t), intent(in) :: recvcount
        integer, intent(in) :: dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_REDUCE_SCATTER, 0, 'gcoll_ireduce_scatter', recvcount, dtype, op, 0, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine ireduce_scatter_i4(sendbuf, recvbuf, recvcount, dtype, op, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer, intent(in) :: recvcount, dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call ireduce_scatter_i8(sendbuf, recvbuf, int(recvcount, c_int64_t), dtype, op, comm, request, ierr)
    end subroutine

    !> Persistent gcoll_reduce_scatter: a request made inactive; gcoll_start runs it.
    subroutine reduce_scatter_init_i8(sendbuf, recvbuf, recvcount, dtype, op, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer(c_int64_t), intent(in) :: recvcount
        integer, intent(in) :: dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_REDUCE_SCATTER, 1, 'gcoll_reduce_scatter_init', recvcount, dtype, op, 0, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine reduce_scatter_init_i4(sendbuf, recvbuf, recvcount, dtype, op, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer, intent(in) :: recvcount, dtype, op
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call reduce_scatter_init_i8(sendbuf, recvbuf, int(recvcount, c_int64_t), dtype, op, comm, request, ierr)
    end subroutine

    !> Nonblocking gcoll_alltoall: its arguments, then the request to complete.
    subroutine ialltoall_i8(sendbuf, recvbuf, count, dtype, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_ALLTOALL, 0, 'gcoll_ialltoall', count, dtype, 0, 0, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine ialltoall_i4(sendbuf, recvbuf, count, dtype, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer, intent(in) :: count, dtype
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call ialltoall_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, comm, request, ierr)
    end subroutine

    !> Persistent gcoll_alltoall: a request made inactive; gcoll_start runs it.
    subroutine alltoall_init_i8(sendbuf, recvbuf, count, dtype, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call post(NB_ALLTOALL, 1, 'gcoll_alltoall_init', count, dtype, 0, 0, comm, request, ierr, &
                  sendbuf, recvbuf, 'recvbuf')
    end subroutine
    subroutine alltoall_init_i4(sendbuf, recvbuf, count, dtype, comm, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer, intent(in) :: count, dtype
        type(gcoll_comm_t), intent(in) :: comm
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call alltoall_init_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, comm, request, ierr)
    end subroutine

    ! --------------------------------------------------- gradient compression --

    !> Name of a codec ("topk"), or "unknown".
    function gcoll_compress_name(kind) result(s)
        integer, intent(in) :: kind
        character(len=:), allocatable :: s
        s = c_to_f(c_compress_name(int(kind, c_int)))
    end function

    !> A compressor for tensors of count float32 elements on comm.  Collective:
    !> every rank passes the same count and params.
    subroutine compressor_create_i8(comm, count, params, compressor, ierr)
        type(gcoll_comm_t), intent(in) :: comm
        integer(c_int64_t), intent(in) :: count
        type(gcoll_compress_params_t), intent(in) :: params
        type(gcoll_compressor_t), intent(out) :: compressor
        integer, optional, intent(out) :: ierr
        integer(c_int) :: no_ef
        no_ef = merge(1_c_int, 0_c_int, params%no_error_feedback)
        call finish(f08_compressor_create(comm%ptr, count, int(params%kind, c_int), params%topk_ratio, &
                                          params%onebit_block, no_ef, compressor%ptr), &
                    ierr, 'gcoll_compressor_create')
    end subroutine
    subroutine compressor_create_i4(comm, count, params, compressor, ierr)
        type(gcoll_comm_t), intent(in) :: comm
        integer, intent(in) :: count
        type(gcoll_compress_params_t), intent(in) :: params
        type(gcoll_compressor_t), intent(out) :: compressor
        integer, optional, intent(out) :: ierr
        call compressor_create_i8(comm, int(count, c_int64_t), params, compressor, ierr)
    end subroutine

    !> Free a compressor (local, on every rank); it is null afterwards.
    subroutine gcoll_compressor_destroy(compressor, ierr)
        type(gcoll_compressor_t), intent(inout) :: compressor
        integer, optional, intent(out) :: ierr
        integer(c_int) :: st
        st = f08_compressor_destroy(compressor%ptr)
        if (st == GCOLL_SUCCESS) compressor%ptr = c_null_ptr
        call finish(st, ierr, 'gcoll_compressor_destroy')
    end subroutine

    !> Zero the error-feedback residuals.
    subroutine gcoll_compressor_reset(compressor, ierr)
        type(gcoll_compressor_t), intent(in) :: compressor
        integer, optional, intent(out) :: ierr
        call finish(f08_compressor_reset(compressor%ptr), ierr, 'gcoll_compressor_reset')
    end subroutine

    !> recvbuf = sum (or mean) over ranks of sendbuf (float32), compressed
    !> between nodes as compressor says.  In place: same array.
    subroutine allreduce_compressed_i8(sendbuf, recvbuf, count, dtype, op, compressor, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(gcoll_compressor_t), intent(in) :: compressor
        integer, optional, intent(out) :: ierr
        call finish(f08_allreduce_compressed(sendbuf, recvbuf, count, int(dtype, c_int), int(op, c_int), &
                                             compressor%ptr), ierr, 'gcoll_allreduce_compressed')
    end subroutine
    subroutine allreduce_compressed_i4(sendbuf, recvbuf, count, dtype, op, compressor, ierr)
        type(*), dimension(*), intent(in) :: sendbuf
        type(*), dimension(*) :: recvbuf
        integer, intent(in) :: count, dtype, op
        type(gcoll_compressor_t), intent(in) :: compressor
        integer, optional, intent(out) :: ierr
        call allreduce_compressed_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, op, compressor, ierr)
    end subroutine

    !> Nonblocking gcoll_allreduce_compressed: its arguments, then the request.
    subroutine iallreduce_compressed_i8(sendbuf, recvbuf, count, dtype, op, compressor, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer(c_int64_t), intent(in) :: count
        integer, intent(in) :: dtype, op
        type(gcoll_compressor_t), intent(in) :: compressor
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        character(len=*), parameter :: fn = 'gcoll_iallreduce_compressed'
        type(c_ptr) :: s, r
        if (.not. addresses(fn, ierr, s, r, sendbuf, recvbuf, 'recvbuf')) return
        call finish(f08_iallreduce_compressed(s, r, count, int(dtype, c_int), int(op, c_int), &
                                              compressor%ptr, request%ptr), ierr, fn)
    end subroutine
    subroutine iallreduce_compressed_i4(sendbuf, recvbuf, count, dtype, op, compressor, request, ierr)
        type(*), dimension(..), target, asynchronous, intent(in) :: sendbuf
        type(*), dimension(..), target, asynchronous :: recvbuf
        integer, intent(in) :: count, dtype, op
        type(gcoll_compressor_t), intent(in) :: compressor
        type(gcoll_request_t), intent(out) :: request
        integer, optional, intent(out) :: ierr
        call iallreduce_compressed_i8(sendbuf, recvbuf, int(count, c_int64_t), dtype, op, compressor, &
                                      request, ierr)
    end subroutine
end module gcoll
