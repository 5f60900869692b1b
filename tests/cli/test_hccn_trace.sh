#!/usr/bin/env bash
# hccn-perf --trace and the link summary: the trace is Chrome trace JSON
# whose slices nest (phases in operations, steps in phases); per link, the
# segments' dur x rate adds up to their bytes and to the totals of --json
# and of the printed summary; a forced ring allreduce of S bytes on
# configs/ring-8.json moves exactly 2(p-1)/p S bytes over each link of the
# ring, at full rate; the hierarchical allreduce shows its three phases;
# two runs write the same file byte for byte; without --trace the summary
# is printed all the same and the table is unchanged.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
bin="$HCCN_BINARY_DIR/hccn-perf"
cfg="$HCCN_SOURCE_DIR/configs"
check="$HCCN_SOURCE_DIR/tests/cli/trace_check.py"
export HCCN_TIMEOUT=120


[ -x "$bin" ] || { echo "FAIL: $bin not built" >&2; exit 1; }

# --- ring allreduce on ring-8: closed form per link ---------------------
S=$((8 << 20))
for k in 1 2; do
    "$bin" allreduce -t "$cfg/ring-8.json" --algo ring -b $S -e $S -n 2 -w 1 \
        --trace "$tmp/ring$k.trace" --json "$tmp/ring$k.json" \
        >"$tmp/ring$k.out" 2>"$tmp/err" || fail "ring run $k: $(cat "$tmp/err")"
done
cmp -s "$tmp/ring1.trace" "$tmp/ring2.trace" ||
    fail "ring: two runs wrote different traces"
python3 "$check" "$tmp/ring1.trace" "$tmp/ring1.json" "$tmp/ring1.out" \
    --ring $S 8 --phases $S reduce-scatter,allgather >"$tmp/py" 2>&1 ||
    fail "ring: $(cat "$tmp/py")"

# --- the hierarchical default on two nodes: named phases ----------------
H=$((16 << 20))
"$bin" allreduce -t "$cfg/default.json" -b $H -e $H -n 1 -w 0 --inplace \
    --trace "$tmp/hier.trace" --json "$tmp/hier.json" >"$tmp/hier.out" \
    2>"$tmp/err" || fail "hier run: $(cat "$tmp/err")"
grep -q '"algorithm":"hier(mesh,ring)"' "$tmp/hier.trace" ||
    fail "hier: the default is not the hierarchical algorithm"
python3 "$check" "$tmp/hier.trace" "$tmp/hier.json" "$tmp/hier.out" \
    --phases $H "intra reduce-scatter,inter allreduce,intra allgather" \
    >"$tmp/py" 2>&1 || fail "hier: $(cat "$tmp/py")"

# --- several collectives and sweep values in one trace -------------------
"$bin" all -t "$cfg/laptop-4.json" -b 64K -e 256K -f 4 -n 1 -w 0 \
    --sweep 'node_types[0].fabric.lat_us=1,2' \
    --trace "$tmp/all.trace" --json "$tmp/all.json" >"$tmp/all.out" \
    2>"$tmp/err" || fail "all: $(cat "$tmp/err")"
python3 "$check" "$tmp/all.trace" "$tmp/all.json" "$tmp/all.out" \
    >"$tmp/py" 2>&1 || fail "all: $(cat "$tmp/py")"
[ "$(grep -c '^# Link utilisation' "$tmp/all.out")" -eq 6 ] ||
    fail "all: expected one summary per collective"

# --- without --trace: same table, summary still there --------------------
"$bin" allreduce -t "$cfg/ring-8.json" --algo ring -b $S -e $S -n 2 -w 1 \
    >"$tmp/plain.out" 2>"$tmp/err" || fail "plain: $(cat "$tmp/err")"
diff <(grep -v '^#' "$tmp/plain.out" | awk '{$NF=""; print}') \
     <(grep -v '^#' "$tmp/ring1.out" | awk '{$NF=""; print}') >/dev/null ||
    fail "plain: the table changed with --trace"
diff <(grep '^# Link\|^#   ' "$tmp/plain.out") \
     <(grep '^# Link\|^#   ' "$tmp/ring1.out") >/dev/null ||
    fail "plain: the summary changed with --trace"
grep -q '^# Link utilisation     : 2 runs' "$tmp/plain.out" ||
    fail "plain: no summary line"

# --- errors ---------------------------------------------------------------
"$bin" allreduce -t "$cfg/laptop-4.json" -b 8 -e 8 -n 1 \
    --trace "$tmp/no/such/dir.json" >/dev/null 2>"$tmp/err"
rc=$?
[ "$rc" -eq 1 ] && grep -q "cannot write" "$tmp/err" ||
    fail "unwritable trace: exit $rc, '$(cat "$tmp/err")'"

finish "hccn-perf --trace: all checks passed"
