#!/usr/bin/env bash
# Hostile but possible input to the tools (docs/topology.md, Limits):
# control characters in a topology's name and path are escaped, never sent
# to the terminal; a byte-order mark is skipped; every value at the end of
# its range gives finite times; a cluster beyond the limits is refused with
# the number and the limit; an arena the address-space limit refuses is a
# clean error, not a crash. Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR.
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
topo="$HCCN_BINARY_DIR/hccn-topo"
perf="$HCCN_BINARY_DIR/hccn-perf"
info="$HCCN_BINARY_DIR/hccn-info"
data="$HCCN_SOURCE_DIR/tests/data/topo_edge"

# run PROGRAM ARGS...: leaves $rc, $tmp/out and $tmp/err.
run() {
    "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
}

# no_control FILE: the file holds no control byte but line ends.
no_control() {
    if LC_ALL=C grep -q $'[\x01-\x09\x0b-\x1f\x7f]' "$1"; then
        fail "$label: control characters in $(basename "$1"): $(od -c "$1" | head -5)"
    fi
}

expect_rc() {
    [ "$rc" -eq "$1" ] || fail "$label: exit $rc, expected $1; stderr: $(cat "$tmp/err")"
}

expect_err() {
    grep -qF -- "$1" "$tmp/err" || fail "$label: stderr lacks '$1': $(cat "$tmp/err")"
}

# A byte-order mark before a valid document.
label=bom; run "$topo" "$data/bom_valid.json"
expect_rc 0
grep -qxF "name: bom" "$tmp/out" || fail "bom: $(cat "$tmp/out")"
grep -qxF "npus: 4" "$tmp/out" || fail "bom: no npus line"

# A name with an ANSI escape, a carriage return and a bell.
label=name; run "$topo" "$data/name_control_chars.json"
expect_rc 0
no_control "$tmp/out"
grep -qxF 'name: evil\x1b[31mRED\x1b[0m\x0d\x07end' "$tmp/out" ||
    fail "name: not escaped: $(head -1 "$tmp/out")"

# A path with an escape: every tool prints it escaped.
esc=$(printf '\033')
evil="$tmp/x${esc}[31my.json"
cp "$HCCN_SOURCE_DIR/configs/laptop-4.json" "$evil"
label=topo-path; run "$topo" "$evil"
expect_rc 0
no_control "$tmp/out"
grep -qF 'x\x1b[31my.json' "$tmp/out" || fail "topo-path: $(cat "$tmp/out")"
label=info-path; run "$info" -t "$evil" -c allreduce -s 1M
expect_rc 0
no_control "$tmp/out"
label=perf-path; run "$perf" allreduce -b 8 -e 8 -n 1 -w 0 -t "$evil" --no-data
expect_rc 0
no_control "$tmp/out"
no_control "$tmp/err"
printf '{"version": 2}' >"$tmp/bad${esc}[2J.json"
label=bad-path; run "$topo" "$tmp/bad${esc}[2J.json"
expect_rc 2
no_control "$tmp/err"
expect_err "version: must be 1 (got 2)"

# Every value at its floor or cap: accepted, and every time finite.
for mode in --no-data ""; do
    label="slowest $mode"
    # shellcheck disable=SC2086
    run "$perf" allreduce -b 8 -e 4K -n 1 -w 0 -t "$data/slowest.json" $mode
    expect_rc 0
    awk '!/^#/ && NF > 6 { if ($6 !~ /^[0-9.]+$/ || $10 !~ /^[0-9.]+$/) bad = 1; n++ }
         END { exit (bad || n == 0) }' "$tmp/out" ||
        fail "$label: a time is not a finite number: $(grep -v '^#' "$tmp/out")"
done

# Beyond the limits: refused, with the number and the limit.
/usr/bin/python3 - "$HCCN_SOURCE_DIR/configs/default.json" "$tmp" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d.pop("name", None)
for nodes, name in ((2049, "data"), (16385, "timing")):
    d["node_types"][0]["count"] = nodes
    json.dump(d, open("%s/%s.json" % (sys.argv[2], name), "w"))
d["node_types"][0]["count"] = 8
d["node_types"][0]["npu"]["arena_MiB"] = 1024
json.dump(d, open("%s/fat.json" % sys.argv[2], "w"))
EOF
label=data-limit; run "$perf" allreduce -b 8 -e 8 -n 1 -w 0 -t "$tmp/data.json"
expect_rc 2
expect_err "$tmp/data.json: 16392 NPUs: a cluster with data holds at most 16384"
label=timing-limit; run "$perf" allreduce -b 8 -e 8 -n 1 -w 0 -t "$tmp/timing.json" --no-data
expect_rc 2
expect_err "$tmp/timing.json: 131080 NPUs: timing-only runs take at most 131072"
label=info-limit; run "$info" -t "$tmp/timing.json" -c allreduce -s 1M
expect_rc 2
expect_err "$tmp/timing.json: 131080 NPUs: predictions take at most 131072"

# 64 NPUs of 1 GiB in a 4 GB address space: an arena cannot be mapped.
# (A sanitizer's runtime cannot start in so small a space: then skipped.)
if (ulimit -v 4000000 && "$topo" --help >/dev/null 2>&1); then
    label=ulimit
    (ulimit -v 4000000 && exec "$perf" allreduce -b 8 -e 8 -n 1 -w 0 \
        -t "$tmp/fat.json") >"$tmp/out" 2>"$tmp/err"
    rc=$?
    expect_rc 2
    expect_err "$tmp/fat.json: cannot map the 1073741824-byte arena of NPU "
    expect_err " of 64 ("
else
    echo "ulimit case skipped: the programs cannot start under ulimit -v"
fi

finish "input edges: all checks passed"
