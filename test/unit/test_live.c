/* SPDX-License-Identifier: BSD-3-Clause */
/* The registry of live handles (core/live.h): a destroyed handle stays
 * invalid even when later handles are made, which with plain malloc/free
 * may reuse its address (the first line says whether they did here).  One
 * line per failure; exit 1 on any. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "core/live.h"
#include "gcoll.h"

static int n_checks, n_fail;

#define CHECK(cond, ...) \
    do { \
        n_checks++; \
        if (!(cond)) { \
            n_fail++; \
            printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            printf(__VA_ARGS__); \
            printf("\n"); \
        } \
    } while (0)

enum { OBJ = 552, ROUNDS = 200 };   /* about a communicator's size */

/* What comm.c does: allocate, register; unregister, free.  A later handle
 * may sit at the old address, and then the old handle passes the lookup.
 * Addresses as integers: the freed pointer itself is never used. */
static int malloc_reuses(void)
{
    uintptr_t old[ROUNDS];
    int stale_ok = 0;
    for (int i = 0; i < ROUNDS && !stale_ok; i++) {
        void *b = malloc(OBJ);
        gcoll_live_add(b);
        for (int j = 0; j < i; j++) stale_ok |= old[j] == (uintptr_t)b;
        old[i] = (uintptr_t)b;
        gcoll_live_remove(b);
        free(b);
    }
    return stale_ok;
}

int main(void)
{
    int reuse = malloc_reuses();
    printf("test_live: with malloc/free a new handle %s a destroyed one's address\n",
           reuse ? "took" : "did not take");

    void *gone[ROUNDS];
    void *a = gcoll_live_alloc(OBJ);
    CHECK(a != NULL, "gcoll_live_alloc");
    CHECK(gcoll_live_add(a) == GCOLL_SUCCESS, "gcoll_live_add");
    CHECK(gcoll_live_has(a), "a registered handle is live");
    gcoll_live_free(a);
    CHECK(!gcoll_live_has(a), "a freed handle is not live");
    for (int i = 0; i < ROUNDS; i++) {
        void *b = gcoll_live_alloc(OBJ);
        CHECK(b != NULL, "gcoll_live_alloc round %d", i);
        CHECK(b != a, "round %d: a new handle got the first destroyed one's address", i);
        for (int j = 0; j < i; j++)
            if (b == gone[j]) CHECK(0, "round %d: a new handle got round %d's address", i, j);
        CHECK(gcoll_live_add(b) == GCOLL_SUCCESS, "gcoll_live_add round %d", i);
        CHECK(gcoll_live_has(b), "round %d: the new handle is live", i);
        CHECK(!gcoll_live_has(a), "round %d: the destroyed handle is live again", i);
        gcoll_live_free(b);
        gone[i] = b;
    }
    for (int j = 0; j < ROUNDS; j++)
        if (gcoll_live_has(gone[j])) CHECK(0, "handle of round %d is live after its free", j);
    gcoll_live_free(NULL);   /* ignored */
    printf("test_live: %d checks, %d failures\n", n_checks, n_fail);
    return n_fail ? 1 : 0;
}
