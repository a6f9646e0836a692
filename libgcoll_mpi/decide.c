/* SPDX-License-Identifier: BSD-3-Clause */
/* Type, op and size: the serve-or-fallback decision's facts.
 *
 * Everything here depends only on arguments that every rank of a correct
 * MPI program passes alike (the datatype, the op), so every rank decides
 * alike.  Reductions map predefined integer and floating-point types onto
 * libgcoll's dtypes by their size (MPI_INT, MPI_LONG, MPI_INTEGER, MPI_REAL,
 * ... are whatever width this MPI gives them), and MPI_SUM, MPI_PROD,
 * MPI_MIN, MPI_MAX onto libgcoll's ops.  Data movement (bcast, allgather,
 * alltoall) serves any predefined type whose extent equals its size, as
 * bytes.  Everything else (derived types, pair types, user ops, MINLOC,
 * MAXLOC, bitwise and logical ops, MPI_REPLACE) falls back to MPI. */
#include <stdio.h>
#include <string.h>
#include "gmpi.h"

typedef struct {
    MPI_Datatype type;
    int          kind;   /* 0 signed int, 1 unsigned int, 2 float, 3 bfloat16, -1 bytes only */
} type_row_t;

#define MAX_TYPES 64
static type_row_t red_rows[MAX_TYPES];
static int        n_red;
static struct { MPI_Datatype type; size_t size; } byte_rows[MAX_TYPES];
static int        n_byte;

static gcoll_dtype_t red_dt[MAX_TYPES];

static gcoll_dtype_t dt_of(int kind, int size)
{
    switch (kind) {
    case 0: return size == 1 ? GCOLL_INT8 : size == 4 ? GCOLL_INT32 : size == 8 ? GCOLL_INT64
                                                                                : GCOLL_DTYPE_COUNT;
    case 1: return size == 1 ? GCOLL_UINT8 : size == 4 ? GCOLL_UINT32 : size == 8 ? GCOLL_UINT64
                                                                                  : GCOLL_DTYPE_COUNT;
    case 2: return size == 2 ? GCOLL_FLOAT16 : size == 4 ? GCOLL_FLOAT32
                 : size == 8 ? GCOLL_FLOAT64 : GCOLL_DTYPE_COUNT;
    case 3: return size == 2 ? GCOLL_BFLOAT16 : GCOLL_DTYPE_COUNT;
    default: return GCOLL_DTYPE_COUNT;
    }
}

static void add(MPI_Datatype t, int kind)
{
    if (t == MPI_DATATYPE_NULL) return;
    int size = 0;
    MPI_Aint lb = 0, extent = 0;
    if (PMPI_Type_size(t, &size) != MPI_SUCCESS || size <= 0) return;
    PMPI_Type_get_extent(t, &lb, &extent);
    if (lb != 0 || extent != size) return;
    if (n_byte < MAX_TYPES) {
        byte_rows[n_byte].type = t;
        byte_rows[n_byte].size = (size_t)size;
        n_byte++;
    }
    gcoll_dtype_t d = dt_of(kind, size);
    if (kind >= 0 && d != GCOLL_DTYPE_COUNT && n_red < MAX_TYPES) {
        red_rows[n_red].type = t;
        red_rows[n_red].kind = kind;
        red_dt[n_red] = d;
        n_red++;
    }
}

void gmpi_types_init(void)
{
    /* most frequent first: the lookup is a linear scan of handles */
    add(MPI_DOUBLE, 2); add(MPI_FLOAT, 2); add(MPI_INT, 0); add(MPI_LONG, 0);
    add(MPI_UNSIGNED, 1); add(MPI_UNSIGNED_LONG, 1); add(MPI_LONG_LONG_INT, 0);
    add(MPI_LONG_LONG, 0); add(MPI_UNSIGNED_LONG_LONG, 1);
    add(MPI_INT8_T, 0); add(MPI_INT32_T, 0); add(MPI_INT64_T, 0);
    add(MPI_UINT8_T, 1); add(MPI_UINT32_T, 1); add(MPI_UINT64_T, 1);
    add(MPI_SIGNED_CHAR, 0); add(MPI_UNSIGNED_CHAR, 1);
    add(MPI_AINT, 0); add(MPI_OFFSET, 0); add(MPI_COUNT, 0);
    /* Fortran (the sizes this MPI's Fortran compiler gives them) */
    add(MPI_INTEGER, 0); add(MPI_REAL, 2); add(MPI_DOUBLE_PRECISION, 2);
#ifdef MPI_INTEGER1
    add(MPI_INTEGER1, 0);
#endif
#ifdef MPI_INTEGER4
    add(MPI_INTEGER4, 0);
#endif
#ifdef MPI_INTEGER8
    add(MPI_INTEGER8, 0);
#endif
#ifdef MPI_REAL4
    add(MPI_REAL4, 2);
#endif
#ifdef MPI_REAL8
    add(MPI_REAL8, 2);
#endif
#ifdef MPI_REAL2
    add(MPI_REAL2, 2);
#endif
#ifdef MPI_C_FLOAT16
    add(MPI_C_FLOAT16, 2);
#endif
#ifdef MPIX_C_FLOAT16
    add(MPIX_C_FLOAT16, 2);
#endif
#ifdef MPIX_C_BF16
    add(MPIX_C_BF16, 3);
#endif
#ifdef MPIX_BFLOAT16
    add(MPIX_BFLOAT16, 3);
#endif
    /* data movement only: no reduction maps onto these */
    add(MPI_BYTE, -1); add(MPI_CHAR, -1); add(MPI_SHORT, -1); add(MPI_UNSIGNED_SHORT, -1);
    add(MPI_INT16_T, -1); add(MPI_UINT16_T, -1); add(MPI_WCHAR, -1); add(MPI_C_BOOL, -1);
    add(MPI_LONG_DOUBLE, -1); add(MPI_C_FLOAT_COMPLEX, -1); add(MPI_C_DOUBLE_COMPLEX, -1);
    add(MPI_PACKED, -1); add(MPI_C_COMPLEX, -1); add(MPI_C_LONG_DOUBLE_COMPLEX, -1);
    add(MPI_CXX_FLOAT_COMPLEX, -1); add(MPI_CXX_DOUBLE_COMPLEX, -1);
    add(MPI_CXX_LONG_DOUBLE_COMPLEX, -1);
#ifdef MPI_REAL16
    add(MPI_REAL16, -1);
#endif
#ifdef MPI_COMPLEX8
    add(MPI_COMPLEX8, -1);
#endif
#ifdef MPI_COMPLEX16
    add(MPI_COMPLEX16, -1);
#endif
    add(MPI_CHARACTER, -1); add(MPI_LOGICAL, -1); add(MPI_COMPLEX, -1);
    add(MPI_DOUBLE_COMPLEX, -1);
#ifdef MPI_INTEGER2
    add(MPI_INTEGER2, -1);
#endif
#ifdef MPI_CXX_BOOL
    add(MPI_CXX_BOOL, -1);
#endif
}

