/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * @file gcoll.h
 * @brief libgcoll: GPU-aware, hierarchical collective operations over MPI.
 *
 * libgcoll layers topology-aware collective algorithms on top of an existing
 * MPI communicator.  The application keeps launching processes with mpirun and
 * keeps its MPI communicators; it wraps one in a ::gcoll_comm_t once and then
 * calls the collectives below on host or CUDA buffers.
 *
 * Life of a communicator (in the manner of hwloc's init → load → destroy):
 *
 * @code
 *   MPI_Init(&argc, &argv);
 *   gcoll_comm_t comm;
 *   gcoll_comm_create(MPI_COMM_WORLD, &comm);           // collective
 *   gcoll_allreduce(send, recv, n, GCOLL_FLOAT32, GCOLL_SUM, comm);
 *   gcoll_comm_destroy(comm);                           // collective
 *   MPI_Finalize();
 * @endcode
 *
 * Errors: every call returns a ::gcoll_status_t.  On failure
 * gcoll_last_error() returns a sentence naming what was wrong (thread-local,
 * valid until the next failing call on the same thread); gcoll_strerror()
 * names the status code itself.  Bad input never crashes and never hangs
 * when every rank passes the same bad argument (each rank detects it on its
 * own, before any message); one rank alone passing a bad argument leaves the
 * others waiting, as in MPI, unless GCOLL_CHECK=1 or GCOLL_TIMEOUT is set.
 * A failure met by one rank alone (memory, the transport, a timeout) reaches
 * every rank: during set-up (gcoll_comm_create, gcoll_compressor_create)
 * every rank returns the error; in a collective the failing rank revokes the
 * communicator, every rank waiting on it returns the failing rank's status
 * with a sentence naming that rank, and every later call on it returns that
 * status at once (gcoll_comm_destroy still works, and must still be called).
 *
 * Thread safety: calls on different communicators may be made concurrently
 * from different threads provided MPI was initialised with
 * MPI_THREAD_MULTIPLE.  Calls on one communicator must be serialised by the
 * caller and made in the same order on every rank (as for MPI collectives).
 *
 * Progress: every collective is a request advanced by one progress engine
 * per process (see "Nonblocking and persistent collectives").  With
 * GCOLL_PROGRESS=thread (the default where the transport allows it) a
 * background thread advances outstanding requests while the application
 * computes, and serves the transport's late completions a peer may still
 * need after this rank's call returned (UCX completes a receive before the
 * sender's side is done); it sleeps when nothing is outstanding.  With
 * GCOLL_PROGRESS=caller, requests advance only inside libgcoll calls.
 * libgcoll adds nothing to the MPI library's own progress loop.
 *
 * Memory: every buffer argument may be host memory or, when the library was
 * built with CUDA, CUDA device memory; the library detects which per call.
 * All buffers of one call must be of the same kind.
 */
#ifndef GCOLL_H
#define GCOLL_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @name Version
 *  Compile-time version; gcoll_get_version() returns the run-time one. */
/**@{*/
#define GCOLL_VERSION_MAJOR 0
#define GCOLL_VERSION_MINOR 1
#define GCOLL_VERSION_PATCH 0
/** One integer that orders versions: major*10000 + minor*100 + patch. */
#define GCOLL_VERSION (GCOLL_VERSION_MAJOR * 10000 + GCOLL_VERSION_MINOR * 100 + GCOLL_VERSION_PATCH)
/** Run-time version of the library actually linked, as GCOLL_VERSION. */
int gcoll_get_version(void);
/**@}*/

/** @name Status codes */
/**@{*/
typedef enum {
    GCOLL_SUCCESS           = 0,  /**< the call completed */
    GCOLL_ERR_INVALID_ARG   = 1,  /**< an argument is invalid; gcoll_last_error() says which */
    GCOLL_ERR_NO_MEMORY     = 2,  /**< an allocation failed */
    GCOLL_ERR_NOT_SUPPORTED = 3,  /**< valid request this build or machine cannot serve */
    GCOLL_ERR_TRANSPORT     = 4,  /**< UCX, MPI or shared memory reported a failure */
    GCOLL_ERR_TIMEOUT       = 5,  /**< peers did not arrive within GCOLL_TIMEOUT seconds */
    GCOLL_ERR_MISMATCH      = 6,  /**< GCOLL_CHECK=1 found ranks calling different collectives */
    GCOLL_ERR_INTERNAL      = 7,  /**< a bug in libgcoll: please report it */
    GCOLL_STATUS_COUNT            /**< number of status codes, not a status */
} gcoll_status_t;

/** Name and meaning of a status code ("invalid argument"); never NULL. */
const char *gcoll_strerror(gcoll_status_t status);

/** Sentence describing the last failure on the calling thread, or "" if none. */
const char *gcoll_last_error(void);
/**@}*/

/** @name Datatypes and reduction operations */
/**@{*/
typedef enum {
    GCOLL_INT8 = 0, GCOLL_UINT8, GCOLL_INT32, GCOLL_UINT32, GCOLL_INT64, GCOLL_UINT64,
    GCOLL_FLOAT16,   /**< IEEE binary16, converted in software, round-to-nearest-even */
    GCOLL_BFLOAT16,  /**< bfloat16, converted in software, round-to-nearest-even */
    GCOLL_FLOAT32, GCOLL_FLOAT64,
    GCOLL_DTYPE_COUNT /**< number of datatypes, not a datatype */
} gcoll_dtype_t;

/**
 * Reduction operations.  All are commutative.
 *
 * - Integer overflow wraps as two's complement, for SUM, PROD and AVG's sum.
 * - 16-bit floats are widened to float32 for each reduction step and rounded
 *   back (round-to-nearest-even) after it; results can therefore depend on
 *   the algorithm's reduction order, as with NCCL.
 * - MIN/MAX on floats: if either operand is NaN the result is NaN (NaN
 *   propagates, like IEEE 754-2019 minimum/maximum); -0.0 and +0.0 compare
 *   equal and either may be returned.
 * - AVG is SUM followed by a division by the number of ranks.  For floats the
 *   division is exact IEEE division of the (float32 for 16-bit types) sum.  For
 *   integers it is C integer division of the wrapped sum: truncation toward
 *   zero, so AVG of {-1, 0} over 2 ranks is 0.
 */
typedef enum {
    GCOLL_SUM = 0, GCOLL_PROD, GCOLL_MIN, GCOLL_MAX, GCOLL_AVG,
    GCOLL_OP_COUNT /**< number of operations, not an operation */
} gcoll_op_t;

/** Size in bytes of one element of @p dtype, or 0 for an unknown dtype. */
size_t gcoll_dtype_size(gcoll_dtype_t dtype);
/** Name of @p dtype ("float32"), or "unknown". */
const char *gcoll_dtype_name(gcoll_dtype_t dtype);
/** Name of @p op ("sum"), or "unknown". */
const char *gcoll_op_name(gcoll_op_t op);
/**@}*/

/** @name Communicators */
/**@{*/

/** Opaque handle of a libgcoll communicator. */
typedef struct gcoll_comm *gcoll_comm_t;

/**
 * Wrap an MPI communicator.  Collective over @p mpi_comm.
 *
 * Duplicates @p mpi_comm (libgcoll's traffic never matches the application's
 * messages), finds the node structure (MPI_COMM_TYPE_SHARED, or
 * GCOLL_NODE_SIZE), reads the GCOLL_* environment and connects the transport.
 *
 * @param mpi_comm  an intra-communicator; MPI must be initialised.
 * @param comm      out: the new handle.
 * @return GCOLL_SUCCESS; GCOLL_ERR_INVALID_ARG for MPI_COMM_NULL, a NULL
 *         @p comm, MPI not initialised, or a malformed GCOLL_* setting;
 *         GCOLL_ERR_TRANSPORT if the transport cannot connect.
 */
gcoll_status_t gcoll_comm_create(MPI_Comm mpi_comm, gcoll_comm_t *comm);

/**
 * Release a communicator.  Collective.  After it returns, @p comm is invalid:
 * passing it to any call returns GCOLL_ERR_INVALID_ARG.
 */
gcoll_status_t gcoll_comm_destroy(gcoll_comm_t comm);

/** Rank of the caller in @p comm (as in the wrapped MPI communicator). */
gcoll_status_t gcoll_comm_rank(gcoll_comm_t comm, int *rank);
/** Number of ranks in @p comm. */
gcoll_status_t gcoll_comm_size(gcoll_comm_t comm, int *size);

/** Counters since gcoll_comm_create, this rank only. */
typedef struct {
    uint64_t calls;                 /**< collective calls completed */
    uint64_t bytes_sent;            /**< payload bytes this rank sent, all levels */
    uint64_t bytes_sent_inter_node; /**< of which to ranks on other nodes */
} gcoll_stats_t;

/** Copy the counters of @p comm into @p stats. */
gcoll_status_t gcoll_comm_get_stats(gcoll_comm_t comm, gcoll_stats_t *stats);

/**
 * Byte ranges in which the selection table in force on @p comm hands
 * collective @p coll to the MPI library instead of a libgcoll algorithm:
 * those whose first matching row (for comm's nodes, ranks per node, ranks
 * and conditions, and memory type @p mem) names the pseudo-algorithm "mpi".
 * What the PMPI drop-in (libgcoll_mpi) leaves to MPI; libgcoll's own calls
 * skip such rows and run the next matching one.  Where GCOLL_ALGO forces
 * @p coll, none (the forced algorithm serves every size).
 *
 * @param comm  a communicator of gcoll_comm_create
 * @param coll  the table's name: "allreduce", "bcast", "reduce", "allgather",
 *              "reduce_scatter", "alltoall", "barrier"
 * @param mem   "host" or "cuda", the table's mem column
 * @param lo,hi arrays of max entries: the ranges [lo[i], hi[i]) of count x
 *              dtype size (the table's bytes column; size=total rows
 *              converted with comm's size), ascending, disjoint, adjacent
 *              ones merged; hi[i] = SIZE_MAX for "inf"
 * @param max   entries of lo and hi
 * @param n     the number of ranges (0: libgcoll serves every size)
 * @return GCOLL_SUCCESS; GCOLL_ERR_INVALID_ARG for a NULL or destroyed comm,
 *         an unknown coll or mem, NULL pointers, or more than max ranges
 *         (then *n says how many there are)
 *
 * Local: no communication, no allocation.  Every rank of comm gets the same
 * ranges (the table in force is the same on every rank).
 */
gcoll_status_t gcoll_comm_mpi_ranges(gcoll_comm_t comm, const char *coll, const char *mem,
                                     size_t *lo, size_t *hi, int max, int *n);
/**@}*/

/**
 * @name Collective operations
 *
 * Common rules:
 * - Blocking: the call returns when this rank's part is complete and its
 *   buffers may be reused.  All ranks of @p comm must call the same
 *   collective with matching count, dtype, op and root, in the same order.
 * - @p count (or sendcount/recvcount) is in elements of @p dtype.  A count of
 *   0 is valid and returns at once; buffers may then be NULL.
 * - In-place follows NCCL: pass the same pointer as described per call.
 *   Buffers that overlap in any other way are refused with
 *   GCOLL_ERR_INVALID_ARG (for allgather, sendbuf == recvbuf is in place on
 *   rank 0 only: on the other ranks it is an error, and rank 0 may then
 *   wait until GCOLL_TIMEOUT).
 * - Errors (each with a sentence in gcoll_last_error()):
 *   GCOLL_ERR_INVALID_ARG for a NULL or destroyed @p comm, overlapping
 *   buffers outside the in-place form, a NULL buffer with
 *   a non-zero count, an unknown dtype or op, a root outside [0, size);
 *   GCOLL_ERR_NOT_SUPPORTED for CUDA buffers in a build without CUDA;
 *   GCOLL_ERR_TRANSPORT, GCOLL_ERR_TIMEOUT, GCOLL_ERR_MISMATCH as above.
 *   A collective that failed on one rank may leave the others waiting until
 *   GCOLL_TIMEOUT expires.
 */
/**@{*/

/**
 * recvbuf[i] = op over ranks of sendbuf[i], on every rank.
 * In place: sendbuf == recvbuf.
 *
 * CUDA buffers: @p recvbuf must be device memory on every rank or on none
 * (GCOLL_CHECK=1 verifies it).  Into device memory the call runs on the
 * communicator's device path, set up by its first such call on the device
 * that call's recvbuf is on; later calls must pass both buffers on that
 * device (one device per communicator and process, as NCCL), else every
 * rank returns GCOLL_ERR_INVALID_ARG.  Work the caller queued on the legacy
 * default stream is ordered before the call; work on other streams must be
 * complete.  The result is in @p recvbuf when the call returns.
 */
gcoll_status_t gcoll_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                               gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm);

