#!/usr/bin/env bash
# hccn-info: the algorithm list; predictions and the choice for a
# collective on a topology; exit 2 with a message for bad arguments.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
bin="$HCCN_BINARY_DIR/hccn-info"
cfg="$HCCN_SOURCE_DIR/configs"

# run ARGS...: runs the tool, leaves $rc, $tmp/out and $tmp/err.
run() {
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

expect_rc() {
    [ "$rc" -eq "$1" ] || fail "$label: exit $rc, expected $1 (stderr: $(cat "$tmp/err"))"
}

expect_out() {  # expect_out REGEX: some stdout line matches
    grep -qE -- "$1" "$tmp/out" || fail "$label: no line matching '$1' in: $(cat "$tmp/out")"
}

[ -x "$bin" ] || { echo "FAIL: $bin not built" >&2; exit 1; }

# The list: every algorithm with its description, then its collectives.
label=list; run
expect_rc 0
[ -s "$tmp/err" ] && fail "list: unexpected stderr: $(cat "$tmp/err")"
for algo in ring mesh linear; do
    expect_out "^$algo +[a-z]"
done
expect_out "^ +allreduce, reduce_scatter, allgather, broadcast, reduce$"
expect_out "^ +broadcast, reduce, alltoall, scatter, gather, barrier, alltoallv$"
n=$(grep -cE '^[a-z_]+ ' "$tmp/out")
[ "$n" -ge 3 ] || fail "list: only $n algorithms"

# Predictions on default.json: 16 ranks, 64 MiB allreduce.
label=predict; run -t "$cfg/default.json" -c allreduce -s 64M
expect_rc 0
expect_out "^topology: .*default.json \(16 NPUs\)$"
expect_out "^ranks: 16 on 2 nodes, up to 8 per node$"
expect_out "^level 0 \(inside a node\): alpha 1.50 us, bandwidth 56.0 GB/s$"
expect_out "^level 1 \(between nodes\): alpha 3.00 us, bandwidth 25.0 GB/s$"
expect_out "^allreduce: count 16777216 x 4 B per rank$"
expect_out "^ring +[0-9]+\.[0-9]+ us  (engine|model)$"
expect_out "^mesh +[0-9]+\.[0-9]+ us  (engine|model)$"
expect_out "^chosen: [a-z_]+$"
expect_out "^allreduce 67108864 B on 16 ranks: [a-z_]+ \(cheapest\) — "
grep -qE '^linear ' "$tmp/out" && fail "predict: linear listed for allreduce"
if grep -qE '^hier ' "$tmp/out"; then
    expect_out "^chosen: hier$"
fi

expect_out "^levels: 2 \(no leaf switches\)$"

# The levels derived from leaf switches: 4 pods of 4 nodes of 8 NPUs, and
# two levels on the ranks of one pod.
label=pods; run -t "$cfg/leafspine-pods.json" -c allreduce -s 8 -m model
expect_rc 0
expect_out "^levels: 3: level 0 = 8 ranks of a node, level 1 = 4 nodes of a pod \(leaf\), level 2 = 4 pods \(spine\)$"
expect_out "^level 2 \(between pods\): alpha 5.00 us, bandwidth 25.0 GB/s$"
label=one-pod; run -t "$cfg/leafspine-pods.json" -c allreduce -s 8 -n 32
expect_rc 0
expect_out "^levels: 2 \(one pod\)$"
label=two-pods; run -t "$cfg/leafspine-4x8.json" -c allreduce -s 8
expect_out "^levels: 3: level 0 = 8 ranks of a node, level 1 = 2 nodes of a pod \(leaf\), level 2 = 2 pods \(spine\)$"

# One node of it: mesh, and the hierarchical rows do not apply.
label=one-node; run -t "$cfg/default.json" -c allreduce -s 64M -n 8
expect_rc 0
expect_out "^ranks: 8 on 1 node, up to 8 per node$"
expect_out "^chosen: mesh$"
if grep -qE '^hier ' "$tmp/out"; then
    expect_out "^hier +n/a  cannot run these arguments$"
fi

# Every mode and collective runs; reduce_scatter counts per rank.
label=modes
for mode in auto engine model; do
    run -t "$cfg/laptop-4.json" -c reduce_scatter -s 1M -m "$mode"
    expect_rc 0
    expect_out "^reduce_scatter: count 65536 x 4 B per rank$"
done
label=colls
for coll in allreduce reducescatter allgather broadcast reduce alltoall scatter gather; do
    run -t "$cfg/pcie-8.json" -c "$coll" -s 4M -e 2 -r 7
    expect_rc 0
    expect_out "^chosen: "
done
run -t "$cfg/ring-8.json" -c barrier
expect_rc 0
expect_out "^chosen: "

# A forced algorithm, in HCCL's grammar.
label=forced; run -t "$cfg/default.json" -c allgather -s 1M -a "allgather=ring/allreduce=mesh"
expect_rc 0
expect_out "^chosen: ring$"
expect_out "\(forced by spec \"ring\"\)"
label=forced-bad; run -t "$cfg/default.json" -c alltoall -s 1M -a ring
expect_rc 2
grep -q "algorithm 'ring' does not implement alltoall" "$tmp/err" || fail "forced-bad: $(cat "$tmp/err")"
label=spec-bad; run -t "$cfg/default.json" -c allreduce -s 1M -a "allreduce=level0:mesh;level1:foo"
expect_rc 2
grep -q '"level1:foo": unknown algorithm' "$tmp/err" || fail "spec-bad: $(cat "$tmp/err")"

# Bad arguments: exit 2, a message and the usage on stderr, nothing on
# stdout. --help: usage on stdout, exit 0.
label=bad
while IFS= read -r line; do
    # shellcheck disable=SC2086
    eval "run $line"
    [ "$rc" -eq 2 ] || fail "args '$line': exit $rc, expected 2"
    grep -q '^hccn-info: ' "$tmp/err" || grep -q '^usage: hccn-info' "$tmp/err" ||
        fail "args '$line': no message: $(cat "$tmp/err")"
    [ -s "$tmp/out" ] && fail "args '$line': unexpected stdout"
done <<EOF
-x
-c allreduce -s 1M
-t "$cfg/default.json" -s 1M
-t "$cfg/default.json" -c allreduce
-t "$cfg/default.json" -c nosuch -s 1M
-t "$cfg/default.json" -c allreduce -s lots
-t "$cfg/default.json" -c allreduce -s 1M -n 0
-t "$cfg/default.json" -c allreduce -s 1M -n 17
-t "$cfg/default.json" -c allreduce -s 1M -e 3
-t "$cfg/default.json" -c broadcast -s 1M -r 16
-t "$cfg/default.json" -c allreduce -s 1M -m fast
-t "$tmp/missing.json" -c allreduce -s 1M
-t "$cfg/default.json" -c allreduce -s 1M extra
EOF
label=missing; run -t "$tmp/missing.json" -c allreduce -s 1M
grep -q "missing.json" "$tmp/err" || fail "missing: stderr does not name the file: $(cat "$tmp/err")"
label=help; run --help
expect_rc 0
grep -q '^usage: hccn-info' "$tmp/out" || fail "--help: no usage on stdout"

finish "hccn-info: all checks passed"
