/* SPDX-License-Identifier: BSD-3-Clause */
/* One logging macro family.  The level is tested before any formatting, so a
 * disabled trace costs one predictable branch on the fast path. */
#ifndef GCOLL_LOG_H
#define GCOLL_LOG_H

typedef enum {
    GCOLL_LOG_WARN  = 0,  /* something is wrong or was not honoured (default) */
    GCOLL_LOG_INFO  = 1,  /* topology, transports, each selection decision once */
    GCOLL_LOG_TRACE = 2   /* every collective call and schedule */
} gcoll_log_level_t;

/* Set from GCOLL_DEBUG by every gcoll_comm_create (process-wide: the
 * last one wins); atomic, for threads creating communicators at once. */
extern _Atomic int gcoll_log_level;
extern _Atomic int gcoll_log_rank;   /* world rank in the prefix, -1 before comm create */

void gcoll_log_emit(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define gcoll_log(_lvl, ...) \
    do { \
        if ((_lvl) <= gcoll_log_level) gcoll_log_emit((_lvl), __FILE__, __LINE__, __VA_ARGS__); \
    } while (0)

#define gcoll_warn(...)  gcoll_log(GCOLL_LOG_WARN, __VA_ARGS__)
#define gcoll_info(...)  gcoll_log(GCOLL_LOG_INFO, __VA_ARGS__)
#define gcoll_trace(...) gcoll_log(GCOLL_LOG_TRACE, __VA_ARGS__)

#endif
