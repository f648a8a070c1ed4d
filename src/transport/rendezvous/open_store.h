// Where a launched process rendezvouses with its peers, from CONCORD_STORE or the launcher's
// variables: "file:PATH" (FileStore), "tcp:HOST:PORT" (TcpStore; rank 0 serves it),
// "tcp-client:HOST:PORT" (a TcpStore that another process serves, e.g. concord-run's
// elastic driver, which outlives the worlds it rendezvouses), or, when CONCORD_STORE is
// empty, the launcher's PMIx server when it provides one (Open MPI's mpirun;
// pmix_exchange.h) and this build has PMIx, else tcp:MASTER_ADDR:(MASTER_PORT + 1) under
// torchrun or any launcher that sets MASTER_ADDR and MASTER_PORT (torchrun's own store
// holds MASTER_PORT).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "transport/launch_environment.h"
#include "transport/rendezvous/store.h"
#include "transport/rendezvous/tcp_store.h"
#include "transport/rendezvous/world_rendezvous.h"

namespace concord::rendezvous {

struct OpenStore {
  std::unique_ptr<TcpStoreServer> server;  ///< rank 0 of a TCP store; kept for the job's life
  std::shared_ptr<Store> store;            ///< null when `pmix` (or a world of one); shared with the heartbeat
  bool pmix = false;                       ///< exchange through the launcher's PMIx server

  /// Every rank's address: exchange_addresses() through `store`, or
  /// exchange_addresses_pmix() when `pmix`. Throws as those do; StateError when neither.
  std::vector<PeerAddress> exchange(const RendezvousOptions& options, const PeerAddress& mine);
  /// "pmix", or the store's describe() ("file:/tmp/x", "tcp:host:port"), for messages.
  std::string describe() const;
};

/// Opens the rendezvous `spec` names (CONCORD_STORE's syntax; "" = PMIx when `env.pmix`
/// and this build has it, else from MASTER_ADDR and MASTER_PORT) for `env`'s rank; TCP
/// requests give up after `timeout`. Throws InvalidArgument for a malformed spec,
/// StateError when nothing says where to rendezvous, CommError when a store cannot be
/// opened or served.
OpenStore open_store(const LaunchEnvironment& env, const std::string& spec, std::chrono::milliseconds timeout);

/// What open_store(env, spec) would use, without opening anything ("pmix", "file:DIR",
/// "tcp:HOST:PORT", or "none: <why>"), for concord-info.
std::string describe_rendezvous(const LaunchEnvironment& env, const std::string& spec);

}  // namespace concord::rendezvous
