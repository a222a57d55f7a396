# SPDX-License-Identifier: MIT
# The installable library (docs/plugins.md, "Installing"): `cmake --install build --prefix P`
#   P/include/attnbench/attn.h, simd/*.h, check/check.h    what a kernel author includes
#   P/lib/libattnkernels.a                                 attnbench::kernels_static (PIC)
#   P/lib/libattnkernels.so.<version> (soname .so.MAJOR.MINOR)   attnbench::kernels
#   P/lib/cmake/attnbench/                                 find_package(attnbench) + version
#   P/lib/pkgconfig/attnbench.pc                           pkg-config attnbench
#   P/bin/attnbench                                        the CLI (when ATTNBENCH_HARNESS)
#   P/bin/attnbench-mpi                                    context parallelism (when MPI is on)
#   P/share/attnbench/{configs,scripts}/                   sweep configs and result scripts
#   P/share/attnbench/baselines/external/                  the external baselines' runner
#                                                          (`bench --baselines`, docs/baselines.md)
# Included by the top-level CMakeLists.txt after every target exists (baselines/ adds the
# blas objects and OpenBLAS to attnkernels, so they must be known first).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Objects that join libattnkernels.a from elsewhere (baselines/: the blas kernel) must be
# position-independent like the rest of it.
if(TARGET attnblas)
  set_target_properties(attnblas PROPERTIES POSITION_INDEPENDENT_CODE ON)
endif()

# The shared library holds every object of the (PIC) static one, so both are the same code
# and the glob/baselines machinery needs no second list of sources.
file(WRITE ${PROJECT_BINARY_DIR}/gen/attnkernels_shared.c
     "/* libattnkernels.so: all its code comes from libattnkernels.a (whole archive). */\n"
     "typedef int attn_shared_library_unit;\n")
add_library(attnkernels_shared SHARED ${PROJECT_BINARY_DIR}/gen/attnkernels_shared.c)
target_link_libraries(attnkernels_shared PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,attnkernels>")
target_include_directories(attnkernels_shared
                           PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/kernels>
                                  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/attnbench>)
set_target_properties(attnkernels_shared PROPERTIES
  OUTPUT_NAME attnkernels EXPORT_NAME kernels
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR})
add_library(attnbench::kernels ALIAS attnkernels_shared)
add_library(attnbench::kernels_static ALIAS attnkernels)

set(ATTN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attnbench)
install(TARGETS attnkernels attnkernels_shared EXPORT attnbenchTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${PROJECT_SOURCE_DIR}/kernels/attn.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnbench)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/kernels/simd/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnbench/simd
        FILES_MATCHING PATTERN "*.h")
install(FILES ${PROJECT_SOURCE_DIR}/kernels/check/check.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnbench/check)

if(TARGET attnbench)
  install(TARGETS attnbench EXPORT attnbenchTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  set(ATTN_HAVE_CLI 1)
else()
  set(ATTN_HAVE_CLI 0)
endif()
# Not exported: a program, not a library; it links the MPI it was built with (docs/mpi.md).
if(TARGET attnbench-mpi)
  install(TARGETS attnbench-mpi RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${CMAKE_INSTALL_DATADIR}/attnbench/configs)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/scripts/ DESTINATION ${CMAKE_INSTALL_DATADIR}/attnbench/scripts
        USE_SOURCE_PERMISSIONS)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/baselines/external/
        DESTINATION ${CMAKE_INSTALL_DATADIR}/attnbench/baselines/external USE_SOURCE_PERMISSIONS
        PATTERN "__pycache__" EXCLUDE)

# With the blas baseline the static library's link interface names the dynamic loader and
# Threads (the kernel opens OpenBLAS at run time: nothing links it); the package config
# finds Threads for that.
if(TARGET attnblas)
  set(ATTN_WITH_BLAS 1)
  set(ATTN_PC_LIBS_PRIVATE " -lpthread")
  foreach(lib IN LISTS CMAKE_DL_LIBS)
    string(APPEND ATTN_PC_LIBS_PRIVATE " -l${lib}")
  endforeach()
else()
  set(ATTN_WITH_BLAS 0)
  set(ATTN_PC_LIBS_PRIVATE "")
endif()
install(EXPORT attnbenchTargets NAMESPACE attnbench:: DESTINATION ${ATTN_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/attnbenchConfig.cmake.in
  ${PROJECT_BINARY_DIR}/gen/attnbenchConfig.cmake INSTALL_DESTINATION ${ATTN_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_DATADIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/gen/attnbenchConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/gen/attnbenchConfig.cmake
              ${PROJECT_BINARY_DIR}/gen/attnbenchConfigVersion.cmake DESTINATION ${ATTN_CMAKE_DIR})
# Relocatable: the prefix is found from the .pc file's own place (--prefix at install time).
file(RELATIVE_PATH ATTN_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
configure_file(${PROJECT_SOURCE_DIR}/cmake/attnbench.pc.in ${PROJECT_BINARY_DIR}/gen/attnbench.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/gen/attnbench.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
