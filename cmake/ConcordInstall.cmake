# Installation: `cmake --install build --prefix P` lays out
#   P/include/concord/*.h                       public headers (+ the generated version.h)
#   P/<libdir>/libconcord{,_engine,_kvstore}.so.<version> with SONAME .so.<major>.<minor>
#   P/<libdir>/cmake/Concord/                   ConcordConfig.cmake, ConcordConfigVersion.cmake,
#                                               ConcordTargets.cmake (Concord::concord, ::engine,
#                                               ::kvstore)
#   P/<libdir>/pkgconfig/concord.pc
#   P/bin/concord-*                             the tools and the concord-run launcher
#   P/${CONCORD_PYTHON_INSTALL_DIR}/concord/    the Python package with its _core module
# Every installed binary finds the libraries through an $ORIGIN-relative RUNPATH, so the tree
# works wherever it is put (a prefix under the build tree, dpkg -x, /usr).
# Components: runtime (libraries, tools), dev (headers, CMake and pkg-config files, the .so
# links), python.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CONCORD_PYTHON_INSTALL_DIR "lib/python3/dist-packages" CACHE STRING
    "Where `cmake --install` puts the concord Python package, relative to the prefix (Debian's layout)")

set(concord_libraries concord concord_engine concord_kvstore)
set(concord_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Concord)

# $ORIGIN-relative RUNPATH from an installed directory (relative to the prefix) to the
# library directory.
function(concord_origin_rpath out_var from_dir)
  file(RELATIVE_PATH rel "/${from_dir}" "/${CMAKE_INSTALL_LIBDIR}")
  string(REGEX REPLACE "/$" "" rel "${rel}")
  if(rel STREQUAL "")
    set(${out_var} "$ORIGIN" PARENT_SCOPE)
  else()
    set(${out_var} "$ORIGIN/${rel}" PARENT_SCOPE)
  endif()
endfunction()

# --- libraries ---------------------------------------------------------------------------
add_library(Concord::engine ALIAS concord_engine)
add_library(Concord::kvstore ALIAS concord_kvstore)
set_target_properties(concord_engine PROPERTIES EXPORT_NAME engine)
set_target_properties(concord_kvstore PROPERTIES EXPORT_NAME kvstore)
target_include_directories(concord INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
if(CONCORD_SHARED_LIBS)
  # The SONAME carries major.minor: before 1.0 a minor release may change the ABI.
  # DEFINE_SYMBOL "": no -D<target>_EXPORTS, so the objects compile exactly as in a static
  # build (every symbol is visible by default; nothing uses that macro).
  set_target_properties(${concord_libraries} PROPERTIES
    VERSION ${PROJECT_VERSION}
    SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
    DEFINE_SYMBOL ""
    INSTALL_RPATH "$ORIGIN")

  install(TARGETS ${concord_libraries} EXPORT ConcordTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/concord DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    COMPONENT dev FILES_MATCHING PATTERN "*.h")
  install(FILES ${PROJECT_BINARY_DIR}/include/concord/version.h
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/concord COMPONENT dev)
  install(EXPORT ConcordTargets NAMESPACE Concord:: DESTINATION ${concord_cmake_dir} COMPONENT dev)

  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ConcordConfig.cmake.in
    ${PROJECT_BINARY_DIR}/cmake/ConcordConfig.cmake INSTALL_DESTINATION ${concord_cmake_dir})
  # 0.x: only the same minor version is compatible (the SONAME says the same).
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/ConcordConfigVersion.cmake
    VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/cmake/ConcordConfig.cmake
                ${PROJECT_BINARY_DIR}/cmake/ConcordConfigVersion.cmake
    DESTINATION ${concord_cmake_dir} COMPONENT dev)

  file(RELATIVE_PATH CONCORD_PC_PREFIX_FROM_PCDIR "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
  string(REGEX REPLACE "/$" "" CONCORD_PC_PREFIX_FROM_PCDIR "${CONCORD_PC_PREFIX_FROM_PCDIR}")
  configure_file(${PROJECT_SOURCE_DIR}/cmake/concord.pc.in ${PROJECT_BINARY_DIR}/cmake/concord.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/cmake/concord.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
else()
  message(STATUS "CONCORD_SHARED_LIBS=OFF: static libraries, linked into the tools and the Python "
                 "module; the C++ package (headers, CMake and pkg-config files) is not installed")
endif()

# --- tools -------------------------------------------------------------------------------
if(CONCORD_BUILD_TOOLS)
  get_directory_property(tool_targets DIRECTORY ${PROJECT_SOURCE_DIR}/tools BUILDSYSTEM_TARGETS)
  concord_origin_rpath(tool_rpath ${CMAKE_INSTALL_BINDIR})
  set(installed_tools)
  foreach(target IN LISTS tool_targets)
    get_target_property(type ${target} TYPE)
    if(type STREQUAL "EXECUTABLE" AND target MATCHES "^concord-")
      list(APPEND installed_tools ${target})
    endif()
  endforeach()
  set_target_properties(${installed_tools} PROPERTIES INSTALL_RPATH "${tool_rpath}")
  install(TARGETS ${installed_tools} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
endif()

# --- Python package ----------------------------------------------------------------------
if(TARGET _core)
  concord_origin_rpath(core_rpath ${CONCORD_PYTHON_INSTALL_DIR}/concord)
  set_target_properties(_core PROPERTIES INSTALL_RPATH "${core_rpath}")
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/concord DESTINATION ${CONCORD_PYTHON_INSTALL_DIR}
    COMPONENT python FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
  install(TARGETS _core LIBRARY DESTINATION ${CONCORD_PYTHON_INSTALL_DIR}/concord COMPONENT python)
  if(TARGET _bench)  # concord._bench, the benchmarks' classes (tools/python/), beside _core
    set_target_properties(_bench PROPERTIES INSTALL_RPATH "${core_rpath}")
    install(TARGETS _bench LIBRARY DESTINATION ${CONCORD_PYTHON_INSTALL_DIR}/concord COMPONENT python)
  endif()
  # bin/concord-run, the launcher (python/concord/run.py), for the found interpreter.
  if(EXISTS ${PROJECT_SOURCE_DIR}/python/concord/run.py)
    file(RELATIVE_PATH CONCORD_RUN_PYTHONPATH "/${CMAKE_INSTALL_BINDIR}" "/${CONCORD_PYTHON_INSTALL_DIR}")
    configure_file(${PROJECT_SOURCE_DIR}/python/concord-run.in ${PROJECT_BINARY_DIR}/concord-run @ONLY)
    install(PROGRAMS ${PROJECT_BINARY_DIR}/concord-run DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT python)
  endif()
endif()
