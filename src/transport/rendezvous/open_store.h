// The rendezvous store a launched process uses, from CONCORD_STORE or the launcher's
// variables: "file:PATH" (FileStore), "tcp:HOST:PORT" (TcpStore; rank 0 serves it),
// "tcp-client:HOST:PORT" (a TcpStore that another process serves, e.g. concord-run's
// elastic driver, which outlives the worlds it rendezvouses), or,
// when CONCORD_STORE is empty, tcp:MASTER_ADDR:(MASTER_PORT + 1) under torchrun or any
// launcher that sets MASTER_ADDR and MASTER_PORT (torchrun's own store holds MASTER_PORT).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "transport/launch_environment.h"
#include "transport/rendezvous/store.h"
#include "transport/rendezvous/tcp_store.h"

namespace concord::rendezvous {

struct OpenStore {
  std::unique_ptr<TcpStoreServer> server;  ///< rank 0 of a TCP store; kept for the job's life
  std::shared_ptr<Store> store;  ///< shared with the world's heartbeat thread
};

/// Opens the store `spec` names (CONCORD_STORE's syntax; "" = from MASTER_ADDR and
/// MASTER_PORT) for `env`'s rank; TCP requests give up after `timeout`. Throws
/// InvalidArgument for a malformed spec, StateError when nothing says where the store
/// is, CommError when it cannot be opened or served.
OpenStore open_store(const LaunchEnvironment& env, const std::string& spec, std::chrono::milliseconds timeout);

}  // namespace concord::rendezvous
