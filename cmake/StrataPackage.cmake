# strata as an installable library: `cmake --install` gives the public headers (include/strata/), the static
# libraries, the shared library libstrata.so (STRATA_BUILD_SHARED), a CMake package (find_package(strata) ->
# strata::strata, strata::strata_shared), pkg-config files (strata.pc static, strata-shared.pc) and the CLI.
# `cpack -G DEB` (from a portable build folder: `make package`) wraps the same install tree into a Debian package.
#
# strata::strata links the static libraries: a consumer gets every strata library and its third-party dependencies
# (found again by strataConfig.cmake through find_dependency). strata::strata_shared links libstrata.so.MAJOR.MINOR,
# one shared library holding the same objects, which exports the strata:: symbols only (cmake/libstrata.map) and
# needs nothing more at link time. Only include/strata/ is public; src/ stays private to the build.
include(CMakePackageConfigHelpers)

set(STRATA_EXPORTED_LIBS strata_core strata_ir strata_ops strata_graph strata_proto strata_io strata_onnx strata_tf
    strata_data strata_nn strata_optim strata_train strata_serve)
if(STRATA_WITH_GRPC)
  list(APPEND STRATA_EXPORTED_LIBS strata_grpc_proto)
endif()
if(STRATA_WITH_DNNL)
  list(APPEND STRATA_EXPORTED_LIBS strata_dnnl_lib)
endif()

# The one target users link: every strata library, the installed include folder.
add_library(strata_lib INTERFACE)
set_target_properties(strata_lib PROPERTIES EXPORT_NAME strata)
target_link_libraries(strata_lib INTERFACE strata_train strata_serve strata_data strata_onnx strata_nn strata_optim
                      strata_graph strata_io strata_core)
target_include_directories(strata_lib INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(strata_lib INTERFACE cxx_std_20)

# libstrata.so: every strata library's objects (compiled -fPIC, see the top CMakeLists.txt), linked once. SONAME
# libstrata.so.MAJOR.MINOR: before 1.0 a minor release may change the ABI (strataConfigVersion.cmake accepts the same
# minor version only, too). Calls between strata functions bind inside the library (-Bsymbolic-functions).
if(STRATA_BUILD_SHARED)
  set(STRATA_SHARED_PARTS strata_train strata_serve strata_tf strata_data strata_nn strata_optim strata_onnx strata_io
      strata_proto strata_graph strata_ops strata_ir strata_core)
  if(STRATA_WITH_GRPC)
    list(APPEND STRATA_SHARED_PARTS strata_grpc_proto)
  endif()
  set(STRATA_SHARED_OBJECTS "")
  foreach(lib ${STRATA_SHARED_PARTS})
    list(APPEND STRATA_SHARED_OBJECTS $<TARGET_OBJECTS:${lib}>)
  endforeach()
  add_library(strata_shared SHARED ${STRATA_SHARED_OBJECTS})
  set_target_properties(strata_shared PROPERTIES
    OUTPUT_NAME strata EXPORT_NAME strata_shared
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    LINK_DEPENDS ${PROJECT_SOURCE_DIR}/cmake/libstrata.map)
  # The parts' own link dependencies (oneDNN, protobuf, gRPC, zlib, libpng, OpenMP, MPI, ...): linking the static
  # archives again after their objects adds nothing from them, only their usage requirements.
  target_link_libraries(strata_shared PRIVATE ${STRATA_SHARED_PARTS})
  target_link_options(strata_shared PRIVATE -Wl,--version-script=${PROJECT_SOURCE_DIR}/cmake/libstrata.map
                      -Wl,-Bsymbolic-functions -Wl,--no-undefined)
  target_include_directories(strata_shared INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(strata_shared INTERFACE cxx_std_20)
  install(TARGETS strata_shared EXPORT strataTargets
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Unspecified)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/strata-shared.pc.in ${PROJECT_BINARY_DIR}/strata-shared.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/strata-shared.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

install(TARGETS ${STRATA_EXPORTED_LIBS} strata_lib EXPORT strataTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS strata RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/strata DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")
install(EXPORT strataTargets NAMESPACE strata:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/strataConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/strataConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/strataConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/strataConfig.cmake ${PROJECT_BINARY_DIR}/strataConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/strata)

# pkg-config: the static libraries in link order, then their system dependencies.
set(STRATA_PC_LIBS "")
foreach(lib strata_train strata_serve strata_tf strata_grpc_proto strata_data strata_nn strata_optim strata_onnx strata_io
        strata_proto strata_graph strata_ops strata_ir strata_core)
  if(TARGET ${lib})
    string(APPEND STRATA_PC_LIBS " -l${lib}")
  endif()
endforeach()
set(STRATA_PC_REQUIRES "protobuf zlib libpng libturbojpeg simdjson hdf5-serial ompi-cxx libssl")
if(STRATA_WITH_GRPC)
  string(APPEND STRATA_PC_REQUIRES " grpc++")
endif()
set(STRATA_PC_PRIVATE "-lonnx -lonnx_proto -lsnappy -fopenmp -lpthread")
if(STRATA_WITH_DNNL)
  string(APPEND STRATA_PC_PRIVATE " ${DNNL_LIBRARY}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/strata.pc.in ${PROJECT_BINARY_DIR}/strata.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/strata.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# cpack -G DEB: a development package of the install tree above.
set(CPACK_PACKAGE_NAME strata-dev)
set(CPACK_PACKAGE_VENDOR "strata")
set(CPACK_PACKAGE_CONTACT "strata developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "strata: data pipeline, graph executor, trainer and model server (C++)")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_GENERATOR DEB)
set(CPACK_DEBIAN_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libdnnl-dev, libonnx-dev, libprotobuf-dev, libgrpc++-dev, libsimdjson-dev, zlib1g-dev, libpng-dev, libturbojpeg0-dev, libgomp1, libhdf5-dev, libopenmpi-dev, libsnappy-dev")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# A package must run on other machines: cpack refuses a -march=native build (cmake/check_portable.cmake).
set(CPACK_STRATA_NATIVE ${STRATA_NATIVE})
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/check_portable.cmake)
include(CPack)
