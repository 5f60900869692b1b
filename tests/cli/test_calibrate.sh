#!/usr/bin/env bash
# hccn-calibrate: recovers the software parameters that generated a
# synthetic benchmark output (tests/data/calibrate/synthetic_*.txt:
# hccn-perf on hgx-a100 x1 (its NVLink then at 267 GB/s, pinned below)
# with launch_us 20 and ll.step_us.intra 1.5,
# the allreduce on its 8 GPUs and the allgather on 2, printed in
# nccl-tests' layout: two step counts, so the two are told apart); reads OSU and hccl_test outputs; writes
# a topology that loads and carries the fitted values; takes GPUs per
# thread from nccl-tests' header (host_us); refuses bad input
# with a message naming the file.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
bin="$HCCN_BINARY_DIR/hccn-calibrate"
perf="$HCCN_BINARY_DIR/hccn-perf"
data="$HCCN_SOURCE_DIR/tests/data/calibrate"
cfg="$HCCN_SOURCE_DIR/configs/hgx-a100.json"
# the generator's NVLink: 267 GB/s carried (efficiency 1, not the stack's)
nvlink='node_types[0].fabric={"type": "switch", "bw_GBps": 267, "lat_us": 1.0, "efficiency": 1}'
py=/usr/bin/python3
[ -x "$bin" ] || { echo "FAIL: $bin not built" >&2; exit 1; }

# The fit recovers the generating parameters to 2 % (without the pull to
# the loaded values, --prior 0: below, with it).
"$bin" -t "$cfg" --set 'node_types[0].count=1' --set "$nvlink" \
    --fit launch_us,ll.step_us.intra --prior 0 -o "$tmp/fit.json" \
    allreduce:"$data/synthetic_allreduce.txt" \
    all_gather:"$data/synthetic_allgather.txt@node_types[0].npu.count=2@node_types[0].nics.count=2" \
    >"$tmp/out" 2>"$tmp/err" ||
    fail "fit: exit $? ($(cat "$tmp/err"))"
grep -q '^# run .*synthetic_allreduce.txt: nccl-tests allreduce, 20 rows' \
    "$tmp/out" || fail "fit: rows not read: $(head -3 "$tmp/out")"
$py - "$tmp/fit.json" <<'PY' || fail "fit: parameters not recovered"
import json, sys
sw = json.load(open(sys.argv[1]))["software"]
launch, step = sw["launch_us"], sw["ll"]["step_us"]["intra"]
print("recovered launch_us %.3f (20), ll.step_us.intra %.3f (1.5)"
      % (launch, step))
ok = abs(launch - 20) <= 0.4 and abs(step - 1.5) <= 0.03
# the stack's fields the fit does not touch are written as the preset's
kept = (sw["slots"], sw["nvls_launch_us"], sw["allpairs_max_bytes"])
print("kept slots, nvls_launch_us, allpairs_max_bytes:", kept)
# and the stack's link efficiencies, written out (fabric, pcie, nic)
links = sw["link_efficiency"]
print("link_efficiency:", links)
ok = ok and links == {"fabric": 0.8, "pcie": 256 / 280, "nic": 0.99}
# a fitted launch_us is every protocol's: no per-protocol launch written
own = [p for p in ("ll", "ll128", "simple") if "launch_us" in sw[p]]
print("protocols with their own launch:", own)
# the tree's share by size and the ring's plateau, NCCL's, written out
tree = sw["simple"]["tree_bw"]
print("simple.tree_bw:", tree, "ring_plateau:", sw["ring_plateau"])
ok = ok and len(tree) == 23 and tree[11] == 0.5 and tree[22] == 0.9
ok = ok and sw["ring_plateau"] == 1.4
sys.exit(0 if ok and kept == (8, 25, 0) and not own else 1)
PY
# The written topology loads, and predicts the synthetic run's times.
"$perf" allreduce -t "$tmp/fit.json" --set 'node_types[0].count=1' -b 8 \
    -e 8 -n 1 -w 0 --no-data >"$tmp/perf" 2>&1 ||
    fail "fitted topology does not run: $(cat "$tmp/perf")"
