#!/usr/bin/env bash
# examples/data_parallel.c: exit 0 with PASS, the weights of the
# uncompressed runs equal to the serial run's, the compressed runs within
# the bound; step times that overlap and compression make shorter; the same
# output on a second run (simulated times are deterministic); another
# topology; exit 1 with a message for a missing topology.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
# Sixteen rank threads each start an OpenMP team on the same few cores:
# idle team threads should sleep, not spin.
export OMP_WAIT_POLICY=passive
bin="$HCCN_BINARY_DIR/example_data_parallel"


# run OUT ARGS...: runs the example into $tmp/OUT and $tmp/OUT.err; $rc.
run() {
    local out=$1
    shift
    "$bin" "$@" >"$tmp/$out" 2>"$tmp/$out.err"
    rc=$?
}

has() {  # has FILE REGEX: a line of FILE matches REGEX
    grep -qE -- "$2" "$tmp/$1" || fail "$1: no line matching '$2' in: $(cat "$tmp/$1")"
}

# step NAME FILE: the step time (us) printed for the run NAME.
step() {
    awk -v name="$1" 'index($0, name) && / us$/ { print $(NF-1) }' "$tmp/$2"
}

[ -x "$bin" ] || { echo "FAIL: $bin not built" >&2; exit 1; }

run out1
[ "$rc" -eq 0 ] || fail "default topology: exit $rc, stderr: $(cat "$tmp/out1.err")"
has out1 '^data_parallel: 16 ranks \(.*configs/default\.json\), 32 samples, 262144 weights in 4 buckets, 6 steps$'
has out1 '^serial run: loss [0-9.e+]+ -> [0-9.e+-]+$'
has out1 '^simulated step time:$'
for name in "no overlap, fp32 gradients" "overlap,    fp32 gradients" \
            "no overlap, fp16 on the wire" "overlap,    fp16 on the wire"; do
    has out1 "^  $name +[0-9]+\.[0-9]{3} us$"
done
has out1 '^verify no overlap, fp32 gradients: weights equal the serial run bit for bit$'
has out1 '^verify overlap,    fp32 gradients: weights equal the serial run bit for bit$'
has out1 '^verify no overlap, fp16 on the wire: within the bound of docs/compression\.md '
has out1 '^verify overlap,    fp16 on the wire: within the bound of docs/compression\.md '
[ "$(tail -n 1 "$tmp/out1")" = PASS ] || fail "last line is not PASS: $(tail -n 1 "$tmp/out1")"

# Overlap hides communication behind compute; fp16 halves the bytes.
plain=$(step "no overlap, fp32" out1)
over=$(step "overlap,    fp32" out1)
plain16=$(step "no overlap, fp16" out1)
over16=$(step "overlap,    fp16" out1)
awk -v a="$over" -v b="$plain" 'BEGIN { exit !(a > 0 && a < b) }' ||
    fail "overlap step $over us is not shorter than $plain us"
awk -v a="$plain16" -v b="$plain" 'BEGIN { exit !(a < b) }' ||
    fail "fp16 step $plain16 us is not shorter than fp32 $plain us"
awk -v a="$over16" -v b="$over" 'BEGIN { exit !(a < b) }' ||
    fail "fp16 overlapped step $over16 us is not shorter than $over us"

# Deterministic: the same output again, simulated times included.
run out2
[ "$rc" -eq 0 ] || fail "second run: exit $rc"
cmp -s "$tmp/out1" "$tmp/out2" || fail "second run differs: $(diff "$tmp/out1" "$tmp/out2")"

# Another topology (8 ranks on a ring).
run ring "$HCCN_SOURCE_DIR/configs/ring-8.json"
[ "$rc" -eq 0 ] || fail "ring-8: exit $rc, stderr: $(cat "$tmp/ring.err")"
has ring '^data_parallel: 8 ranks '
[ "$(tail -n 1 "$tmp/ring")" = PASS ] || fail "ring-8: last line is not PASS"

# A topology that does not exist: exit 1, the file named on stderr.
run missing "$tmp/no-such-topology.json"
[ "$rc" -eq 1 ] || fail "missing topology: exit $rc, expected 1"
grep -q "no-such-topology.json" "$tmp/missing.err" ||
    fail "missing topology: stderr does not name the file: $(cat "$tmp/missing.err")"

finish "ok"
