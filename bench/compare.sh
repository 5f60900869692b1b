#!/usr/bin/env bash
# Wall time per fp32 sum allreduce on 16 ranks: hccn (configs/default.json,
# real data) against Open MPI's MPI_Allreduce with 16 processes on the same
# host, in one session. Installs openmpi-bin and libopenmpi-dev if missing.
#
#   bench/compare.sh [ITERS] [SIZES...]    (default: 5 iterations;
#                                            8 B, 64 KiB, 1 MiB, 16 MiB, 64 MiB)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$src/build}
iters=${1:-5}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(8 65536 1048576 16777216 67108864)

if ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q openmpi-bin libopenmpi-dev
fi
BUILD_TYPE=Release "$src/scripts/setup.sh" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpicc -O2 -o "$tmp/mpi_allreduce" "$src/bench/mpi_allreduce.c"

declare -A mpi
while read -r tag bytes us; do
    [ "$tag" = mpi ] && mpi[$bytes]=$us
done < <(mpirun --allow-run-as-root --oversubscribe -np 16 \
         "$tmp/mpi_allreduce" "$iters" "${sizes[@]}")

printf "%12s %14s %14s %8s\n" bytes "hccn wall(us)" "mpi wall(us)" ratio
for b in "${sizes[@]}"; do
    "$build/hccn-perf" allreduce -t "$src/configs/default.json" -b "$b" -e "$b" \
        -n "$iters" -w 1 -c 0 --json "$tmp/hccn.json" >/dev/null
    # Out-of-place record: wall microseconds of one iteration.
    us=$(python3 -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["records"] if not x["inplace"]][0]; print("%.1f" % r["wall_us"])' "$tmp/hccn.json")
    m=${mpi[$b]:-nan}
    printf "%12s %14s %14s %8s\n" "$b" "$us" "$m" \
        "$(awk -v a="$us" -v b="$m" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "n/a" }')"
done
