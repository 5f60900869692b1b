#!/usr/bin/env bash
# Wall time per fp32 sum allreduce on 16 ranks, in one session:
#   - hccn (configs/default.json, real data; hccn-perf's wall_us: rank 0's
#     wall time per call, out of place, after a warm-up);
#   - Open MPI's MPI_Allreduce with 16 processes on the same host
#     (bench/mpi_allreduce.c: the slowest rank's time per call);
#   - a memcpy roofline: host memcpy bandwidth B (bench/memcpy_bw.c, one
#     thread per CPU, measured here at the start and at the end, the
#     faster of the two) and the least bytes an allreduce
#     of S bytes on p ranks must move through host memory:
#         reduce-scatter: every input byte read once (p*S), every reduced
#                         block written once (S);
#         allgather:      each rank reads and writes the (p-1)/p*S it lacks
#                         (2*(p-1)*S in all);
#     (3p-1)*S bytes in all; a memcpy of n bytes moves 2n, so the roofline
#     time is (3p-1)*S / (2*B). (A pairwise reduction, as every schedule
#     uses, moves 5*(p-1)*S: more than this bound.)
#   - the wake floor (bench/wake_floor.c): the wall time of one round in
#     which 16 threads each sleep on a futex and are woken once, the least
#     any blocking call made by 16 threads costs on this host; and the
#     same round with the waiters yielding instead of sleeping.
# Prints one row per size with the ratios hccn/MPI and hccn/roofline.
# Installs openmpi-bin and libopenmpi-dev if missing. Wall figures on a
# shared host are noisy: run it twice and compare rows, not single cells.
#
#   bench/compare.sh [ITERS] [SIZES...]    (default: 5 iterations;
#                                            8 B, 64 KiB, 1 MiB, 16 MiB, 64 MiB)
#   MPI=0 bench/compare.sh ...             skip Open MPI (its column: nan)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$src/build}
iters=${1:-5}
shift || true
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(8 65536 1048576 16777216 67108864)
ranks=16
run_mpi=${MPI:-1}

if [ "$run_mpi" = 1 ] && { ! command -v mpicc >/dev/null || ! command -v mpirun >/dev/null; }; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q openmpi-bin libopenmpi-dev
fi
BUILD_DIR="$build" BUILD_TYPE=Release "$src/scripts/setup.sh" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The probe runs first and again last; the roofline uses the faster of the
# two (the host's load drifts during a session; the stricter bound wins).
read -r _ bw _ < <("$build/bench_memcpy_bw")

declare -A mpi
if [ "$run_mpi" = 1 ]; then
    mpicc -O2 -o "$tmp/mpi_allreduce" "$src/bench/mpi_allreduce.c"
    root=()
    [ "$(id -u)" -ne 0 ] || root=(--allow-run-as-root)
    while read -r tag bytes us; do
        [ "$tag" = mpi ] && mpi[$bytes]=$us
    done < <(mpirun "${root[@]}" --oversubscribe -np $ranks \
             "$tmp/mpi_allreduce" "$iters" "${sizes[@]}")
fi

rows=()
for b in "${sizes[@]}"; do
    "$build/hccn-perf" allreduce -t "$src/configs/default.json" -b "$b" -e "$b" \
        -n "$iters" -w 1 -c 0 --json "$tmp/hccn.json" >/dev/null
    # Out-of-place record: wall microseconds of one iteration.
    rows+=("$b $(/usr/bin/python3 -c 'import json,sys; r=[x for x in json.load(open(sys.argv[1]))["records"] if not x["inplace"]][0]; print("%.1f" % r["wall_us"])' "$tmp/hccn.json")")
done
read -r _ bw2 _ < <("$build/bench_memcpy_bw")
read -r _ floor _ < <("$build/bench_wake_floor" $ranks)
read -r _ yfloor _ < <("$build/bench_wake_floor" $ranks 20000 yield)
echo "# memcpy bandwidth: $bw GB/s first, $bw2 GB/s last (bytes copied per second, all CPUs)"
echo "# wake floor: $floor us per round of $ranks threads that each sleep and are woken once (bench/wake_floor.c)"
echo "# yield floor: $yfloor us per round when the waiting threads yield instead of sleeping (nothing else running)"
bw=$(awk -v a="$bw" -v b="$bw2" 'BEGIN { print (a > b ? a : b) }')

printf "%10s %14s %14s %14s %10s %10s\n" bytes "hccn wall(us)" "mpi wall(us)" \
    "roofline(us)" hccn/mpi hccn/roof
for row in "${rows[@]}"; do
    read -r b us <<<"$row"
    m=${mpi[$b]:-nan}
    awk -v b="$b" -v h="$us" -v m="$m" -v bw="$bw" -v p=$ranks 'BEGIN {
        roof = (3 * p - 1) * b / (2 * bw * 1e9) * 1e6;
        printf "%10d %14.1f %14s %14.1f %10s %10.2f\n", b, h, m, roof,
               (m + 0 > 0 ? sprintf("%.3f", h / m) : "n/a"), h / roof }'
done
