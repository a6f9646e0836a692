/* SPDX-License-Identifier: BSD-3-Clause */
/* The thread-local error sentence (base/status.h): a sentence may quote the
 * previous one (GCOLL_ERROR(..., "...: %s", gcoll_last_error()), as the
 * selection table's built-in parse error does), restoring the sentence in
 * force keeps it, and an overlong sentence is cut, not overrun.  One line
 * per failure; exit 1 on any. */
#include <stdio.h>
#include <string.h>
#include "base/log.h"
#include "base/status.h"

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

/* A sentence that quotes the last one, the way select.c words a broken
 * built-in table. */
static void test_quote_previous(void)
{
    GCOLL_ERROR(GCOLL_ERR_INVALID_ARG, "selection table built-in, line 3: 'rign' is not an "
                "algorithm of allreduce");
    gcoll_status_t st = GCOLL_ERROR(GCOLL_ERR_INTERNAL, "the built-in selection table does not "
                                    "parse: %s", gcoll_last_error());
    const char *want = "the built-in selection table does not parse: selection table built-in, "
                       "line 3: 'rign' is not an algorithm of allreduce";
    CHECK(st == GCOLL_ERR_INTERNAL, "status %d", (int)st);
    CHECK(strcmp(gcoll_last_error(), want) == 0, "got \"%s\"", gcoll_last_error());

    /* quoted twice, and after the quote */
    GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "inner");
    GCOLL_ERROR(GCOLL_ERR_TRANSPORT, "%s and %s, then more", gcoll_last_error(),
                gcoll_last_error());
    CHECK(strcmp(gcoll_last_error(), "inner and inner, then more") == 0, "got \"%s\"",
          gcoll_last_error());
}

static void test_restore(void)
{
    GCOLL_ERROR(GCOLL_ERR_TIMEOUT, "kept");
    gcoll_error_restore(gcoll_last_error());
    CHECK(strcmp(gcoll_last_error(), "kept") == 0, "got \"%s\"", gcoll_last_error());
    gcoll_error_restore(NULL);
    CHECK(gcoll_last_error()[0] == '\0', "NULL restores an empty sentence, got \"%s\"",
          gcoll_last_error());
    gcoll_error_restore("handed over");
    CHECK(strcmp(gcoll_last_error(), "handed over") == 0, "got \"%s\"", gcoll_last_error());
    gcoll_error_clear();
    CHECK(gcoll_last_error()[0] == '\0', "cleared, got \"%s\"", gcoll_last_error());
}

static void test_long(void)
{
    char big[2000];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    GCOLL_ERROR(GCOLL_ERR_INTERNAL, "%s", big);
    size_t n = strlen(gcoll_last_error());
    CHECK(n > 100 && n < sizeof(big) - 1, "an overlong sentence is cut: %zu characters", n);
    GCOLL_ERROR(GCOLL_ERR_INTERNAL, "again: %s", gcoll_last_error());
    CHECK(strncmp(gcoll_last_error(), "again: xxx", 10) == 0 && strlen(gcoll_last_error()) == n,
          "quoting a full sentence keeps the buffer's length: %zu", strlen(gcoll_last_error()));
}

int main(void)
{
    gcoll_log_level = -1;   /* the errors here are on purpose: no WARN lines */
    test_quote_previous();
    test_restore();
    test_long();
    printf("test_status: %d checks, %d failures\n", n_checks, n_fail);
    return n_fail ? 1 : 0;
}
