#!/usr/bin/env bash
# hccn-perf: the table's columns parse and agree with each other (algbw =
# size / time, busbw = algbw x the factor of docs/perf.md), every check
# passes, --json and --csv hold the table's values, --set changes the named
# field only, --sweep prints one block per value, --no-data prints the
# same times as a run with data and folds onto node 0 where it may (the
# same times as --no-fold), errors exit 2.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
bin="$HCCN_BINARY_DIR/hccn-perf"
cfg="$HCCN_SOURCE_DIR/configs"
export HCCN_TIMEOUT=60


# run ARGS...: runs hccn-perf, leaves $rc, $tmp/out and $tmp/err.
run() {
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

[ -x "$bin" ] || { echo "FAIL: $bin not built" >&2; exit 1; }

# --- every collective, both variants, on 4 ranks -------------------------
label=all
run all -t "$cfg/laptop-4.json" -b 64K -e 1M -f 4 -n 1 -w 0 \
    --json "$tmp/all.json" --csv "$tmp/all.csv"
[ "$rc" -eq 0 ] || fail "all: exit $rc: $(cat "$tmp/err")"
# Per collective: rows, 14 fields, algbw = size/time, busbw = algbw x factor
# (n = 4: allreduce 2(n-1)/n, reduce_scatter/allgather/alltoall (n-1)/n,
# broadcast/reduce 1), #wrong 0 (N/A only for alltoall in place).
awk -v n=4 '
    function close_enough(got, want, tol) {
        return (got - want <= tol && want - got <= tol)
    }
    /^# hccn-perf / { coll = $3; next }
    /^#/ || NF == 0 { next }
    {
        if (NF != 14) { print "bad field count " NF ": " $0; bad++; next }
        f = 1
        if (coll == "allreduce") f = 2 * (n - 1) / n
        else if (coll == "reduce_scatter" || coll == "allgather" ||
                 coll == "alltoall") f = (n - 1) / n
        rows[coll]++
        for (v = 0; v < 2; v++) {
            t = $(6 + 4 * v); a = $(7 + 4 * v); b = $(8 + 4 * v); w = $(9 + 4 * v)
            if (t == "N/A") {
                if (coll != "alltoall" || v != 1) { print "N/A in " coll; bad++ }
                continue
            }
            if (!close_enough(a, $1 / t / 1e3, 0.01 + 0.01 * a)) {
                print coll ": algbw " a " != size/time " $1 / t / 1e3; bad++
            }
            if (!close_enough(b, a * f, 0.006 + 0.005 * f)) {
                print coll ": busbw " b " != " f " x algbw " a; bad++
            }
            if (w != "0") { print coll ": #wrong " w; bad++ }
        }
    }
    END {
        split("allreduce reduce_scatter allgather broadcast reduce alltoall", cs, " ")
        for (i = 1; i <= 6; i++)
            if (rows[cs[i]] != 3) { print cs[i] ": " rows[cs[i]] + 0 " rows, expected 3"; bad++ }
        exit bad > 0
    }' "$tmp/out" >"$tmp/awk" || fail "all: table: $(cat "$tmp/awk")"
grep -q "^# Out of bounds values : 0 OK" "$tmp/out" || fail "all: no OK line"

# --json and --csv hold the table's values: 6 collectives x 3 sizes x 2
# variants, less alltoall in place = 33 records.
/usr/bin/python3 - "$tmp/all.json" "$tmp/all.csv" "$tmp/out" >"$tmp/py" 2>&1 <<'PY' || fail "json: $(cat "$tmp/py")"
import csv, json, sys
doc = json.load(open(sys.argv[1]))
recs = doc["records"]
assert len(recs) == 33, len(recs)
rows = list(csv.DictReader(open(sys.argv[2])))
assert len(rows) == 33, len(rows)
table, coll = {}, None
for line in open(sys.argv[3]):
    f = line.split()
    if line.startswith("# hccn-perf "):
        coll = f[2]
    elif f and not line.startswith("#"):
        for v in (0, 1):
            if f[5 + 4 * v] != "N/A":
                table[(coll, int(f[0]), v)] = [float(x) for x in f[5 + 4 * v:8 + 4 * v]]
for r, c in zip(recs, rows):
    key = (r["collective"], r["size"], int(r["inplace"]))
    t, a, b = table.pop(key)
    for got, want in ((r["time_us"], t), (r["algbw_GBps"], a), (r["busbw_GBps"], b)):
        assert abs(round(got, 2) - want) <= 0.011, (key, got, want)
    assert r["wrong"] == 0 and r["config"].endswith("laptop-4.json"), r
    # What ran, not what was asked for (nothing: "auto").
    assert r["requested"] == "auto" and r["nranks"] == 4, r
    assert r["algorithm"] not in ("", "auto") and c["algorithm"] == r["algorithm"], (r, c)
    assert abs(float(c["time_us"]) - r["time_us"]) <= 1e-9 * r["time_us"], (c, r)
    assert c["collective"] == r["collective"] and int(c["size"]) == r["size"]
assert not table, table
PY

# --- in place only, hccl format ------------------------------------------
label=inplace
run allgather -t "$cfg/laptop-4.json" -b 4K -e 4K -n 1 -w 1 --inplace
[ "$rc" -eq 0 ] || fail "inplace: exit $rc"
grep -q "in-place" "$tmp/out" && ! grep -q "out-of-place" "$tmp/out" ||
    fail "inplace: wrong header"
[ "$(grep -v '^#' "$tmp/out" | awk '{print NF}')" = 10 ] || fail "inplace: not 10 fields"
label=hccl
run allreduce -t "$cfg/laptop-4.json" -b 1K -e 4K -n 1 --format hccl
[ "$rc" -eq 0 ] || fail "hccl: exit $rc"
grep -q '^data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:$' \
    "$tmp/out" || fail "hccl: no header"
[ "$(grep -c ' success$' "$tmp/out")" -eq 3 ] || fail "hccl: expected 3 success rows"

# --- --set and --sweep ---------------------------------------------------
# On two single-NPU nodes every byte crosses the NICs, so the time is a
# constant plus bytes / NIC bandwidth: with bandwidths 1, 2 and 4 GB/s,
# T(1) - T(2) = 2 (T(2) - T(4)) exactly.
label=sweep
run allreduce -t "$cfg/tcp-10gbe.json" -b 1M -e 1M -n 1 -w 0 --inplace \
    --sweep 'node_types[0].nics.bw_GBps=1,2,4' --json "$tmp/sweep.json"
[ "$rc" -eq 0 ] || fail "sweep: exit $rc: $(cat "$tmp/err")"
[ "$(grep -c '^# sweep node_types\[0\].nics.bw_GBps=' "$tmp/out")" -eq 3 ] ||
    fail "sweep: expected 3 blocks"
[ "$(grep -v '^#' "$tmp/out" | awk '{print $1}' | tr '\n' ' ')" = "1 2 4 " ] ||
    fail "sweep: leading column is not 1 2 4"
/usr/bin/python3 - "$tmp/sweep.json" >"$tmp/py" 2>&1 <<'PY' || fail "sweep: $(cat "$tmp/py")"
import json, sys
t = {r["sweep_value"]: r["time_us"] for r in json.load(open(sys.argv[1]))["records"]}
d1, d2 = t["1"] - t["2"], t["2"] - t["4"]
assert d1 > 0 and abs(d1 - 2 * d2) <= 1e-9 * d1, t
PY
# Latency is additive: equal steps of network.lat_us give equal steps of
# time; setting a field to the value it has changes nothing.
label=set
run allreduce -t "$cfg/tcp-10gbe.json" -b 8 -e 8 -n 1 -w 0 --inplace \
    --sweep 'network.lat_us=1,3,5' --json "$tmp/lat.json"
/usr/bin/python3 - "$tmp/lat.json" >"$tmp/py" 2>&1 <<'PY' || fail "lat: $(cat "$tmp/py")"
import json, sys
t = [r["time_us"] for r in json.load(open(sys.argv[1]))["records"]]
assert t[1] > t[0] and abs((t[1] - t[0]) - (t[2] - t[1])) <= 1e-9 * t[2], t
PY
run allreduce -t "$cfg/default.json" -b 64K -e 64K -n 1 -w 0
grep -v '^#' "$tmp/out" | awk '{$NF=""; print}' >"$tmp/plain"
run allreduce -t "$cfg/default.json" -b 64K -e 64K -n 1 -w 0 \
    --set network.lat_us=1.0 --set 'node_types[0].nics.bw_GBps=25'
grep -v '^#' "$tmp/out" | awk '{$NF=""; print}' >"$tmp/same"
cmp -s "$tmp/plain" "$tmp/same" || fail "set: same values changed the result"
run allreduce -t "$cfg/default.json" -b 64K -e 64K -n 1 -w 0 --set network.lat_us=2
grep -v '^#' "$tmp/out" | awk '{$NF=""; print}' >"$tmp/other"
cmp -s "$tmp/plain" "$tmp/other" && fail "set: network.lat_us=2 changed nothing"

# --- --no-data: the same simulated times, bit for bit ----------------------
label=nodata
nodata_same() {  # nodata_same NAME ARGS...: times equal with and without data
    local name=$1
    shift
    run "$@" --json "$tmp/$name-data.json"
    [ "$rc" -eq 0 ] || fail "$name: exit $rc: $(cat "$tmp/err")"
    run "$@" --no-data --json "$tmp/$name-nodata.json"
    [ "$rc" -eq 0 ] || fail "$name --no-data: exit $rc: $(cat "$tmp/err")"
    grep -q "timing only" "$tmp/out" || fail "$name --no-data: no 'timing only' line"
    /usr/bin/python3 - "$tmp/$name-data.json" "$tmp/$name-nodata.json" >"$tmp/py" 2>&1 <<'PY' ||
import json, sys
a, b = (json.load(open(f))["records"] for f in sys.argv[1:3])
key = lambda r: (r["collective"], r["size"], r["inplace"])
assert [key(r) for r in a] == [key(r) for r in b], "different records"
for x, y in zip(a, b):
    for f in ("time_us", "algbw_GBps", "busbw_GBps", "algorithm"):
        assert x[f] == y[f], (key(x), f, x[f], y[f])
print(len(a), "records")
PY
        fail "$name: $(cat "$tmp/py")"
}
nodata_same all all -t "$cfg/default.json" -b 64K -e 4M -f 8 -n 2 -w 1
nodata_same x4 allreduce -t "$cfg/default.json" --set 'node_types[0].count=4' \
    -b 1M -e 1M -n 2 -w 1
nodata_same ring reduce_scatter -t "$cfg/ring-8.json" -b 1M -e 1M -n 1 -w 2 --algo ring
# the tree across nodes (three nodes: chains and trees, small chunks)
nodata_same tree3 allreduce -t "$cfg/default.json" --set 'node_types[0].count=3' \
    -b 8 -e 512K -f 64 -n 1 -w 1 --algo tree

# --- folding: 512 ranks fold onto node 0, --no-fold does not; same times ---
label=fold
fold_args=(allreduce -t "$cfg/default.json" --set 'node_types[0].count=64'
           -b 1M -e 1M -n 2 -w 1 --no-data)
# fold_same WHAT ARGS...: the runs of ARGS fold onto node 0 (all of them)
# and give the times of the same runs with --no-fold.
fold_same() {
    local what=$1
    shift
    run "$@" --json "$tmp/fold.json"
    [ "$rc" -eq 0 ] || fail "$what: exit $rc: $(cat "$tmp/err")"
    grep -Eq "^# Folded               : ([0-9]+) of \1 runs$" "$tmp/out" ||
        fail "$what: $(grep Folded "$tmp/out")"
    run "$@" --no-fold --json "$tmp/nofold.json"
    [ "$rc" -eq 0 ] || fail "$what --no-fold: exit $rc: $(cat "$tmp/err")"
    grep -q "^# Folded               : 0 of [0-9]* runs; not: not asked to$" \
        "$tmp/out" || fail "$what --no-fold: $(grep Folded "$tmp/out")"
    /usr/bin/python3 - "$tmp/fold.json" "$tmp/nofold.json" >"$tmp/py" 2>&1 <<'PY' ||
import json, sys
a, b = (json.load(open(f))["records"] for f in sys.argv[1:3])
assert len(a) == len(b) > 0, (len(a), len(b))
for x, y in zip(a, b):
    assert x["folded"] is True and y["folded"] is False, (x["folded"], y["folded"])
    assert x["time_us"] == y["time_us"], (x["size"], x["time_us"], y["time_us"])
print(len(a), "records")
PY
        fail "$what: $(cat "$tmp/py")"
}
fold_same "512 ranks" "${fold_args[@]}"
# The same under MPI's preset, whose hosts take each message in turn
# (docs/timing.md, Software): alltoall and allreduce, folded and not.
label=fold-mpi
for coll in alltoall allreduce; do
    fold_same "$coll" "$coll" -t "$cfg/default.json" \
        --set 'node_types[0].count=8' --set stack=mpi -b 4K -e 128K -f 32 \
        -n 2 -w 1 --no-data
done
nodata_same mpi alltoall -t "$cfg/default.json" --set stack=mpi -b 64 -e 64K \
    -f 32 -n 2 -w 1

# --- nccl-tests habits -----------------------------------------------------
# rows FILE: the data rows of a table, "size time algbw busbw #wrong" of the
# out-of-place half.
rows() { grep -v '^#' "$1" | awk 'NF { print $1, $6, $7, $8, $9 }'; }
label=aliases
run allreduce -t "$cfg/laptop-4.json" -b 64K -e 256K -f 4 -n 1 -w 0
rows "$tmp/out" >"$tmp/a1"
for alias in all_reduce all_reduce_perf; do
    run "$alias" -t "$cfg/laptop-4.json" -b 64K -e 256K -f 4 -n 1 -w 0
    rows "$tmp/out" >"$tmp/a2"
    cmp -s "$tmp/a1" "$tmp/a2" || fail "alias $alias: a different table"
done
# sendrecv on laptop-4 (50 GB/s links through a switch, 1 us): every rank
# sends S bytes to the next one at once, so a call takes 1 us + S / 50 GB/s;
# busbw = algbw (nccl-tests: factor 1). scatter and gather: busbw = algbw x
# (n-1)/n; every result checked (#wrong 0), out of place only.
label=sendrecv
run sendrecv -t "$cfg/laptop-4.json" -b 1M -e 4M -f 4 -n 2 -w 1
[ "$rc" -eq 0 ] || fail "sendrecv: exit $rc: $(cat "$tmp/err")"
rows "$tmp/out" | awk '{
    want = 1 + $1 / 50e3
    if ($2 - want > 0.006 || want - $2 > 0.006) { print "time " $2 " != " want; bad++ }
    if ($4 != $3) { print "busbw " $4 " != algbw " $3; bad++ }
    if ($5 != "0") { print "#wrong " $5; bad++ }
    n++
} END { if (n != 2) { print n " rows"; bad++ } exit bad > 0 }' >"$tmp/awk" ||
    fail "sendrecv: $(cat "$tmp/awk")"
