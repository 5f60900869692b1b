#!/usr/bin/env bash
# Every `return -1;` / `return NULL;` of the library either records its
# cause (hccn_sim_fail), passes a callee's recorded failure up, or is an
# ordinary answer with its reason written down (tests/cli/failure_paths.py).
# Needs HCCN_SOURCE_DIR (set by ctest).
set -u
: "${HCCN_SOURCE_DIR:?}"
/usr/bin/python3 "$HCCN_SOURCE_DIR/tests/cli/failure_paths.py" "$HCCN_SOURCE_DIR"
