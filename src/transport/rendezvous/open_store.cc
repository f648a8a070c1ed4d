#include "transport/rendezvous/open_store.h"

#include "common/enforce.h"
#include "transport/rendezvous/file_store.h"
#include "transport/rendezvous/pmix_exchange.h"

namespace concord::rendezvous {
namespace {

// The spec open_store() uses: CONCORD_STORE's, "pmix", or tcp:MASTER_ADDR:(MASTER_PORT + 1).
std::string resolve(const LaunchEnvironment& env, const std::string& spec) {
  if (!spec.empty()) return spec;
  if (env.pmix && pmix_available()) return "pmix";
  CONCORD_ENFORCE(!env.master_addr.empty() && env.master_port > 0, StateError, "Concord (", env.describe(),
                  ") must rendezvous with its peers but nothing says where: set CONCORD_STORE=file:DIR (one "
                  "host) or tcp:HOST:PORT, or MASTER_ADDR and MASTER_PORT (torchrun sets them)",
                  env.pmix ? " (the launcher provides PMIx, but this build has no PMIx)"
                           : ", or start it under a launcher with a PMIx server (Open MPI's mpirun)");
  return "tcp:" + env.master_addr + ":" + std::to_string(env.master_port + 1);
}

}  // namespace

std::vector<PeerAddress> OpenStore::exchange(const RendezvousOptions& options, const PeerAddress& mine) {
  if (pmix) return exchange_addresses_pmix(options, mine);
  CONCORD_ENFORCE(store != nullptr, StateError, "rendezvous of rank ", options.rank, ": no store was opened");
  return exchange_addresses(*store, options, mine);
}

std::string OpenStore::describe() const { return pmix ? "pmix" : store ? store->describe() : "none"; }

std::string describe_rendezvous(const LaunchEnvironment& env, const std::string& spec) {
  if (!env.several() && spec.empty()) return "none (a world of one)";
  try {
    return resolve(env, spec);
  } catch (const Error& error) {
    return std::string("none: ") + error.what();
  }
}

OpenStore open_store(const LaunchEnvironment& env, const std::string& spec_in, std::chrono::milliseconds timeout) {
  const std::string spec = resolve(env, spec_in);
  OpenStore result;
  if (spec == "pmix") {
    result.pmix = true;
    return result;
  }
  if (spec.rfind("file:", 0) == 0) {
    result.store = std::make_unique<FileStore>(spec.substr(5));
    return result;
  }
  const bool served_elsewhere = spec.rfind("tcp-client:", 0) == 0;
  const size_t scheme = served_elsewhere ? 11 : 4;
  const auto colon = spec.rfind(':');
  CONCORD_ENFORCE((served_elsewhere || spec.rfind("tcp:", 0) == 0) && colon > scheme, InvalidArgument,
                  "CONCORD_STORE='", spec_in, "': expected file:DIR, tcp:HOST:PORT, tcp-client:HOST:PORT or pmix");
  const std::string host = spec.substr(scheme, colon - scheme);
  int port = 0;
  try {
    port = std::stoi(spec.substr(colon + 1));
  } catch (const std::exception&) {
  }
  CONCORD_ENFORCE(port > 0 && port < 65536, InvalidArgument, "CONCORD_STORE='", spec, "': bad port");
  if (env.rank == 0 && !served_elsewhere) result.server = std::make_unique<TcpStoreServer>(port);
  result.store = std::make_unique<TcpStore>(host, port, timeout);
  return result;
}

}  // namespace concord::rendezvous