for c in scatter gather; do
    run "$c" -t "$cfg/laptop-4.json" -b 64K -e 1M -f 4 -n 1 -w 0 -r 1
    [ "$rc" -eq 0 ] || fail "$c: exit $rc: $(cat "$tmp/err")"
    rows "$tmp/out" | awk '{
        if ($4 - $3 * 0.75 > 0.006 || $3 * 0.75 - $4 > 0.006) { print "busbw " $4 " != 3/4 x " $3; bad++ }
        if ($5 != "0") { print "#wrong " $5; bad++ }
        n++
    } END { if (n != 3) { print n " rows"; bad++ } exit bad > 0 }' >"$tmp/awk" ||
        fail "$c: $(cat "$tmp/awk")"
    grep -v '^#' "$tmp/out" | awk 'NF && $10 != "N/A" { exit 1 }' ||
        fail "$c: an in-place column"
done
# -a, as nccl-tests: the ranks' own loop times, 0 rank 0's, 1 the mean,
# 2 the min, 3 the max. A ring broadcast from rank 0 on ring-8: the root is
# done first (min = rank 0's), the last rank of the chain last (max = the
# default span, latest start to latest end), the mean in between. -t N -g M
# must make the ranks (8 = 8 x 1 = 2 x 4).
label=average
for a in 0 1 2 3 none; do
    opt=(-a "$a"); [ "$a" = none ] && opt=()
    run broadcast -t "$cfg/ring-8.json" -t 2 -g 4 -b 1M -e 1M -n 2 -w 1 \
        --algo ring "${opt[@]}"
    [ "$rc" -eq 0 ] || fail "-a $a: exit $rc: $(cat "$tmp/err")"
    rows "$tmp/out" | awk '{ print $2 }' >"$tmp/avg$a"
