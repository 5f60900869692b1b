#!/usr/bin/env bash
# The Debian package: cpack -G DEB on this build makes hccn_VERSION_ARCH.deb
# with the library, headers, pkg-config and CMake files, tools, configs,
# docs and the Python package, and its dependencies declared. In CI as root
# (CI=true) it is installed with dpkg -i, used, and removed again; anywhere
# else it is unpacked with dpkg -x into a temporary directory. Either way
# the README's example is built against it (pkg-config and find_package)
# and run, and /usr/bin/python3 imports its Python package.
# Needs HCCN_SOURCE_DIR and HCCN_BINARY_DIR (set by ctest).
# shellcheck source=common.sh
. "${HCCN_SOURCE_DIR:?}/tests/cli/common.sh"
installed=0
cleanup() {
    [ "$installed" = 1 ] && dpkg -r hccn >/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

# shellcheck source=install_common.sh
. "$HCCN_SOURCE_DIR/tests/cli/install_common.sh"

command -v dpkg-deb >/dev/null || { echo "SKIPPED: no dpkg-deb (not Debian)"; exit 0; }
cpack -G DEB -B "$tmp/pkg" --config "$HCCN_BINARY_DIR/CPackConfig.cmake" \
    >"$tmp/cpack.log" 2>&1 || { echo "FAIL: cpack: $(tail "$tmp/cpack.log")" >&2; exit 1; }
version=$(sed -n 's/^project(hccn VERSION \([0-9.]*\).*/\1/p' "$HCCN_SOURCE_DIR/CMakeLists.txt")
deb="$tmp/pkg/hccn_${version}_$(dpkg --print-architecture).deb"
[ -f "$deb" ] || { echo "FAIL: no $deb: $(ls "$tmp/pkg")" >&2; exit 1; }

# Its fields and files.
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = hccn ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version)"
for d in libhwloc15 libjson-c5 libgomp1; do
    field Depends | grep -qw "$d" || fail "Depends lacks $d: $(field Depends)"
done
field Recommends | grep -qw python3-numpy || fail "Recommends lacks python3-numpy"
dpkg-deb -c "$deb" | awk '{ print $6 }' >"$tmp/files"
for f in '/usr/bin/hccn-perf$' '/usr/bin/hccn-topo$' '/usr/bin/hccn-info$' \
         '/usr/include/hccn/hccn.h$' '/usr/lib/.*libhccn\.so\.0$' \
         '/usr/lib/.*pkgconfig/hccn\.pc$' '/usr/lib/.*cmake/hccn/hccnConfig\.cmake$' \
         '/usr/share/hccn/configs/hgx-h100\.json$' '/usr/share/doc/hccn/README\.md$' \
         '/usr/lib/python3/dist-packages/hccn/__init__\.py$' \
         '/usr/lib/python3/dist-packages/hccn/_installed\.py$'; do
    grep -q "$f" "$tmp/files" || fail "the package lacks $f"
done

extract_example
if [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ]; then
    dpkg -i "$deb" >"$tmp/dpkg.log" 2>&1 ||
        { echo "FAIL: dpkg -i: $(cat "$tmp/dpkg.log")" >&2; exit 1; }
    installed=1
    build_pkgconfig deb-pkgconfig "" && run_example deb-pkgconfig
    build_cmake deb-cmake "" && run_example deb-cmake
    check_python deb-python /usr
    how="dpkg -i"
else
    dpkg-deb -x "$deb" "$tmp/root"
    P=$tmp/root/usr
    libdir=$(dirname "$(find "$P" -name libhccn.so.0 | head -1)")
    build_pkgconfig deb-pkgconfig "$libdir/pkgconfig" &&
        run_example deb-pkgconfig LD_LIBRARY_PATH="$libdir"
    build_cmake deb-cmake "$P" && run_example deb-cmake
    check_python deb-python "$P" PYTHONPATH="$P/lib/python3/dist-packages"
    how="dpkg -x"
fi

finish "deb: $(basename "$deb") ($how): README example and python: OK"
