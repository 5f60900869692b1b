#!/usr/bin/env bash
# Builds the Debian package hccn_VERSION_ARCH.deb: configures a build for
# the /usr prefix (library in /usr/lib/<multiarch>, Python package in
# /usr/lib/python3/dist-packages), builds it without the tests, and runs
# cpack -G DEB there. Prints the package's path; install it with
# `apt-get install ./hccn_VERSION_ARCH.deb` (or dpkg -i).
#
#   BUILD_DIR   where to build (default: build-deb/ in the source tree)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${BUILD_DIR:-$src/build-deb}
BUILD_DIR="$build" BUILD_TYPE=Release \
    HCCN_CMAKE_ARGS="-DCMAKE_INSTALL_PREFIX=/usr -DHCCN_TESTS=OFF ${HCCN_CMAKE_ARGS:-}" \
    "$src/scripts/setup.sh"
(cd "$build" && cpack -G DEB >/dev/null)
ls "$build"/hccn_*.deb
