// The UCX transport's world (transport/transport_world.h): a UcxWorker, the rendezvous
// through a key-value store that exchanges the workers' framed addresses, and the world
// communicator every duplicate is split from. Built only when CMake finds UCX
// (CONCORD_WITH_UCX); otherwise ucx_available() is false and make_ucx_world() throws.
#pragma once

#include <chrono>
#include <memory>

#include "transport/launch_environment.h"
#include "transport/rendezvous/open_store.h"
#include "transport/transport_world.h"

namespace concord {

/// True when this build has the UCX transport.
bool ucx_available();

/// The UCX world of `env.size` ranks, this process being `env.rank`, rendezvousing
/// through `store` (ignored for a world of one) before `timeout` passes. Collective over
/// the world. Throws StateError when built without UCX, CommError when UCX or the
/// rendezvous fails (every rank gets the error within the timeout).
std::unique_ptr<TransportWorld> make_ucx_world(const LaunchEnvironment& env, rendezvous::OpenStore store,
                                               std::chrono::milliseconds timeout);

}  // namespace concord
