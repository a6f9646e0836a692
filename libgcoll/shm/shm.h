/* SPDX-License-Identifier: BSD-3-Clause */
/* Intra-node collectives over one shared-memory segment, for host buffers.
 *
 * A gcoll_shm_t belongs to one node communicator (the ranks of one node, or
 * of one GCOLL_NODE_SIZE group).  Every call below is blocking and must be
 * made by every rank of that communicator, in the same order, with matching
 * count, dtype, op and root, exactly as for the MPI collectives.  Buffers are
 * host memory.  A count (or byte count) of 0 returns at once without
 * synchronising; buffers may then be NULL.
 *
 * Errors: GCOLL_ERR_TRANSPORT when the segment cannot be created or mapped;
 * GCOLL_ERR_TIMEOUT when peers do not arrive within cfg->timeout (the communicator's)
 * seconds (GCOLL_TIMEOUT; 0 waits forever), with a sentence naming the local
 * ranks that were missing.  After a timeout the object's step counters are no
 * longer in agreement, so every later call fails with GCOLL_ERR_TRANSPORT;
 * only gcoll_shm_destroy() remains valid.
 *
 * How it works (details in shm_int.h and shm_coll.c): ranks reduce disjoint
 * slices in parallel, chunk by chunk so the shared working set stays in
 * cache, synchronising through lock-free flags in the segment. */
#ifndef GCOLL_SHM_H
#define GCOLL_SHM_H

#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include "gcoll.h"
#include "base/config.h"

typedef struct gcoll_shm gcoll_shm_t;

/* Create the segment of node_comm and map it on every rank.  Collective over
 * node_comm (all ranks of one node) and host_comm (all ranks sharing this
 * host's CPUs, which decide whether waiters may spin).  On failure every rank
 * returns the same error and *shm is NULL. */
gcoll_status_t gcoll_shm_create(MPI_Comm node_comm, MPI_Comm host_comm, const gcoll_config_t *cfg,
                                gcoll_shm_t **shm);

/* Unmap and free.  Collective in the sense that every rank calls it once;
 * it does not wait for the others (the kernel frees the segment when the
 * last rank unmaps it).  NULL is ignored. */
void gcoll_shm_destroy(gcoll_shm_t *shm);

/* dst[i] = op over local ranks of src[i], on every rank.  src == dst allowed
 * (in place).  op is SUM, PROD, MIN or MAX (the caller turns AVG into SUM and
 * a division).  Every rank gets bitwise the same result: each element is
 * reduced in local-rank order, 0 op 1 op 2 ... */
gcoll_status_t gcoll_shm_allreduce(gcoll_shm_t *shm, const void *src, void *dst, size_t count,
                                   gcoll_dtype_t dtype, gcoll_op_t op);

/* src holds count elements, split into size blocks by gcoll_block_off() /
 * gcoll_block_len() (algos/peers.h); local rank r receives in dst the
 * reduction of block r.  In place: dst == src + block offset of r. */
gcoll_status_t gcoll_shm_reduce_scatter(gcoll_shm_t *shm, const void *src, void *dst,
                                        size_t count, gcoll_dtype_t dtype, gcoll_op_t op);

/* Inverse of reduce_scatter: local rank r contributes block r (same
 * partition of count elements of dt_size bytes) from src; dst receives all
 * count elements on every rank.  In place: src == dst + block offset of r. */
gcoll_status_t gcoll_shm_allgather(gcoll_shm_t *shm, const void *src, void *dst, size_t count,
                                   size_t dt_size);

/* Copy bytes of buf on local rank root to buf on every rank. */
gcoll_status_t gcoll_shm_bcast(gcoll_shm_t *shm, void *buf, size_t bytes, int root);

/* dst[i] = op over local ranks of src[i], on root only (dst is not touched
 * elsewhere and may be NULL there).  src == dst allowed on the root. */
gcoll_status_t gcoll_shm_reduce(gcoll_shm_t *shm, const void *src, void *dst, size_t count,
                                gcoll_dtype_t dtype, gcoll_op_t op, int root);

/* Return once every local rank has entered the barrier. */
gcoll_status_t gcoll_shm_barrier(gcoll_shm_t *shm);

