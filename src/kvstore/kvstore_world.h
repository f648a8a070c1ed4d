// The world communicator a KVStore runs on: a duplicate of the process's transport world
// (transport/transport_world.h), with the thread check its design needs.
#pragma once

#include <memory>

#include "kvstore/kvstore.h"

namespace concord::kvstore {

/// A new communicator duplicating the process's world (process_world().duplicate("kvstore");
/// collective: every rank calls it in the same order). The concurrent and depchain designs
/// call the transport from a progress thread and the calling thread, and the funneled one
/// from the calling thread while Concord's runtime (concord::init) may use its background
/// thread, so all need a world that allows several threads except funneled without an
/// active runtime. Throws StateError (naming the design) when the world does not allow it.
std::unique_ptr<Communicator> make_world(KVStoreType type);

}  // namespace concord::kvstore
