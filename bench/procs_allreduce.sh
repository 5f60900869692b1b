#!/usr/bin/env bash
# Wall time and peak memory of one allreduce with data on one cluster made
# by P = 1, 2, 4 processes of this host (docs/processes.md): hccn-perf,
# in place, RANKS ranks (8 per node of configs/default.json) x MIB MiB per
# rank, one timed call after one warm-up, under hccn-launch (LAUNCH=launch)
# or mpirun (LAUNCH=mpi). Prints, per P, the wall seconds of the whole
# command, the simulated time, the MiB that crossed between processes per
# allreduce (what the processes' data servers carried, over the two calls)
# and every process's peak resident set (GNU time's %M).
#
#   bench/procs_allreduce.sh [BUILD_DIR]
#   RANKS=64 MIB=256 PROCS="1 2 4" LAUNCH=launch   (the defaults)
#
# Each process backs only its own ranks' arenas (docs/processes.md): with
# P processes each holds about RANKS x MIB / P MiB, plus its fixed part.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$src/build}
ranks=${RANKS:-64}
mib=${MIB:-256}
procs=${PROCS:-1 2 4}
launch=${LAUNCH:-launch}
[ $((ranks % 8)) -eq 0 ] || { echo "RANKS must be a multiple of 8" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bytes=$((mib * 1024 * 1024))
args=(allreduce -t "$src/configs/default.json" --set "node_types[0].count=$((ranks / 8))"
      --set "node_types[0].npu.arena_MiB=$((mib + 64))" -b "$bytes" -e "$bytes"
      -n 1 -w 1 --inplace -c 0)
# Each process reports its peak RSS when it exits (GNU time's %M, KiB).
wrap=(/usr/bin/time -f "peak_rss_kib %M" -a -o "$tmp/rss")
printf "%-3s %-8s %10s %14s %12s %s\n" P launch wall_s sim_time_us \
    crossed_MiB "peak RSS per process (MiB)"
for p in $procs; do
    : >"$tmp/rss"
    case "$launch" in
    mpi) run=(mpirun --allow-run-as-root --oversubscribe -np "$p") ;;
    *) run=("$build/hccn-launch" -n "$p") ;;
    esac
    [ "$p" -eq 1 ] && run=(env)
    t0=$(date +%s.%N)
    # Each process logs its data server's bytes at the end (HCCN_DEBUG=INFO).
    HCCN_DEBUG=INFO "${run[@]}" "${wrap[@]}" "$build/hccn-perf" "${args[@]}" \
        >"$tmp/out" 2>"$tmp/log"
    t1=$(date +%s.%N)
    crossed=$(awk '/data plane:/ { for (i = 1; i < NF; i++) if ($(i + 1) == "bytes" && $(i + 2) == "carried") s += $i }
                   END { printf "%.1f", s / 2 / 1048576 }' "$tmp/log")
    sim=$(grep -v '^#' "$tmp/out" | awk 'NF { print $6; exit }')
    rss=$(awk '/peak_rss_kib/ { printf "%s%d", sep, $2 / 1024; sep = " " }' "$tmp/rss")
    printf "%-3s %-8s %10.2f %14s %12s %s\n" "$p" "$launch" "$(echo "$t1 - $t0" | bc)" \
        "$sim" "$crossed" "$rss"
done
