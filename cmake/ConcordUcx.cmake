# Resolves CONCORD_WITH_UCX (AUTO|ON|OFF) into CONCORD_UCX_ENABLED: the UCX transport
# (src/transport/ucx/) is built when pkg-config finds `ucx` (Debian's libucx-dev); without
# it Concord builds as before and `concord-info` says the transport is not built. ZeroMQ
# (`libzmq`, Debian's libzmq3-dev) carries the TCP rendezvous store, built in every case.
find_package(PkgConfig REQUIRED)
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq)
string(TOUPPER "${CONCORD_WITH_UCX}" _concord_ucx_mode)
set(CONCORD_UCX_ENABLED OFF)
if(NOT _concord_ucx_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "CONCORD_WITH_UCX must be AUTO, ON or OFF (got '${CONCORD_WITH_UCX}')")
endif()
if(NOT _concord_ucx_mode STREQUAL "OFF")
  pkg_check_modules(UCX QUIET IMPORTED_TARGET ucx)
  if(UCX_FOUND)
    set(CONCORD_UCX_ENABLED ON)
    message(STATUS "Concord: UCX transport ON (ucx ${UCX_VERSION})")
  elseif(_concord_ucx_mode STREQUAL "ON")
    message(FATAL_ERROR "CONCORD_WITH_UCX=ON but pkg-config finds no `ucx` (install libucx-dev)")
  endif()
endif()
if(NOT CONCORD_UCX_ENABLED)
  message(STATUS "Concord: UCX transport OFF (CONCORD_WITH_UCX=${CONCORD_WITH_UCX})")
endif()
