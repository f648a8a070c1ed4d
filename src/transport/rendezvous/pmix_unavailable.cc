// exchange_addresses_pmix() of a build without PMIx (CONCORD_WITH_PMIX=OFF, or AUTO without
// libpmix-dev, or without the UCX transport that would use it).
#include "common/enforce.h"
#include "transport/rendezvous/pmix_exchange.h"

namespace concord::rendezvous {

bool pmix_available() { return false; }

std::vector<PeerAddress> exchange_addresses_pmix(const RendezvousOptions&, const PeerAddress&) {
  CONCORD_THROW(StateError,
                "this Concord was built without PMIx (CONCORD_WITH_PMIX; Debian's libpmix-dev): set "
                "CONCORD_STORE=file:DIR or tcp:HOST:PORT for the UCX rendezvous");
}

}  // namespace concord::rendezvous