/** Copy @p count elements of @p buf on @p root to @p buf on every rank. */
gcoll_status_t gcoll_bcast(void *buf, size_t count, gcoll_dtype_t dtype, int root,
                           gcoll_comm_t comm);

/**
 * recvbuf[i] = op over ranks of sendbuf[i], on @p root only.
 * @p recvbuf is used on the root only (may be NULL elsewhere).
 * In place (root): sendbuf == recvbuf.
 */
gcoll_status_t gcoll_reduce(const void *sendbuf, void *recvbuf, size_t count,
                            gcoll_dtype_t dtype, gcoll_op_t op, int root, gcoll_comm_t comm);

/**
 * Every rank contributes @p sendcount elements; recvbuf holds size*sendcount
 * elements, rank r's block at offset r*sendcount.
 * In place: sendbuf == recvbuf + rank*sendcount (in elements); any other
 * overlap of the two (sendbuf == recvbuf on a rank other than 0, say) is
 * GCOLL_ERR_INVALID_ARG.
 */
gcoll_status_t gcoll_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                               gcoll_dtype_t dtype, gcoll_comm_t comm);

/**
 * sendbuf holds size*recvcount elements; rank r receives in recvbuf the
 * reduction over ranks of block r (elements [r*recvcount, (r+1)*recvcount)).
 * In place: recvbuf == sendbuf + rank*recvcount (in elements); any other
 * overlap is GCOLL_ERR_INVALID_ARG.
 */
