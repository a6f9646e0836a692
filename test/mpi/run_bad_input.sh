#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# make check wrapper: test_bad_input at 1 and 2 ranks (see run_coll.sh).
exec "$(dirname "$0")/run_coll.sh" bad