done
cmp -s "$tmp/avg0" "$tmp/avg2" || fail "-a 0 (rank 0) != -a 2 (min)"
cmp -s "$tmp/avg3" "$tmp/avgnone" || fail "-a 3 (max) != the span"
awk -v lo="$(cat "$tmp/avg2")" -v hi="$(cat "$tmp/avg3")" \
    '{ if (!(lo < $1 && $1 < hi)) exit 1 }' "$tmp/avg1" ||
    fail "-a: mean $(cat "$tmp/avg1") not between min $(cat "$tmp/avg2") and max $(cat "$tmp/avg3")"
# -g G under a software model: one thread drives G GPUs, so an 8-byte
# allreduce takes G x host_us (nccl-2.2x: 8 x 4.6 = 36.80 us), whether
# the file has a "software" object (pcie-8gpu) or a stack only (hgx-a100);
# without a model (ring-8) -g changes nothing.
label=gpus
for c in hgx-a100 pcie-8gpu; do
    run allreduce -t "$cfg/$c.json" --set 'node_types[0].count=1' -g 8 \
        -b 8 -e 8 -n 1 -w 0 --no-data
    [ "$rc" -eq 0 ] || fail "-g 8 on $c: exit $rc: $(cat "$tmp/err")"
    rows "$tmp/out" | awk '$2 != "36.80" { exit 1 } { n++ } END { exit n != 1 }' ||
        fail "-g 8 on $c: $(rows "$tmp/out")"
