/* SPDX-License-Identifier: BSD-3-Clause */
/* The C values of every constant that the Fortran module gcoll mirrors, in
 * the order test_bindings.F90 lists its parameters, compiled from the
 * gcoll.h the library was built with.  Returns how many it wrote. */
#include <gcoll.h>

int gcoll_test_enum_values(int *v, int cap);

int gcoll_test_enum_values(int *v, int cap)
{
    const int c[] = {
        GCOLL_VERSION_MAJOR, GCOLL_VERSION_MINOR, GCOLL_VERSION_PATCH, GCOLL_VERSION,
        GCOLL_SUCCESS, GCOLL_ERR_INVALID_ARG, GCOLL_ERR_NO_MEMORY, GCOLL_ERR_NOT_SUPPORTED,
        GCOLL_ERR_TRANSPORT, GCOLL_ERR_TIMEOUT, GCOLL_ERR_MISMATCH, GCOLL_ERR_INTERNAL,
        GCOLL_STATUS_COUNT,
        GCOLL_INT8, GCOLL_UINT8, GCOLL_INT32, GCOLL_UINT32, GCOLL_INT64, GCOLL_UINT64,
        GCOLL_FLOAT16, GCOLL_BFLOAT16, GCOLL_FLOAT32, GCOLL_FLOAT64, GCOLL_DTYPE_COUNT,
        GCOLL_SUM, GCOLL_PROD, GCOLL_MIN, GCOLL_MAX, GCOLL_AVG, GCOLL_OP_COUNT,
        (int)sizeof(gcoll_stats_t),
        GCOLL_COMPRESS_NONE, GCOLL_COMPRESS_BF16, GCOLL_COMPRESS_TOPK, GCOLL_COMPRESS_ONEBIT,
        GCOLL_COMPRESS_COUNT,
    };
    int n = (int)(sizeof(c) / sizeof(c[0]));
    for (int i = 0; i < n && i < cap; i++) v[i] = c[i];
    return n;
}
