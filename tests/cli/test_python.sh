#!/usr/bin/env bash
# The Python binding's tests (python/tests, unittest) against the built
# libhccn.so. Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# Prints "SKIPPED: python3-numpy not installed" and exits 0 when no python3
# with numpy is found (scripts/setup.sh installs python3-numpy).
set -u
: "${HCCN_SOURCE_DIR:?}" "${HCCN_BINARY_DIR:?}"

# Debian's numpy lives in /usr/bin/python3 (an interpreter earlier in PATH,
# a virtualenv or pyenv, may not see it).
py=/usr/bin/python3
if ! "$py" -c 'import numpy' >/dev/null 2>&1; then
    echo "SKIPPED: python3-numpy not installed"
    exit 0
fi

export HCCN_LIB="$HCCN_BINARY_DIR/libhccn.so"
if [ ! -f "$HCCN_LIB" ]; then
    echo "FAIL: $HCCN_LIB not built" >&2
    exit 1
fi
export PYTHONPATH="$HCCN_SOURCE_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
# A rank that waits for a failed peer gives up after this many seconds (the
# tests that provoke it pass a shorter timeout themselves).
export HCCN_TIMEOUT="${HCCN_TIMEOUT:-60}"
export MPLBACKEND=Agg
cd "$HCCN_SOURCE_DIR/python" || exit 1
exec "$py" -m unittest discover -s tests -t tests -v