const char *gmpi_map_reduce(MPI_Datatype type, MPI_Op op, gcoll_dtype_t *dt, gcoll_op_t *gop)
{
    if (op == MPI_SUM) *gop = GCOLL_SUM;
    else if (op == MPI_MAX) *gop = GCOLL_MAX;
    else if (op == MPI_MIN) *gop = GCOLL_MIN;
    else if (op == MPI_PROD) *gop = GCOLL_PROD;
    else if (op == MPI_MINLOC || op == MPI_MAXLOC) return "op MINLOC/MAXLOC";
    else if (op == MPI_BAND || op == MPI_BOR || op == MPI_BXOR) return "bitwise op";
    else if (op == MPI_LAND || op == MPI_LOR || op == MPI_LXOR) return "logical op";
    else return "user-defined or unknown op";
    for (int i = 0; i < n_red; i++)
        if (red_rows[i].type == type) {
            *dt = red_dt[i];
            return NULL;
        }
    return "datatype not mapped for reduction";
}

const char *gmpi_map_bytes(MPI_Datatype type, size_t *size)
{
    for (int i = 0; i < n_byte; i++)
        if (byte_rows[i].type == type) {
            *size = byte_rows[i].size;
            return NULL;
        }
    return "derived or non-contiguous datatype";
}

/* ---- size: where libgcoll's selection says the MPI is faster ------------
 *
 * Not a threshold of ours: the sizes come from libgcoll's selection table
 * (the calibration at gcoll_comm_create, GCOLL_TUNE, GCOLL_TUNE_FILE),
 * through gcoll_comm_mpi_ranges(), which reports the byte ranges whose
 * first matching row, for a collective on a communicator, names the
 * pseudo-algorithm "mpi" (the MPI's own collective measured faster than
 * every libgcoll algorithm there, or a hand-written row saying so).
 *
 * Alike on every rank: the ranges are read once per communicator, at its
 * creation, from the table in force, which every rank of it holds alike
 * (the calibration cache's rows are rank 0's text, broadcast); a call's
 * bytes are count x element size, which every rank passes alike. */
static const char *const table_name[GMPI_NCOLL] = {
    "allreduce", "reduce", "bcast", "allgather", "reduce_scatter", "alltoall", "barrier",
};

static const char *const why_size = "size where the MPI is faster (selection table)";

void gmpi_sizes_load(gmpi_comm_t *e, MPI_Comm comm)
{
    for (int c = 0; c < GMPI_NCOLL; c++) e->n_mpi[c] = 0;
    for (int c = 0; c < GMPI_NCOLL; c++) {
        int n = 0;
        gmpi_inside++;
        gcoll_status_t st = gcoll_comm_mpi_ranges(e->g, table_name[c], "host", e->mpi_lo[c],
                                                  e->mpi_hi[c], GMPI_MAX_RANGES, &n);
        gmpi_inside--;
        if (st == GCOLL_SUCCESS && n >= 0 && n <= GMPI_MAX_RANGES) {
            e->n_mpi[c] = n;
            continue;
        }
        /* the same table on every rank: this happens on all or none */
        int rank = 0;
        PMPI_Comm_rank(comm, &rank);
        if (rank == 0)
            fprintf(stderr, "gcoll_mpi: WARN gcoll_comm_mpi_ranges(%s): %s; every size of it "
                            "served on this communicator\n", table_name[c],
                    st == GCOLL_SUCCESS ? "too many ranges"
                    : *gcoll_last_error() ? gcoll_last_error() : gcoll_strerror(st));
    }
}

const char *gmpi_size_decide(const gmpi_comm_t *e, gmpi_coll_t coll, size_t bytes)
{
    int n = e->n_mpi[coll];
    for (int i = 0; i < n; i++)
        if (bytes >= e->mpi_lo[coll][i] && bytes < e->mpi_hi[coll][i]) return why_size;
    return NULL;
}
