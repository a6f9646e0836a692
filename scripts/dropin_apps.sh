#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Real MPI applications from Debian's archive under the drop-in
# (libgcoll_mpi.so): each runs at 2 and 3 ranks without and with the
# preload; their outputs must agree number by number (scripts/numdiff.py,
# a relative tolerance for the last digits a different reduction order
# changes) and the preloaded run's GCOLL_MPI_REPORT must show collectives
# served.  Not part of make check or CI: it installs packages and takes
# minutes.  docs/MPI_DROPIN.md, "Real applications", has the results.
#
#   scripts/dropin_apps.sh [BUILD]     BUILD: a configured and built tree
#                                      (default: build/ beside scripts/)
#
# The applications (C and Fortran; Debian's PETSc, Elk and Quantum ESPRESSO
# are built on the system's Open MPI 4.1, which the script checks):
#   petsc-ksp-ex2     PETSc's KSP tutorial ex2 (C): 2-D Laplacian, GMRES
#   petsc-ksp-ex2-cg  the same with CG and Jacobi
#   petsc-snes-ex5    PETSc's SNES tutorial ex5 (C): Bratu problem, Newton
#   petsc-snes-ex19   PETSc's SNES tutorial ex19 (C): driven cavity
#   petsc-ksp-ex2f    PETSc's KSP tutorial ex2f (Fortran over PETSc's C)
#   elk-al            Elk (elk-lapw, Fortran: its own MPI_ALLREDUCE,
#                     MPI_BCAST, MPI_BARRIER): ground state of aluminium,
#                     the package's example basic/Al
#   qe-si             Quantum ESPRESSO's pw.x (Fortran: MPI_ALLREDUCE,
#                     MPI_ALLTOALL of its FFTs, MPI_BCAST, MPI_BARRIER,
#                     also on communicators it splits off):
#                     self-consistent silicon, quantum-espresso-data's
#                     pseudopotential
# The PETSc tutorials are built from libpetsc3.18-dev-examples' sources.
#
# Exit 0 if every run passed; 1 if an output differed, a run failed or
# nothing was served; 77 when a package is missing and we are not root.
# Environment: MPIRUN (default mpirun), GCOLL_APPS_RANKS (default "2 3"),
# GCOLL_APPS_DIR (work folder, kept; default a fresh one under /tmp),
# GCOLL_APPS_TIMEOUT (seconds per run, default 600).
set -u

here=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-$here/../build}" && pwd) || exit 1
LIBDIR=$BUILD/.libs
LIB=$LIBDIR/libgcoll_mpi.so
LAUNCH=$here/../test/launch.sh
NUMDIFF=$here/numdiff.py
RANKS=${GCOLL_APPS_RANKS:-2 3}
TMO=${GCOLL_APPS_TIMEOUT:-600}
WORK=${GCOLL_APPS_DIR:-$(mktemp -d /tmp/dropin_apps.XXXXXX)}
mkdir -p "$WORK"
[ -f "$LIB" ] || { echo "ERROR: $LIB not built"; exit 1; }

PKGS="libpetsc-real3.18-dev libpetsc3.18-dev-examples elk-lapw quantum-espresso
      quantum-espresso-data"
missing=
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then echo "SKIP: not installed:$missing (run as root to install)"; exit 77; fi
    echo "== installing$missing"
    # shellcheck disable=SC2086 # a list of package names
    if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive \
               apt-get install -y -q --no-install-recommends $missing; } >"$WORK/apt.log" 2>&1; then
        echo "ERROR: apt-get failed, see $WORK/apt.log"; exit 1
    fi
fi

echo "== versions"
# shellcheck disable=SC2086 # a list of package names
dpkg-query -W -f='${Package} ${Version}\n' $PKGS libopenmpi3 openmpi-bin
"${MPIRUN:-mpirun}" --version 2>&1 | head -1

