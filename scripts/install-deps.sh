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