/* ---- resumable form (the progress engine's NODE steps) ------------------
 * Each collective above is a loop of phases separated by steps (shm_int.h).
 * gcoll_shm_op_start() checks the arguments and prepares the loop;
 * gcoll_shm_op_progress() runs the next phase if the peers are there for it
 * (one phase per call, so a caller holding a lock holds it briefly), and
 * returns with *done = 0 otherwise, never blocking.  Per segment, one
 * op at a time, started in the same order on every rank (the engine keeps
 * NODE steps in posting order).  The blocking calls above are start +
 * progress + sleep. */
typedef struct gcoll_shm_op {
    uint8_t        coll;      /* gcoll_coll_t of the collective */
    uint8_t        waiting;   /* signalled step t, peers not all there yet */
    uint8_t        nt;        /* stream the result into dst (results from 16 MiB) */
    uint8_t        publish;   /* small reduce: this rank publishes its input */
    uint8_t        tiny;      /* payload lives in the flags' cache lines */
    uint8_t        stream;    /* write what the peers read with streaming stores
                               * (the write way, shm_coll.c) */
    uint8_t        cls;       /* ... its size class, and when it started */
    uint8_t        failed;    /* a single-copy read failed here (shm_cma.c) */
    uint8_t        form_cls;  /* large reduce, GCOLL_SHM_CMA=auto, at its root: the size class */
    uint8_t        form_way;  /* ... and the form it took (shm_coll.c, "The reduce's form") */
    double         t0;
    int            root;
    const unsigned char *src;
    unsigned char *dst;
    size_t         count, dts, bytes;
    gcoll_dtype_t  dtype;
    gcoll_op_t     op;
    size_t         t, last;   /* current phase; phases run 0..last */
    size_t         n;         /* chunks */
    size_t         sub, stride;
    uint64_t       seq;       /* ring forms: the op's number in the ring (shm_ring.c) */
    int            form;      /* which loop body (shm_coll.c) */
    int            zc_form;   /* zero-copy negotiation: the copying form (shm_zcopy.c) */
} gcoll_shm_op_t;

/* An allreduce in slices at every size: the pipeline of shm_coll.c (every
 * rank reduces its slice, then copies the others' out: two steps), never
 * the one-step form where every rank reduces everything.  Which of the two
 * is faster at 4-128 KiB depends on the machine (what a cache line costs to
 * move between cores against what a step costs), so it is a separate
 * algorithm (shm_sliced) that the calibration times beside shm. */
#define GCOLL_SHM_SLICED 0x1u

/* An allgather or bcast by single copy (shm_cma.c): every rank reads the
 * peers' blocks (the root's buffer) straight into its result, one kernel
 * copy where the segment's forms copy twice.  Whether that is faster
 * depends on the machine's kernel copy against its cache-to-cache copies
 * (docs/design.md "Single copy by CMA"), so it is a separate algorithm
 * (shm_cma) that the calibration times beside shm.  Without CMA on the
 * node (gcoll_shm_cma_calls stays put) the op copies through the segment. */
#define GCOLL_SHM_SINGLE 0x2u

/* The write way of what the peers read: through the cache, or streamed
 * (shm_coll.c, "Writing the reduced slice"; GCOLL_SHM_STREAM).  Copies
 * this large choose it per call (one-step allreduces, allgather,
 * reduce_scatter and bcast chunks, a reduce's ring payloads; ring bcasts
 * from 1 KiB, shm_ring.c); smaller ones go through the cache.  The
 * calibration times the node's algorithms in both ways from here
 * (core/calibrate.c). */
#define GCOLL_SHM_STREAM_IN_MIN (8u << 10)

/* coll: GCOLL_COLL_ALLREDUCE, REDUCE_SCATTER, ALLGATHER (dtype's size is the
 * element size), BCAST (count is bytes), REDUCE, BARRIER (algos/algo.h).
 * Arguments as for the blocking calls; errors identical on every rank.
 * flags: GCOLL_SHM_SLICED, GCOLL_SHM_SINGLE or 0, the same on every rank. */
