#include "kvstore/kvstore_world.h"

#include "concord/concord.h"
#include "transport/transport_world.h"

namespace concord::kvstore {

std::unique_ptr<Communicator> make_world(KVStoreType type) {
  TransportWorld& world = process_world();
  if (type != KVStoreType::kFunneled || concord::is_initialized())
    world.require_threads(std::string("KVStore '") + kvstore_type_name(type) + "'");
  return world.duplicate("kvstore");
}

}  // namespace concord::kvstore