grep -qE '^ +8 +2 +float +sum +-1 +35\.0[0-9] ' "$tmp/perf" ||
    fail "fitted topology: 8 B allreduce is not 35.0 us: $(grep '^ *8 ' "$tmp/perf")"

# The prior (--prior W: W x the squared log distance of each parameter
# from its loaded value, added to the objective). Its default moves the
# recovered values by less than the 2 % asked; a weight that dominates the
# runs keeps every parameter at the preset's value (launch 6.6, NCCL's
# LL baseLat; ll.step_us.intra 0.6, hwLat NVLink LL); a weight that is
# not a finite number >= 0 is refused.
for w in default 1e6; do
    prior=()
    [ "$w" = default ] || prior=(--prior "$w")
    "$bin" -t "$cfg" --set 'node_types[0].count=1' --set "$nvlink" \
        --fit launch_us,ll.step_us.intra "${prior[@]}" -o "$tmp/p.json" \
        allreduce:"$data/synthetic_allreduce.txt" \
        all_gather:"$data/synthetic_allgather.txt@node_types[0].npu.count=2@node_types[0].nics.count=2" \
        >"$tmp/out" 2>"$tmp/err" ||
        fail "prior $w: exit $? ($(cat "$tmp/err"))"
    $py - "$tmp/p.json" "$w" <<'PY' || fail "prior $w: not where it should be"
import json, sys
sw = json.load(open(sys.argv[1]))["software"]
launch, step = sw["launch_us"], sw["ll"]["step_us"]["intra"]
want = (20, 1.5) if sys.argv[2] == "default" else (6.6, 0.6)
tol = 0.02 if sys.argv[2] == "default" else 1e-9
print("prior %s: launch_us %.4f, ll.step_us.intra %.4f (want %s)"
      % (sys.argv[2], launch, step, want))
sys.exit(0 if all(abs(a - b) <= tol * b for a, b in
                  zip((launch, step), want)) else 1)
PY
done
for w in -1 nan abc; do
    "$bin" -t "$cfg" --prior "$w" allreduce:"$data/synthetic_allreduce.txt" \
        >"$tmp/out" 2>"$tmp/err"
    [ $? -eq 2 ] || fail "prior $w: not refused (exit 2)"
done

# One thread driving 8 GPUs (nccl-tests' "nGpus 8" header): the fit
# prices the run's calls at 8 x host_us and recovers host_us 3 from an
# output made with it; the written topology keeps the file's
# ranks_per_thread (1).
{
    echo "# nThread 1 nGpus 8 minBytes 8 maxBytes 524288 step: 4(factor)"
    "$perf" allreduce -t "$cfg" --set 'node_types[0].count=1' \
        --set 'software={"host_us": 3, "ranks_per_thread": 8}' -b 8 \
        -e 512K -f 4 -n 1 -w 0 --no-data
} >"$tmp/g8.txt" 2>&1 || fail "g8: hccn-perf: $(cat "$tmp/g8.txt")"
"$bin" -t "$cfg" --set 'node_types[0].count=1' --fit host_us \
    -o "$tmp/g8.json" allreduce:"$tmp/g8.txt" >"$tmp/out" 2>"$tmp/err" ||
    fail "g8: exit $? ($(cat "$tmp/err"))"
$py - "$tmp/g8.json" <<'PY' || fail "g8: host_us not recovered"
import json, sys
sw = json.load(open(sys.argv[1]))["software"]
print("recovered host_us %.3f (3), ranks_per_thread %d (1)"
      % (sw["host_us"], sw["ranks_per_thread"]))
# launches not fitted: the preset's per protocol (NCCL's baseLat) written
launches = tuple(sw[p]["launch_us"] for p in ("ll", "ll128", "simple"))
print("per-protocol launches written:", launches)
sys.exit(0 if abs(sw["host_us"] - 3) <= 0.03 and
         sw["ranks_per_thread"] == 1 and
         all(abs(a - b) < 1e-9 for a, b in zip(launches, (6.6, 14, 8.4)))
         else 1)
PY

