#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check wrapper: the flat part of the MPI correctness suite (see run_coll.sh).
exec "$(dirname "$0")/run_coll.sh" flat
