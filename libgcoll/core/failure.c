/* SPDX-License-Identifier: BSD-3-Clause */
/* Agreement at set-up and revocation in calls (failure.h). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/clock.h"
#include "base/alloc.h"
#include "base/log.h"
#include "base/status.h"
#include "core/comm.h"
#include "core/engine.h"
#include "core/failure.h"

#define NOTICE_TAG      1
#define NOTICE_POLL_S   1e-3   /* a waiter tests for notices at most this often */
#define MAX_QUEUED      64

/* Communicators whose notices the progress thread queued (engine lock). */
static struct gcoll_comm *queued[MAX_QUEUED];
static int nqueued;

gcoll_status_t gcoll_agree(MPI_Comm comm, gcoll_status_t st, const char *what)
{
    int rank;
    struct { int status, rank; } mine, worst;
    MPI_Comm_rank(comm, &rank);
    mine.status = (int)st;
    mine.rank   = rank;
    if (MPI_Allreduce(&mine, &worst, 1, MPI_2INT, MPI_MAXLOC, comm) != MPI_SUCCESS)
        return st != GCOLL_SUCCESS ? st
                                   : GCOLL_ERROR(GCOLL_ERR_TRANSPORT,
                                                 "%s: the agreement's MPI_Allreduce failed", what);
    if (st != GCOLL_SUCCESS || worst.status == GCOLL_SUCCESS) return st;
    return GCOLL_ERROR((gcoll_status_t)worst.status, "%s failed on rank %d (%s; its log says why)",
                       what, worst.rank, gcoll_strerror((gcoll_status_t)worst.status));
}

static gcoll_status_t post_receive(gcoll_failure_t *f)
{
    if (MPI_Irecv(&f->in, (int)sizeof(f->in), MPI_BYTE, MPI_ANY_SOURCE, NOTICE_TAG, f->comm,
                  &f->recv) != MPI_SUCCESS)
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "cannot post the receive for failure notices");
    return GCOLL_SUCCESS;
}

gcoll_status_t gcoll_failure_init(struct gcoll_comm *c)
{
    gcoll_failure_t *f = &c->failure;
    f->comm = MPI_COMM_NULL;
    f->recv = MPI_REQUEST_NULL;
    f->sends = gcoll_malloc(sizeof(MPI_Request) * (size_t)c->size);
    gcoll_status_t st = f->sends ? GCOLL_SUCCESS
                                 : GCOLL_ERROR(GCOLL_ERR_NO_MEMORY,
                                               "cannot allocate the failure notices' requests");
    for (int i = 0; f->sends && i < c->size; i++) f->sends[i] = MPI_REQUEST_NULL;
    GCOLL_TRY(gcoll_agree(c->mpi_comm, st, "gcoll_comm_create: the failure notices"));
    if (MPI_Comm_dup(c->mpi_comm, &f->comm) != MPI_SUCCESS) {
        f->comm = MPI_COMM_NULL;
        return GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "MPI_Comm_dup for failure notices failed");
    }
    MPI_Comm_set_errhandler(f->comm, MPI_ERRORS_RETURN);
    return post_receive(f);
}

#define DRAIN_MAX 4096   /* eager in every MPI: its data has arrived */
#define DRAIN_LINGER_S 0.2

/* Receive one small message that matches nothing (whole: a truncating
 * receive is an error MPICH raises as fatal).  Returns 1 if it did, 0 when
 * none is left, -1 when the next is large.  A large one is left alone:
 * receiving it would let a rendezvous sender's MPI read its buffer, which
 * the caller may have freed since the call failed (Open MPI cannot cancel
 * sends). */
static int drain_one(MPI_Comm comm)
{
    char sink[DRAIN_MAX];
    int found = 0;
    MPI_Status st;
    MPI_Count bytes = 0;
    MPI_Message msg;
    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &found, &st) != MPI_SUCCESS || !found)
        return 0;
    MPI_Get_elements_x(&st, MPI_BYTE, &bytes);
    if (bytes < 0 || bytes > DRAIN_MAX) return -1;
    if (MPI_Improbe(st.MPI_SOURCE, st.MPI_TAG, comm, &found, &msg, &st) != MPI_SUCCESS || !found)
        return 0;
    MPI_Get_elements_x(&st, MPI_BYTE, &bytes);   /* the first one again: same size */
    if (bytes < 0 || bytes > DRAIN_MAX) bytes = DRAIN_MAX;
    MPI_Mrecv(sink, (int)bytes, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
    return 1;
}

void gcoll_failure_comm_free(MPI_Comm *comm, int failed)
{
    if (*comm == MPI_COMM_NULL) return;
    int left;
    /* after a failure, peers' last messages (their notices, an abandoned
     * round's sends) may still be on their way: keep receiving until none
     * has come for DRAIN_LINGER_S */
    double quiet_since = gcoll_clock_now();
    for (;;) {
        while ((left = drain_one(*comm)) == 1) quiet_since = gcoll_clock_now();
        if (left < 0 || !failed || gcoll_clock_now() - quiet_since > DRAIN_LINGER_S) break;
        sched_yield();
    }
    if (left < 0) {
        /* freeing it would abort the job under MPICH: the handle is lost
         * instead (only after a failed call) */
        gcoll_info("a failed call's large message is still unmatched: its MPI "
                   "communicator is left allocated");
        *comm = MPI_COMM_NULL;
        return;
    }
    MPI_Comm_free(comm);
}

