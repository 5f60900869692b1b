# Sourced by the cli tests (tests/cli/test_*.sh): the environment ctest
# gives (HCCN_SOURCE_DIR, HCCN_BINARY_DIR), a scratch directory $tmp that
# is removed at exit, fail (say what failed and count it) and finish (the
# verdict: exit 1 after any failure, else print the given line).
set -u
: "${HCCN_SOURCE_DIR:?}" "${HCCN_BINARY_DIR:?}"
failures=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$failures failure(s)" >&2
        exit 1
    fi
    echo "$*"
}

# mpirun_sanitized ARGS...: sets the array mpirun to Open MPI's mpirun as
# root with more processes than cores, then ARGS, and the environment a
# sanitizer build needs (HCCN_TEST_SANITIZE). Under AddressSanitizer,
# LeakSanitizer reports Open MPI's own allocations (libmpi's, never freed
# at MPI_Finalize) when a process exits: the mpirun cases run without
# leak detection. Under ThreadSanitizer, Open MPI's own locks
# (MPI_Init_thread, its finalisation) are reported: tsan_openmpi.supp
# names them.
mpirun_sanitized() {
    mpirun=(mpirun --allow-run-as-root --oversubscribe "$@")
    if [ "${HCCN_TEST_SANITIZE:-}" = address ]; then
        mpirun+=(-x "ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0")
    elif [ "${HCCN_TEST_SANITIZE:-}" = thread ]; then
        local supp="$HCCN_SOURCE_DIR/tests/cli/tsan_openmpi.supp"
        mpirun+=(-x "TSAN_OPTIONS=${TSAN_OPTIONS:+$TSAN_OPTIONS }suppressions=$supp")
    fi
}