done
# Two nodes, one process per node driving its 8 GPUs (mpirun -np 2 ...
# -g 8): 16 NPUs, -g 8 divides them.
run allreduce -t "$cfg/hgx-a100.json" -g 8 -b 8 -e 8 -n 1 -w 0 --no-data
[ "$rc" -eq 0 ] || fail "-g 8 on two nodes: exit $rc: $(cat "$tmp/err")"
rows "$tmp/out" | awk '$2 != "36.80" { exit 1 } { n++ } END { exit n != 1 }' ||
    fail "-g 8 on two nodes: $(rows "$tmp/out")"
run allreduce -t "$cfg/ring-8.json" -b 8 -e 8 -n 1 -w 0 --no-data
rows "$tmp/out" >"$tmp/g1"
run allreduce -t "$cfg/ring-8.json" -g 8 -b 8 -e 8 -n 1 -w 0 --no-data
rows "$tmp/out" | cmp -s - "$tmp/g1" ||
    fail "-g 8 on ring-8 (no model) changed the time"
# hypercube (nccl-tests'): an allgather in log2(n) exchanges, step k moving
# 2^k blocks of B = size/n bytes: time = log2(n) x 1 us + (n-1) B / 50 GB/s
# on laptop-4; algbw = (n-1)/n x size / time and busbw = algbw (factor 1).
label=hypercube
run hypercube -t "$cfg/laptop-4.json" -b 1M -e 4M -f 4 -n 2 -w 1
[ "$rc" -eq 0 ] || fail "hypercube: exit $rc: $(cat "$tmp/err")"
grep -v '^#' "$tmp/out" | awk 'NF {
    want = 2 + 3 * ($1 / 4) / 50e3
    if ($6 - want > 0.006 || want - $6 > 0.006) { print "time " $6 " != " want; bad++ }
    alg = 0.75 * $1 / $6 / 1e3
    if ($7 - alg > 0.01 || alg - $7 > 0.01) { print "algbw " $7 " != " alg; bad++ }
    if ($8 != $7 || $9 != "0" || $13 != "0") { print "busbw/#wrong: " $0; bad++ }
    n++
} END { if (n != 2) { print n " rows"; bad++ } exit bad > 0 }' >"$tmp/awk" ||
    fail "hypercube: $(cat "$tmp/awk")"
