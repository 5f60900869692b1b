#!/usr/bin/env bash
# Timing-only mode at scale (docs/performance.md): one fp32 sum allreduce
# (the cost model's choice, hierarchical on these clusters) of SIZE on
# configs/default.json with NODES servers of 8 NPUs, through
# `hccn-perf --no-data`; prints the simulated time, the host wall time and
# the peak resident memory of each run. Wall times are noisy on a shared
# host: run it several times and keep the best.
#
#   bench/timing_scale.sh [SIZE] [NODES...]   (default: 1G; 512 8192)
#
#   HCCN_BENCH_MEM_GB   address-space cap per run, GB (default 8): a run
#                       that needs more fails instead of exhausting the host
#   HCCN_BENCH_TIMEOUT  wall seconds per run (default 1800)
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$src/build}
size=${1:-1G}
shift || true
nodes=("$@")
[ ${#nodes[@]} -gt 0 ] || nodes=(512 8192)
mem_gb=${HCCN_BENCH_MEM_GB:-8}
limit=${HCCN_BENCH_TIMEOUT:-1800}
perf="$build/hccn-perf"
[ -x "$perf" ] || { echo "timing_scale: build hccn-perf first ($perf)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "timing_scale: needs /usr/bin/time (GNU time)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

printf '%8s %8s %10s %14s %10s %10s  %s\n' nodes ranks size "sim_time_us" \
    "wall_s" "peak_MB" status
for n in "${nodes[@]}"; do
    (
        ulimit -v $((mem_gb * 1024 * 1024))
        exec timeout "$limit" /usr/bin/time -f '%e %M' -o "$tmp/time" \
            "$perf" allreduce -t "$src/configs/default.json" \
            --set "node_types[0].count=$n" -b "$size" -e "$size" -n 1 -w 0 \
            --format hccl --no-data
    ) >"$tmp/out" 2>"$tmp/err"
    rc=$?
    read -r wall rss < <(tail -n 1 "$tmp/time" 2>/dev/null) || true
    [[ "${rss:-}" =~ ^[0-9]+$ ]] || { wall=-; rss=0; }
    sim=$(awk '!/^#/ && NF >= 3 && $1 ~ /^[0-9]+$/ {print $2}' "$tmp/out")
    status=ok
    [ "$rc" -eq 0 ] || status="failed (exit $rc: $(grep -v '^Command' "$tmp/err" | tail -1))"
    [ "$rc" -eq 124 ] && status="timed out after ${limit}s"
    printf '%8d %8d %10s %14s %10s %10d  %s\n' "$n" $((n * 8)) "$size" \
        "${sim:--}" "$wall" $((rss / 1024)) "$status"
done
