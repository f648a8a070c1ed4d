# Resolves CONCORD_WITH_PMIX (AUTO|ON|OFF) into CONCORD_PMIX_ENABLED: the UCX world's
# rendezvous through the launcher's PMIx server (src/transport/rendezvous/pmix_exchange.h;
# Open MPI's mpirun provides one) is built when the UCX transport is and pkg-config finds
# `pmix` (Debian's libpmix-dev); without it the UCX world under mpirun needs CONCORD_STORE,
# and `concord-info` says PMIx is not built. After cmake/ConcordUcx.cmake.
if(CONCORD_UCX_ENABLED)
  concord_optional_package("PMIx rendezvous" CONCORD_WITH_PMIX pmix PMIX libpmix-dev CONCORD_PMIX_ENABLED)
elseif(CONCORD_WITH_PMIX STREQUAL "ON")
  message(FATAL_ERROR "CONCORD_WITH_PMIX=ON needs the UCX transport (CONCORD_WITH_UCX), which is off")
else()
  set(CONCORD_PMIX_ENABLED OFF)
  message(STATUS "Concord: PMIx rendezvous OFF (no UCX transport)")
endif()
