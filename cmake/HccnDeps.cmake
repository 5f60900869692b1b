# Finds the four dependencies and gathers them into one interface target,
# hccn_deps. Each missing one stops the configure with the Debian package to
# install.
find_package(PkgConfig)
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "pkg-config not found: apt-get install -y pkg-config")
endif()

pkg_check_modules(HWLOC IMPORTED_TARGET hwloc)
if(NOT HWLOC_FOUND)
  message(FATAL_ERROR "hwloc not found: apt-get install -y libhwloc-dev")
endif()

pkg_check_modules(JSONC IMPORTED_TARGET json-c)
if(NOT JSONC_FOUND)
  message(FATAL_ERROR "json-c not found: apt-get install -y libjson-c-dev")
endif()

find_package(OpenMP)
if(NOT OpenMP_C_FOUND)
  message(FATAL_ERROR "OpenMP for C not found: use gcc (apt-get install -y gcc) or libomp-dev with clang")
endif()

set(THREADS_PREFER_PTHREAD_FLAG ON)
find_package(Threads REQUIRED)

add_library(hccn_deps INTERFACE)
target_link_libraries(hccn_deps INTERFACE
  PkgConfig::HWLOC PkgConfig::JSONC OpenMP::OpenMP_C Threads::Threads m
  ${CMAKE_DL_LIBS})

if(HCCN_TESTS)
  pkg_check_modules(CMOCKA IMPORTED_TARGET cmocka)
  if(NOT CMOCKA_FOUND)
    message(FATAL_ERROR "cmocka not found: apt-get install -y libcmocka-dev (or configure with -DHCCN_TESTS=OFF)")
  endif()
endif()

# Open MPI (Debian openmpi-bin, libopenmpi-dev): a multi-process cluster
# started by mpirun agrees on its rendezvous directory through MPI
# (runtime/proc_cfg.c, docs/processes.md). AUTO: when found.
set(HCCN_MPI AUTO CACHE STRING "Open MPI support: AUTO, ON or OFF")
set_property(CACHE HCCN_MPI PROPERTY STRINGS AUTO ON OFF)
set(HCCN_HAVE_MPI OFF)
if(NOT HCCN_MPI STREQUAL "OFF")
  find_package(MPI COMPONENTS C QUIET)
  if(MPI_C_FOUND)
    set(HCCN_HAVE_MPI ON)
    target_link_libraries(hccn_deps INTERFACE MPI::MPI_C)
  elseif(HCCN_MPI STREQUAL "ON")
    message(FATAL_ERROR "HCCN_MPI=ON but Open MPI was not found: "
            "apt-get install -y openmpi-bin libopenmpi-dev "
            "(or configure with -DHCCN_MPI=AUTO or OFF)")
  endif()
endif()
message(STATUS "hccn: Open MPI support (HCCN_MPI=${HCCN_MPI}): ${HCCN_HAVE_MPI}")
