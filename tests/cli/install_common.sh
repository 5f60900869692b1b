# Helpers of test_install.sh and test_deb.sh (sourced): build the README's
# example client against an installed hccn, through pkg-config and through
# find_package(hccn), run it from another directory and check what it
# prints; import the installed Python package and check an allreduce
# against numpy. Callers set $tmp (a scratch directory) and define fail().

# The README's C example: the first ```c block of README.md.
extract_example() {
    awk '/^```c$/ { f = 1; next } /^```$/ { if (f) exit } f' \
        "$HCCN_SOURCE_DIR/README.md" >"$tmp/example.c"
    grep -q 'hccn_cluster_create' "$tmp/example.c" ||
        fail "README.md: no C example with hccn_cluster_create"
}

# The simulated time of one 4 KiB fp32 allreduce on 16 ranks of
# default.json, as hccn-perf prints it (us, two decimals): the value every
# rank of the example must report.
expected_us() {
    "$HCCN_BINARY_DIR/hccn-perf" allreduce -t \
        "$HCCN_SOURCE_DIR/configs/default.json" -b 4096 -e 4096 -n 1 -w 0 |
        awk '!/^#/ && NF { print $6; exit }'
}

# check_example LABEL FILE: 16 ranks each printed the sum 1+...+16 = 136
# and the simulated time of expected_us.
check_example() {
    local label=$1 out=$2 want n
    want=$(expected_us)
    n=$(grep -c "^rank [0-9]*: 136.0 (expected 136.0), [0-9.]* us simulated$" \
        "$out")
    [ "$n" = 16 ] || fail "$label: want 16 lines with 136.0, got $n: $(cat "$out")"
    n=$(awk -v w="$want" '/^rank / { if (sprintf("%.2f", $6) != w) bad++ }
                          END { print bad + 0 }' "$out")
    [ "$n" = 0 ] || fail "$label: $n ranks' times differ from hccn-perf's $want us: $(cat "$out")"
    for r in $(seq 0 15); do
        grep -q "^rank $r: " "$out" || fail "$label: rank $r printed nothing"
    done
}

# build_pkgconfig LABEL PCDIR: compiles the example with pkg-config's flags
# for the hccn.pc in PCDIR (empty: the system's) into $tmp/LABEL.
build_pkgconfig() {
    local label=$1 pcdir=$2 flags
    flags=$(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs hccn) ||
        { fail "$label: pkg-config --cflags --libs hccn failed"; return 1; }
    cc -Wall -Wextra -Werror -o "$tmp/$label" "$tmp/example.c" $flags ||
        { fail "$label: cc $flags failed"; return 1; }
}

# build_cmake LABEL PREFIX: builds the example with find_package(hccn)
# (CMAKE_PREFIX_PATH=PREFIX; empty: the system's) into $tmp/LABEL.
build_cmake() {
    local label=$1 prefix=$2 dir="$tmp/cmake-$1"
    mkdir -p "$dir/src"
    cp "$tmp/example.c" "$dir/src/"
    cat >"$dir/src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(readme_example C)
find_package(hccn 0.1 REQUIRED)
add_executable(example example.c)
target_link_libraries(example PRIVATE hccn::hccn)
EOF
    if ! cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release \
            ${prefix:+-DCMAKE_PREFIX_PATH="$prefix"} >"$dir/log" 2>&1 ||
       ! cmake --build "$dir/build" >>"$dir/log" 2>&1; then
        fail "$label: find_package(hccn) build failed: $(tail -20 "$dir/log")"
        return 1
    fi
    cp "$dir/build/example" "$tmp/$label"
}

# run_example LABEL [ENV...]: runs $tmp/LABEL from an empty directory (the
# topology is found by name) and checks its output.
run_example() {
    local label=$1
    shift
    mkdir -p "$tmp/elsewhere"
    (cd "$tmp/elsewhere" && env "$@" "$tmp/$label") >"$tmp/$label.out" \
        2>"$tmp/$label.err" ||
        fail "$label: exit $?: $(cat "$tmp/$label.err")"
    check_example "$label" "$tmp/$label.out"
}

# check_python LABEL PREFIX [ENV...]: /usr/bin/python3 imports hccn from
# under PREFIX, loads PREFIX's libhccn, and a 4-rank allreduce on the
# config named laptop-4 equals numpy's sum.
check_python() {
    local label=$1 prefix=$2
    shift 2
    /usr/bin/python3 -c 'import numpy' 2>/dev/null ||
        { echo "$label: python3-numpy not installed: Python not checked"; return 0; }
    mkdir -p "$tmp/elsewhere"
    (cd "$tmp/elsewhere" && env -u HCCN_LIB "$@" /usr/bin/python3 - "$prefix") \
        >"$tmp/$label.py.out" 2>&1 <<'EOF' ||
import os, sys
import numpy as np
import hccn
from hccn import _lib
prefix = os.path.realpath(sys.argv[1])
for what, path in (("package", hccn.__file__), ("library", _lib.lib().path)):
    if not os.path.realpath(path).startswith(prefix + os.sep):
        sys.exit("%s loaded from %s, not from %s" % (what, path, prefix))
def main():
    hccn.init()
    t = hccn.Tensor(np.arange(8, dtype=np.float32) * (hccn.get_rank() + 1))
    hccn.allreduce(t)
    return t.cpu().numpy()
out = hccn.run(main, topology="laptop-4")
ref = np.arange(8, dtype=np.float32) * (1 + 2 + 3 + 4)
if len(out) != 4 or any(not np.array_equal(o, ref) for o in out):
    sys.exit("allreduce: %r, want %r on each of 4 ranks" % (out, ref))
print("python ok: 4 ranks", ref.tolist())
EOF
    fail "$label: python: $(cat "$tmp/$label.py.out")"
    grep -q '^python ok' "$tmp/$label.py.out" ||
        fail "$label: python printed no result: $(cat "$tmp/$label.py.out")"
}