gcoll_status_t gcoll_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                    gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm);

/**
 * Block j (count elements at offset j*count) of rank i's sendbuf lands in
 * block i of rank j's recvbuf.  Both hold size*count elements.  Not in place.
 */
gcoll_status_t gcoll_alltoall(const void *sendbuf, void *recvbuf, size_t count,
                              gcoll_dtype_t dtype, gcoll_comm_t comm);

/** Return only once every rank of @p comm has entered the barrier. */
gcoll_status_t gcoll_barrier(gcoll_comm_t comm);
/**@}*/

/**
 * @name Zero-copy buffers
 *
 * Host memory that the other ranks of the node can map.  When, on every
 * rank of a node, the buffers of a collective (sendbuf and recvbuf, or the
 * one buffer of an in-place call or of bcast; recvbuf only on the root of a
 * reduce) lie wholly inside memory from gcoll_mem_alloc(), the node's
 * shared-memory level reads and writes the peers' buffers directly instead
 * of staging the data through its segment: an allreduce then reads each
 * input once and writes each output once.  This holds for allreduce,
 * reduce_scatter, allgather, bcast and reduce, whenever libgcoll runs the
 * node level in shared memory (the "shm" algorithms, and the node level of
 * "hier" on buffers it passes on unchanged) and the call moves at least
 * 16 KiB.  In every other case (a rank's buffer from malloc, a system
 * whose processes cannot open each other's /proc/<pid>/fd, GCOLL_ZCOPY=0)
 * the same call copies, with the same results: the ranks decide together,
 * per call, from what each published, so mixing allocations is always
 * correct.
 *
 * @code
 *   float *x;
 *   gcoll_mem_alloc(n * sizeof(float), (void **)&x);
 *   ...fill x...
 *   gcoll_allreduce(x, x, n, GCOLL_FLOAT32, GCOLL_SUM, comm);   // no copies on the node
 *   gcoll_mem_free(x);
 * @endcode
 *
 * Allocation is a system call and a file descriptor per buffer (see
 * docs/design.md): allocate once, reuse.  Needs no communicator and may
 * be called before MPI_Init.  Thread-safe.  Memory from gcoll_mem_alloc
 * is ordinary host memory for every other purpose (MPI calls, NumPy arrays
 * through the Python binding's gcoll.empty), except that a child made by
 * fork() shares it with its parent (it is a shared mapping) instead of
 * getting a copy.
 */
