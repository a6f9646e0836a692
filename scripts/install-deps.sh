#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Install what libgcoll needs to build, test and plot on Debian 12 (as root).
# The CUDA toolkit is not installed here: configure uses /usr/local/cuda when
# it is present and builds without CUDA otherwise.  lmod and python3-venv are
# for CI's EasyBuild stage (contrib/easybuild/ci.sh: EasyBuild from PyPI).
set -e
if [ "$(id -u)" != 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends \
    build-essential autoconf automake libtool pkg-config make gfortran \
    openmpi-bin libopenmpi-dev libucx-dev ucx-utils libhwloc-dev hwloc \
    python3 python3-numpy python3-matplotlib python3-mpi4py util-linux procps \
    git lmod python3-venv

# PyTorch for the DDP hooks' test (test/python/run_ddp.sh), in a venv that
# sees Debian's numpy and mpi4py (built against the same MPI as libgcoll).
# PyPI's plain torch wheel is the CUDA build: ~3 GB to fetch, ~50 s here.
# Not fatal: without it the DDP test says SKIP and why.
TORCH_VENV=${GCOLL_TORCH_VENV:-/opt/gcoll-torch}
if [ "${GCOLL_NO_TORCH:-}" != 1 ] && ! "$TORCH_VENV/bin/python3" -c 'import torch' 2>/dev/null; then
    { $SUDO /usr/bin/python3 -m venv --system-site-packages "$TORCH_VENV" &&
      $SUDO "$TORCH_VENV/bin/pip" install -q --no-cache-dir torch; } ||
        echo "install-deps: torch not installed; test/python/run_ddp.sh will SKIP"
fi
