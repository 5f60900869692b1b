#!/usr/bin/env bash
# Timing-only mode at scale (docs/performance.md): one fp32 sum allreduce
# (the cost model's choice) of SIZE, out of place (`hccn-perf --no-data
# --format hccl`: one call, where the nccl-tests table times two, out of
# place and in place), on a topology whose node count is set to each
# COUNT in turn; prints the ranks, the simulated time, the host wall
# time, the CPU time (user + system) and the peak resident memory of each
# run. Wall times are noisy on a shared host: run it several times and
# keep the best.
#
#   bench/timing_scale.sh [SIZE] [COUNT...]      configs/default.json
#                                                (default: 1G; 512 8192)
#   bench/timing_scale.sh --topo FILE [--count-path PATH] [--set P=V]...
#                         [SIZE] [COUNT...]
#   bench/timing_scale.sh --suite [SIZE]         the table of
#                         docs/performance.md: default.json, GB200 NVL72
#                         racks on InfiniBand, a two-tier fat tree, the
#                         servers whose allreduce across nodes is the
#                         tree (it does not fold), two of them on an
#                         oversubscribed three-tier tree, 384-NPU super-pods,
#                         and one Ethernet NIC per host, up to 2,048
#                         ranks
#
#   --topo FILE        topology (default configs/default.json)
#   --count-path PATH  the field COUNT is written to (default
#                      node_types[0].count)
#   --set P=V          passed on to hccn-perf (repeatable)
#
#   HCCN_BENCH_MEM_GB   address-space cap per run, GB (default 8): a run
#                       that needs more fails instead of exhausting the host
#   HCCN_BENCH_TIMEOUT  wall seconds per run (default 1800)
#   BUILD_DIR           the build whose hccn-perf runs (default build/)
set -uo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$src/build}
topo=$src/configs/default.json
count_path='node_types[0].count'
sets=()
suite=0
while [ $# -gt 0 ]; do
    case $1 in
        --topo) topo=$2; shift 2 ;;
        --count-path) count_path=$2; shift 2 ;;
        --set) sets+=(--set "$2"); shift 2 ;;
        --suite) suite=1; shift ;;
        -h|--help) sed -n '2,31p' "${BASH_SOURCE[0]}"; exit 0 ;;
        *) break ;;
    esac
done
size=${1:-1G}
shift || true
counts=("$@")
mem_gb=${HCCN_BENCH_MEM_GB:-8}
limit=${HCCN_BENCH_TIMEOUT:-1800}
perf="$build/hccn-perf"
[ -x "$perf" ] || { echo "timing_scale: build hccn-perf first ($perf)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "timing_scale: needs /usr/bin/time (GNU time)" >&2; exit 2; }

if [ "$suite" -eq 1 ]; then
    # A two-tier fat tree: 8 nodes of 8 NPUs per leaf (2:1 uplinks), 8
    # leaves per tier-1 switch, the tier-1 switches under one core.
    fat='{"type": "fat_tree", "lat_us": 1.0, "levels": [{"children": 8, "oversubscription": 2}, {"children": 8}]}'
    self=${BASH_SOURCE[0]}
    "$self" "$size" 16 256 || exit
    "$self" --topo "$src/configs/gb200-nvl72-ib.json" "$size" 2 8 28 || exit
    # 160 nodes: 20 leaves, tier-1 switches of 8, 8 and 4 (it does not
    # fold: docs/performance.md, "Uneven fat trees (round 23)").
    "$self" --topo "$src/configs/leafspine-4x8.json" --set "network=$fat" \
        "$size" 16 64 160 256 || exit
    for c in hgx-a100 mi300x-8 pcie-4090-8; do
        "$self" --topo "$src/configs/$c.json" "$size" 128 256 || exit
    done
    "$self" --topo "$src/configs/dgx1-v100.json" "$size" 128 192 256 || exit
    # A three-tier fat tree of two-node leaves, 4:1 and 2:1 oversubscribed:
    # every NIC's flows bound into one component (docs/performance.md,
    # round 30; over the 10 s target).
    fat3='{"type": "fat_tree", "lat_us": 1.0, "levels": [{"children": 2, "oversubscription": 4}, {"children": 8, "oversubscription": 2}, {"children": 16}]}'
    for c in dgx1-v100 pcie-4090-8; do
        "$self" --topo "$src/configs/$c.json" --set "network=$fat3" \
            "$size" 64 128 256 || exit
    done
    "$self" --topo "$src/configs/ascend-910c-superpod.json" "$size" 2 5 ||
        exit
    "$self" --topo "$src/configs/tcp-10gbe.json" "$size" 1536 1792 2047 \
        2048 || exit
    exit
fi
[ ${#counts[@]} -gt 0 ] || counts=(512 8192)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "# $(basename "$topo")${sets[*]:+ ${sets[*]}}: $count_path = COUNT"
printf '%8s %8s %10s %14s %10s %10s %10s  %s\n' count ranks size \
    "sim_time_us" "wall_s" "cpu_s" "peak_MB" status
for n in "${counts[@]}"; do
    (
        ulimit -v $((mem_gb * 1024 * 1024))
        exec timeout "$limit" /usr/bin/time -f '%e %M %U %S' -o "$tmp/time" \
            "$perf" allreduce -t "$topo" "${sets[@]}" \
            --set "$count_path=$n" -b "$size" -e "$size" -n 1 -w 0 \
            --format hccl --no-data
    ) >"$tmp/out" 2>"$tmp/err"
    rc=$?
    read -r wall rss usr sys < <(tail -n 1 "$tmp/time" 2>/dev/null) || true
    cpu=-
    [[ "${rss:-}" =~ ^[0-9]+$ ]] || { wall=-; rss=0; usr=; }
    [ -n "${usr:-}" ] && cpu=$(awk -v u="$usr" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
    sim=$(awk '!/^#/ && NF >= 3 && $1 ~ /^[0-9]+$/ {print $2}' "$tmp/out")
    ranks=$(sed -n 's/^# \([0-9]*\) ranks on .*/\1/p' "$tmp/out")
    status=ok
    [ "$rc" -eq 0 ] || status="failed (exit $rc: $(grep -v '^Command' "$tmp/err" | tail -1))"
    [ "$rc" -eq 124 ] && status="timed out after ${limit}s"
    printf '%8d %8s %10s %14s %10s %10s %10d  %s\n' "$n" "${ranks:--}" \
        "$size" "${sim:--}" "$wall" "$cpu" $((rss / 1024)) "$status"
done