/**@{*/

/**
 * Allocate @p bytes of host memory that the node's peers can map.
 *
 * The memory is page aligned and zero-filled; its pages are reserved at
 * once, so a machine out of memory fails here rather than later.  If the
 * system gives no shareable mapping (no file descriptor left, no
 * memfd_create) the allocation still succeeds and its collectives copy.
 *
 * @param bytes  size, at least 1.
 * @param ptr    out: the memory; NULL on failure.
 * @return GCOLL_SUCCESS; GCOLL_ERR_INVALID_ARG for @p ptr NULL or @p bytes
 *         0; GCOLL_ERR_NO_MEMORY when the memory cannot be had.  Each with
 *         a sentence in gcoll_last_error().
 */
gcoll_status_t gcoll_mem_alloc(size_t bytes, void **ptr);

/**
 * Free memory from gcoll_mem_alloc().  @p ptr must be the pointer it
 * returned; NULL is ignored (as by free()).  No collective may be using
 * the memory.  Peers that still map it lose its pages at once (the
 * memory returns to the system now, not when they unmap).
 *
 * @return GCOLL_SUCCESS; GCOLL_ERR_INVALID_ARG, with a sentence, for a
 *         pointer gcoll_mem_alloc did not return (a malloc'd one, one
 *         inside an allocation, one freed already).
 */
