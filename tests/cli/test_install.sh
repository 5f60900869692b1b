#!/usr/bin/env bash
# cmake --install into a temporary prefix, which is then moved: the README's
# example builds through pkg-config and through find_package(hccn) and runs
# from another directory (finding configs/default.json among the installed
# configs); /usr/bin/python3 imports the installed package, which loads the
# installed libhccn; the installed hccn-perf, hccn-topo and hccn-info find
# configs by name. Everything stays in a temporary directory.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
# shellcheck source=install_common.sh
. "$HCCN_SOURCE_DIR/tests/cli/install_common.sh"

cmake --install "$HCCN_BINARY_DIR" --prefix "$tmp/first" >"$tmp/install.log" ||
    { echo "FAIL: cmake --install: $(tail "$tmp/install.log")" >&2; exit 1; }
mv "$tmp/first" "$tmp/moved"
P=$tmp/moved
libdir=$(dirname "$(find "$P" -name libhccn.so.0 | head -1)")
[ -f "$libdir/libhccn.so.0" ] || { echo "FAIL: no libhccn.so.0 under $P" >&2; exit 1; }
for f in bin/hccn-perf bin/hccn-topo bin/hccn-info include/hccn/hccn.h \
         share/hccn/configs/hgx-h100.json share/hccn/configs/default.json \
         share/doc/hccn/README.md share/doc/hccn/topology.md; do
    [ -f "$P/$f" ] || fail "not installed: $f"
done
grep -q '^prefix=${pcfiledir}/' "$libdir/pkgconfig/hccn.pc" ||
    fail "hccn.pc: prefix is not relative to the .pc file"

# The README's example, through pkg-config (run with LD_LIBRARY_PATH) and
# through find_package (CMake's build rpath).
extract_example
build_pkgconfig pkgconfig "$libdir/pkgconfig" &&
    run_example pkgconfig LD_LIBRARY_PATH="$libdir"
build_cmake cmake "$P" && run_example cmake

# Python: the installed package (PYTHONPATH needed for this prefix only).
pydir=$(dirname "$(find "$P" -path '*dist-packages/hccn/__init__.py' | head -1)")
[ -f "$pydir/_installed.py" ] || fail "python: no hccn/_installed.py under $P"
check_python python "$P" PYTHONPATH="$(dirname "$pydir")"

# The installed tools find configs by name from any directory, with the
# figures of the source tree's file.
cd "$tmp/elsewhere" || exit 1
row() { awk '!/^#/ && NF { $NF = ""; print }'; }   # rows without the wall time
"$P/bin/hccn-perf" allreduce -t hgx-h100 -b 1M -e 4M -f 4 -n 1 -w 0 \
    >"$tmp/perf.out" 2>&1 || fail "hccn-perf -t hgx-h100: $(cat "$tmp/perf.out")"
"$HCCN_BINARY_DIR/hccn-perf" allreduce -t "$HCCN_SOURCE_DIR/configs/hgx-h100.json" \
    -b 1M -e 4M -f 4 -n 1 -w 0 >"$tmp/perf.ref" 2>&1
[ "$(row <"$tmp/perf.out" | wc -l)" = 2 ] ||
    fail "hccn-perf -t hgx-h100: want 2 rows: $(cat "$tmp/perf.out")"
[ "$(row <"$tmp/perf.out")" = "$(row <"$tmp/perf.ref")" ] ||
    fail "hccn-perf -t hgx-h100: rows differ from the source config's"
"$P/bin/hccn-perf" allreduce -t hgx-h100.json --set 'node_types[0].count=1' \
    -b 1M -e 1M -n 1 -w 0 >"$tmp/perf1.out" 2>&1 &&
    grep -q '^# 8 ranks on 1 node' "$tmp/perf1.out" ||
    fail "hccn-perf -t hgx-h100.json --set: $(cat "$tmp/perf1.out")"
"$P/bin/hccn-info" -t ascend-910b -c allreduce -s 1M >"$tmp/info.out" 2>&1 &&
    grep -q "^topology: $P/share/hccn/configs/ascend-910b.json (16 NPUs)" \
        "$tmp/info.out" || fail "hccn-info -t ascend-910b: $(cat "$tmp/info.out")"

# hccn-topo list: the installed directory, each config with its size and
# the first phrase of its description.
"$P/bin/hccn-topo" list >"$tmp/list.out" 2>&1 || fail "hccn-topo list: exit $?"
grep -qxF "$P/share/hccn/configs:" "$tmp/list.out" ||
    fail "hccn-topo list: no heading for $P/share/hccn/configs: $(cat "$tmp/list.out")"
n=$(grep -c '^  [a-z0-9-]' "$tmp/list.out")
want=$(find "$HCCN_SOURCE_DIR/configs" -name '*.json' | wc -l)
[ "$n" = "$want" ] || fail "hccn-topo list: $n configs, want $want"
grep -Eq '^  hgx-h100 +16 NPUs on 2 nodes +HGX H100 8-GPU servers \(DGX H100 class\)$' \
    "$tmp/list.out" || fail "hccn-topo list: no hgx-h100 line: $(cat "$tmp/list.out")"

# A name that is no config: the error says where it looked.
"$P/bin/hccn-topo" hgx-h200 >"$tmp/nf.out" 2>&1 && fail "hccn-topo hgx-h200: exit 0"
grep -qF "hgx-h200: no such file, and no topology named 'hgx-h200' in the config directories ($P/share/hccn/configs)" \
    "$tmp/nf.out" || fail "hccn-topo hgx-h200: $(cat "$tmp/nf.out")"

finish "install: moved prefix, pkg-config and find_package clients, python, tools: OK"
