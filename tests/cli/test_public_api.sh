#!/usr/bin/env bash
# The public API is what libhccn exports and all the programs use: every
# function of include/hccn/*.h carries HCCN_API and is exported, nothing
# else is (nm -D), tools/ include only public headers, and every symbol
# the Python binding calls is exported, and the library allocates only
# through device_sim/alloc.h (tests/cli/public_api_check.py).
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
set -u
: "${HCCN_SOURCE_DIR:?}" "${HCCN_BINARY_DIR:?}"
lib="$HCCN_BINARY_DIR/libhccn.so"
[ -f "$lib" ] || { echo "FAIL: $lib not built" >&2; exit 1; }
command -v nm >/dev/null || { echo "FAIL: nm not found (binutils)" >&2; exit 1; }
/usr/bin/python3 "$HCCN_SOURCE_DIR/tests/cli/public_api_check.py" \
    "$HCCN_SOURCE_DIR" "$lib" || { echo "FAIL: public API" >&2; exit 1; }
# The check itself catches a leak: a header without HCCN_API on a
# function, and a tool that includes an internal header.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/include/hccn" "$tmp/tools" "$tmp/python/hccn" "$tmp/runtime"
sed 's/^HCCN_API int hccn_rank(/int hccn_rank(/' \
    "$HCCN_SOURCE_DIR/include/hccn/hccn.h" >"$tmp/include/hccn/hccn.h"
cp "$HCCN_SOURCE_DIR"/include/hccn/hccn_coll.h "$HCCN_SOURCE_DIR"/include/hccn/hccn_sim.h \
    "$tmp/include/hccn/"
printf '#include "runtime/rt.h"\n' >"$tmp/tools/x.c"
printf '/* free(p) in a comment is fine */\nvoid f(void *p)\n{\n    free(p);\n}\n' \
    >"$tmp/runtime/y.c"
out=$(/usr/bin/python3 "$HCCN_SOURCE_DIR/tests/cli/public_api_check.py" "$tmp" "$lib")
[ $? -eq 1 ] || { echo "FAIL: the check missed planted problems" >&2; exit 1; }
grep -q "declares hccn_rank without HCCN_API" <<<"$out" ||
    { echo "FAIL: missing HCCN_API not found: $out" >&2; exit 1; }
grep -q 'tools/x.c:1: includes "runtime/rt.h"' <<<"$out" ||
    { echo "FAIL: internal include not found: $out" >&2; exit 1; }
grep -q 'runtime/y.c:4: calls free()' <<<"$out" ||
    { echo "FAIL: a plain free() in the library not found: $out" >&2; exit 1; }
echo "public API: all checks passed"
