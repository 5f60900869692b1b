#!/usr/bin/env bash
# Every `return -1;` / `return NULL;` of the library either records its
# cause (hccn_sim_fail), passes a callee's recorded failure up, or is an
# ordinary answer with its reason written down (tests/cli/failure_paths.py).
# Needs HCCN_SOURCE_DIR (set by ctest).
set -u
: "${HCCN_SOURCE_DIR:?}"
/usr/bin/python3 "$HCCN_SOURCE_DIR/tests/cli/failure_paths.py" "$HCCN_SOURCE_DIR"
rc=$?
[ $rc -eq 0 ] || { echo "FAIL: failure paths without a cause" >&2; exit 1; }
# The check itself finds a planted failure that records nothing, and
# accepts one that records and one that passes a callee's failure up.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/runtime" "$tmp/hierarchy" "$tmp/device_sim"
cat >"$tmp/runtime/x.c" <<'C'
static int quiet(int n)
{
    if (n < 0)
        return -1;
    return n;
}

static int loud(int n)
{
    if (n < 0) {
        hccn_sim_fail(HCCN_ERR_INVALID, "n is %d", n);
        return -1;
    }
    return n;
}

int passes(int n)
{
    int *p = hccn_sim_malloc(4);
    if (p == NULL)
        return -1;
    return loud(n) + quiet(n);
}
C
out=$(/usr/bin/python3 "$HCCN_SOURCE_DIR/tests/cli/failure_paths.py" "$tmp" --list)
[ $? -eq 1 ] || { echo "FAIL: the check missed a planted bare failure" >&2; exit 1; }
grep -q "^bare      runtime/x.c:4: quiet" <<<"$out" &&
    grep -q "^records   runtime/x.c:12: loud" <<<"$out" &&
    grep -q "^passes up runtime/x.c:21: passes: hccn_sim_malloc" <<<"$out" ||
    { echo "FAIL: the check misread the planted file: $out" >&2; exit 1; }
echo "failure paths: all checks passed"
