/* SPDX-License-Identifier: BSD-3-Clause */
/* Host reduction kernels: one vectorizable loop per dtype x op, dispatched by a
 * table.  The elementwise math (the reduction of one element, fp16/bf16
 * conversion) lives in dtype_math.h, which gcc and nvcc both compile. */
#ifndef GCOLL_REDUCE_H
#define GCOLL_REDUCE_H

#include <stddef.h>
#include "gcoll.h"

/* dst[i] = a[i] op b[i] for i < count.  dst may alias a or b exactly (not
 * partially).  op is SUM, PROD, MIN or MAX (AVG is SUM then gcoll_reduce_avg).
 * Returns GCOLL_ERR_INVALID_ARG for an unknown dtype/op (never on the fast path
 * when the caller validated). */
gcoll_status_t gcoll_reduce_host(void *dst, const void *a, const void *b, size_t count,
                                 gcoll_dtype_t dtype, gcoll_op_t op);

/* buf[i] = buf[i] / divisor: the last step of AVG (see gcoll.h for the rules). */
gcoll_status_t gcoll_reduce_avg_host(void *buf, size_t count, gcoll_dtype_t dtype, int divisor);

#endif