# -m: m calls per iteration in one group, time per call; the same as one
# call per iteration, with data and without.
label=agg
run allreduce -t "$cfg/laptop-4.json" -b 1M -e 1M -n 2 -w 1
rows "$tmp/out" | awk '{ print $2 }' >"$tmp/m1"
run allreduce -t "$cfg/laptop-4.json" -b 1M -e 1M -n 2 -w 1 -m 3
rows "$tmp/out" >"$tmp/m3rows"
awk '{ print $2 }' "$tmp/m3rows" >"$tmp/m3"
cmp -s "$tmp/m1" "$tmp/m3" || fail "-m 3: time $(cat "$tmp/m3") != -m 1's $(cat "$tmp/m1")"
awk '$5 != "0" { exit 1 }' "$tmp/m3rows" || fail "-m 3: wrong results"
run allreduce -t "$cfg/laptop-4.json" -b 1M -e 1M -n 2 -w 1 -m 3 --no-data
rows "$tmp/out" | awk '{ print $2 }' >"$tmp/m3n"
cmp -s "$tmp/m1" "$tmp/m3n" || fail "-m 3 --no-data: time $(cat "$tmp/m3n")"
# -d all, -o all: a table per dtype (and per operator for reductions),
# each checked; broadcast does not reduce, so one per dtype.
label=all-types
run allreduce -t "$cfg/laptop-4.json" -b 1K -e 1K -n 1 -w 0 -d all -o all \
    --json "$tmp/types.json"