gcoll_status_t gcoll_mem_free(void *ptr);
/**@}*/

/**
 * @name Gradient compression
 *
 * A compressed allreduce for data-parallel training: the sum (or average) of
 * a float32 gradient over all ranks, with the traffic *between nodes*
 * compressed.  Within a node the reduction is exact (float32, shared
 * memory); each rank then compresses its share of the node's sum, the
 * shares cross the network compressed, and every rank ends with the same
 * (bitwise) approximate result.  On one node nothing is compressed.
 *
 * Error feedback: what compression dropped from a share in one call is
 * added to that share in the next call (residual e, kept per compressor:
 * x = g + e; send C(x); e = x - C(x)), so over many steps nothing is lost:
 * the sum of the outputs of T calls differs from the sum of the exact
 * results by the residuals left after call T, which stay bounded.  A
 * residual that is not finite is dropped: an Inf or NaN gradient (an
 * overflow step under dynamic loss scaling) reaches that call's result, as
 * uncompressed, and later calls are clean.  One compressor therefore
 * belongs to one tensor (one gradient bucket, of a fixed count: a new
 * bucket layout needs new compressors, and starts without residuals) and
 * one communicator, and is used once per training step.  Compressors of one
 * communicator share its node and rail sub-communicators (made by the
 * first gcoll_compressor_create); like all calls on one communicator, their
 * calls must not run concurrently.
 *
 * | codec | on the wire per element | inter-node exchange |
 * | --- | --- | --- |
 * | BF16 | 2 bytes | two-phase: alltoall, float32 sum at the chunk's owner, rounded again with the owner's own residual, allgather |
 * | TOPK | 8 bytes per kept element (uint32 index, float32 value) | two-phase (N >= 3): sparse reduce-scatter to chunk owners, who keep the top of their chunk's sum with an owner residual, sparse allgather; N = 2: allgather of the kept pairs |
 * | ONEBIT | 1 bit, plus one float scale per block | two-phase (N >= 3): alltoall of packed signs and scales, the owner's signs and scales of its chunk's sum with an owner residual, allgather; N = 2: allgather |
 *
 * Two-phase (1-bit Adam's compressed allreduce, Tang et al., ICML 2021, as
 * in DeepSpeed; for TopK the sparse reduce-scatter to chunk owners and
 * sparse allgather of Ok-Topk, Li and Hoefler, PPoPP 2022, with fixed-size
 * slots): a rank's share of s elements is cut into N chunks of
 * c = ceil(s/N), each encoded alone (TopK keeps ceil(ratio c) per chunk;
 * 1-bit's signs start on a byte, its scales restart, per chunk), chunk j
 * goes to rail rank j, which decodes and sums chunk j of every node, adds
 * its own residual, encodes that sum again and keeps what it drops, and
 * its payload goes to every rank.  Both residuals (the share's and the
 * owner's) are kept by the compressor, zeroed by reset, and dropped when
 * not finite.  Bytes sent between nodes per rank, N nodes, payload slots
 * rounded up to 8 bytes:
 *
 * - exact allreduce (ring, Rabenseifner): 8 s (N-1)/N;
 * - BF16: 2 (N-1) * 2c, about 4 s (N-1)/N;
 * - ONEBIT: 2 (N-1) (ceil(c/8) + 4 ceil(c/block)), about
 *   2 (N-1)/N * (s/8 + 4 s/block): 31.5x fewer than exact at any N (block
 *   2048);
 * - TOPK (ratio r): 2 (N-1) * 8 ceil(r c) < 16 r s + 16 (N-1)(1 + r),
 *   about 16 r s (N-1)/N: under twice one rank's payload of its whole
 *   share plus 32 bytes per node, so it does not grow with N (50x fewer
 *   than exact at r = 1%).
 *
 * These count pairwise exchanges; where libgcoll's selection picks a
 * log-round alltoall for tiny slots (Bruck, blocks up to 256 bytes), the
 * alltoall half sends about (N/2) log2 N slots instead of N-1 (3x at
 * N = 64: TopK 1% at 64 nodes and 4 MiB is 24x fewer than exact instead
 * of 50x, gcoll_simulate --compress).
 *
 * The gather (every rank's whole-share payload to every other: (N-1) *
 * payload(s)) is used where it costs no more, i.e. when two chunk payloads
 * are not fewer bytes than one share payload: N = 2 (equal bytes, one
 * compression instead of two), and tiny counts whose chunks would be
 * mostly padding.  The choice depends only on N, the count and the
 * parameters, so every rank makes the same one.  docs/design.md has the
 * derivation and the measurements.
 */
