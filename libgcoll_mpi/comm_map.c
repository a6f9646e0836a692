/* SPDX-License-Identifier: BSD-3-Clause */
/* MPI communicator -> libgcoll communicator, by attribute caching.
 *
 * Each MPI communicator an intercepted collective reaches gets one entry,
 * stored as an attribute (keyval made with MPI_COMM_NULL_COPY_FN, so a
 * duplicate starts without one, and a delete callback that destroys the
 * libgcoll communicator when the application frees its communicator).  The
 * libgcoll communicator is made lazily by the first intercepted collective
 * on it: all ranks of the communicator make that call, so
 * gcoll_comm_create (collective) is reached by all of them together.  An
 * entry also remembers "never serve this one" (intercommunicator, creation
 * failed), so that decision is made once and alike on every rank.
 *
 * MPI_Finalize: an attribute on MPI_COMM_SELF, set at initialisation, is
 * deleted first in MPI_Finalize (MPI-2.2 8.7.1), while MPI still works: its
 * callback prints the report and destroys every libgcoll communicator left,
 * in creation order (the same on every rank), so no shared-memory segment
 * outlives the job and libgcoll's progress thread is gone before MPI shuts
 * down.  This also covers Fortran's MPI_FINALIZE, which calls
 * PMPI_Finalize directly. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "gmpi.h"

int gmpi_enabled = 1;
__thread int gmpi_inside __attribute__((tls_model("initial-exec")));

typedef struct entry {
    gmpi_comm_t   pub;      /* pub.g NULL: not served, why says so */
    const char   *why;
    int           destroyed;
    struct entry *next, *prev;
} entry_t;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static entry_t *reg_head, *reg_tail;   /* creation order */
static int comm_keyval = MPI_KEYVAL_INVALID, self_keyval = MPI_KEYVAL_INVALID;
volatile int gmpi_init_done;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static volatile int finalized;

/* One-entry lookup cache per thread; the generation changes whenever an
 * entry dies, so a communicator handle reused after MPI_Comm_free is never
 * mistaken (coll.c's memo of the last allreduce keys on it too). */
volatile unsigned gmpi_comm_gen = 1;
static __thread __attribute__((tls_model("initial-exec"))) MPI_Comm cache_comm = MPI_COMM_NULL;
static __thread __attribute__((tls_model("initial-exec"))) entry_t *cache_e;
static __thread __attribute__((tls_model("initial-exec"))) unsigned cache_gen;

/* 0 when done; -1 when libgcoll refused (requests of the communicator
 * still outstanding: MPI lets a program free a communicator with
 * nonblocking collectives pending), and the entry must stay for later. */
static int destroy_entry(entry_t *e)
{
    if (e->destroyed) return 0;
    if (e->pub.g) {
        gmpi_inside++;
        gcoll_status_t st = gcoll_comm_destroy(e->pub.g);
        gmpi_inside--;
        if (st != GCOLL_SUCCESS) {
            if (finalized)
                fprintf(stderr, "gcoll_mpi: WARN gcoll_comm_destroy: %s\n", gcoll_last_error());
            return -1;
        }
        e->pub.g = NULL;
    }
    e->destroyed = 1;
    return 0;
}

static int comm_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    entry_t *e = attr;
    gmpi_comm_gen++;
    pthread_mutex_lock(&reg_lock);
    if (destroy_entry(e) != 0) {   /* kept in the registry: MPI_Finalize retries */
        e->why = "communicator freed";
        pthread_mutex_unlock(&reg_lock);
        return MPI_SUCCESS;
    }
    if (e->prev) e->prev->next = e->next; else reg_head = e->next;
    if (e->next) e->next->prev = e->prev; else reg_tail = e->prev;
    pthread_mutex_unlock(&reg_lock);
    free(e);
    return MPI_SUCCESS;
}

static int self_delete_fn(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    gmpi_finalize();
    return MPI_SUCCESS;
}

static void init_body(void)
{
    const char *v = getenv("GCOLL_MPI");
    if (v && (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"))) gmpi_enabled = 0;
    if (gmpi_enabled) {
        /* libgcoll's progress thread would compete with the polling loops
         * of request.c (MPI_Test, MPI_Waitany, MPI_Waitsome test, they do
         * not wait inside libgcoll, so the thread does not step aside): 76
         * us instead of 0.2 us per small MPI_Allreduce at 2 ranks on 2
         * cores, measured when the blocking calls polled too.  Progress
         * happens inside the application's MPI calls, as MPI's own does.
         * An explicit GCOLL_PROGRESS is kept. */
        setenv("GCOLL_PROGRESS", "caller", 0);
        gcoll_wait_hook_set(gmpi_wait_hook, NULL);
        gmpi_types_init();
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_delete_fn, &comm_keyval, NULL);
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &self_keyval, NULL);
        PMPI_Comm_set_attr(MPI_COMM_SELF, self_keyval, NULL);
    }
    gmpi_init_done = 1;
}

