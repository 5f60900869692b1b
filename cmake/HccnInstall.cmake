# Installs the library, the public headers, hccn.pc and a CMake package so
# that both pkg-config and find_package(hccn) work.
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

configure_file(${PROJECT_SOURCE_DIR}/cmake/hccn.pc.in
               ${PROJECT_BINARY_DIR}/hccn.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hccn.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
