#!/usr/bin/env bash
# hccn-perf failure what-ifs (tools/perf_faults.h, perf_fsweep.h):
# --fault in short form and as JSON give the same run, a slowed NIC lowers
# busbw, a bad fault is exit 2 naming it; --sweep-faults lists every NIC
# (NPU) once, most harmful first, the same with data and timing only, and
# a failed NPU makes the collective fail; scripts/plot_faults.py draws it.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
perf="$HCCN_BINARY_DIR/hccn-perf"
cd "$HCCN_SOURCE_DIR" || exit 1
args=(allreduce -b 1M -e 1M -n 1 -w 0)

busbw() {  # busbw FILE: the out-of-place busbw of the one row
    awk '!/^#/ && NF > 8 { print $8; exit }' "$tmp/$1"
}

"$perf" "${args[@]}" >"$tmp/none" || fail "no fault: exit $?"
"$perf" "${args[@]}" --fault 'link_slow node0.nic0->net 0.25' >"$tmp/short" ||
    fail "short form: exit $?"
"$perf" "${args[@]}" \
    --fault '{"kind":"link_slow","link":"node0.nic0->net","factor":0.25}' \
    >"$tmp/json" || fail "JSON form: exit $?"
[ "$(busbw short)" = "$(busbw json)" ] ||
    fail "short $(busbw short) and JSON $(busbw json) forms differ"
awk -v a="$(busbw short)" -v b="$(busbw none)" 'BEGIN { exit !(a < b) }' ||
    fail "a NIC at 1/4 speed: busbw $(busbw short) is not below $(busbw none)"

"$perf" "${args[@]}" --fault 'link_down nowhere@0' 2>"$tmp/bad.err"
[ $? -eq 2 ] || fail "unknown link: exit status is not 2"
grep -q 'faults\[0\].link: no link "nowhere"' "$tmp/bad.err" ||
    fail "unknown link: $(cat "$tmp/bad.err")"
# Hostile short forms: every word is what its place asks for, never read
# as 0 or dropped; an index beyond 64 bits is named as such.
while IFS='|' read -r spec want; do
    "$perf" "${args[@]}" --fault "$spec" >"$tmp/hf.out" 2>"$tmp/hf.err"
    [ $? -eq 2 ] || fail "--fault '$spec': exit status is not 2"
    grep -qF -- "$want" "$tmp/hf.err" || fail "--fault '$spec': $(cat "$tmp/hf.err")"
done <<'CASES'
npu_fail x|the target of an NPU fault must be its index
npu_fail 1.5|the target of an NPU fault must be its index
npu_fail 1@1us|the time after '@' must be a number of microseconds
npu_slow 3 2x|the factor must be a number
npu_fail 1@1 2 extra|a word more than 'KIND TARGET[@AT_US] [FACTOR]'
npu_fail 18446744073709551616|faults[0].npu: must be in 0..15 (got an integer beyond the 64-bit range)
npu_fail 1@nan|faults[0].at_us: must be a finite number (got NaN)
CASES
"$perf" "${args[@]}" --sweep-faults disk 2>"$tmp/cls.err"
[ $? -eq 2 ] || fail "unknown class: exit status is not 2"
for cls in 'npu:slow=2x' 'npu:slow=nan' 'npu:slow=' 'link:slow=0.5:slow=1'; do
    "$perf" "${args[@]}" --sweep-faults "$cls" 2>"$tmp/cls.err"
    [ $? -eq 2 ] || fail "--sweep-faults '$cls': exit status is not 2"
    grep -qF "'$cls': expected link, nic or npu, optionally with :slow=F (F a number)" \
        "$tmp/cls.err" || fail "--sweep-faults '$cls': $(cat "$tmp/cls.err")"
done

sweep() {  # sweep OUT ARGS...: a sweep's table rows (rank, name, busbw)
    local out=$1
    shift
    "$perf" "${args[@]}" "$@" >"$tmp/$out.full" || fail "$out: exit $?"
    awk '!/^#/ { print $1, $2, $4 }' "$tmp/$out.full" >"$tmp/$out"
}
sweep nic --sweep-faults nic:slow=0.5
sweep nic_nd --sweep-faults nic:slow=0.5 --no-data
[ "$(grep -c 'nic[0-7] ' "$tmp/nic")" -eq 16 ] ||
    fail "nic sweep: not 16 NICs: $(cat "$tmp/nic.full")"
cmp -s "$tmp/nic" "$tmp/nic_nd" ||
    fail "with data and timing only differ: $(diff "$tmp/nic" "$tmp/nic_nd")"
awk 'NR > 1 && $3 < prev { bad = 1 } NR > 1 { prev = $3 }
     NR == 1 { prev = 0 } END { exit bad }' "$tmp/nic" ||
    fail "nic sweep not sorted by busbw: $(cat "$tmp/nic")"
awk 'NR > 1 && $3 >= base { bad = 1 } NR == 1 { base = $3 } END { exit bad }' \
    "$tmp/nic" || fail "a slowed NIC does not lower busbw: $(cat "$tmp/nic")"

sweep npu --sweep-faults npu --no-data
[ "$(grep -c ' fails$' "$tmp/npu")" -eq 16 ] ||
    fail "npu sweep: not every failed NPU fails the allreduce: $(cat "$tmp/npu.full")"

# The plot script reads the table (and draws it where matplotlib is).
/usr/bin/python3 "$HCCN_SOURCE_DIR/scripts/plot_faults.py" "$tmp/nic.full" \
    "$tmp/nic.png" >"$tmp/plot" 2>&1 || fail "plot_faults: $(cat "$tmp/plot")"
if grep -q "cases plotted" "$tmp/plot"; then
    [ -s "$tmp/nic.png" ] || fail "plot_faults: no PNG"
fi
/usr/bin/python3 "$HCCN_SOURCE_DIR/scripts/plot_faults.py" "$tmp/none" \
    "$tmp/none.png" 2>/dev/null && fail "plot_faults: a table that is not a sweep's was accepted"

finish "ok"
