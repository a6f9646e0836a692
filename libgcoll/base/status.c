/* SPDX-License-Identifier: BSD-3-Clause */
/* Status codes, the thread-local last-error sentence, and the version. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "base/status.h"
#include "base/log.h"

static _Thread_local char last_error[512];

static const char *const status_text[GCOLL_STATUS_COUNT] = {
    [GCOLL_SUCCESS]           = "success",
    [GCOLL_ERR_INVALID_ARG]   = "invalid argument",
    [GCOLL_ERR_NO_MEMORY]     = "out of memory",
    [GCOLL_ERR_NOT_SUPPORTED] = "not supported",
    [GCOLL_ERR_TRANSPORT]     = "transport error",
    [GCOLL_ERR_TIMEOUT]       = "timed out waiting for peers",
    [GCOLL_ERR_MISMATCH]      = "ranks called mismatching collectives",
    [GCOLL_ERR_INTERNAL]      = "internal error",
};

const char *gcoll_strerror(gcoll_status_t status)
{
    if ((unsigned)status >= GCOLL_STATUS_COUNT) return "unknown status code";
    return status_text[status];
}

const char *gcoll_last_error(void)
{
    return last_error;
}

void gcoll_error_clear(void)
{
    last_error[0] = '\0';
}

int gcoll_get_version(void)
{
    return GCOLL_VERSION;
}

/* Bad input is the caller's business (INFO); everything else means the
 * library or the machine failed and deserves a WARN even if unchecked. */
static int level_of(gcoll_status_t status)
{
    return status == GCOLL_ERR_INVALID_ARG ? GCOLL_LOG_INFO : GCOLL_LOG_WARN;
}

gcoll_status_t gcoll_error_set(gcoll_status_t status, const char *file, int line,
                               const char *fmt, ...)
{
    /* Formatted aside first: an argument may be gcoll_last_error() itself
     * (a sentence that extends the previous one), and vsnprintf into the
     * buffer it reads from is undefined. */
    char sentence[sizeof(last_error)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sentence, sizeof(sentence), fmt, ap);
    va_end(ap);
    memcpy(last_error, sentence, strlen(sentence) + 1);
    int level = level_of(status);
    if (level <= gcoll_log_level)
        gcoll_log_emit(level, file, line, "%s: %s", gcoll_strerror(status), last_error);
    return status;
}

void gcoll_error_restore(const char *sentence)
{
    if (sentence == last_error) return;   /* already the last error */
    snprintf(last_error, sizeof(last_error), "%s", sentence ? sentence : "");
}