# A file's own "none" (no plateau, no tree share) survives the written
# topology: the stack's preset does not come back over it.
"$bin" -t "$cfg" --set 'node_types[0].count=1' \
    --set 'software={"ring_plateau": 1, "simple": {"tree_bw": [1]}}' \
    --fit host_us -o "$tmp/none.json" allreduce:"$tmp/g8.txt" \
    >"$tmp/out" 2>"$tmp/err" || fail "none: exit $? ($(cat "$tmp/err"))"
$py - "$tmp/none.json" <<'PY' || fail "none: the preset's plateau or tree share came back"
import json, sys
sw = json.load(open(sys.argv[1]))["software"]
print("ring_plateau", sw["ring_plateau"], "simple.tree_bw", sw["simple"]["tree_bw"])
sys.exit(0 if sw["ring_plateau"] == 1 and sw["simple"]["tree_bw"] == [1] * 23
         and sw["ll"]["tree_bw"][14] == 0.5 else 1)
PY

# The hosts' time per message (mpi, cpu-epyc-16c: 32 ranks): an alltoall
# made with recv_overhead_us 2 takes 1 + 31 x (0.266 + 2) us at small
# sizes; the fit, started from the preset's 0.547, recovers 2 and keeps
# send_overhead_us.
epyc="$HCCN_SOURCE_DIR/configs/cpu-epyc-16c.json"
"$perf" alltoall -t "$epyc" --set 'software={"recv_overhead_us": 2}' -b 1K \
    -e 256K -f 4 -n 1 -w 0 --no-data >"$tmp/o.txt" 2>&1 ||
    fail "o: hccn-perf: $(cat "$tmp/o.txt")"
grep -qE '^ +1024 +256 +float +none +-1 +71\.25 ' "$tmp/o.txt" ||
    fail "o: 1 KiB alltoall is not 71.25 us: $(grep '^ *1024 ' "$tmp/o.txt")"
"$bin" -t "$epyc" --fit recv_overhead_us -o "$tmp/o.json" \
    alltoall:"$tmp/o.txt" >"$tmp/out" 2>"$tmp/err" ||
    fail "o: exit $? ($(cat "$tmp/err"))"
$py - "$tmp/o.json" <<'PY' || fail "o: recv_overhead_us not recovered"
import json, sys
sw = json.load(open(sys.argv[1]))["software"]
print("recovered recv_overhead_us %.3f (2), send_overhead_us %.3f (0.266)"
      % (sw["recv_overhead_us"], sw["send_overhead_us"]))
sys.exit(0 if abs(sw["recv_overhead_us"] - 2) <= 0.02 and
         sw["send_overhead_us"] == 0.266 else 1)
PY

# OSU and hccl_test outputs are read as printed; a run's own edits
# follow its file after '@' (here: one node for the hccl_test run, two
# for the OSU one).
"$bin" -t "$cfg" --fit launch_us --sweeps 1 \
    allreduce:"$data/osu_allreduce.txt" \
    allreduce:"$data/hccl_test_allreduce.txt@node_types[0].count=1" \
    >"$tmp/out" 2>"$tmp/err" ||
    fail "osu/hccl: exit $? ($(cat "$tmp/err"))"
grep -q 'osu_allreduce.txt: osu allreduce, 4 rows' "$tmp/out" ||
    fail "osu: $(grep '^# run' "$tmp/out")"
grep -q 'hccl_test_allreduce.txt: hccl_test allreduce, 3 rows' "$tmp/out" ||
    fail "hccl_test: $(grep '^# run' "$tmp/out")"

