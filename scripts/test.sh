#!/usr/bin/env bash
# Sets everything up and runs the whole test suite under ctest.
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export HCCN_CMAKE_ARGS="-DHCCN_WERROR=ON ${HCCN_CMAKE_ARGS:-}"
"$src/scripts/setup.sh"
build=${BUILD_DIR:-$src/build}
ctest --test-dir "$build" --output-on-failure -j 2 "$@"
