#!/usr/bin/env bash
# Installs what hccn needs (Debian 12 packages), then configures and builds
# it out of tree. Used by run.sh, test.sh and package.sh; safe to run again.
#
#   ./scripts/setup.sh [TARGET...]   build only these CMake targets
#                                    (default: everything, tests included)
#
#   BUILD_DIR   where to build (default: build/ in the source tree)
#   BUILD_TYPE  CMake build type (default: Release)
#   HCCN_CMAKE_ARGS  extra arguments for cmake's configure step
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$src/build}
type=${BUILD_TYPE:-Release}

packages=(gcc make cmake pkg-config libhwloc-dev libjson-c-dev libcmocka-dev
          python3 python3-numpy openmpi-bin libopenmpi-dev python3-torch)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi

# shellcheck disable=SC2086
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE="$type" ${HCCN_CMAKE_ARGS:-} >/dev/null
targets=()
for t in "$@"; do targets+=(--target "$t"); done
cmake --build "$build" -j "$(nproc)" "${targets[@]}"
