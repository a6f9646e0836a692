/* SPDX-License-Identifier: BSD-3-Clause */
/* membarrier(2) by scope (base/membarrier.h). */
#include <pthread.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/membarrier.h>
#include <sys/syscall.h>
#endif
#include "base/membarrier.h"

#if defined(__linux__) && defined(SYS_membarrier)
static const int barrier_cmd[GCOLL_MEMBARRIER_SCOPES] = {
    MEMBARRIER_CMD_PRIVATE_EXPEDITED, MEMBARRIER_CMD_GLOBAL_EXPEDITED };
static const int register_cmd[GCOLL_MEMBARRIER_SCOPES] = {
    MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED };
#endif

static int registered[GCOLL_MEMBARRIER_SCOPES];

static void register_scope(gcoll_membarrier_scope_t s)
{
#if defined(__linux__) && defined(SYS_membarrier)
    long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    registered[s] = cmds > 0 && (cmds & barrier_cmd[s]) &&
                    syscall(SYS_membarrier, register_cmd[s], 0, 0) == 0;
#else
    (void)s;
#endif
}

static void register_private(void) { register_scope(GCOLL_MEMBARRIER_PRIVATE); }
static void register_global(void) { register_scope(GCOLL_MEMBARRIER_GLOBAL); }

int gcoll_membarrier_ready(gcoll_membarrier_scope_t scope)
{
    static pthread_once_t once[GCOLL_MEMBARRIER_SCOPES] = { PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT };
    pthread_once(&once[scope], scope == GCOLL_MEMBARRIER_PRIVATE ? register_private
                                                                 : register_global);
    return registered[scope];
}

void gcoll_membarrier(gcoll_membarrier_scope_t scope)
{
#if defined(__linux__) && defined(SYS_membarrier)
    syscall(SYS_membarrier, barrier_cmd[scope], 0, 0);
#else
    (void)scope;
#endif
}
