# Installs the library, the public headers, hccn.pc and a CMake package so
# that both pkg-config and find_package(hccn) work; the tools, the configs,
# the docs and the Python package. Every installed file finds the others by
# relative paths, so an install prefix can be moved (docs/install.md).
include(CMakePackageConfigHelpers)

install(TARGETS hccn hccn_static EXPORT hccnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/hccn
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS hccn_deps EXPORT hccnTargets)
install(EXPORT hccnTargets NAMESPACE hccn::
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hccn)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hccnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hccnConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hccn)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hccnConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hccnConfig.cmake
              ${PROJECT_BINARY_DIR}/hccnConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/hccn)

# hccn.pc: the prefix is relative to the .pc file's own directory.
file(RELATIVE_PATH HCCN_PC_TO_PREFIX
     /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" HCCN_PC_TO_PREFIX "${HCCN_PC_TO_PREFIX}")
set(HCCN_PC_DL "")
foreach(l ${CMAKE_DL_LIBS})
  string(APPEND HCCN_PC_DL " -l${l}")
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/cmake/hccn.pc.in
               ${PROJECT_BINARY_DIR}/hccn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hccn.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# Configs by name (device_sim/topo_find.c): share/hccn/configs relative to
# the library and to the programs; the source tree's configs/ from a build.
set(HCCN_CONFIGDIR ${CMAKE_INSTALL_DATADIR}/hccn/configs)
file(RELATIVE_PATH HCCN_LIB_TO_CONFIGS /prefix/${CMAKE_INSTALL_LIBDIR}
     /prefix/${HCCN_CONFIGDIR})
file(RELATIVE_PATH HCCN_BIN_TO_CONFIGS /prefix/${CMAKE_INSTALL_BINDIR}
     /prefix/${HCCN_CONFIGDIR})
set_property(SOURCE ${PROJECT_SOURCE_DIR}/device_sim/topo_find.c APPEND
  PROPERTY COMPILE_DEFINITIONS
  HCCN_LIB_TO_CONFIGS="${HCCN_LIB_TO_CONFIGS}"
  HCCN_BIN_TO_CONFIGS="${HCCN_BIN_TO_CONFIGS}"
  HCCN_BUILD_TREE="${PROJECT_BINARY_DIR}"
  HCCN_SOURCE_TREE="${PROJECT_SOURCE_DIR}")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/
        DESTINATION ${HCCN_CONFIGDIR} FILES_MATCHING PATTERN "*.json")
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_SOURCE_DIR}/README.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})

# The Python package, where Debian's /usr/bin/python3 looks for the prefix:
# lib/python3/dist-packages under /usr, lib/python3.X/dist-packages under
# any other prefix (searched for /usr/local). The choice is made at install
# time, from the prefix given then. _installed.py tells the package where
# libhccn is, relative to itself (both default paths are 4 levels deep).
execute_process(COMMAND /usr/bin/python3 -c
  "import sys; print('%d.%d' % sys.version_info[:2])"
  OUTPUT_VARIABLE HCCN_PY_VERSION OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_QUIET)
if(NOT HCCN_PY_VERSION)
  set(HCCN_PY_VERSION 3)
endif()
set(HCCN_INSTALL_PYTHONDIR "" CACHE STRING
    "Where to install the Python package, relative to the prefix (default: lib/python3/dist-packages for /usr, else lib/python${HCCN_PY_VERSION}/dist-packages)")
set(hccn_py_to_lib ../../../../${CMAKE_INSTALL_LIBDIR})
if(HCCN_INSTALL_PYTHONDIR)
  file(RELATIVE_PATH hccn_py_to_lib /prefix/${HCCN_INSTALL_PYTHONDIR}/hccn
       /prefix/${CMAKE_INSTALL_LIBDIR})
endif()
file(WRITE ${PROJECT_BINARY_DIR}/_installed.py
  "\"\"\"Written by the install: where libhccn is, from this directory.\"\"\"\n"
  "LIBHCCN = \"${hccn_py_to_lib}/libhccn.so.0\"\n")
install(CODE "
  set(pydir \"${HCCN_INSTALL_PYTHONDIR}\")
  if(NOT pydir AND CMAKE_INSTALL_PREFIX STREQUAL \"/usr\")
    set(pydir lib/python3/dist-packages)
  elseif(NOT pydir)
    set(pydir lib/python${HCCN_PY_VERSION}/dist-packages)
  endif()
  file(INSTALL \"${PROJECT_SOURCE_DIR}/python/hccn\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/\${pydir}\"
       FILES_MATCHING PATTERN \"*.py\" PATTERN __pycache__ EXCLUDE)
  file(INSTALL \"${PROJECT_BINARY_DIR}/_installed.py\"
       DESTINATION \"\${CMAKE_INSTALL_PREFIX}/\${pydir}/hccn\")")
