#!/usr/bin/env bash
# The torch.distributed backend's tests (python/torch_tests, unittest)
# against the built libhccn.so, under Debian's /usr/bin/python3. Needs
# HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest). Prints "SKIPPED: ..."
# and exits 0 when that interpreter has no numpy or no torch (scripts/setup.sh
# and CI install python3-numpy and python3-torch).
set -u
: "${HCCN_SOURCE_DIR:?}" "${HCCN_BINARY_DIR:?}"
py=/usr/bin/python3
if ! "$py" -c 'import numpy' >/dev/null 2>&1; then
    echo "SKIPPED: python3-numpy not installed"
    exit 0
fi
if ! "$py" -c 'import torch.distributed' >/dev/null 2>&1; then
    echo "SKIPPED: python3-torch not installed (apt-get install -y python3-torch)"
    exit 0
fi
export HCCN_LIB="$HCCN_BINARY_DIR/libhccn.so"
if [ ! -f "$HCCN_LIB" ]; then
    echo "FAIL: $HCCN_LIB not built" >&2
    exit 1
fi
export PYTHONPATH="$HCCN_SOURCE_DIR/python${PYTHONPATH:+:$PYTHONPATH}"
export HCCN_TIMEOUT="${HCCN_TIMEOUT:-60}"
# torch's own threads would compete with the simulated ranks for 2 cores.
export OMP_NUM_THREADS=1
cd "$HCCN_SOURCE_DIR/python/torch_tests" || exit 1
exec "$py" -m unittest discover -s . -t . -v
