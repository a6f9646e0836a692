/* SPDX-License-Identifier: BSD-3-Clause */
/* Datatype and operation metadata: sizes and names, indexed by the enums. */
#include "gcoll.h"

static const struct {
    const char *name;
    size_t      size;
} dtypes[GCOLL_DTYPE_COUNT] = {
    [GCOLL_INT8]     = { "int8",     1 },
    [GCOLL_UINT8]    = { "uint8",    1 },
    [GCOLL_INT32]    = { "int32",    4 },
    [GCOLL_UINT32]   = { "uint32",   4 },
    [GCOLL_INT64]    = { "int64",    8 },
    [GCOLL_UINT64]   = { "uint64",   8 },
    [GCOLL_FLOAT16]  = { "float16",  2 },
    [GCOLL_BFLOAT16] = { "bfloat16", 2 },
    [GCOLL_FLOAT32]  = { "float32",  4 },
    [GCOLL_FLOAT64]  = { "float64",  8 },
};

static const char *const op_names[GCOLL_OP_COUNT] = {
    [GCOLL_SUM] = "sum", [GCOLL_PROD] = "prod", [GCOLL_MIN] = "min",
    [GCOLL_MAX] = "max", [GCOLL_AVG] = "avg",
};

/* The enums are compared as unsigned so that a negative value cast to the
 * enum type is rejected too. */
size_t gcoll_dtype_size(gcoll_dtype_t dtype)
{
    return (unsigned)dtype < GCOLL_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

const char *gcoll_dtype_name(gcoll_dtype_t dtype)
{
    return (unsigned)dtype < GCOLL_DTYPE_COUNT ? dtypes[dtype].name : "unknown";
}

const char *gcoll_op_name(gcoll_op_t op)
{
    return (unsigned)op < GCOLL_OP_COUNT ? op_names[op] : "unknown";
}