# The same run as a launcher or a log collector prints it (Open MPI's
# --tag-output, srun --label, kubectl's timestamps), and in other element
# types (int8, double: nccl-tests' -d; the same bytes): the same rows, so
# the same fit to the last digit as the plain file.
fitp() {
    "$bin" -t "$cfg" --set 'node_types[0].count=1' --fit launch_us \
        --sweeps 1 --prior 0 allreduce:"$1" 2>&1 | grep -v '^# run ' |
        sed "s|$1|RUN|" | tr -s " "
}
fitp "$data/synthetic_allreduce.txt" >"$tmp/plain"
grep -q 'launch_us' "$tmp/plain" || fail "prefixes: $(cat "$tmp/plain")"
sed 's/^/[1,0]<stdout>:/' "$data/synthetic_allreduce.txt" >"$tmp/tagged.txt"
sed 's/^/3: /' "$data/synthetic_allreduce.txt" >"$tmp/label.txt"
sed 's/^/2024-07-19T12:34:56.123456789Z /' "$data/synthetic_allreduce.txt" \
    >"$tmp/stamped.txt"
awk '$3 == "float" { t = NR % 2 ? "int8" : "double";
                     c = t == "int8" ? $2 * 4 : $2 / 2;
                     sub(/ float /, sprintf(" %s ", t)); sub($2, c) } 1' \
    "$data/synthetic_allreduce.txt" >"$tmp/types.txt"
grep -q ' int8 ' "$tmp/types.txt" && grep -q ' double ' "$tmp/types.txt" ||
    fail "types: no int8 and double rows written"
for v in tagged label stamped types; do
    fitp "$tmp/$v.txt" >"$tmp/$v.out"
    cmp -s "$tmp/plain" "$tmp/$v.out" ||
        fail "$v: not read as the plain file: $(diff "$tmp/plain" "$tmp/$v.out" | head -5)"
done

# A log of several tests (one job running all_gather_perf, then
# all_reduce_perf): each collective reads its own test, as its file alone;
# a collective the log has no test of is refused, naming each test once
# (reduce_perf too, whose name is inside all_reduce_perf's). Two
# runs of one test without the marker (older nccl-tests) are read as one
# test of 8 ranks, not of 16.
ag_edits='@node_types[0].npu.count=2@node_types[0].nics.count=2'
{
    echo '# Collective test starting: all_gather_perf'
    cat "$data/synthetic_allgather.txt"
    echo '# Collective test concluded: all_gather_perf'
    echo '# Collective test starting: all_reduce_perf'
    cat "$data/synthetic_allreduce.txt"
    echo '# Collective test starting: reduce_perf'
    echo '# Collective test starting: all_gather_perf'
} >"$tmp/both.txt"
fitp "$tmp/both.txt" >"$tmp/both.out"
cmp -s "$tmp/plain" "$tmp/both.out" ||
    fail "log of two tests: allreduce not read as its own file: $(diff "$tmp/plain" "$tmp/both.out" | head -5)"
for f in "$data/synthetic_allgather.txt" "$tmp/both.txt"; do
    "$bin" -t "$cfg" --set 'node_types[0].count=1' --fit launch_us \
        --sweeps 1 --prior 0 all_gather:"$f$ag_edits" 2>&1 |
        grep -v '^# run ' | sed "s|$f|RUN|" | tr -s " " >"$tmp/ag.$(basename "$f")"
done
grep -q launch_us "$tmp/ag.both.txt" &&
    cmp -s "$tmp/ag.synthetic_allgather.txt" "$tmp/ag.both.txt" ||
    fail "log of two tests: allgather not read as its own file: $(diff "$tmp/ag.synthetic_allgather.txt" "$tmp/ag.both.txt" | head -5)"
"$bin" -t "$cfg" --set 'node_types[0].count=1' broadcast:"$tmp/both.txt" \
    >"$tmp/out" 2>"$tmp/err" && fail "log of two tests: broadcast accepted"
grep -qF "both.txt: no broadcast test in this log (its tests: all_gather_perf, all_reduce_perf, reduce_perf)" \
    "$tmp/err" || fail "log of two tests: $(cat "$tmp/err")"
cat "$data/synthetic_allreduce.txt" "$data/synthetic_allreduce.txt" >"$tmp/twice.txt"
"$bin" -t "$cfg" --set 'node_types[0].count=1' --fit launch_us --sweeps 1 \
    allreduce:"$tmp/twice.txt" >"$tmp/out" 2>"$tmp/err" ||
    fail "two runs of one test: $(cat "$tmp/err")"
