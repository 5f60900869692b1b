#!/usr/bin/env bash
# Writes every simulated time a refactoring must keep bit for bit, one
# line each, to OUT: the main job's sweep, `hccn-perf all` on every config
# in configs/ (with data, and timing-only), and folded timing-only runs
# against their unfolded twins. Compare two such files with diff (or
# `bench/sim_identity.sh --compare A B`, which also counts the lines).
#
#   bench/sim_identity.sh OUT [BUILD_DIR]
#   bench/sim_identity.sh --compare BEFORE AFTER
set -euo pipefail
py=/usr/bin/python3
if [ "${1:-}" = --compare ]; then
    [ $# -eq 3 ] || { echo "usage: $0 --compare BEFORE AFTER" >&2; exit 2; }
    n=$(wc -l <"$2")
    if diff -u "$2" "$3" >/dev/null; then
        echo "identical: $n simulated times"
        exit 0
    fi
    changed=$(diff "$2" "$3" | grep -c '^>' || true)
    echo "differ: $changed of $n lines (diff -u $2 $3)"
    exit 1
fi
[ $# -ge 1 ] || { echo "usage: $0 OUT [BUILD_DIR]" >&2; exit 2; }
out=$1
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${2:-$src/build}
perf=$build/hccn-perf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src"

# Every record of a --json file as "label collective size inplace time"
# with the time in full (repr) precision.
extract() {
    "$py" - "$1" "$2" <<'PY'
import json, sys
label = sys.argv[2]
for r in json.load(open(sys.argv[1]))["records"]:
    print(label, r["collective"], r["size"], int(r["inplace"]),
          r.get("root", -1), repr(r["time_us"]))
PY
}

i=0
run() {   # run LABEL ARGS...: one hccn-perf call, its times appended
    local label=$1; shift
    i=$((i + 1))
    "$perf" "$@" -n 1 -w 0 --json "$tmp/$i.json" >/dev/null
    extract "$tmp/$i.json" "$label" >>"$out"
}

: >"$out"
run main allreduce -t configs/default.json -b 8 -e 256M -f 2 -c 1
# Configs of up to BIG_NPUS NPUs: with data to 16M and timing-only to 1G;
# larger ones (72 to hundreds of NPUs on one fabric, which do not fold:
# many GB of buffers with data, minutes of host work per large call, an
# alltoall of n^2 flows) timing-only to 16M, every collective of `all` but
# alltoall.
BIG_NPUS=64
for cfg in configs/*.json; do
    name=$(basename "$cfg" .json)
    npus=$("$build/hccn-topo" "$cfg" | awk '$1 == "npus:" {print $2}')
    if [ "${npus:-0}" -le "$BIG_NPUS" ]; then
        run "$name:data" all -t "$cfg" -b 8 -e 16M -f 8
        run "$name:timing" all -t "$cfg" -b 8 -e 1G -f 16 --no-data
    else
        for coll in allreduce reduce_scatter allgather broadcast reduce; do
            run "$name:timing" "$coll" -t "$cfg" -b 8 -e 16M -f 16 --no-data
        done
    fi
done
# Folded timing-only runs and the same calls simulated on every node.
for n in 4 64; do
    set_n="node_types[0].count=$n"
    run "fold$n" allreduce -t configs/default.json --set "$set_n" \
        -b 8 -e 1G -f 64 --no-data
    run "nofold$n" allreduce -t configs/default.json --set "$set_n" \
        -b 8 -e 1G -f 64 --no-data --no-fold
done
echo "$(wc -l <"$out") simulated times in $out"