void gcoll_failure_fini(struct gcoll_comm *c)
{
    gcoll_failure_t *f = &c->failure;
    gcoll_failure_flush();   /* ours among them */
    if (f->recv != MPI_REQUEST_NULL) {
        MPI_Cancel(&f->recv);
        MPI_Wait(&f->recv, MPI_STATUS_IGNORE);
    }
    if (f->sends) {
        /* a notice is a few hundred bytes: sent eagerly, so done or nearly;
         * one still in flight completes after its request is freed */
        for (int i = 0; i < c->size; i++)
            if (f->sends[i] != MPI_REQUEST_NULL) MPI_Request_free(&f->sends[i]);
        free(f->sends);
    }
    gcoll_failure_comm_free(&f->comm, f->status != GCOLL_SUCCESS);   /* notices, unreceived */
}

gcoll_status_t gcoll_comm_usable(struct gcoll_comm *c)
{
    if (GCOLL_LIKELY(c->failure.status == GCOLL_SUCCESS)) return GCOLL_SUCCESS;
    return GCOLL_ERROR(c->failure.status, "the communicator is revoked: %s (destroy it)",
                       c->failure.why);
}

/* Revoke c and its levels (they serve c's composite operations): record
 * why, and complete their outstanding requests with that outcome. */
static void revoke(struct gcoll_comm *c, gcoll_status_t st, const char *why)
{
    if (!c || c->failure.status != GCOLL_SUCCESS) return;
    c->failure.status = st;
    snprintf(c->failure.why, sizeof(c->failure.why), "%s", why);
    gcoll_engine_abort_comm(c, st, why);
    revoke(c->level_node, st, why);
    revoke(c->level_rail, st, why);
}

static void send_notices(struct gcoll_comm *c)
{
    gcoll_failure_t *f = &c->failure;
    f->to_send = 0;
    for (int r = 0; r < c->size; r++) {
        if (r == c->rank) continue;
        if (MPI_Isend(&f->out, (int)sizeof(f->out), MPI_BYTE, r, NOTICE_TAG, f->comm,
                      &f->sends[r]) != MPI_SUCCESS)
            gcoll_warn("cannot send the failure notice to rank %d: it may wait for ever", r);
    }
}

void gcoll_comm_fail(struct gcoll_comm *c, gcoll_status_t st)
{
    if (c->failure.status != GCOLL_SUCCESS || st == GCOLL_SUCCESS) return;
    gcoll_failure_t *f = &c->failure;
    char why[sizeof(f->why)];
    snprintf(why, sizeof(why), "rank %d failed: %s", c->rank, gcoll_last_error());
    f->out.status = (int)st;
    f->out.rank   = c->rank;
    f->out.seq    = c->seq;
    snprintf(f->out.text, sizeof(f->out.text), "%s", gcoll_last_error());
    revoke(c, st, why);
    if (!gcoll_engine_in_thread()) {
        send_notices(c);
        return;
    }
    f->to_send = 1;
    for (int i = 0; i < MAX_QUEUED; i++)
        if (!queued[i]) {
            queued[i] = c;
            nqueued++;
            return;
        }
    gcoll_warn("too many revoked communicators at once: a notice waits for the next call");
}

/* A notice arrived on c: revoke it with the sender's outcome. */
static void receive_notice(struct gcoll_comm *c)
{
    gcoll_failure_t *f = &c->failure;
    char why[sizeof(f->why)];
    f->in.text[sizeof(f->in.text) - 1] = '\0';
    snprintf(why, sizeof(why), "rank %d failed: %s", f->in.rank, f->in.text);
    gcoll_status_t st = (gcoll_status_t)f->in.status;
    if ((unsigned)st >= GCOLL_STATUS_COUNT || st == GCOLL_SUCCESS) st = GCOLL_ERR_INTERNAL;
    gcoll_info("communicator revoked by a notice (call %u): %s", f->in.seq, why);
    revoke(c, st, why);
}

static int poll_one(struct gcoll_comm *c)
{
    gcoll_failure_t *f = &c->failure;
    int got = 0;
    if (f->status != GCOLL_SUCCESS || f->recv == MPI_REQUEST_NULL) return 0;
    if (MPI_Test(&f->recv, &got, MPI_STATUS_IGNORE) != MPI_SUCCESS || !got) return 0;
    f->recv = MPI_REQUEST_NULL;   /* one notice is enough: the rest stay unmatched */
    receive_notice(c);
    return 1;
}

void gcoll_failure_flush(void)
{
    if (!nqueued) return;
    for (int i = 0; i < MAX_QUEUED; i++)
        if (queued[i]) {
            send_notices(queued[i]);
            queued[i] = NULL;
        }
    nqueued = 0;
}

int gcoll_failure_poll(struct gcoll_comm *c)
{
    int revoked = 0;
    gcoll_failure_flush();
    double t = gcoll_clock_now();
    if (t - c->failure.polled < NOTICE_POLL_S) return 0;
    c->failure.polled = t;
    revoked |= poll_one(c);
    for (struct gcoll_comm *p = c->parent; p; p = p->parent) revoked |= poll_one(p);
    return revoked;
}
