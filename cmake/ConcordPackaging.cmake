# Debian package: `cpack -G DEB` in the build directory writes concord_<version>_amd64.deb
# with what `cmake --install` installs (cmake/ConcordInstall.cmake) under /usr: the shared
# libraries, the concord-* tools, the headers with the CMake and pkg-config files, and the
# Python package under /usr/lib/python3/dist-packages. Depends come from dpkg-shlibdeps
# (libopenmpi3, libspdlog, libstdc++6, libzmq5, and libucx0 and libpmix2 in a build with UCX
# and PMIx, ...; dpkg-dev must be installed; tests/install/deb.sh checks them) plus the Python the
# module was built for; python3-torch and python3-numpy are Recommends (concord.torch needs
# them, the C++ library does not). tests/install/deb.sh checks the package.
if(NOT CONCORD_SHARED_LIBS)
  return()  # the package ships the shared libraries
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME concord)
set(CPACK_PACKAGE_VENDOR "Concord developers")
set(CPACK_PACKAGE_CONTACT "Concord developers <concord@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "collective communication for data-parallel training (Horovod-compatible PyTorch API)")
set(CPACK_PACKAGE_DESCRIPTION
    "Concord negotiates, fuses and runs allreduce, allgather and broadcast across MPI ranks
with its own algorithms (ring, halving-doubling, trees, hierarchical) and Ok-Topk sparse
allreduce. This package holds the C++ library and headers, the concord-* tools and the
Python package (concord, concord.torch).")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # concord_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# dpkg-shlibdeps resolves the package's own libraries (needed by the tools and _core) here.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${PROJECT_BINARY_DIR}/src)
if(Python_VERSION_MAJOR)
  math(EXPR next_minor "${Python_VERSION_MINOR} + 1")
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
      "python3 (>= ${Python_VERSION_MAJOR}.${Python_VERSION_MINOR}), python3 (<< ${Python_VERSION_MAJOR}.${next_minor})")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-torch, python3-numpy, openmpi-bin")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "libopenmpi-dev")
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR}/package)
include(CPack)
