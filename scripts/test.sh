#!/usr/bin/env bash
# Sets everything up and runs the whole test suite under ctest: first the
# optimised build, then (unless --no-sanitizers) the suite again under
# AddressSanitizer + UndefinedBehaviorSanitizer and under ThreadSanitizer,
# each in its own build directory, with HCCN_TEST_QUICK=1 so that the
# largest sweeps shrink to fit sanitizer speeds.
#
#   ./scripts/test.sh                  everything (what CI runs)
#   ./scripts/test.sh --no-sanitizers  the optimised build only
#   extra arguments after -- go to ctest (e.g. -- -R coll_)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sanitizers=1
ctest_args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --no-sanitizers) sanitizers=0 ;;
    --) shift; ctest_args=("$@"); break ;;
    *) echo "test.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

build=${BUILD_DIR:-$src/build}
HCCN_CMAKE_ARGS="-DHCCN_WERROR=ON ${HCCN_CMAKE_ARGS:-}" BUILD_DIR="$build" \
    "$src/scripts/setup.sh"
echo "== tests: optimised build ($build)"
ctest --test-dir "$build" --output-on-failure -j 2 "${ctest_args[@]}"

[ "$sanitizers" -eq 1 ] || exit 0
for san in address thread; do
    dir="$build-$san"
    echo "== tests: HCCN_SANITIZE=$san ($dir)"
    BUILD_DIR="$dir" BUILD_TYPE=RelWithDebInfo \
        HCCN_CMAKE_ARGS="-DHCCN_WERROR=ON -DHCCN_SANITIZE=$san" \
        "$src/scripts/setup.sh"
    # The Python binding loads libhccn.so into an unsanitised interpreter,
    # which the sanitizer runtimes do not allow; it runs in the first pass.
    # Under ThreadSanitizer the example is left out too: its host compute
    # uses OpenMP parallel regions, whose synchronisation inside the
    # (uninstrumented) libgomp TSan cannot see. The library itself uses no
    # OpenMP threads (only simd loops).
    # The install tests (cli_install, cli_deb) build unsanitised clients
    # against the library, and the docs check runs the Python examples:
    # they run in the first pass too; so do the torch backend's tests
    # (cli_torch: the same interpreter, with torch).
    skip="cli_python|cli_install|cli_deb|cli_docs|cli_torch"
    [ "$san" = thread ] && skip="$skip|cli_example_data_parallel"
    HCCN_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=1 \
        TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
        UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        ctest --test-dir "$dir" --output-on-failure -j 2 -E "$skip" \
        "${ctest_args[@]}"
done
