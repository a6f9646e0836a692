/* SPDX-License-Identifier: BSD-3-Clause */
/* Gradient codecs: what crosses the network in a compressed allreduce.
 *
 * A codec turns a float32 vector x[n] (a rank's share of its node's sum,
 * residual already added) into a payload of payload_bytes(n) bytes, and adds
 * a payload's decoded values into an accumulator.  Payloads have a size
 * fixed by n alone, so they travel in plain alltoalls and allgathers, one
 * fixed slot per rank (gcoll_codec_plan).  Codecs keep no
 * state: the compressor (compressor.c) owns the residuals and buffers.
 *
 * Each codec is one file; every codec is listed once, in codecs.c. */
#ifndef GCOLL_CODEC_H
#define GCOLL_CODEC_H

#include <stddef.h>
#include "gcoll.h"

typedef struct {
    const char       *name;
    gcoll_compress_t  kind;
    /* Bytes of the payload of n elements. */
    size_t (*payload_bytes)(const gcoll_compress_params_t *p, size_t n);
    /* Encode x[n] into payload (payload_bytes(n) bytes) and leave in x what
     * the payload does not carry, x - decoded (in float32): the residual
     * error feedback keeps, computed in the same pass. */
    void (*encode)(const gcoll_compress_params_t *p, float *x, size_t n, void *payload);
    /* acc[i] += decoded payload[i], i < n. */
    void (*accumulate)(const gcoll_compress_params_t *p, const void *payload, size_t n,
                       float *acc);
} gcoll_codec_t;

extern const gcoll_codec_t gcoll_codec_bf16;
extern const gcoll_codec_t gcoll_codec_topk;
extern const gcoll_codec_t gcoll_codec_onebit;

/* The codec of kind, or NULL (NONE and unknown kinds). */
const gcoll_codec_t *gcoll_codec_find(gcoll_compress_t kind);

/* Parameters with defaults filled in; GCOLL_ERR_INVALID_ARG with a sentence
 * when they are out of range. */
gcoll_status_t gcoll_codec_params(const gcoll_compress_params_t *in, gcoll_compress_params_t *out);

/* TOPK: how many elements of n are kept. */
size_t gcoll_codec_topk_k(const gcoll_compress_params_t *p, size_t n);

/* How a share of `share` elements crosses a rail of N ranks (p filled in by
 * gcoll_codec_params; the compressor and gcoll_simulate both ask here):
 * returns the elements per chunk of the two-phase exchange (alltoall of N
 * chunk payloads, owner re-encodes, allgather), or 0 for the gather of
 * whole-share payloads; *stride is the payload slot in bytes (a multiple
 * of 8).  BF16 is always two-phase (slots of 2 bytes per element, not
 * rounded); TOPK and ONEBIT are two-phase when 2 chunk slots are fewer
 * bytes than one share slot (the two-phase sends 2 (N-1) slots per rank,
 * the gather N-1), so N = 2 gathers. */
size_t gcoll_codec_plan(const gcoll_compress_params_t *p, size_t share, size_t N,
                        size_t *stride);

#endif