/**@{*/
typedef enum {
    GCOLL_COMPRESS_NONE = 0, /**< exact float32 allreduce (the plain algorithms) */
    GCOLL_COMPRESS_BF16,     /**< round to bfloat16, nearest-even */
    GCOLL_COMPRESS_TOPK,     /**< keep the ceil(ratio * n) largest magnitudes; ties to lower index */
    GCOLL_COMPRESS_ONEBIT,   /**< sign per element, mean magnitude per block as its scale */
    GCOLL_COMPRESS_COUNT     /**< number of codecs, not a codec */
} gcoll_compress_t;

/** Parameters of a compressor; zero-initialise, set kind, keep the defaults. */
typedef struct {
    gcoll_compress_t kind;
    double topk_ratio;     /**< TOPK: fraction kept, in (0, 1]; 0 means 0.01 */
    size_t onebit_block;   /**< ONEBIT: elements per scale; 0 means 2048 */
    int    no_error_feedback; /**< 1: drop the residual instead of carrying it */
} gcoll_compress_params_t;

/** Opaque compressor: codec, residuals and sub-communicators of one tensor. */
typedef struct gcoll_compressor *gcoll_compressor_t;

/**
 * Create a compressor for tensors of @p count float32 elements on @p comm.
 * Collective over @p comm; every rank must pass the same count and
 * parameters.
 * @return GCOLL_ERR_INVALID_ARG on every rank for an unknown kind, a ratio
 *         outside (0, 1], or ranks passing different counts or parameters
 *         (and for NULL pointers); GCOLL_ERR_NO_MEMORY.
 */
gcoll_status_t gcoll_compressor_create(gcoll_comm_t comm, size_t count,
                                       const gcoll_compress_params_t *params,
                                       gcoll_compressor_t *compressor);
/** Free a compressor (local: no communication; call it on every rank).
 *  Valid after its communicator was destroyed.  NULL is ignored. */
