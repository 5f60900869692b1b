# The Debian package: `cpack -G DEB` in a build directory (or
# scripts/package.sh, which configures a build for the /usr prefix first)
# writes hccn_VERSION_ARCH.deb with everything `cmake --install` installs.
# Dependencies are declared by hand (the Debian 12 names of what libhccn
# links), so building the package needs no dpkg-shlibdeps.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hccn)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "hccn developers <hccn@invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "collective communication on a simulated NPU cluster")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "hccn runs a whole NPU cluster on one computer: every NPU a thread with its own device memory, links timed from a JSON topology. Programs call allreduce, allgather, alltoall, send/recv ... and get the real result plus the simulated time. This package has the library, its headers, pkg-config and CMake files, the tools (hccn-perf, hccn-info, hccn-topo), the topology configs, the docs and the Python binding.")
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6, libhwloc15, libjson-c5, libgomp1")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "python3, python3-numpy, pkg-config, libhwloc-dev, libjson-c-dev")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Install with DESTDIR so that the install step sees the /usr prefix (the
# Python package's directory depends on it: cmake/HccnInstall.cmake).
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES OFF)
# The dynamic loader's cache learns of libhccn.so.0 when dpkg runs ldconfig.
file(WRITE ${PROJECT_BINARY_DIR}/deb/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/deb/triggers)
include(CPack)
