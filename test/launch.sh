#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The one MPI launcher of the test wrappers.  Open MPI's mpirun and MPICH's
# mpiexec (hydra) spell the same things differently; the wrappers say what
# they want in one spelling and this script translates it for $MPIRUN:
#
#   launch.sh [-n|-np N] [-x VAR=VALUE | -x VAR]... [--mca NAME VALUE]... PROGRAM [ARGS...]
#   launch.sh --flavour          prints ompi, mpich or other (what $MPIRUN is)
#
#   -n N, -np N        ranks
#   -x VAR=VALUE       VAR set for every rank; -x VAR: the caller's VAR
#   --mca NAME VALUE   an Open MPI parameter (left out for other launchers)
# The first other word is the program; its arguments follow unchanged.
#
# What the launch gets besides (a 2-core machine runs up to 16 ranks, often
# as root):
#   ompi    --oversubscribe --bind-to none, --allow-run-as-root as root
#   mpich   -bind-to none; with more ranks than cores also
#           MPIR_CVAR_DEVICE_COLLECTIVES=none: MPICH's shared-memory
#           collectives spin without yielding (milliseconds a call when
#           oversubscribed), its point-to-point ones yield
#           (scripts/peers_report.sh measured it)
#   other   -n N only; the -x variables are exported to it instead
# and then $MPIRUN_FLAGS (split on spaces), before the ranks.
#
# Environment: MPIRUN (default mpirun), MPIRUN_FLAGS, GCOLL_MPI_FLAVOUR
# (ompi, mpich or other: not asking `$MPIRUN --version`).
set -u
MPIRUN=${MPIRUN:-mpirun}

flavour() {
    case ${GCOLL_MPI_FLAVOUR:-} in
        ompi|mpich|other) echo "$GCOLL_MPI_FLAVOUR"; return ;;
    esac
    local v
    v=$("$MPIRUN" --version 2>&1 </dev/null)
    case $v in
        *"Open MPI"*|*OpenRTE*) echo ompi ;;
        *HYDRA*|*MPICH*) echo mpich ;;
        *) echo other ;;
    esac
}

if [ "${1:-}" = --flavour ]; then
    flavour
    exit 0
fi

fl=$(flavour)
np=""
envs=()   # VAR=VALUE or VAR
mcas=()   # NAME VALUE pairs
while [ $# -gt 0 ]; do
    case $1 in
        -n|-np) [ $# -ge 2 ] || { echo "launch.sh: $1 needs a count" >&2; exit 2; }
                np=$2; shift 2 ;;
        -x)     [ $# -ge 2 ] || { echo "launch.sh: -x needs VAR[=VALUE]" >&2; exit 2; }
                envs+=("$2"); shift 2 ;;
        --mca)  [ $# -ge 3 ] || { echo "launch.sh: --mca needs NAME VALUE" >&2; exit 2; }
                mcas+=("$2" "$3"); shift 3 ;;
        --)     shift; break ;;
        -*)     echo "launch.sh: unknown option $1 (see test/launch.sh)" >&2; exit 2 ;;
        *)      break ;;
    esac
done
[ $# -gt 0 ] || { echo "launch.sh: no program to launch" >&2; exit 2; }

cmd=()
case $fl in
ompi)
    cmd+=(--oversubscribe --bind-to none)
    [ "$(id -u)" = 0 ] && cmd+=(--allow-run-as-root)
    for ((i = 0; i < ${#mcas[@]}; i += 2)); do cmd+=(--mca "${mcas[i]}" "${mcas[i + 1]}"); done
    for e in ${envs[@]+"${envs[@]}"}; do cmd+=(-x "$e"); done ;;
mpich)
    cmd+=(-bind-to none)
    if [ -n "$np" ] && [ "$np" -gt "$(nproc 2>/dev/null || echo 1)" ]; then
        cmd+=(-genv MPIR_CVAR_DEVICE_COLLECTIVES none)
    fi
    for e in ${envs[@]+"${envs[@]}"}; do
        case $e in
            *=*) cmd+=(-genv "${e%%=*}" "${e#*=}") ;;
            *)   [ -n "${!e+x}" ] && cmd+=(-genv "$e" "${!e}") ;;
        esac
    done ;;
*)
    for e in ${envs[@]+"${envs[@]}"}; do export "${e?}"; done ;;
esac
# shellcheck disable=SC2206  # MPIRUN_FLAGS is a list of words
cmd+=(${MPIRUN_FLAGS:-})
[ -n "$np" ] && cmd+=(-n "$np")
exec "$MPIRUN" ${cmd[@]+"${cmd[@]}"} "$@"