gcoll_status_t gcoll_compressor_destroy(gcoll_compressor_t compressor);
/** Zero the error-feedback residuals (e.g. when the model is reloaded). */
gcoll_status_t gcoll_compressor_reset(gcoll_compressor_t compressor);
/**
 * recvbuf = sum (GCOLL_SUM) or mean (GCOLL_AVG) over ranks of sendbuf,
 * compressed between nodes as @p compressor says.  Collective over the
 * compressor's communicator.  @p count must be the compressor's; @p dtype
 * GCOLL_FLOAT32.  Host or CUDA device buffers: device buffers are staged
 * through page-locked host memory (the codecs and residuals stay on the
 * host), and the call returns once the result is in recvbuf; a build
 * without CUDA returns GCOLL_ERR_NOT_SUPPORTED for them.  In place when
 * sendbuf == recvbuf.  Counts as one call in gcoll_comm_get_stats(), with
 * its bytes.
 */
gcoll_status_t gcoll_allreduce_compressed(const void *sendbuf, void *recvbuf, size_t count,
                                          gcoll_dtype_t dtype, gcoll_op_t op,
                                          gcoll_compressor_t compressor);
/** Name of a codec ("topk"), or "unknown". */
const char *gcoll_compress_name(gcoll_compress_t kind);
/**@}*/


/**
 * @name Nonblocking and persistent collectives
 *
 * Each blocking collective has a nonblocking form, gcoll_i<coll>(), with the
 * same arguments plus a request, and a persistent form, gcoll_<coll>_init()
 * (MPI-4 style), that builds the schedule once and is started any number of
 * times with gcoll_start().  MPI's rules apply:
 *
 * - Collectives of one communicator, blocking ones included, are posted in
 *   the same order on every rank; they may complete in any order.  Those of
 *   different communicators are independent.
 * - Buffers belong to the library from post (or start) to completion.
 * - A completed non-persistent request is freed by gcoll_test() (with
 *   *done = 1) or gcoll_wait() and set to GCOLL_REQUEST_NULL.  A persistent
 *   request stays valid, inactive, until gcoll_request_free().
 * - Waiting or testing GCOLL_REQUEST_NULL or an inactive persistent request
 *   succeeds at once (test: *done = 1).
 * - The status of wait/test is the collective's outcome; gcoll_waitall()
 *   returns the first failure and still completes or frees every request.
 * - Argument errors are reported by the post or init call itself
 *   (GCOLL_ERR_INVALID_ARG, no request made); the communicator stays usable.
 * - gcoll_comm_destroy() with requests outstanding (active, or persistent
 *   and not freed) returns GCOLL_ERR_INVALID_ARG and destroys nothing.
 * - The compressed allreduce is an engine task: it progresses like the
 *   others (one compressed call in flight per compressor; those of one
 *   communicator run in posting order).  CUDA buffers of the other
 *   collectives are accepted; they run when posted (after the
 *   communicator's earlier requests complete), so their request is complete
 *   at once: no overlap yet for device buffers.  Those of the compressed
 *   allreduce are copied to host memory when it is posted, the call
 *   progresses in the background like a host one, and its last step, the
 *   copy of the result into recvbuf, is made in the caller's gcoll_test()
 *   or gcoll_wait(): the request is complete once the result is there.
 *
 * Progress: see the file comment and GCOLL_PROGRESS.
 */
/**@{*/

/** Opaque handle of an outstanding or persistent collective. */
typedef struct gcoll_request *gcoll_request_t;
/** The null request: what completed requests are set to. */
#define GCOLL_REQUEST_NULL ((gcoll_request_t)0)

gcoll_status_t gcoll_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                                gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm,
                                gcoll_request_t *request);
gcoll_status_t gcoll_ibcast(void *buf, size_t count, gcoll_dtype_t dtype, int root,
                            gcoll_comm_t comm, gcoll_request_t *request);
gcoll_status_t gcoll_ireduce(const void *sendbuf, void *recvbuf, size_t count,
                             gcoll_dtype_t dtype, gcoll_op_t op, int root, gcoll_comm_t comm,
                             gcoll_request_t *request);
gcoll_status_t gcoll_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                                gcoll_dtype_t dtype, gcoll_comm_t comm, gcoll_request_t *request);
gcoll_status_t gcoll_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                     gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm,
                                     gcoll_request_t *request);
