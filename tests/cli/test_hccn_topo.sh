#!/usr/bin/env bash
# hccn-topo: exit 0 and a summary for every shipped config; exit 2 with one
# line on stderr for invalid files; exit 2 with usage for bad arguments.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
bin="$HCCN_BINARY_DIR/hccn-topo"

# run ARGS...: runs the tool, leaves $rc, $tmp/out and $tmp/err.
run() {
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

expect_out() {  # expect_out TEXT: stdout has the line TEXT
    grep -qxF -- "$1" "$tmp/out" || fail "$label: no line '$1' in: $(cat "$tmp/out")"
}

[ -x "$bin" ] || { echo "FAIL: $bin not built" >&2; exit 1; }

# Every config is valid.
for f in "$HCCN_SOURCE_DIR"/configs/*.json; do
    label=$(basename "$f")
    run "$f"
    [ "$rc" -eq 0 ] || fail "$label: exit $rc, stderr: $(cat "$tmp/err")"
    [ -s "$tmp/err" ] && fail "$label: unexpected stderr: $(cat "$tmp/err")"
    grep -q '^nodes: [0-9]' "$tmp/out" || fail "$label: no nodes line"
    grep -q '^bisection: ' "$tmp/out" || fail "$label: no bisection line"
done

# Hand-computed figures (docs/topology.md).
label=default; run "$HCCN_SOURCE_DIR/configs/default.json"
expect_out "name: default"
expect_out "nodes: 2"
expect_out "npus: 16"
expect_out "level 0 (intra-node): 112 links, min 56 GB/s per link"
expect_out "level 1 (NIC): 64 links, min 25 GB/s per link"
expect_out "level 2 (network): 0 links"
expect_out "bisection: 200 GB/s"
label=leafspine; run "$HCCN_SOURCE_DIR/configs/leafspine-4x8.json"
expect_out "nodes: 4"
expect_out "npus: 32"
expect_out "level 2 (network): 4 links, min 200 GB/s per link"
expect_out "bisection: 200 GB/s"
label=pcie; run "$HCCN_SOURCE_DIR/configs/pcie-8.json"
expect_out "bisection: 32 GB/s"
label=ring; run "$HCCN_SOURCE_DIR/configs/ring-8.json"
expect_out "bisection: 50 GB/s"
label=laptop; run "$HCCN_SOURCE_DIR/configs/laptop-4.json"
expect_out "bisection: 100 GB/s"

# The richer keys (docs/topology.md): a relayed pair of the hybrid cube
# mesh (0-1 one link, 1-5 two: relay 1 ties with 4 and is the lower), rails
# (4 x 12.5 GB/s), a NIC under a PCIe switch (0.5 + NIC 1 + switch 1 us).
label=relay; run "$HCCN_SOURCE_DIR/configs/dgx1-v100.json" --route 0 5
expect_out "route 0 -> 5: 2 links, latency 3 us"
expect_out "  link 0: node0.npu0 -> node0.npu1 (20 GB/s, lat 1.5 us)"
expect_out "  link 26: node0.npu1 -> node0.npu5 (40 GB/s, lat 1.5 us)"
label=rails; run "$HCCN_SOURCE_DIR/configs/p5-efa.json"
expect_out "level 1 (NIC): 64 links, min 50 GB/s per link"
label=pcie-nic; run "$HCCN_SOURCE_DIR/configs/pcie-4090-8.json" --route 5 13
expect_out "route 5 -> 13: 6 links, latency 2.5 us"

label=route; run "$HCCN_SOURCE_DIR/configs/default.json" --route 0 8
[ "$rc" -eq 0 ] || fail "route: exit $rc"
expect_out "route 0 -> 8: 4 links, latency 3 us"
label=verbose; run -v "$HCCN_SOURCE_DIR/configs/laptop-4.json"
[ "$rc" -eq 0 ] || fail "verbose: exit $rc"
grep -q '^link 0: node0.npu0 -> node0.nvswitch' "$tmp/out" || fail "verbose: no link list"

# Every invalid file: exit 2, exactly one line on stderr naming the file.
n=0
for f in "$HCCN_SOURCE_DIR"/tests/data/topo_invalid/*.json; do
    label=$(basename "$f")
    run "$f"
    [ "$rc" -eq 2 ] || fail "$label: exit $rc, expected 2"
    [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$label: stderr is not one line"
    grep -qF -- "$f" "$tmp/err" || fail "$label: stderr does not name the file"
    [ -s "$tmp/out" ] && fail "$label: unexpected stdout"
    n=$((n + 1))
done
[ "$n" -ge 30 ] || fail "only $n invalid files"

label=missing; run "$tmp/no-such-file.json"
[ "$rc" -eq 2 ] || fail "missing file: exit $rc"
grep -q 'cannot open' "$tmp/err" || fail "missing file: $(cat "$tmp/err")"

# The software model as loaded: the preset's figures, a file's overrides
# over them, nothing for a topology without a stack.
label=software; run "$HCCN_SOURCE_DIR/configs/hgx-a100.json"
grep -q '^software: nccl-2.2x, launch 6.6 us, .*in-switch network step 20.9 us' \
    "$tmp/out" || fail "no nccl-2.2x line: $(grep software "$tmp/out")"
grep -q '^software: nccl-2.2x, .*, link efficiency where the file gives none: fabric 0.8, pcie 0.914286, NIC 0.99;' \
    "$tmp/out" || fail "no link efficiency: $(grep software "$tmp/out")"
grep -q '^level 0 (intra-node): 32 links, min 240 GB/s per link$' "$tmp/out" ||
    fail "hgx-a100's 300 GB/s NVLink x 0.80: $(grep 'level 0' "$tmp/out")"
grep -q '^  ll: launch 6.6 us, step 0.6 / 2.7 us, efficiency 0.5 / 0.5, tree step 0.6 / 5 us, ring across nodes >= 1 us a step in a node, tree across nodes down to 0.4 of its bandwidth (at 256 KiB), bus bandwidth <= 39 GB/s on 2 nodes, 20.4 on more$' \
    "$tmp/out" || fail "ll line: $(grep '  ll:' "$tmp/out")"
grep -q '^  simple: .*, ring across nodes >= 3 us a step in a node, ring across nodes x1.4 a step, tree across nodes down to 0.5 of its bandwidth (at 128 KiB)$' \
    "$tmp/out" || fail "simple line: $(grep '  simple:' "$tmp/out")"
sed 's/"stack": "nccl-2.2x"/"stack": "nccl-2.2x", "software": {"ll": {"max_GBps": {"more_nodes": 7}, "step_us": {"net": 9}}}/' \
    "$HCCN_SOURCE_DIR/configs/hgx-a100.json" >"$tmp/sw.json"
run "$tmp/sw.json"
grep -q '^  ll: launch 6.6 us, step 0.6 / 9 us, .*bus bandwidth <= 39 GB/s on 2 nodes, 7 on more$' \
    "$tmp/out" || fail "override: $(grep '  ll:' "$tmp/out")"
grep -q 'tree step' <(grep '  ll:' "$tmp/out") &&
    fail "a file's step_us keeps the preset's tree row: $(grep '  ll:' "$tmp/out")"
run "$HCCN_SOURCE_DIR/configs/default.json"
grep -q '^software' "$tmp/out" && fail "default.json has no stack: $(grep software "$tmp/out")"

# Bad arguments: usage on stderr, exit 2. --help: usage on stdout, exit 0.
for args in "" "-x" "a.json b.json" "--route" "$HCCN_SOURCE_DIR/configs/default.json --route 0"; do
    # shellcheck disable=SC2086
    run $args
    [ "$rc" -eq 2 ] || fail "args '$args': exit $rc, expected 2"
    grep -q '^usage: hccn-topo' "$tmp/err" || fail "args '$args': no usage"
done
label=route-range; run "$HCCN_SOURCE_DIR/configs/default.json" --route 0 16
[ "$rc" -eq 2 ] || fail "route out of range: exit $rc"
run --help
[ "$rc" -eq 0 ] || fail "--help: exit $rc"
grep -q '^usage: hccn-topo' "$tmp/out" || fail "--help: no usage on stdout"

finish "hccn-topo: all checks passed"