gcoll_status_t gcoll_shm_op_start(gcoll_shm_t *shm, gcoll_shm_op_t *o, int coll, const void *src,
                                  void *dst, size_t count, gcoll_dtype_t dtype, gcoll_op_t op,
                                  int root, unsigned flags);
/* Run what can run now; *done = 1 when the collective has finished here. */
gcoll_status_t gcoll_shm_op_progress(gcoll_shm_t *shm, gcoll_shm_op_t *o, int *done);

/* Whether a started op waits for the peers to signal this rank's last
 * step (its own, or one a previous op left unconfirmed). */
int gcoll_shm_op_waits(const gcoll_shm_t *shm, const gcoll_shm_op_t *o);

/* Spin (with the CPU's pause hint) up to polls times for the peers of a
 * waiting op; whether they all arrived.  For a waiter with nothing else
 * outstanding, which the old blocking loop served the same way. */
int gcoll_shm_op_spin(const gcoll_shm_t *shm, const gcoll_shm_op_t *o, int polls);

/* What the segment's op in progress waits for: the peers' signal of this
 * rank's last step, or (a ring op, shm_ring.c) every other rank (from < 0)
 * or rank `from` to have finished ring op seq (FREE) or published its
 * payload of ring op seq (DATA). */
enum { GCOLL_SHM_RING_NONE = 0, GCOLL_SHM_RING_FREE, GCOLL_SHM_RING_DATA };
typedef struct {
    int      kind;
    int      from;
    uint64_t seq;
} gcoll_shm_ring_wait_t;
typedef struct {
    uint64_t              step;
    gcoll_shm_ring_wait_t ring;   /* kind NONE: the step */
} gcoll_shm_wait_t;

/* Sleep until a peer moves what the segment waits for, or max_ns pass
 * (futex; no CPU while a peer is late).  For a waiter with nothing else to
 * progress.  The wait point is read under the engine lock: the park runs
 * outside it, while another thread's pass may advance the segment. */
gcoll_shm_wait_t gcoll_shm_wait_point(const gcoll_shm_t *shm);
void gcoll_shm_park(gcoll_shm_t *shm, const gcoll_shm_wait_t *w, long max_ns);

/* Mark the segment's step counters as no longer agreed (a wait timed out
 * or was abandoned): every later call fails with GCOLL_ERR_TRANSPORT. */
void gcoll_shm_break(gcoll_shm_t *shm);

/* Names of the local ranks that have not signalled this rank's current
 * step, for a timeout message. */
void gcoll_shm_missing(const gcoll_shm_t *shm, char *buf, size_t len);

/* Zero-copy counters of a segment (shm_zcopy.c), since its creation:
 * collectives that ran straight on the peers' gcoll_mem_alloc buffers, that
 * looked at zero-copy and copied because some rank's buffers were not all
 * shareable, and that copied because a rank could not map a peer's buffer.
 * Zeros for NULL or a segment whose ranks cannot map each other's memory. */
typedef struct {
    uint64_t taken, declined, failed;
} gcoll_shm_zc_stats_t;
void gcoll_shm_zc_stats(const gcoll_shm_t *shm, gcoll_shm_zc_stats_t *stats);

/* A count that grows whenever this rank takes part in an operation on the
 * segment (its steps and ring ops): equal before and after a call that
 * never touched it. */
uint64_t gcoll_shm_ops(const gcoll_shm_t *shm);

/* Rank of the caller in, and size of, the node communicator. */
int gcoll_shm_rank(const gcoll_shm_t *shm);
int gcoll_shm_size(const gcoll_shm_t *shm);

/* Whether a rank this one waits for published last from the CPU this rank
 * runs on (ranks outnumber CPUs only): it is not running now, and spinning
 * for it only keeps it off that CPU.  A hint: the rank may have moved. */
int gcoll_shm_peer_here(const gcoll_shm_t *shm);

/* Flag polls a lone waiter may spin before it should give up its CPU:
 * long with a CPU per rank, a few dozen when ranks outnumber CPUs (a
 * spinner then burns the time slice that the rank it waits for needs). */
int gcoll_shm_spin_limit(const gcoll_shm_t *shm);

#endif