gcoll_status_t gcoll_ialltoall(const void *sendbuf, void *recvbuf, size_t count,
                               gcoll_dtype_t dtype, gcoll_comm_t comm, gcoll_request_t *request);
gcoll_status_t gcoll_ibarrier(gcoll_comm_t comm, gcoll_request_t *request);
/** Nonblocking gcoll_allreduce_compressed(): an engine task (see above);
 *  a second call on a compressor with one in flight is GCOLL_ERR_INVALID_ARG. */
gcoll_status_t gcoll_iallreduce_compressed(const void *sendbuf, void *recvbuf, size_t count,
                                           gcoll_dtype_t dtype, gcoll_op_t op,
                                           gcoll_compressor_t compressor,
                                           gcoll_request_t *request);

/** Persistent forms: same arguments; the request is made inactive. */
gcoll_status_t gcoll_allreduce_init(const void *sendbuf, void *recvbuf, size_t count,
                                    gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm,
                                    gcoll_request_t *request);
gcoll_status_t gcoll_bcast_init(void *buf, size_t count, gcoll_dtype_t dtype, int root,
                                gcoll_comm_t comm, gcoll_request_t *request);
gcoll_status_t gcoll_reduce_init(const void *sendbuf, void *recvbuf, size_t count,
                                 gcoll_dtype_t dtype, gcoll_op_t op, int root, gcoll_comm_t comm,
                                 gcoll_request_t *request);
gcoll_status_t gcoll_allgather_init(const void *sendbuf, void *recvbuf, size_t sendcount,
                                    gcoll_dtype_t dtype, gcoll_comm_t comm,
                                    gcoll_request_t *request);
gcoll_status_t gcoll_reduce_scatter_init(const void *sendbuf, void *recvbuf, size_t recvcount,
                                         gcoll_dtype_t dtype, gcoll_op_t op, gcoll_comm_t comm,
                                         gcoll_request_t *request);
gcoll_status_t gcoll_alltoall_init(const void *sendbuf, void *recvbuf, size_t count,
                                   gcoll_dtype_t dtype, gcoll_comm_t comm,
                                   gcoll_request_t *request);
gcoll_status_t gcoll_barrier_init(gcoll_comm_t comm, gcoll_request_t *request);

/** Start an inactive persistent request.  GCOLL_ERR_INVALID_ARG for an
 *  active or non-persistent one. */
gcoll_status_t gcoll_start(gcoll_request_t request);
/** Advance every outstanding request once; *done = 1 if *request completed
 *  (non-persistent: freed and set to GCOLL_REQUEST_NULL). */
gcoll_status_t gcoll_test(gcoll_request_t *request, int *done);
/** Block until *request completes; returns its outcome. */
gcoll_status_t gcoll_wait(gcoll_request_t *request);
/** gcoll_wait() on each of n requests; the first failure is returned. */
gcoll_status_t gcoll_waitall(size_t n, gcoll_request_t requests[]);
/** Free an inactive request (persistent, or not yet completed is refused:
 *  GCOLL_ERR_INVALID_ARG for an active one); sets it to GCOLL_REQUEST_NULL. */
gcoll_status_t gcoll_request_free(gcoll_request_t *request);
/** Install (or, with NULL, remove) the process's wait hook: a function that
 *  a thread blocked in libgcoll (a blocking collective, gcoll_wait(),
 *  gcoll_waitall()) calls each time a pass over the outstanding requests
 *  found nothing to do, with libgcoll's lock released, before it yields or
 *  sleeps.  Never called by the progress thread.  For a layer that must keep
 *  another progress engine moving while libgcoll waits: the PMPI drop-in
 *  advances MPI's, so that an application's pending point-to-point messages
 *  move during an MPI_Allreduce that libgcoll serves, as MPI's own would.
 *  The hook may call MPI but not libgcoll; keep it short (it runs in every
 *  idle turn of a wait).  Not thread-safe against waits in progress: set it
 *  before the first collective. */
gcoll_status_t gcoll_wait_hook_set(void (*hook)(void *arg), void *arg);
/**@}*/

#ifdef __cplusplus
}
#endif

#endif /* GCOLL_H */