PETSC_DIR=$(pkg-config --variable=prefix petsc 2>/dev/null)
[ -n "$PETSC_DIR" ] || { echo "ERROR: pkg-config finds no petsc"; exit 1; }
EX=$(dirname "$(dpkg -L libpetsc3.18-dev-examples | grep '/src/ksp/ksp/tutorials/ex2.c$')")/../../..
# The drop-in is built against the system's libmpi: the applications must use that one.
sysmpi=$(ldd "$LIB" | awk '/libmpi\.so/ {print $3}')
for bin in "$PETSC_DIR/lib/libpetsc_real.so" /usr/bin/elk-lapw /usr/bin/pw.x; do
    m=$(ldd "$bin" | awk '/libmpi\.so/ {print $3}')
    [ "$(readlink -f "$m")" = "$(readlink -f "$sysmpi")" ] ||
        { echo "ERROR: $bin uses $m, the drop-in $sysmpi"; exit 1; }
done
echo "libmpi of the drop-in, PETSc, Elk and pw.x: $(readlink -f "$sysmpi")"

echo "== building PETSc tutorials in $WORK/bin"
mkdir -p "$WORK/bin"
PFLAGS=$(pkg-config --cflags --libs petsc)
build() {   # NAME SOURCE COMPILER [FLAGS]
    local name=$1 src=$2 cc=$3; shift 3
    # shellcheck disable=SC2086 # PFLAGS is a list of flags
    "$cc" -O2 "$@" "$EX/$src" $PFLAGS -lm -o "$WORK/bin/$name" >"$WORK/bin/$name.log" 2>&1 ||
        { echo "ERROR: building $name, see $WORK/bin/$name.log"; exit 1; }
}
build ksp_ex2 ksp/ksp/tutorials/ex2.c mpicc
build snes_ex5 snes/tutorials/ex5.c mpicc
build snes_ex19 snes/tutorials/ex19.c mpicc
# PETSc's Fortran macros expand past gfortran's 132 columns
build ksp_ex2f ksp/ksp/tutorials/ex2f.F90 mpif90 -ffree-line-length-none

ELK_EX=/usr/share/doc/elk-lapw/examples/basic/Al/elk.in
ELK_SP=/usr/share/elk-lapw/species/

# The applications: NAME, numdiff's tolerance, the files compared (stdout:
# the run's standard output; summary: what collect() keeps of it), then the
# command.  pw.x prints eigenvalues to 4 decimals and energies to 8: the
# absolute tolerance is one unit of the last printed digit, for a value that
# rounds the other way.
APPS=(
    "petsc-ksp-ex2|--rtol 1e-8|stdout|$WORK/bin/ksp_ex2 -m 64 -n 64 -ksp_monitor -ksp_rtol 1e-10"
    "petsc-ksp-ex2-cg|--rtol 1e-8|stdout|$WORK/bin/ksp_ex2 -m 64 -n 64 -ksp_type cg -pc_type jacobi -ksp_monitor -ksp_rtol 1e-10"
    "petsc-snes-ex5|--rtol 1e-8|stdout|$WORK/bin/snes_ex5 -da_grid_x 48 -da_grid_y 48 -snes_monitor -ksp_monitor -snes_converged_reason"
    "petsc-snes-ex19|--rtol 1e-8|stdout|$WORK/bin/snes_ex19 -da_refine 2 -snes_monitor -ksp_monitor -snes_converged_reason"
    "petsc-ksp-ex2f|--rtol 1e-8|stdout|$WORK/bin/ksp_ex2f -m 64 -n 64 -ksp_monitor -ksp_rtol 1e-10"
    # Elk's outputs are its files; INFO.OUT holds timings, so it is left out
    "elk-al|--rtol 1e-7|TOTENERGY.OUT EFERMI.OUT EIGVAL.OUT|elk-lapw"
    "qe-si|--rtol 1e-7 --atol 1e-8|summary|pw.x -in si.scf.in"
)

prepare() {   # NAME DIR: what a run of NAME needs in its folder
    case $1 in
        elk-*) sed "s#'../../../species/'#'$ELK_SP'#" "$ELK_EX" >"$2/elk.in" ;;
        qe-*) cat >"$2/si.scf.in" <<'EOF'
 &control
    calculation = 'scf', prefix = 'si', outdir = './tmp',
    pseudo_dir = '/usr/share/espresso/pseudo'
 /
 &system
    ibrav = 2, celldm(1) = 10.2, nat = 2, ntyp = 1, ecutwfc = 18.0
 /
 &electrons
    conv_thr = 1.0d-10
 /