void gmpi_init_slow(void)
{
    int inited = 0, fin = 0;
    PMPI_Initialized(&inited);
    PMPI_Finalized(&fin);
    if (!inited || fin) return;   /* erroneous call: MPI will say so */
    pthread_once(&once, init_body);
}

const gmpi_comm_t *gmpi_comm_get(MPI_Comm comm, const char **why)
{
    if (cache_comm == comm && cache_gen == gmpi_comm_gen && comm != MPI_COMM_NULL) {
        *why = cache_e->why;
        return cache_e->pub.g ? &cache_e->pub : NULL;
    }
    if (comm == MPI_COMM_NULL || !gmpi_init_done || finalized) {
        *why = "MPI_COMM_NULL or MPI not initialised";
        return NULL;
    }
    entry_t *e = NULL;
    int flag = 0;
    if (PMPI_Comm_get_attr(comm, comm_keyval, &e, &flag) != MPI_SUCCESS) {
        *why = "invalid communicator";
        return NULL;
    }
    if (!flag) {
        e = calloc(1, sizeof(*e));
        if (!e) { *why = "out of memory"; return NULL; }
        int inter = 0;
        PMPI_Comm_test_inter(comm, &inter);
        if (inter) {
            e->why = "intercommunicator";
        } else {
            gmpi_inside++;
            gcoll_status_t st = gcoll_comm_create(comm, &e->pub.g);
            gmpi_inside--;
            if (st == GCOLL_SUCCESS) gmpi_sizes_load(&e->pub, comm);
            if (st != GCOLL_SUCCESS) {
                e->pub.g = NULL;
                e->why = "gcoll_comm_create failed";
                int rank = 0;
                PMPI_Comm_rank(comm, &rank);
                if (rank == 0)
                    fprintf(stderr, "gcoll_mpi: WARN gcoll_comm_create: %s (this communicator "
                                    "falls back to MPI)\n", gcoll_last_error());
            }
        }
        pthread_mutex_lock(&reg_lock);
        e->prev = reg_tail;
        if (reg_tail) reg_tail->next = e; else reg_head = e;
        reg_tail = e;
        pthread_mutex_unlock(&reg_lock);
        PMPI_Comm_set_attr(comm, comm_keyval, e);
    }
    cache_comm = comm;
    cache_e = e;
    cache_gen = gmpi_comm_gen;
    *why = e->why;
    return e->pub.g ? &e->pub : NULL;
}

void gmpi_finalize(void)
{
    if (finalized) return;
    finalized = 1;
    gmpi_comm_gen++;
    gmpi_report_print();
    pthread_mutex_lock(&reg_lock);
    for (entry_t *e = reg_head; e; e = e->next) destroy_entry(e);
    pthread_mutex_unlock(&reg_lock);
}

/* With the calibration cache on (GCOLL_TUNE_CACHE not off), MPI_COMM_WORLD's
 * libgcoll communicator is made inside MPI_Init: gcoll_comm_create measures
 * the machine where its cache has no entry for the shape (a few seconds,
 * once per machine and shape), and that belongs in MPI_Init, not in the
 * application's first MPI_Allreduce, which it may be timing.  Other
 * communicators are still made by their first collective. */
static void world_early(void)
{
    const char *cache = getenv("GCOLL_TUNE_CACHE");
    const char *why;
    if (gmpi_enabled && gmpi_init_done && !(cache && !strcasecmp(cache, "off")))
        gmpi_comm_get(MPI_COMM_WORLD, &why);
}

/* Set up at MPI_Init, so the MPI_COMM_SELF attribute exists even if the
 * first collective comes from Fortran (which calls PMPI_Init itself: then
 * the first intercepted call sets it up). */
int MPI_Init(int *argc, char ***argv)
{
    int rc = PMPI_Init(argc, argv);
    if (rc == MPI_SUCCESS) gmpi_init_once();
    if (rc == MPI_SUCCESS) world_early();
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    if (rc == MPI_SUCCESS) gmpi_init_once();
    if (rc == MPI_SUCCESS) world_early();
    return rc;
}
