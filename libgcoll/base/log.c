/* SPDX-License-Identifier: BSD-3-Clause */
/* Log output: "[gcoll host:rank] LEVEL file:line message" on stderr, one
 * write per line so lines of different ranks do not interleave mid-line. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "base/log.h"

_Atomic int gcoll_log_level = GCOLL_LOG_WARN;
_Atomic int gcoll_log_rank = -1;

static const char *const level_names[] = { "WARN", "INFO", "TRACE" };

void gcoll_log_emit(int level, const char *file, int line, const char *fmt, ...)
{
    char host[64] = "?", msg[1024];
    gethostname(host, sizeof(host));
    host[sizeof(host) - 1] = '\0';
    const char *base = strrchr(file, '/');
    int n = snprintf(msg, sizeof(msg), "[gcoll %s:%d] %s %s:%d ", host, gcoll_log_rank,
                     level_names[level < 0 ? 0 : level > 2 ? 2 : level], base ? base + 1 : file,
                     line);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(msg)) n += vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof(msg) - 1) n = (int)sizeof(msg) - 2;
    msg[n++] = '\n';
    ssize_t ignored = write(STDERR_FILENO, msg, (size_t)n);
    (void)ignored;
}
