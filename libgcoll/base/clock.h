/* SPDX-License-Identifier: BSD-3-Clause */
/* The one clock of the library's deadlines, timeouts and measurements:
 * CLOCK_MONOTONIC in seconds (never steps back when the wall clock is set). */
#ifndef GCOLL_BASE_CLOCK_H
#define GCOLL_BASE_CLOCK_H

#include <time.h>

static inline double gcoll_clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
