#!/usr/bin/env bash
# examples/elastic_sgd.c: an NPU fails at step K; the survivors revoke,
# shrink and go on, and their weights equal the serial run with the same
# membership change bit for bit (PASS, exit 0); the failure's cost is
# printed and adds up; the same output on a second run (simulated times
# are deterministic); another step and NPU; exit 1 for a bad argument.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
bin="$HCCN_BINARY_DIR/example_elastic_sgd"

run() {  # run OUT ARGS...: the example into $tmp/OUT and $tmp/OUT.err; $rc
    local out=$1
    shift
    "$bin" "$@" >"$tmp/$out" 2>"$tmp/$out.err"
    rc=$?
}

has() {  # has FILE REGEX: a line of FILE matches REGEX
    grep -qE -- "$2" "$tmp/$1" || fail "$1: no line matching '$2' in: $(cat "$tmp/$1")"
}

us() {  # us FILE LABEL: the number before "us" on the line with LABEL
    awk -v l="$2" 'index($0, l) { print $(NF-1) }' "$tmp/$1"
}

[ -x "$bin" ] || { echo "FAIL: $bin not built" >&2; exit 1; }

run out1
[ "$rc" -eq 0 ] || fail "default: exit $rc, stderr: $(cat "$tmp/out1.err")"
has out1 '^elastic_sgd: 16 ranks \(.*configs/default\.json\), 4096 weights, 4 samples per rank, 10 steps$'
has out1 '^NPU 5 fails at [0-9.]+ us, in step 4; the survivors see it in step 4 at [0-9.]+ us$'
has out1 '^global batch 64 -> 60 samples; '
has out1 '^verify: the 15 survivors. weights equal the serial reference bit for bit$'
[ "$(tail -n 1 "$tmp/out1")" = PASS ] || fail "last line is not PASS"
# The parts add up to the total, and detection is the timeout's rest.
lost=$(us out1 "lost work")
det=$(us out1 "detection")
rec=$(us out1 "agreement and")
tot=$(us out1 "total")
awk -v a="$lost" -v b="$det" -v c="$rec" -v t="$tot" \
    'BEGIN { d = a + b + c - t; exit !(d < 0.002 && d > -0.002 && c > 100) }' ||
    fail "cost parts $lost + $det + $rec do not make $tot (or no set-up)"

run out2
cmp -s "$tmp/out1" "$tmp/out2" || fail "second run differs: $(diff "$tmp/out1" "$tmp/out2")"

run late "$HCCN_SOURCE_DIR/configs/default.json" 8 15
[ "$rc" -eq 0 ] || fail "K=8 NPU 15: exit $rc, stderr: $(cat "$tmp/late.err")"
has late '^NPU 15 fails at [0-9.]+ us, in step 8;'
[ "$(tail -n 1 "$tmp/late")" = PASS ] || fail "K=8 NPU 15: last line is not PASS"

run bad "$HCCN_SOURCE_DIR/configs/default.json" 99
[ "$rc" -eq 1 ] || fail "K=99: exit $rc, expected 1"

finish "ok"
