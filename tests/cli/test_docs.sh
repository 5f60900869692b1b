#!/usr/bin/env bash
# The docs check: every runnable command of README.md and docs/*.md (a
# ```sh block right after <!-- docs-check -->, its "$ " lines) runs from
# the source tree against this build and exits 0 (tests/cli/docs_check.py).
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
set -u
: "${HCCN_SOURCE_DIR:?}" "${HCCN_BINARY_DIR:?}"
/usr/bin/python3 -c 'import numpy' 2>/dev/null ||
    { echo "SKIPPED: python3-numpy not installed"; exit 0; }
exec /usr/bin/python3 "$HCCN_SOURCE_DIR/tests/cli/docs_check.py" \
    "$HCCN_SOURCE_DIR" "$HCCN_BINARY_DIR"
