#!/usr/bin/env bash
# HCCN_TRACE=FILE traces any program that uses hccn, with no call of its
# own: a C program (examples/data_parallel.c), a Python one, and hccn-perf
# without --trace. Each file is Chrome trace JSON with the program's
# operations on every rank; hccn-perf's warm-up calls are marked
# "(warm-up)" and its own synchronising allreduces are not there. And
# HCCN_DEBUG=INFO reports the choice in timing-only runs too.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
cfg="$HCCN_SOURCE_DIR/configs"
export HCCN_TIMEOUT=120

# count FILE NAME: op slices named NAME (per rank lanes), printed.
count() {
    /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
print(sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") == "op"
          and e.get("name") == sys.argv[2]))
PY
}

# --- a C program (coll_sim_api checks one of its own too) -----------------
# (not under ThreadSanitizer: the example's OpenMP host compute is outside
# what it can see; scripts/test.sh leaves the example out there too)
if ldd "$HCCN_BINARY_DIR/libhccn.so" | grep -q 'libtsan'; then
    echo "C part skipped: libhccn.so is built with ThreadSanitizer"
else
HCCN_TRACE="$tmp/c.json" "$HCCN_BINARY_DIR/example_data_parallel" \
    >"$tmp/out" 2>&1 || fail "C: exit $?: $(tail -3 "$tmp/out")"
[ -s "$tmp/c.json" ] || fail "C: no trace written"
n=$(count "$tmp/c.json" allreduce)
[ "${n:-0}" -gt 0 ] || fail "C: no allreduce slices ($n)"
n=$(count "$tmp/c.json" compute)
[ "${n:-0}" -gt 0 ] || fail "C: no compute slices ($n)"
fi

# --- a Python program: 4 ranks, 3 allreduces each ------------------------
# (not with a sanitised library: the interpreter cannot load it)
if ldd "$HCCN_BINARY_DIR/libhccn.so" | grep -q 'libasan\|libtsan'; then
    echo "Python part skipped: libhccn.so is built with a sanitizer"
else
HCCN_TRACE="$tmp/py.json" HCCN_LIB="$HCCN_BINARY_DIR/libhccn.so" \
PYTHONPATH="$HCCN_SOURCE_DIR/python" /usr/bin/python3 - "$cfg/laptop-4.json" \
    >"$tmp/out" 2>&1 <<'PY' || fail "Python: $(tail -3 "$tmp/out")"
import sys
import numpy as np
import hccn
def fn():
    hccn.init()
    t = hccn.Tensor(np.ones(1024, dtype=np.float32))
    for _ in range(3):
        hccn.allreduce(t)
hccn.run(fn, topology=sys.argv[1])
PY
[ "$(count "$tmp/py.json" allreduce)" = 12 ] ||
    fail "Python: $(count "$tmp/py.json" allreduce) allreduce slices, expected 12"
fi

# --- hccn-perf without --trace: 2 sizes x 2 variants x (1 warm-up + 2) ---
HCCN_TRACE="$tmp/perf.json" "$HCCN_BINARY_DIR/hccn-perf" allreduce \
    -t "$cfg/laptop-4.json" -b 1K -e 2K -n 2 -w 1 >"$tmp/out" 2>&1 ||
    fail "hccn-perf: exit $?"
[ "$(count "$tmp/perf.json" allreduce)" = $((4 * 2 * 2 * 2)) ] ||
    fail "hccn-perf: $(count "$tmp/perf.json" allreduce) user allreduces, expected 32"
[ "$(count "$tmp/perf.json" "allreduce (warm-up)")" = $((4 * 2 * 2 * 1)) ] ||
    fail "hccn-perf: $(count "$tmp/perf.json" "allreduce (warm-up)") warm-up slices, expected 16"
# The tool's synchronising allreduces (1 element) are not user operations.
/usr/bin/python3 - "$tmp/perf.json" <<'PY' || fail "hccn-perf: a 4-byte allreduce is traced"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
sys.exit(any(e.get("cat") == "op" and e.get("args", {}).get("bytes") == 4
             for e in ev))
PY

# --- HCCN_DEBUG=INFO in a timing-only run --------------------------------
HCCN_DEBUG=INFO "$HCCN_BINARY_DIR/hccn-perf" allreduce -t "$cfg/default.json" \
    -b 1M -e 1M -n 1 -w 0 --no-data >"$tmp/out" 2>"$tmp/err" || fail "INFO: exit $?"
grep -q "^hccn INFO timing only: call [0-9]*: allreduce 1048576 B on 16 ranks: " \
    "$tmp/err" || fail "INFO: no choice line in a timing-only run: $(head -2 "$tmp/err")"

finish "HCCN_TRACE: all checks passed"