ATOMIC_SPECIES
 Si  28.086  Si.pz-vbc.UPF
ATOMIC_POSITIONS alat
 Si 0.00 0.00 0.00
 Si 0.25 0.25 0.25
K_POINTS automatic
 4 4 4 1 1 1
EOF
        ;;
    esac
}

collect() {   # NAME DIR: after the run, what is compared besides its files
    case $1 in
        # pw.x's stdout also has dates, timings, memory and the ranks'
        # layout: keep each iteration's energy and accuracy, then the
        # final eigenvalues, levels and energies
        qe-*) { grep -E 'total energy +=|estimated scf accuracy' "$2/stdout"
                sed -n '/End of self-consistent calculation/,/convergence has been achieved/p' \
                    "$2/stdout"; } >"$2/summary" ;;
    esac
}

PRE=(-x "LD_PRELOAD=$LIB" -x "LD_LIBRARY_PATH=$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
     -x GCOLL_MPI_REPORT=1)
passed=0
failed=0

launch() {   # DIR NP [-x ...] -- CMD...: in DIR, stdout and stderr to files there
    local dir=$1 np=$2; shift 2
    local xs=()
    while [ "$1" != -- ]; do xs+=("$1"); shift; done
    shift
    local t0=$SECONDS
    # mpi_yield_when_idle: 3 ranks share 2 cores
    (cd "$dir" && timeout "$TMO" "$LAUNCH" --mca mpi_yield_when_idle 1 -n "$np" \
        -x OMP_NUM_THREADS=1 "${xs[@]}" "$@" >stdout 2>stderr)
    local rc=$?
    echo "$((SECONDS - t0))" >"$dir/seconds"
    return $rc
}

for np in $RANKS; do
    for app in "${APPS[@]}"; do
        IFS='|' read -r name tol files cmd <<<"$app"
        base=$WORK/$name.np$np
        rm -rf "$base.mpi" "$base.gcoll"
        mkdir -p "$base.mpi" "$base.gcoll"
        prepare "$name" "$base.mpi"
        prepare "$name" "$base.gcoll"
        ok=1 why=
        # shellcheck disable=SC2086 # cmd is a program and its arguments
        launch "$base.mpi" "$np" -- $cmd
        rc=$?
        [ $rc = 0 ] || { ok=0; why="plain run failed (rc $rc)"; }
        # shellcheck disable=SC2086
        launch "$base.gcoll" "$np" "${PRE[@]}" -- $cmd
        rc=$?
        [ $rc = 0 ] || { ok=0; why="${why:+$why; }preloaded run failed (rc $rc)"; }
        collect "$name" "$base.mpi"
        collect "$name" "$base.gcoll"
        if [ $ok = 1 ]; then
            for f in $files; do
                # shellcheck disable=SC2086 # tol is a list of options
                if ! python3 "$NUMDIFF" $tol "$base.mpi/$f" "$base.gcoll/$f" \
                        >"$base.diff.$f"; then
                    ok=0; why="${why:+$why, }$f differs"
                fi
            done
        fi
        report=$(grep '^gcoll_mpi: ' "$base.gcoll/stderr")
        served=$(sed -n 's/^gcoll_mpi: MPI_[A-Za-z_]* served=\([0-9]*\) .*/\1/p' \
                     "$base.gcoll/stderr" | awk '{s += $1} END {print s + 0}')
        [ $ok = 0 ] || [ "$served" -gt 0 ] || { ok=0; why="nothing served"; }
        secs="$(cat "$base.mpi/seconds")s/$(cat "$base.gcoll/seconds")s"
        if [ $ok = 1 ]; then
            echo "PASS: $name np=$np ($secs) $(cat "$base".diff.* | sed 's/^numdiff: //' | paste -sd';')"
            passed=$((passed + 1))
        else
            echo "FAIL: $name np=$np ($secs): $why"
            failed=$((failed + 1))
            cat "$base".diff.* 2>/dev/null
            for m in mpi gcoll; do echo "--- $base.$m/stderr"; tail -20 "$base.$m/stderr"; done
        fi
        [ -z "$report" ] || printf '%s\n' "$report" | sed 's/^/    /'
    done
done

echo "$passed passed, $failed failed (outputs in $WORK)"
[ "$failed" = 0 ]
