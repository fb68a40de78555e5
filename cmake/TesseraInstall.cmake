# `cmake --install build [--prefix P]`: what goes where (README, "Install").
#   P/lib/libtessera.so.0.1.0, .so.0, .so      the shared library (tessera_shared)
#   P/lib/libtessera_attention.so               the attention cost model's libtorch module (dlopen'ed)
#   P/include/tessera/*.h                       the public C and C++ headers
#   P/bin/tessera                               the command-line tool
#   P/<TESSERA_PYTHON_INSTALL_DIR>/tessera/     the Python package
#   P/lib/cmake/Tessera/                        find_package(Tessera): Tessera::tessera
#   P/lib/pkgconfig/tessera.pc                  pkg-config --cflags --libs tessera
# (lib is CMAKE_INSTALL_LIBDIR: lib/x86_64-linux-gnu when the prefix is /usr.)
include(CMakePackageConfigHelpers)

# The Python package's directory, relative to the prefix (or absolute). The
# default is on the sys.path of Debian's python3 for the prefixes /usr/local
# (the default) and /usr; any other prefix needs PYTHONPATH=P/<this>.
set(TESSERA_PYTHON_INSTALL_DIR "lib/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/dist-packages"
    CACHE STRING "Where cmake --install puts the Python package tessera (relative to the prefix, or absolute)")

# Installed programs keep the link directories outside the system's (LLVM's
# /usr/lib/llvm-14/lib) in their run path, never the build tree's.
set_target_properties(tessera_shared tessera tessera_python tessera_attention PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS tessera_shared EXPORT TesseraTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development)
install(FILES include/tessera/tessera.h include/tessera/runtime.h include/tessera/tensor.h include/tessera/dtype.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tessera COMPONENT development)
install(TARGETS tessera RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# Beside libtessera.so, where cost/attention_module.cpp looks (the install libdir, also relative to bin/).
install(TARGETS tessera_attention LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime)
install(TARGETS tessera_python LIBRARY DESTINATION ${TESSERA_PYTHON_INSTALL_DIR}/tessera COMPONENT python)
install(FILES python/tessera/__init__.py python/tessera/__init__.pyi python/tessera/py.typed
  DESTINATION ${TESSERA_PYTHON_INSTALL_DIR}/tessera COMPONENT python)

# The CMake package: TesseraConfig.cmake (cmake/TesseraConfig.cmake.in) with
# the exported target, and the version file. Before 1.0 a minor release may
# change the API, so a request for 0.1 accepts 0.1.x only.
set(TESSERA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Tessera)
install(EXPORT TesseraTargets NAMESPACE Tessera:: DESTINATION ${TESSERA_CMAKE_DIR} COMPONENT development)
configure_package_config_file(cmake/TesseraConfig.cmake.in ${PROJECT_BINARY_DIR}/TesseraConfig.cmake
  INSTALL_DESTINATION ${TESSERA_CMAKE_DIR})
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(TESSERA_COMPATIBILITY SameMinorVersion)
else()
  set(TESSERA_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
  COMPATIBILITY ${TESSERA_COMPATIBILITY})
install(FILES ${PROJECT_BINARY_DIR}/TesseraConfig.cmake ${PROJECT_BINARY_DIR}/TesseraConfigVersion.cmake
  DESTINATION ${TESSERA_CMAKE_DIR} COMPONENT development)

# pkg-config, with paths relative to the file so the installed tree can move.
file(RELATIVE_PATH TESSERA_PC_TO_PREFIX /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)  # "../.."
string(REGEX REPLACE "/$" "" TESSERA_PC_TO_PREFIX "${TESSERA_PC_TO_PREFIX}")
configure_file(cmake/tessera.pc.in ${PROJECT_BINARY_DIR}/tessera.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/tessera.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT development)