[ "$rc" -eq 0 ] || fail "-d all -o all: exit $rc: $(cat "$tmp/err")"
[ "$(grep -c '^# hccn-perf allreduce' "$tmp/out")" -eq 60 ] ||
    fail "-d all -o all: $(grep -c '^# hccn-perf allreduce' "$tmp/out") tables, expected 12 x 5"
/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["records"]
pairs = {(x["type"], x["redop"]) for x in r}
assert len(pairs) == 60 and len(r) == 120, (len(pairs), len(r))
assert all(x["wrong"] in (0, None) for x in r), [x for x in r if x["wrong"]]
assert {x["redop"] for x in r} == {"sum", "prod", "max", "min", "avg"}' \
    "$tmp/types.json" || fail "-d all -o all: records"
run broadcast -t "$cfg/laptop-4.json" -b 1K -e 1K -n 1 -w 0 -d all -o all
[ "$(grep -c '^# hccn-perf broadcast' "$tmp/out")" -eq 12 ] ||
    fail "broadcast -d all -o all: $(grep -c '^# hccn-perf broadcast' "$tmp/out") tables, expected 12"
# -z 0: the timed calls posted as futures (more than hccn-perf keeps in
# flight: 40), waited for at the end; a communicator's operations run in
# call order, so the times are -z 1's, and every result is checked.
label=nonblocking
for z in 0 1; do
    run all -t "$cfg/laptop-4.json" -b 64K -e 1M -f 4 -n 40 -w 1 -z $z
    [ "$rc" -eq 0 ] || fail "-z $z: exit $rc: $(cat "$tmp/err")"
    grep -v '^#' "$tmp/out" | awk 'NF { print $1, $6, $9, $10, $13 }' >"$tmp/z$z"
