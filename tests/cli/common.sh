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
