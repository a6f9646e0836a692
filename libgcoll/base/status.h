/* SPDX-License-Identifier: BSD-3-Clause */
/* One error path: a failure is described once, where it is detected, by
 * GCOLL_ERROR(), which stores the sentence for gcoll_last_error(), logs it at
 * INFO (WARN for transport and internal errors) and yields the status so the
 * caller can `return GCOLL_ERROR(...)`.  Callers that only pass a status on use
 * GCOLL_TRY() and add no second message. */
#ifndef GCOLL_STATUS_H
#define GCOLL_STATUS_H

#include "gcoll.h"

gcoll_status_t gcoll_error_set(gcoll_status_t status, const char *file, int line,
                               const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Forget the previous failure's sentence (each public call starts clean). */
void gcoll_error_clear(void);
/* Make sentence the last error of this thread again, without logging it
 * (an outcome met on another thread, handed over by a request). */
void gcoll_error_restore(const char *sentence);

#define GCOLL_ERROR(_status, ...) gcoll_error_set((_status), __FILE__, __LINE__, __VA_ARGS__)

#define GCOLL_TRY(_expr) \
    do { \
        gcoll_status_t _gcoll_st = (_expr); \
        if (_gcoll_st != GCOLL_SUCCESS) return _gcoll_st; \
    } while (0)

#define GCOLL_LIKELY(x)   __builtin_expect(!!(x), 1)
#define GCOLL_UNLIKELY(x) __builtin_expect(!!(x), 0)

#endif