grep -q 'twice.txt: nccl-tests allreduce, 40 rows' "$tmp/out" ||
    fail "two runs of one test: $(grep '^# run' "$tmp/out")"

# An OSU alltoall of 1, 2 and 4 bytes a peer (MPI_CHAR): calls of 1, 2
# and 4 elements, which hccn-perf times at the same sizes (8 ranks: 8, 16
# and 32 bytes in all): error 0.
"$perf" alltoall -t "$cfg" --set 'node_types[0].count=1' -d uint8 -b 8 \
    -e 32 -n 1 -w 0 --no-data >"$tmp/a2a" || fail "osu a2a: hccn-perf"
{
    printf '# OSU MPI All-to-All Personalized Exchange Latency Test v7.3\n'
    printf '# Datatype: MPI_CHAR.\n# Size       Avg Latency(us)\n'
    awk '!/^#/ && NF > 6 { printf "%d %s\n", $1 / 8, $6 }' "$tmp/a2a"
} >"$tmp/osu_a2a.txt"
[ "$(grep -c '^[124] ' "$tmp/osu_a2a.txt")" = 3 ] ||
    fail "osu a2a: rows not written: $(cat "$tmp/osu_a2a.txt")"
"$bin" -t "$cfg" --set 'node_types[0].count=1' --fit launch_us --sweeps 1 \
    alltoall:"$tmp/osu_a2a.txt" >"$tmp/out" 2>"$tmp/err" ||
    fail "osu a2a: exit $? ($(cat "$tmp/err"))"
grep -A 2 '^# before' "$tmp/out" | grep -q '(all runs) *0\.0%' ||
    fail "osu a2a: not 0 % before the fit: $(grep -A 3 '^# before' "$tmp/out")"

# Bad input: named.
"$bin" -t "$cfg" allreduce:"$data/synthetic_allreduce.txt" \
    >"$tmp/out" 2>"$tmp/err" && fail "ranks: accepted 8 ranks on 16 NPUs"
grep -q 'synthetic_allreduce.txt: 8 ranks, but .* has 16 NPUs' "$tmp/err" ||
    fail "ranks: $(cat "$tmp/err")"
"$bin" -t "$cfg" allreduce:"$cfg" >"$tmp/out" 2>"$tmp/err" &&
    fail "no rows: accepted"
grep -q 'hgx-a100.json: no result rows' "$tmp/err" ||
    fail "no rows: $(cat "$tmp/err")"
"$bin" -t "$cfg" allsum:"$data/osu_allreduce.txt" >"$tmp/out" 2>"$tmp/err"
[ $? -eq 2 ] || fail "unknown collective: not exit 2"
grep -q 'unknown collective "allsum"' "$tmp/err" ||
    fail "unknown collective: $(cat "$tmp/err")"
# Hostile rows: a time that is NaN, inf, negative or absurdly small, a
# size with a sign or beyond 64 bits: refused naming the file, the line
# and the value (exit 1), never fitted into nan% or inf%.
while IFS='|' read -r f want; do
    "$bin" -t "$cfg" --set 'node_types[0].count=1' allreduce:"$data/$f" \
        >"$tmp/out" 2>"$tmp/err"
    [ $? -eq 1 ] || fail "$f: not exit 1 ($(cat "$tmp/err"))"
    grep -qF "$f:$want" "$tmp/err" || fail "$f: $(cat "$tmp/err")"
done <<'CASES'
hostile_time_nan.txt|2: the time must be 0.001 to 1e9 us (got nan)
hostile_time_negative.txt|2: the time must be 0.001 to 1e9 us (got -25)
hostile_time_tiny.txt|2: the time must be 0.001 to 1e9 us (got 1e-300)
hostile_time_inf.txt|2: the time must be 0.001 to 1e9 us (got inf)
hostile_size_negative.txt|2: the size must be 0 to 2^48 bytes (got -8)
hostile_size_overflow.txt|3: the size must be 0 to 2^48 bytes (got 18446744073709551616)
osu_bandwidth.txt|2: an OSU bandwidth or message rate table
CASES
finish "hccn-calibrate: parameters recovered, formats read, errors named"
