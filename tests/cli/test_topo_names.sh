#!/usr/bin/env bash
# Topologies by name from a build tree (device_sim/topo_find.c): from any
# directory, a name with or without .json, or a relative path that does not
# exist there, finds the source tree's configs/; an existing file wins; an
# absolute path is never looked up; a miss lists the directories searched;
# hccn-topo list shows them. The same lookup serves hccn-perf, hccn-info,
# hccn_cluster_create and Python. (tests/cli/test_install.sh checks the
# installed share/hccn/configs.)
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
bin=$HCCN_BINARY_DIR
src=$(cd "$HCCN_SOURCE_DIR" && pwd -P)
cd "$tmp" || exit 1


# source_of ARG: the "source:" line of hccn-topo ARG's summary.
source_of() {
    "$bin/hccn-topo" "$1" 2>&1 | sed -n 's/^source: //p'
}

for arg in hgx-h100 hgx-h100.json configs/hgx-h100.json; do
    got=$(source_of "$arg")
    [ "$got" = "$src/configs/hgx-h100.json" ] ||
        fail "hccn-topo $arg: source '$got', want $src/configs/hgx-h100.json"
done

# An existing file is that file, even when a config has its name.
sed 's/"name": "laptop-4"/"name": "local"/' "$src/configs/laptop-4.json" >hgx-h100.json
[ "$(source_of hgx-h100.json)" = hgx-h100.json ] ||
    fail "an existing ./hgx-h100.json is not the one loaded: $(source_of hgx-h100.json)"
"$bin/hccn-topo" hgx-h100.json | grep -qx 'name: local' ||
    fail "./hgx-h100.json: not the local file's topology"
[ "$(source_of hgx-h100)" = "$src/configs/hgx-h100.json" ] ||
    fail "the bare name hgx-h100 is not looked up among the configs"

# An absolute path is never looked up.
"$bin/hccn-topo" /nonexistent/hgx-h100.json >out 2>&1 && fail "absolute: exit 0"
grep -qx '/nonexistent/hgx-h100.json: cannot open: No such file or directory' out ||
    fail "absolute path: $(cat out)"

# A miss names what was looked for and where.
"$bin/hccn-topo" hgx-h200 >out 2>&1
rc=$?
[ "$rc" = 2 ] || fail "hccn-topo hgx-h200: exit $rc, want 2"
want="hgx-h200: no such file, and no topology named 'hgx-h200' in the config directories ($(dirname "$(cd "$bin" && pwd -P)")/share/hccn/configs, $src/configs); 'hccn-topo list' shows the known ones"
grep -qxF "$want" out || fail "miss: got '$(cat out)', want '$want'"
"$bin/hccn-perf" allreduce -t hgx-h200 -b 8 -e 8 >out 2>&1 && fail "hccn-perf -t hgx-h200: exit 0"
grep -qF "hccn-perf: hgx-h200: no such file, and no topology named 'hgx-h200'" out ||
    fail "hccn-perf miss: $(cat out)"

# hccn-topo list: the source tree's configs, one line each.
"$bin/hccn-topo" list >out 2>&1 || fail "hccn-topo list: exit $?"
grep -qxF "$src/configs:" out || fail "hccn-topo list: no $src/configs heading: $(cat out)"
n=$(grep -c '^  [a-z0-9-]' out)
want=$(find "$src/configs" -name '*.json' | wc -l)
[ "$n" = "$want" ] || fail "hccn-topo list: $n configs, want $want"
grep -Eq '^  laptop-4 +4 NPUs on 1 node +One small node of 4 NPUs behind one intra-node switch$' out ||
    fail "hccn-topo list: no laptop-4 line: $(cat out)"
grep -Eq '^  leafspine-pods +128 NPUs on 16 nodes +Sixteen 8-NPU servers .* \.\.\.$' out ||
    fail "hccn-topo list: long description not shortened: $(grep leafspine-pods out)"

# The other tools, and hccn_cluster_create through Python.
"$bin/hccn-perf" allreduce -t ring-8 -b 1K -e 1K -n 1 -w 0 >out 2>&1 &&
    grep -q '^# 8 ranks on 1 node' out || fail "hccn-perf -t ring-8: $(cat out)"
"$bin/hccn-info" -t laptop-4 -c allreduce -s 1K >out 2>&1 &&
    grep -qx "topology: $src/configs/laptop-4.json (4 NPUs)" out ||
    fail "hccn-info -t laptop-4: $(cat out)"
# (Python cannot load a sanitizer build's libhccn: that part is left out.)
if /usr/bin/python3 -c 'import numpy' 2>/dev/null &&
    ! grep -q '^HCCN_SANITIZE:STRING=.' "$bin/CMakeCache.txt" 2>/dev/null; then
    HCCN_LIB="$bin/libhccn.so" PYTHONPATH="$src/python" /usr/bin/python3 -c '
import hccn
with hccn.Cluster("ring-8") as cl:
    assert cl.size == 8, cl.size
with hccn.Cluster("leafspine-4x8.json") as cl:
    assert (cl.size, cl.nodes) == (32, 4), (cl.size, cl.nodes)
' >out 2>&1 || fail "python Cluster by name: $(cat out)"
fi

finish "topology names: OK"