done
cmp -s "$tmp/z0" "$tmp/z1" || fail "-z 0 and -z 1 differ: $(diff "$tmp/z0" "$tmp/z1" | head -3)"
awk '$3 != "0" || ($5 != "0" && $5 != "N/A") { exit 1 }' "$tmp/z0" || fail "-z 0: wrong results"
run allreduce -t "$cfg/laptop-4.json" -t 2 -g 2 -b 1K -e 1K -n 1 -z 1 -p 1 -G 5 -C 0
[ "$rc" -eq 0 ] || fail "-t 2 -g 2 -z -p -G -C: exit $rc: $(cat "$tmp/err")"
grep -q "^# -G 5: a simulation has no CUDA graphs; ignored" "$tmp/out" ||
    fail "-G 5: not said to be ignored"
[ "$(rows "$tmp/out" | wc -l)" -eq 1 ] || fail "-G 5: not one row"
run allreduce -t "$cfg/laptop-4.json" -b 1K -e 1K -n 1 -C 1
[ "$rc" -eq 0 ] && [ "$(rows "$tmp/out" | wc -l)" -eq 1 ] || fail "-C 1: exit $rc"
# --algo forces the algorithm, and the records say what ran.
run allreduce -t "$cfg/laptop-4.json" -b 1M -e 1M -n 1 --algo ring --json "$tmp/algo.json"
/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["records"]
assert r and all(x["algorithm"] == "ring" and x["requested"] == "ring" for x in r), r'     "$tmp/algo.json" || fail "--algo ring: records do not say ring"

# --- errors: exit 2 with one clear line ----------------------------------
expect_error() {  # expect_error TEXT ARGS...: exit 2, stderr contains TEXT
    local want=$1
    shift
    run "$@"
    [ "$rc" -eq 2 ] || fail "'$*': exit $rc, expected 2"
    grep -qF -- "$want" "$tmp/err" || fail "'$*': stderr '$(cat "$tmp/err")' lacks '$want'"
}
label=errors
expect_error "nodes: unknown key" allreduce -t "$cfg/laptop-4.json" --set nodes.count=2
expect_error "node_types[4]: index out of range" allreduce -t "$cfg/laptop-4.json" \
    --set 'node_types[4].count=2'
expect_error "node_types[0].npu.speed: unknown key" allreduce -t "$cfg/laptop-4.json" \
    --set 'node_types[0].npu.speed=2'
expect_error "network.bogus: unknown key" allreduce -t "$cfg/default.json" \
    --sweep 'network.bogus=1,2'
expect_error "node_types[0].count: must be an integer" allreduce \
    -t "$cfg/default.json" --sweep 'node_types[0].count=1,2.5'
expect_error "does not implement alltoall" alltoall -t "$cfg/default.json" \
    --no-data --algo ring
expect_error "add --no-data" allreduce -t "$cfg/default.json" --no-fold
expect_error "unknown collective" allgatherv
expect_error "expected PATH=VALUE" allreduce -t "$cfg/default.json" --set network.lat_us
expect_error "bad value" allreduce -n 0
expect_error "bad value '2' for option -c" allreduce -c 2
expect_error "bad value '4' for option -a" allreduce -a 4
expect_error "bad value '0' for option -m" allreduce -m 0
expect_error "hypercube needs a power-of-two number of ranks" hypercube \
    -t "$cfg/laptop-4.json" --set 'node_types[0].npu.count=3'
expect_error "bad value 'x' for option --format" allreduce --format x
expect_error "options -g 1 x -t 3 make 3 ranks" allreduce -t "$cfg/laptop-4.json" -t 3
expect_error "option -a needs each rank's time" allreduce -a 1 --no-data
expect_error "--no-data times collectives only" sendrecv -t "$cfg/laptop-4.json" --no-data
[ -s "$tmp/out" ] && fail "errors: unexpected stdout"

finish "hccn-perf: all checks passed"
