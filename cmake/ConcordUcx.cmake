# Resolves CONCORD_WITH_UCX (AUTO|ON|OFF) into CONCORD_UCX_ENABLED: the UCX transport
# (src/transport/ucx/) is built when pkg-config finds `ucx` (Debian's libucx-dev); without
# it Concord builds as before and `concord-info` says the transport is not built. ZeroMQ
# (`libzmq`, Debian's libzmq3-dev) carries the TCP rendezvous store, built in every case.
include(${CMAKE_CURRENT_LIST_DIR}/ConcordOptionalPackage.cmake)
find_package(PkgConfig REQUIRED)
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
concord_optional_package("UCX transport" CONCORD_WITH_UCX ucx UCX libucx-dev CONCORD_UCX_ENABLED)
